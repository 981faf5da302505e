package selector

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/habilis-router/habilis/catalog"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/store/memstore"
)

// TestCollisionsAboveLeakLimit checks that a catalog with more tools than
// the example-leak analysis takes gets the centroid pairs, with a warning
// saying so, instead of an error; below the limit the same catalog gets
// leaks too.
func TestCollisionsAboveLeakLimit(t *testing.T) {
	ctx := context.Background()
	tools, err := catalog.Read("testdata/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	r, err := New(ctx, memstore.New(), Config{Embedder: lexical.New(lexical.Options{}), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Load(ctx, tools, LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	// A threshold every pair of centroids reaches, so that Pairs reports
	// every pair and the leaks are what tells the two analyses apart.
	full, err := r.collisions(ctx, 0.01, 1000)
	if err != nil {
		t.Fatal(err)
	}
	leaks := 0
	for _, c := range full {
		leaks += len(c.Leaks)
	}
	if leaks == 0 || strings.Contains(logs.String(), "centroid pairs only") {
		t.Fatalf("below the limit: %d leaks, logs %q; want leaks and no warning", leaks, logs.String())
	}
	pairs, err := r.collisions(ctx, 0.01, 2)
	if err != nil {
		t.Fatalf("above the limit: %v, want the centroid pairs", err)
	}
	if len(pairs) == 0 {
		t.Fatal("above the limit: no pairs")
	}
	for _, c := range pairs {
		if len(c.Leaks) > 0 {
			t.Errorf("above the limit: %s-%s has leaks", c.A, c.B)
		}
	}
	if !strings.Contains(logs.String(), "centroid pairs only") {
		t.Errorf("above the limit: no warning in %q", logs.String())
	}
}
