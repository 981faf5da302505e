package ollamaembed

import (
	"context"
	"testing"

	"github.com/ollama/ollama/api"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/ollamatest"
)

// BenchmarkEmbed1000 embeds 1,000 catalog examples per op with the default
// batching (64 texts per request, 2 in flight).
func BenchmarkEmbed1000(b *testing.B) {
	s := ollamatest.EmbedServer(b)
	e := newEmbedder(b, Options{Host: s.Host, Model: model})
	texts := ollamatest.BenchExamples(1000)
	ollamatest.BenchEmbed(b, e, texts, habilis.Document)
	b.ReportMetric(float64(len(texts)*b.N)/b.Elapsed().Seconds(), "examples/s")
}

// BenchmarkQuery is the latency of embedding one query through the
// embedder; BenchmarkQueryRaw is the same request through the bare client,
// so their difference is the embedder's own cost.
func BenchmarkQuery(b *testing.B) {
	s := ollamatest.EmbedServer(b)
	e := newEmbedder(b, Options{Host: s.Host, Model: model})
	ollamatest.BenchEmbed(b, e, []string{ollamatest.BenchQuery}, habilis.Query)
}

func BenchmarkQueryRaw(b *testing.B) {
	s := ollamatest.EmbedServer(b)
	ctx := context.Background()
	req := &api.EmbedRequest{Model: model, Input: []string{ollamatest.BenchQuery}}
	if _, err := s.Client.Embed(ctx, req); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.Client.Embed(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}
