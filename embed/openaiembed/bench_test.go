package openaiembed

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/ollamatest"
)

// BenchmarkEmbed1000 embeds 1,000 catalog examples per op through Ollama's
// /v1/embeddings with the default batching (64 texts per request, 2 in
// flight).
func BenchmarkEmbed1000(b *testing.B) {
	s := ollamatest.EmbedServer(b)
	e := newEmbedder(b, Options{BaseURL: s.Host, Model: model})
	texts := ollamatest.BenchExamples(1000)
	ollamatest.BenchEmbed(b, e, texts, habilis.Document)
	b.ReportMetric(float64(len(texts)*b.N)/b.Elapsed().Seconds(), "examples/s")
}

// BenchmarkQuery is the latency of embedding one query through the
// embedder; BenchmarkQueryRaw posts the same request with bare net/http, so
// their difference is the embedder's own cost.
func BenchmarkQuery(b *testing.B) {
	s := ollamatest.EmbedServer(b)
	e := newEmbedder(b, Options{BaseURL: s.Host, Model: model})
	ollamatest.BenchEmbed(b, e, []string{ollamatest.BenchQuery}, habilis.Query)
}

func BenchmarkQueryRaw(b *testing.B) {
	s := ollamatest.EmbedServer(b)
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

// BenchmarkServer embeds 256 catalog examples per op through the
// OpenAI-compatible server at HABILIS_OPENAI_BASEURL, serving the model
// HABILIS_OPENAI_MODEL, batched as the embedder does by default and one
// text a request: what batching gains on a real model server. It skips
// without them, e.g.:
//
//	HABILIS_OPENAI_BASEURL=http://127.0.0.1:11500/v1 HABILIS_OPENAI_MODEL=use-lite \
//	  go test -run XXX -bench Server -benchtime 2x ./embed/openaiembed
func BenchmarkServer(b *testing.B) {
	base, model := os.Getenv("HABILIS_OPENAI_BASEURL"), os.Getenv("HABILIS_OPENAI_MODEL")
	if base == "" || model == "" {
		b.Skip("set HABILIS_OPENAI_BASEURL and HABILIS_OPENAI_MODEL to measure a model server")
	}
	texts := ollamatest.BenchExamples(256)
	for _, bc := range []struct {
		name               string
		batch, concurrency int
	}{
		{"batch=64,concurrency=2", 0, 0},
		{"batch=1,concurrency=1", 1, 1},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := newEmbedder(b, Options{BaseURL: base, Model: model, BatchSize: bc.batch, Concurrency: bc.concurrency})
			ollamatest.BenchEmbed(b, e, texts, habilis.Document)
			b.ReportMetric(float64(len(texts)*b.N)/b.Elapsed().Seconds(), "examples/s")
		})
	}
}
