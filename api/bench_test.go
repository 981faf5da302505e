package api

import (
	"context"
	"testing"

	"github.com/habilis-router/habilis"
)

// BenchmarkServeSelect measures Select through a real loopback server and
// client, in parallel, against the health check's cost: the server's share
// of a call beyond the selection itself.
func BenchmarkServeSelect(b *testing.B) {
	r := newRouter(b, testTools(b))
	_, addr := serve(b, r, ServerOptions{})
	c := dial(b, addr, DialOptions{})
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Select(ctx, "will it rain in Lisbon tomorrow", habilis.SelectOptions{K: 3}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
