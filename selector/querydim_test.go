package selector_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/memstore"
)

// driftingEmbedder embeds documents with its HashEmbedder and requests
// with query, when set: a model server whose model changed under the
// catalog.
type driftingEmbedder struct {
	testutil.HashEmbedder
	query habilis.Embedder
}

func (e *driftingEmbedder) Embed(ctx context.Context, texts []string, p habilis.Purpose) ([]habilis.Vector, error) {
	if p == habilis.Query && e.query != nil {
		return e.query.Embed(ctx, texts, p)
	}
	return e.HashEmbedder.Embed(ctx, texts, p)
}

// sparseEmbedder embeds every text as the same sparse unit vector.
type sparseEmbedder struct{}

func (sparseEmbedder) Info() habilis.EmbedderInfo {
	return habilis.EmbedderInfo{Kind: "test", Model: "sparse"}
}

func (sparseEmbedder) Embed(_ context.Context, texts []string, _ habilis.Purpose) ([]habilis.Vector, error) {
	out := make([]habilis.Vector, len(texts))
	for i := range out {
		out[i] = habilis.Vector{Indices: []uint32{7}, Values: []float32{1}}
	}
	return out, nil
}

// TestQueryOfAnotherForm checks that a request embedded into vectors of
// another form than the catalog's (another dimension, or sparse for a
// dense catalog) is refused as an embedder mismatch by every path that
// embeds requests; such a vector scored 0 against every tool, and the
// decision rested on the lexical signals alone, unsaid.
func TestQueryOfAnotherForm(t *testing.T) {
	e := &driftingEmbedder{HashEmbedder: testutil.HashEmbedder{Dim: 16}}
	r, err := selector.New(t.Context(), memstore.New(), selector.Config{Embedder: e})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Load(t.Context(), testCatalog(t), selector.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	const q = "weather in Paris"
	if _, err := r.Select(t.Context(), q, habilis.SelectOptions{}); err != nil {
		t.Fatalf("Select with the catalog's embedder: %v", err)
	}
	for _, tt := range []struct {
		name  string
		query habilis.Embedder
		says  string
	}{
		{"fewer dimensions", testutil.HashEmbedder{Dim: 8}, "dimension 8"},
		{"more dimensions", testutil.HashEmbedder{Dim: 32}, "dimension 32"},
		{"sparse", sparseEmbedder{}, "returned a vector of dimension 0"},
	} {
		e.query = tt.query
		paths := map[string]func() error{
			"Select": func() error { _, err := r.Select(t.Context(), q, habilis.SelectOptions{}); return err },
			"Scores": func() error { _, err := r.Scores(t.Context(), q); return err },
			"EmbedQueries": func() error {
				_, err := r.EmbedQueries(t.Context(), []string{q})
				return err
			},
		}
		for path, call := range paths {
			if err := call(); !errors.Is(err, habilis.ErrEmbedderMismatch) || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("%s with a query embedder of %s: %v; want an embedder mismatch saying %q", path, tt.name, err, tt.says)
			}
		}
	}
}
