package testutil

import (
	"context"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/boltstore"
)

// BoltStore opens the embedded store at path, closed when the test ends.
func BoltStore(tb testing.TB, path string) *boltstore.Store {
	tb.Helper()
	st, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		tb.Fatalf("boltstore.Open(%q) error = %v", path, err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

// LexicalRouter returns a router over st with the built-in lexical
// embedder, closed when the test ends.
func LexicalRouter(tb testing.TB, st habilis.Store) *selector.Router {
	tb.Helper()
	r, err := selector.New(context.Background(), st, selector.Config{Embedder: lexical.New(lexical.Options{})})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Close() })
	return r
}

// HighWater returns the bytes of the bbolt file at path below its
// high-water mark, the pages in use or free: bbolt grows files ahead of
// use.
func HighWater(tb testing.TB, path string) int64 {
	tb.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	var size int64
	db.View(func(tx *bbolt.Tx) error { size = tx.Size(); return nil })
	return size
}
