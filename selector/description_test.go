package selector_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/memstore"
)

// recordingEmbedder is testutil.HashEmbedder keeping every text it is asked for.
type recordingEmbedder struct {
	testutil.HashEmbedder
	mu    sync.Mutex
	texts []string
}

func (e *recordingEmbedder) Embed(ctx context.Context, texts []string, p habilis.Purpose) ([]habilis.Vector, error) {
	e.mu.Lock()
	e.texts = append(e.texts, texts...)
	e.mu.Unlock()
	return e.HashEmbedder.Embed(ctx, texts, p)
}

func (e *recordingEmbedder) take() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.texts
	e.texts = nil
	return t
}

// TestModelDescriptionVector checks what a model embeds for a tool's
// description vector: its name and description without the arguments,
// and of a description over 50 words its first sentence; and that a
// change to an argument alone does not re-embed it.
func TestModelDescriptionVector(t *testing.T) {
	notes := strings.Repeat("Usage notes that say how to call it well. ", 8) // 72 words
	schema := func(pathDoc string) json.RawMessage {
		return json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"` + pathDoc + `"}}}`)
	}
	tools := []habilis.Tool{
		{Name: "read_file", Description: "Read a file. It returns the contents.", InputSchema: schema("Path of the file")},
		{Name: "search_code", Description: "Search code in a repository. " + notes},
		{Name: "ping"},
	}
	want := map[string]string{
		"read_file":   "read_file. Read a file. It returns the contents.",
		"search_code": "search_code. Search code in a repository",
		"ping":        "ping",
	}
	ctx := context.Background()
	emb := &recordingEmbedder{HashEmbedder: testutil.HashEmbedder{Dim: 32}}
	r, err := selector.New(ctx, memstore.New(), selector.Config{Embedder: emb, Lexical: lexical.New(lexical.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Load(ctx, tools, selector.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	recs, err := r.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		text, ok := want[rec.Tool.Name]
		if !ok {
			t.Fatalf("record of %q, want only %v", rec.Tool.Name, want)
		}
		v, _ := testutil.HashEmbedder{Dim: 32}.Embed(ctx, []string{text}, habilis.Document)
		if diff := cmp.Diff(v[0].Dense, rec.DescriptionVector.Dense); diff != "" {
			t.Errorf("%s: description vector is not the embedding of %q (-want +got):\n%s", rec.Tool.Name, text, diff)
		}
	}
	sent := emb.take()
	for _, text := range want {
		if !slices.Contains(sent, text) {
			t.Errorf("the model was not asked for %q (asked for %q)", text, sent)
		}
	}

	// An argument's description is the lexical signal's, not the model's.
	tools[0].InputSchema = schema("Where the file lies")
	rep, err := r.Load(ctx, tools, selector.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Updated, []string{"read_file"}) {
		t.Fatalf("second load: %+v, want read_file updated", rep)
	}
	for _, text := range emb.take() {
		if strings.Contains(text, "read_file") {
			t.Errorf("second load asked the model for %q, want read_file's description vector reused", text)
		}
	}
}
