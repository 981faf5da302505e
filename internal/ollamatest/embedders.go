package ollamatest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/vec"
)

// The helpers below test and benchmark every model embedder alike with the
// tiny embedding model, whichever of the server's APIs it speaks; each
// embedder's tests call them.

// Embed returns e's vectors of texts, failing tb when Embed fails or
// returns another number of vectors.
func Embed(tb testing.TB, e habilis.Embedder, texts []string, p habilis.Purpose) []habilis.Vector {
	tb.Helper()
	vs, err := e.Embed(context.Background(), texts, p)
	if err != nil {
		tb.Fatalf("Embed(%q) error: %v", texts, err)
	}
	if len(vs) != len(texts) {
		tb.Fatalf("Embed(%q) returned %d vectors, want %d", texts, len(vs), len(texts))
	}
	return vs
}

// CheckParaphrases checks that e, an embedder of a model CreateEmbedModel
// registered, scores a request well higher against its paraphrase than
// against an unrelated text.
func CheckParaphrases(t *testing.T, e habilis.Embedder) {
	t.Helper()
	tests := []struct {
		query, paraphrase, unrelated string
	}{
		{"what is the weather in paris", "weather forecast for paris today", "send an email to my boss"},
		{"play a song by my favourite band", "play music songs", "convert currency from euro to dollar"},
		{"remind me to call mom tomorrow", "set a reminder for tomorrow", "find flights to tokyo"},
	}
	for _, tt := range tests {
		q := Embed(t, e, []string{tt.query}, habilis.Query)[0]
		d := Embed(t, e, []string{tt.paraphrase, tt.unrelated}, habilis.Document)
		para, unrelated := vec.Dot(q.Dense, d[0].Dense), vec.Dot(q.Dense, d[1].Dense)
		if para <= unrelated+0.2 {
			t.Errorf("%q scores %.3f with paraphrase %q and %.3f with unrelated %q, want the paraphrase well above", tt.query, para, tt.paraphrase, unrelated, tt.unrelated)
		}
	}
}

// CheckDimensionChange registers a model of dimension 32 on s and embeds a
// text with embedderOf(its name).
func CheckDimensionChange(t *testing.T, s *Instance, embedderOf func(model string) habilis.Embedder) {
	t.Helper()
	const swapped = "habilis-tiny-embed-swapped"
	CreateEmbedModel(t, s.Client, swapped, 32)
	e := embedderOf(swapped)
	Embed(t, e, []string{"hello"}, habilis.Query)

	// The server's model is replaced by one of another dimension under the
	// same name: vectors from the two cannot be compared, so the embedder
	// refuses the new ones and keeps the dimension it had.
	CreateEmbedModel(t, s.Client, swapped, 48)
	_, err := e.Embed(context.Background(), []string{"hello"}, habilis.Query)
	if !errors.Is(err, habilis.ErrInvalid) || !strings.Contains(fmt.Sprint(err), "dimension 48 for text 0, want 32") {
		t.Errorf("Embed() after the model changed dimension = %v, want ErrInvalid naming dimensions 48 and 32", err)
	}
	if got := e.Info().Dim; got != 32 {
		t.Errorf("Info().Dim = %d, want 32", got)
	}
}

// BenchQuery is the request the model embedders' latency benchmarks embed,
// through the embedder and through a bare request; it and BenchExamples are
// the same for every embedder so that their figures compare.
const BenchQuery = "what is the weather like in paris tomorrow"

// BenchExamples returns n texts like a catalog's examples, each different.
func BenchExamples(n int) []string {
	texts := make([]string, n)
	for i := range texts {
		texts[i] = fmt.Sprintf("example %d: what is the weather like in city %d tomorrow", i, i*7)
	}
	return texts
}

// BenchEmbed measures e embedding texts for purpose p, once per op, after a
// first call that loads the model.
func BenchEmbed(b *testing.B, e habilis.Embedder, texts []string, p habilis.Purpose) {
	b.Helper()
	ctx := context.Background()
	Embed(b, e, texts[:1], p) // loads the model
	for b.Loop() {
		if _, err := e.Embed(ctx, texts, p); err != nil {
			b.Fatal(err)
		}
	}
}
