package selector_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/selector"
)

// TestProgressSteps checks that opening a router and loading a catalog
// report their steps in order, and the texts embedded up to the total.
func TestProgressSteps(t *testing.T) {
	var steps []selector.Step
	var done, total int
	cfg := selector.Config{Embedder: lexical.New(lexical.Options{}), Progress: func(s selector.Step, d, n int) {
		if len(steps) == 0 || steps[len(steps)-1] != s {
			steps = append(steps, s)
		}
		if s == selector.StepEmbed {
			done, total = d, n
		}
	}}
	st := openStore(t, filepath.Join(t.TempDir(), "habilis.db"))
	r, err := selector.New(context.Background(), st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	tools := testCatalog(t)
	if _, err := r.Load(context.Background(), tools, selector.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []selector.Step{
		selector.StepRead, selector.StepIndex, // New
		selector.StepRead, selector.StepEmbed, selector.StepCalibrate, selector.StepCollisions, selector.StepIndex, selector.StepWrite,
	}
	if diff := cmp.Diff(want, steps); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	texts := 0
	for _, tool := range tools {
		texts += 2 + len(tool.Examples) // description, document, examples
	}
	if done != total || total != texts {
		t.Errorf("embedding reached %d of %d texts, want %d of %d", done, total, texts, texts)
	}

	// Loading it again changes nothing: it only reads the store.
	steps = nil
	if _, err := r.Load(context.Background(), tools, selector.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(steps, []selector.Step{selector.StepRead}) {
		t.Errorf("steps of an unchanged load = %v, want only %v", steps, selector.StepRead)
	}
}
