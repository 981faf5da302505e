package api

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/boltstore"
)

// BenchmarkServeSelect measures Select through a real loopback server and
// client, in parallel, against the health check's cost: the server's share
// of a call beyond the selection itself. follow=off holds its bbolt store
// as serve --follow-interval 0 does; the others follow it as serve does by
// default (a Shared store, a version read every interval), at serve's
// interval and at a hundred times its rate, to show what following takes
// from the calls.
func BenchmarkServeSelect(b *testing.B) {
	for _, bc := range []struct {
		name   string
		follow time.Duration
	}{
		{"follow=off", 0},
		{"follow=2s", selector.DefaultFollowInterval},
		{"follow=20ms", 20 * time.Millisecond},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := benchReplica(b, bc.follow > 0)
			s, addr := serve(b, r, ServerOptions{})
			if bc.follow > 0 {
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() {
					defer close(done)
					s.Follow(ctx, selector.FollowOptions{Interval: bc.follow})
				}()
				b.Cleanup(func() {
					cancel()
					<-done
				})
			}
			c := dial(b, addr, DialOptions{})
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.Select(ctx, "will it rain in Lisbon tomorrow", habilis.SelectOptions{K: 3}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// benchReplica returns a router over a bbolt file loaded with the test
// catalog, held open or, when shared, opened for each call.
func benchReplica(b *testing.B, shared bool) *selector.Router {
	b.Helper()
	path := filepath.Join(b.TempDir(), "habilis.db")
	var st habilis.Store
	var err error
	if shared {
		st, err = boltstore.OpenShared(path, boltstore.Options{})
	} else {
		st, err = boltstore.Open(path, boltstore.Options{})
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	r := testutil.LexicalRouter(b, st)
	if _, err := r.Load(context.Background(), testTools(b), selector.LoadOptions{}); err != nil {
		b.Fatal(err)
	}
	return r
}
