package qdrantstore

import (
	"context"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/store/storetest"
)

// BenchmarkVersion reads the version of a catalog of 200 tools written 20
// times (a ledger of 16 points after pruning) from the in-memory fake over
// loopback gRPC: the client's and the wire's share of what following the
// store costs per check, a real Qdrant's own work aside.
func BenchmarkVersion(b *testing.B) {
	_, cfg := startFakeB(b)
	cfg.Catalog, cfg.Layout = "shop", LayoutShared
	s, err := Open(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var v uint64
	for i := range 20 {
		m, err := s.Write(ctx, &habilis.Batch{BaseVersion: v, Replace: true, Put: storetest.Catalog(200, 2, true, int64(i)), Meta: storetest.Meta(0, 1)})
		if err != nil {
			b.Fatal(err)
		}
		v = m.Version
	}
	b.ReportAllocs()
	for b.Loop() {
		if got, err := s.Version(ctx); err != nil || got != v {
			b.Fatalf("Version() = %d, %v; want %d", got, err, v)
		}
	}
}
