package openaiembed

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

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

// BenchmarkEmbed1000 embeds 1,000 catalog examples per op through Ollama's
// /v1/embeddings with the default batching (64 texts per request, 2 in
// flight).
func BenchmarkEmbed1000(b *testing.B) {
	s := ollamatest.Server(b)
	ollamatest.CreateEmbedModel(b, s.Client, model, 0)
	e, err := New(Options{BaseURL: s.Host, Model: model})
	if err != nil {
		b.Fatal(err)
	}
	texts := benchTexts(1000)
	ctx := context.Background()
	if _, err := e.Probe(ctx); err != nil {
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
// embedder; BenchmarkQueryRaw posts the same request with bare net/http, so
// their difference is the embedder's own cost.
func BenchmarkQuery(b *testing.B) {
	s := ollamatest.Server(b)
	ollamatest.CreateEmbedModel(b, s.Client, model, 0)
	e, err := New(Options{BaseURL: s.Host, Model: model})
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
	body, _ := json.Marshal(request{Model: model, Input: []string{"what is the weather like in paris tomorrow"}})
	post := func() {
		resp, err := http.Post(s.Host+"/v1/embeddings", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("POST /v1/embeddings: %s", resp.Status)
		}
	}
	post()
	for b.Loop() {
		post()
	}
}
