package ollamaembed

import (
	"context"
	"fmt"
	"testing"

	"github.com/ollama/ollama/api"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/ollamatest"
)

func benchTexts(n int) []string {
	texts := make([]string, n)
	for i := range texts {
		texts[i] = fmt.Sprintf("example %d: what is the weather like in city %d tomorrow", i, i*7)
	}
	return texts
}

// BenchmarkEmbed1000 embeds 1,000 catalog examples per op with the default
// batching (64 texts per request, 2 in flight).
func BenchmarkEmbed1000(b *testing.B) {
	s := ollamatest.Server(b)
	ollamatest.CreateEmbedModel(b, s.Client, model, 0)
	e, err := New(Options{Host: s.Host, Model: model})
	if err != nil {
		b.Fatal(err)
	}
	texts := benchTexts(1000)
	ctx := context.Background()
	if _, err := e.Probe(ctx); err != nil { // loads the model
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := e.Embed(ctx, texts, habilis.Document); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(texts)*b.N)/b.Elapsed().Seconds(), "examples/s")
}

// BenchmarkQuery is the latency of embedding one query through the
// embedder; BenchmarkQueryRaw is the same request through the bare client,
// so their difference is the embedder's own cost.
func BenchmarkQuery(b *testing.B) {
	s := ollamatest.Server(b)
	ollamatest.CreateEmbedModel(b, s.Client, model, 0)
	e, err := New(Options{Host: s.Host, Model: model})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	q := []string{"what is the weather like in paris tomorrow"}
	if _, err := e.Probe(ctx); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := e.Embed(ctx, q, habilis.Query); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkQueryRaw(b *testing.B) {
	s := ollamatest.Server(b)
	ollamatest.CreateEmbedModel(b, s.Client, model, 0)
	ctx := context.Background()
	req := &api.EmbedRequest{Model: model, Input: []string{"what is the weather like in paris tomorrow"}}
	if _, err := s.Client.Embed(ctx, req); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.Client.Embed(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}
