package openaiembed

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/ollamatest"
)

// BenchmarkEmbed1000 embeds 1,000 catalog examples per op through Ollama's
// /v1/embeddings with the default batching (64 texts per request, 2 in
// flight).
func BenchmarkEmbed1000(b *testing.B) {
	s := server(b)
	e := newEmbedder(b, Options{BaseURL: s.Host, Model: model})
	texts := ollamatest.BenchExamples(1000)
	ollamatest.BenchEmbed(b, e, texts, habilis.Document)
	b.ReportMetric(float64(len(texts)*b.N)/b.Elapsed().Seconds(), "examples/s")
}

// BenchmarkQuery is the latency of embedding one query through the
// embedder; BenchmarkQueryRaw posts the same request with bare net/http, so
// their difference is the embedder's own cost.
func BenchmarkQuery(b *testing.B) {
	s := server(b)
	e := newEmbedder(b, Options{BaseURL: s.Host, Model: model})
	ollamatest.BenchEmbed(b, e, []string{ollamatest.BenchQuery}, habilis.Query)
}

func BenchmarkQueryRaw(b *testing.B) {
	s := server(b)
	body, _ := json.Marshal(request{Model: model, Input: []string{ollamatest.BenchQuery}})
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
