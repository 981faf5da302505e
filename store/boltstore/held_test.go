package boltstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/boltstore"
	"github.com/habilis-router/habilis/store/storetest"
)

// recorder is a store that remembers the records written to it, as they
// were written, to compare its snapshots with.
type recorder struct {
	*boltstore.Store
	recs map[string]habilis.Record
}

// recordedRouter opens the store at path, closed with the test, and a
// router over it whose writes rec records (a new recorder when rec is
// nil; a recorder given again keeps what it recorded before).
func recordedRouter(t *testing.T, path string, cfg selector.Config, rec *recorder) (*recorder, *boltstore.Store, *selector.Router) {
	t.Helper()
	st, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if rec == nil {
		rec = &recorder{recs: map[string]habilis.Record{}}
	}
	rec.Store = st
	r, err := selector.New(context.Background(), rec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rec, st, r
}

func (r *recorder) Write(ctx context.Context, b *habilis.Batch) (habilis.CatalogMeta, error) {
	meta, err := r.Store.Write(ctx, b)
	if err != nil {
		return meta, err
	}
	if b.Replace {
		clear(r.recs)
	}
	for _, name := range b.Delete {
		delete(r.recs, name)
	}
	for _, rec := range b.Put {
		rec.DescriptionVector, rec.Centroid, rec.DocumentVector = rec.DescriptionVector.Clone(), rec.Centroid.Clone(), rec.DocumentVector.Clone()
		rec.ExampleVectors = append([]habilis.Vector(nil), rec.ExampleVectors...)
		for i := range rec.ExampleVectors {
			rec.ExampleVectors[i] = rec.ExampleVectors[i].Clone()
		}
		r.recs[rec.Tool.Name] = rec
	}
	return meta, nil
}

// check fails unless a snapshot holds exactly the records written.
func (r *recorder) check(t *testing.T, when string) {
	t.Helper()
	snap := storetest.Snapshot(t, r.Store)
	want := byName(mapValues(r.recs))
	if diff := cmp.Diff(want, snap.Records); diff != "" {
		t.Errorf("Snapshot() %s mismatch (-written +read):\n%s", when, diff)
	}
}

func mapValues(m map[string]habilis.Record) []habilis.Record {
	out := make([]habilis.Record, 0, len(m))
	for _, r := range m {
		out = append(out, r)
	}
	return out
}

// heldTools is a small catalog with examples, and tools without.
func heldTools(n int, tag string) []habilis.Tool {
	tools := make([]habilis.Tool, n)
	for i := range tools {
		tools[i] = habilis.Tool{Name: fmt.Sprintf("tool_%03d", i), Description: fmt.Sprintf("handles %s request kind %d of the catalog", tag, i)}
		if i%5 != 4 {
			for j := range 3 {
				tools[i].Examples = append(tools[i].Examples, fmt.Sprintf("please do thing %d number %d for %s", i, j, tag))
			}
		}
	}
	return tools
}

// TestHeldVectors checks that the store leaves to the index it keeps the
// vectors that index holds, and returns every record as it was written:
// after a load, after a patched write of one tool (written with its
// vectors), after a full write that keeps the others in place, and after
// a write that stores no index, which writes every vector back into its
// record; lexical and dense catalogs alike.
func TestHeldVectors(t *testing.T) {
	for _, tc := range []struct {
		name string
		emb  habilis.Embedder
	}{{"lexical", nil}, {"dense", testutil.HashEmbedder{Dim: 12}}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "habilis.db")
			cfg := selector.Config{Embedder: tc.emb, Lexical: lexical.New(lexical.Options{})}
			if tc.emb == nil {
				cfg = selector.Config{Embedder: lexical.New(lexical.Options{})}
			}
			rec, st, r := recordedRouter(t, path, cfg, nil)
			defer r.Close()
			tools := heldTools(200, "first")
			if _, err := r.Load(ctx, tools, selector.LoadOptions{}); err != nil {
				t.Fatal(err)
			}
			rec.check(t, "after a load")
			// The router reads the index where it lies in the file, which
			// stays open until the router lets it go.
			r.Close()
			st.Close()
			if n := boltstore.HeldVectors(t, path); n < 3*len(tools)*4/5 {
				t.Errorf("after a load, %d vectors left to the index, want at least %d", n, 3*len(tools)*4/5)
			}
			_, st, r = recordedRouter(t, path, cfg, rec)
			one := heldTools(1, "changed")
			if _, err := r.Load(ctx, one, selector.LoadOptions{Merge: true}); err != nil {
				t.Fatal(err)
			}
			rec.check(t, "after a patched write")
			more := heldTools(40, "second")
			if _, err := r.Load(ctx, more, selector.LoadOptions{Merge: true}); err != nil {
				t.Fatal(err)
			}
			rec.check(t, "after a full write")
			snap := storetest.Snapshot(t, st)
			b := &habilis.Batch{BaseVersion: snap.Meta.Version, Put: snap.Records[:1], Meta: snap.Meta}
			if _, err := rec.Write(ctx, b); err != nil {
				t.Fatal(err)
			}
			rec.check(t, "after a write without an index")
			r.Close()
			st.Close()
			if n := boltstore.HeldVectors(t, path); n != 0 {
				t.Errorf("after a write without an index, %d vectors left to the index, want 0", n)
			}
		})
	}
}

// TestFormat2 reads a format 2 store (records with every vector, as a
// write storing no index leaves them) and checks that its next write
// makes it a format 4 store whose records leave their vectors to the
// index, each read back as written.
func TestFormat2(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "habilis.db")
	cfg := selector.Config{Embedder: lexical.New(lexical.Options{})}
	rec, st, r := recordedRouter(t, path, cfg, nil)
	if _, err := r.Load(ctx, heldTools(30, "first"), selector.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	snap := storetest.Snapshot(t, st)
	b := &habilis.Batch{BaseVersion: snap.Meta.Version, Replace: true, Put: snap.Records, Meta: snap.Meta}
	if _, err := rec.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	r.Close() // it holds the file open while it reads the index there
	st.Close()
	setFormat(t, path, 2)
	if n := boltstore.HeldVectors(t, path); n != 0 {
		t.Fatalf("a store written without an index leaves %d vectors to it, want 0", n)
	}
	st, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec.Store = st
	rec.check(t, "of format 2")
	if r, err = selector.New(ctx, rec, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Load(ctx, heldTools(1, "changed"), selector.LoadOptions{Merge: true}); err != nil {
		t.Fatal(err)
	}
	rec.check(t, "after a write to format 2")
	r.Close()
	rec.Store.Close()
	if f := storedFormat(t, path); f != 4 {
		t.Errorf("format after a write = %d, want 4", f)
	}
	if n := boltstore.HeldVectors(t, path); n == 0 {
		t.Error("after a write to format 2, no vector is left to the index")
	}
}

// TestWritesBesideIndexInPlace checks that a router serving its index
// where it lies in a writable store's memory map keeps writing, full
// writes in one transaction and staged, and patched writes, each followed
// by a selection; and that the pages the writes free serve again once the
// index they held is retired, so that the file stops growing.
func TestWritesBesideIndexInPlace(t *testing.T) {
	ctx := context.Background()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "habilis.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	boltstore.SetChunk(st, 64) // 200 tools: a staged write of four transactions
	r := testutil.LexicalRouter(t, st)
	tools := heldTools(200, "first")
	var sizes []int64
	for i := range 16 {
		tools[i].Description += " again"
		opts := selector.LoadOptions{}
		if i%2 == 1 {
			opts.Merge = true // one tool changed: a full write still, below patched writes' 500 tools
		}
		if _, err := r.Load(ctx, tools, opts); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if _, err := r.Select(ctx, tools[i].Description, habilis.SelectOptions{}); err != nil {
			t.Fatalf("select after write %d: %v", i, err)
		}
		sizes = append(sizes, boltstore.HighWater(t, st))
	}
	// A write that reused no page would add what the second write added
	// (the first found the file empty); a page or two more is the tree
	// growing.
	if mid, last, one := sizes[len(sizes)/2], sizes[len(sizes)-1], sizes[1]-sizes[0]; last-mid > one/4 {
		t.Errorf("the file's pages grew from %d to %d bytes over the last %d writes, one write adding %d (%v): the pages freed are not reused",
			mid, last, len(sizes)/2, one, sizes)
	}
}
