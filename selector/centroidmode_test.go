package selector_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/selector"
)

// TestCentroidModeScoresOnlyWhatItShows checks that centroid mode over
// dense vectors, which scores the description of only the tools it
// looks at, reports for each of them the very bits Scores computes over
// every signal: for tools with examples and without, in the stored index
// and in the rows an upsert adds beside it.
func TestCentroidModeScoresOnlyWhatItShows(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, filepath.Join(t.TempDir(), "habilis.db"))
	r, err := selector.New(ctx, st, selector.Config{Embedder: testutil.HashEmbedder{Dim: 32}, Lexical: lexical.New(lexical.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var tools []habilis.Tool
	for i := range 40 {
		tool := habilis.Tool{Name: fmt.Sprintf("tool_%02d", i), Description: fmt.Sprintf("does thing %d with widgets", i)}
		if i%3 != 0 {
			tool.Examples = []string{fmt.Sprintf("please do thing %d", i), fmt.Sprintf("widgets number %d now", i), fmt.Sprintf("run %d for me", i)}
		}
		tools = append(tools, tool)
	}
	if _, err := r.Load(ctx, tools[:36], selector.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Load(ctx, tools[36:], selector.LoadOptions{Merge: true}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"do thing 7 with widgets", "widgets number 38", "run 9 for me", "thing 39"} {
		// Selection first: Scores would leave every signal of q in the
		// working memory selection takes next.
		d, err := r.Select(ctx, q, habilis.SelectOptions{Mode: habilis.ModeCentroid, K: 40, FailOpen: true})
		if err != nil {
			t.Fatal(err)
		}
		sc, err := r.Scores(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		at := make(map[string]int, len(sc.Tools))
		for i, name := range sc.Tools {
			at[name] = i
		}
		if len(d.Matches) != len(tools) {
			t.Fatalf("%q: %d matches, want %d", q, len(d.Matches), len(tools))
		}
		prev := float32(math.Inf(1))
		for _, m := range d.Matches {
			i := at[m.Tool]
			// Centroid mode ranks by the centroid score, the description's
			// for a tool without examples.
			if key := sc.Centroid[i]; key > prev {
				t.Errorf("%q: %s (%v) ranks below a tool of %v", q, m.Tool, key, prev)
			} else {
				prev = key
			}
			cent := sc.Centroid[i]
			if !sc.HasExamples[i] {
				cent = 0 // a Match's centroid score without examples
			}
			if math.Float32bits(m.DescriptionScore) != math.Float32bits(sc.Description[i]) || math.Float32bits(m.CentroidScore) != math.Float32bits(cent) {
				t.Errorf("%q: %s: centroid mode reports centroid %v, description %v; Scores %v, %v", q, m.Tool, m.CentroidScore, m.DescriptionScore, cent, sc.Description[i])
			}
		}
	}
}
