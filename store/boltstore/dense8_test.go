package boltstore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/internal/vec"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/boltstore"
	"github.com/habilis-router/habilis/store/storetest"
)

// TestDenseExamples8 checks that the dense example vectors a router
// writes are on the 8-bit grid, that the store keeps them in a byte a
// coordinate, and that the file gives back exactly the vectors the router
// computed its centroids and calibration with: after a load, on
// reopening, and after a later write of one tool, which keeps the other
// tools' vectors bit for bit.
func TestDenseExamples8(t *testing.T) {
	const dim = 384
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "habilis.db")
	emb := testutil.HashEmbedder{Dim: dim}
	cfg := selector.Config{Embedder: emb, Lexical: lexical.New(lexical.Options{})}
	rec, st, r := recordedRouter(t, path, cfg, nil)
	if _, err := r.Load(ctx, heldTools(60, "first"), selector.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	first := map[string]habilis.Record{}
	q := make([]int8, dim)
	for name, rc := range rec.recs {
		first[name] = rc
		for k, v := range rc.ExampleVectors {
			raw, err := emb.Embed(ctx, rc.Tool.Examples[k:k+1], habilis.Document)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := vec.Quantize8(q, v.Dense); !ok {
				t.Fatalf("tool %s example %d: the vector written is not on the 8-bit grid", name, k)
			}
			if cos := vec.Dot(raw[0].Dense, v.Dense); cos < 0.9999 {
				t.Errorf("tool %s example %d: cosine with the embedder's vector = %v, want >= 0.9999", name, k, cos)
			}
		}
	}
	rec.check(t, "after a load")
	r.Close()
	st.Close()
	size, n := boltstore.StoredExampleBytes(t, path)
	if n == 0 || size/n > dim+64 {
		t.Errorf("examples stored in %d bytes for %d, want at most %d each (a byte a coordinate)", size, n, dim+64)
	}

	st, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec.Store = st
	rec.check(t, "on reopening")
	if r, err = selector.New(ctx, rec, cfg); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Load(ctx, heldTools(1, "changed"), selector.LoadOptions{Merge: true}); err != nil {
		t.Fatal(err)
	}
	rec.check(t, "after a later write")
	for name, rc := range rec.recs {
		if name == "tool_000" {
			continue
		}
		if diff := cmp.Diff(first[name].ExampleVectors, rc.ExampleVectors); diff != "" {
			t.Errorf("tool %s: example vectors after a later write changed (-first +now):\n%s", name, diff)
		}
	}
}

// TestFormat3 reads a store of format 3, whose dense example vectors are
// float32 (kind 1), and checks that the next write keeps them bit for bit
// beside the written tool's, on the 8-bit grid, and marks the file
// format 4.
func TestFormat3(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "habilis.db")
	recs := storetest.Catalog(20, 3, false, 1) // dense, off the grid: kind 1, as format 3 wrote them
	meta := storetest.Meta(8, 1)
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, &habilis.Batch{Replace: true, Put: recs, Meta: meta}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	setFormat(t, path, 3)

	if s, err = boltstore.Open(path, boltstore.Options{ReadOnly: true}); err != nil {
		t.Fatalf("Open(format 3) error = %v", err)
	}
	snap := storetest.Snapshot(t, s)
	s.Close()
	if diff := cmp.Diff(byName(recs), snap.Records); diff != "" {
		t.Errorf("Snapshot(format 3) mismatch (-want +got):\n%s", diff)
	}
	added := storetest.Record("added", 4, false, 9)
	for k, v := range added.ExampleVectors {
		added.ExampleVectors[k] = habilis.Vector{Dense: vec.Round8(v.Dense)}
	}
	if s, err = boltstore.Open(path, boltstore.Options{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Write(ctx, &habilis.Batch{BaseVersion: snap.Meta.Version, Put: []habilis.Record{added}, Meta: meta}); err != nil {
		t.Fatalf("Write(format 3) error = %v", err)
	}
	if diff := cmp.Diff(byName(append(recs, added)), storetest.Snapshot(t, s).Records); diff != "" {
		t.Errorf("Snapshot() after a write to format 3 mismatch (-want +got):\n%s", diff)
	}
	s.Close()
	if f := storedFormat(t, path); f != 4 {
		t.Errorf("format after a write = %d, want 4", f)
	}
	if rep, err := boltstore.Check(ctx, path, boltstore.CheckOptions{Records: checkGenerated}); err != nil || !rep.Sound() {
		t.Errorf("Check(format 3 written) = %+v, %v; want sound", rep, err)
	}
}
