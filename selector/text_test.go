package selector

import (
	"context"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/embed/lexical"
)

// A held-out document leaves out exactly its example: a word only that
// example has scores nothing against it, and every other example's words
// still do.
func TestHeldOutDocumentsLeaveOutTheirExample(t *testing.T) {
	ctx := context.Background()
	tool := habilis.Tool{Name: "get_weather", Description: "Current weather for a city.",
		Examples: []string{"is it raining in zanzibar", "weather in quito", "how warm is it in tromso"}}
	lex := lexical.New(lexical.Options{CharWeight: -1, BigramWeight: -1})
	docs := heldOutDocuments(ctx, lex, tool)
	if len(docs) != len(tool.Examples) {
		t.Fatalf("got %d held-out documents for %d examples", len(docs), len(tool.Examples))
	}
	unique := []string{"zanzibar", "quito", "tromso"}
	for k, d := range docs {
		for j, w := range unique {
			vs, err := lex.Embed(ctx, []string{w}, habilis.Query)
			if err != nil {
				t.Fatal(err)
			}
			got := dot(d, vs[0])
			if j == k && got != 0 {
				t.Errorf("document without example %d still scores %q: %v", k, w, got)
			}
			if j != k && got <= 0 {
				t.Errorf("document without example %d lost %q (score %v)", k, w, got)
			}
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if got := heldOutDocuments(cancelled, lex, tool); got != nil {
		t.Errorf("heldOutDocuments with a cancelled context = %d vectors, want nil", len(got))
	}
}
