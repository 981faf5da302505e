package boltstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/store/boltstore"
	"github.com/habilis-router/habilis/store/storetest"
)

// benchShapes are the catalogs the benchmarks load: 10,000 tools of 10
// examples each, with 384-dimensional dense vectors (a small embedding
// model) or sparse vectors of about 40 nonzeros (the lexical embedder).
var benchShapes = []struct {
	name  string
	shape storetest.Shape
}{
	{"dense384", storetest.Shape{Dim: 384}},
	{"sparse40", storetest.Shape{NonZeros: 40}},
}

const (
	benchTools    = 10000
	benchExamples = 10
)

func benchCatalog(s storetest.Shape) []habilis.Record {
	recs := make([]habilis.Record, benchTools)
	for i := range recs {
		recs[i] = storetest.Generate(fmt.Sprintf("tool-%05d", i), benchExamples, s, int64(i))
	}
	return recs
}

// BenchmarkWrite loads the whole catalog into a new file per iteration, as
// a first `habilis load` does.
func BenchmarkWrite(b *testing.B) {
	for _, bs := range benchShapes {
		b.Run(bs.name, func(b *testing.B) {
			recs := benchCatalog(bs.shape)
			dir := b.TempDir()
			ctx := context.Background()
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				b.StopTimer()
				path := filepath.Join(dir, fmt.Sprintf("habilis-%d.db", n))
				n++
				s, err := boltstore.Open(path, boltstore.Options{})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if _, err := s.Write(ctx, &habilis.Batch{Put: recs}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				s.Close()
				os.Remove(path)
				b.StartTimer()
			}
			b.ReportMetric(float64(benchTools*benchExamples)*float64(b.N)/b.Elapsed().Seconds(), "examples/s")
		})
	}
}

// BenchmarkReplace reloads the whole catalog over a store that holds it,
// as a reload after a catalog change does.
func BenchmarkReplace(b *testing.B) {
	for _, bs := range benchShapes {
		b.Run(bs.name, func(b *testing.B) {
			recs := benchCatalog(bs.shape)
			s, err := boltstore.Open(filepath.Join(b.TempDir(), "habilis.db"), boltstore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			m, err := s.Write(ctx, &habilis.Batch{Put: recs})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if m, err = s.Write(ctx, &habilis.Batch{BaseVersion: m.Version, Replace: true, Put: recs}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSnapshot reads the whole catalog, as a router does on start.
func BenchmarkSnapshot(b *testing.B) {
	for _, bs := range benchShapes {
		b.Run(bs.name, func(b *testing.B) {
			s, err := boltstore.Open(filepath.Join(b.TempDir(), "habilis.db"), boltstore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			if _, err := s.Write(ctx, &habilis.Batch{Put: benchCatalog(bs.shape)}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				snap, err := s.Snapshot(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if len(snap.Records) != benchTools {
					b.Fatalf("Snapshot() has %d records, want %d", len(snap.Records), benchTools)
				}
			}
		})
	}
}

// benchStore writes the catalog of shape s to a new file and returns its
// path.
func benchStore(b *testing.B, s storetest.Shape) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "habilis.db")
	st, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Write(context.Background(), &habilis.Batch{Put: benchCatalog(s)}); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkOpen opens the store read-only and closes it, as every CLI
// command does: the page walk is most of it.
func BenchmarkOpen(b *testing.B) {
	for _, bs := range benchShapes {
		b.Run(bs.name, func(b *testing.B) {
			path := benchStore(b, bs.shape)
			for b.Loop() {
				s, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
				if err != nil {
					b.Fatal(err)
				}
				s.Close()
			}
		})
	}
}

// BenchmarkWalk walks the file's pages alone.
func BenchmarkWalk(b *testing.B) {
	for _, bs := range benchShapes {
		b.Run(bs.name, func(b *testing.B) {
			path := benchStore(b, bs.shape)
			for b.Loop() {
				if problems, err := boltstore.WalkFile(path); err != nil || len(problems) > 0 {
					b.Fatal(problems, err)
				}
			}
		})
	}
}

// BenchmarkCheck checks the whole store, as `habilis store check` does
// before it checks what the records mean.
func BenchmarkCheck(b *testing.B) {
	for _, bs := range benchShapes {
		b.Run(bs.name, func(b *testing.B) {
			path := benchStore(b, bs.shape)
			for b.Loop() {
				rep, err := boltstore.Check(context.Background(), path, boltstore.CheckOptions{})
				if err != nil || !rep.Sound() {
					b.Fatal(rep, err)
				}
			}
		})
	}
}
