package openaiembed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/ollamatest"
	"github.com/habilis-router/habilis/internal/vec"
)

func TestMain(m *testing.M) { os.Exit(ollamatest.Main(m)) }

// model is the tiny embedding model ollamatest.EmbedServer registers on the
// real Ollama server, which serves /v1/embeddings too.
const model = ollamatest.TinyEmbedModel

func newEmbedder(tb testing.TB, opts Options) *Embedder {
	tb.Helper()
	e, err := New(opts)
	if err != nil {
		tb.Fatalf("New(%+v) error: %v", opts, err)
	}
	return e
}

// native embeds texts through Ollama's own /api/embed, as a reference.
func native(t *testing.T, s *ollamatest.Instance, texts []string) [][]float32 {
	t.Helper()
	resp, err := s.Client.Embed(context.Background(), &api.EmbedRequest{Model: model, Input: texts})
	if err != nil {
		t.Fatalf("/api/embed(%q) error: %v", texts, err)
	}
	return resp.Embeddings
}

func TestEmbedBatchesInOrder(t *testing.T) {
	s := ollamatest.EmbedServer(t)
	texts := make([]string, 40)
	for i := range texts {
		texts[i] = fmt.Sprintf("note %d about the weather in city %d", i, i*7)
	}
	got := ollamatest.Embed(t, newEmbedder(t, Options{BaseURL: s.Host, Model: model, BatchSize: 7, Concurrency: 3}), texts, habilis.Document)
	want := native(t, s, texts)
	for i := range texts {
		vec.Normalize(want[i])
		if d := vec.Dot(got[i].Dense, want[i]); d < 0.999 {
			t.Errorf("Embed(%d texts in batches of 7)[%d]·/api/embed(%q) = %v, want 1", len(texts), i, texts[i], d)
		}
		if i > 0 {
			if d := vec.Dot(got[i].Dense, got[i-1].Dense); d > 0.999 {
				t.Errorf("vectors %d and %d are equal (%v); the texts differ", i-1, i, d)
			}
		}
	}
}

func TestBaseURLForms(t *testing.T) {
	s := ollamatest.EmbedServer(t)
	for _, base := range []string{s.Host, s.Host + "/", s.Host + "/v1", s.Host + "/v1/"} {
		e := newEmbedder(t, Options{BaseURL: base, Model: model})
		if _, err := e.Embed(context.Background(), []string{"hello"}, habilis.Query); err != nil {
			t.Errorf("Embed() with base URL %q error: %v", base, err)
		}
	}
}

func TestDimensionAndNorm(t *testing.T) {
	s := ollamatest.EmbedServer(t)
	tests := []struct {
		dimensions int
		want       int
	}{
		{0, ollamatest.DefaultEmbedDim},
		{16, 16}, // Ollama shortens the vectors when asked
	}
	for _, tt := range tests {
		e := newEmbedder(t, Options{BaseURL: s.Host, Model: model, Dimensions: tt.dimensions})
		want := habilis.EmbedderInfo{Kind: "openai", Model: model, Dim: tt.dimensions}
		if got := e.Info(); got != want {
			t.Errorf("Info() before any call = %+v, want %+v", got, want)
		}
		want.Dim = tt.want
		if got, err := e.Probe(context.Background()); err != nil || got != want {
			t.Errorf("Probe() = %+v, %v, want %+v", got, err, want)
		}
		texts := []string{"hello", "What's the WEATHER like in Paris?", "日本語のテキスト"}
		for i, v := range ollamatest.Embed(t, e, texts, habilis.Document) {
			if len(v.Dense) != tt.want {
				t.Errorf("Embed(%q) with dimensions %d has dimension %d, want %d", texts[i], tt.dimensions, len(v.Dense), tt.want)
			}
			if n := vec.Norm(v.Dense); math.Abs(float64(n)-1) > 1e-5 {
				t.Errorf("Embed(%q) has norm %v, want 1", texts[i], n)
			}
		}
	}
}

func TestDimensionsMismatchRefused(t *testing.T) {
	s := ollamatest.EmbedServer(t)
	// The model cannot lengthen its vectors: the server answers with its
	// own dimension where twice as many were asked for.
	have, ask := ollamatest.DefaultEmbedDim, 2*ollamatest.DefaultEmbedDim
	e := newEmbedder(t, Options{BaseURL: s.Host, Model: model, Dimensions: ask})
	_, err := e.Embed(context.Background(), []string{"hello"}, habilis.Query)
	want := fmt.Sprintf("dimension %d for text 0, want %d", have, ask)
	if !errors.Is(err, habilis.ErrInvalid) || !strings.Contains(fmt.Sprint(err), want) {
		t.Errorf("Embed() with dimensions %d = %v, want ErrInvalid saying %q", ask, err, want)
	}
}

func TestDimensionChangeRefused(t *testing.T) {
	s := ollamatest.EmbedServer(t)
	ollamatest.CheckDimensionChange(t, s, func(name string) habilis.Embedder {
		return newEmbedder(t, Options{BaseURL: s.Host, Model: name})
	})
}

func TestParaphraseScoresHigher(t *testing.T) {
	s := ollamatest.EmbedServer(t)
	ollamatest.CheckParaphrases(t, newEmbedder(t, Options{BaseURL: s.Host, Model: model}))
}

func TestPrefixes(t *testing.T) {
	s := ollamatest.EmbedServer(t)
	e := newEmbedder(t, Options{BaseURL: s.Host, Model: model, QueryPrefix: "search query: ", DocumentPrefix: "search document: "})
	got := []habilis.Vector{
		ollamatest.Embed(t, e, []string{"weather in paris"}, habilis.Query)[0],
		ollamatest.Embed(t, e, []string{"weather in paris"}, habilis.Document)[0],
	}
	want := native(t, s, []string{"search query: weather in paris", "search document: weather in paris"})
	for i := range got {
		vec.Normalize(want[i])
		if d := vec.Dot(got[i].Dense, want[i]); d < 0.999 {
			t.Errorf("prefixed vector %d·its reference = %v, want 1", i, d)
		}
	}
}

func TestModelMissing(t *testing.T) {
	s := ollamatest.EmbedServer(t)
	e := newEmbedder(t, Options{BaseURL: s.Host, Model: "no-such-model"})
	_, err := e.Embed(context.Background(), []string{"hello"}, habilis.Query)
	prefix := fmt.Sprintf("embed with openai model no-such-model at %s: server refused the request: HTTP 404 Not Found: ", s.Host)
	// The rest is the server's own message, which names the model.
	if !errors.Is(err, habilis.ErrInvalid) || !strings.HasPrefix(fmt.Sprint(err), prefix) || !strings.Contains(strings.TrimPrefix(fmt.Sprint(err), prefix), "no-such-model") {
		t.Errorf("Embed() with a missing model = %v, want ErrInvalid starting %q and quoting the server's message", err, prefix)
	}
}

func TestServerDown(t *testing.T) {
	base := "http://" + ollamatest.ClosedAddr(t) + "/v1"
	e := newEmbedder(t, Options{BaseURL: base, Model: "text-embedding-3-small", Backoff: time.Millisecond})
	_, err := e.Embed(context.Background(), []string{"hello"}, habilis.Query)
	prefix := fmt.Sprintf("embed with openai model text-embedding-3-small at %s: server unreachable: ", base)
	if !errors.Is(err, habilis.ErrUnavailable) || !strings.HasPrefix(fmt.Sprint(err), prefix) || !strings.Contains(fmt.Sprint(err), "connection refused") {
		t.Errorf("Embed() with no server = %v, want ErrUnavailable starting %q and saying connection refused", err, prefix)
	}
}

func TestCancel(t *testing.T) {
	s := ollamatest.EmbedServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := newEmbedder(t, Options{BaseURL: s.Host, Model: model}).Embed(ctx, []string{"hello"}, habilis.Query)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Embed() with a cancelled context = %v, want context.Canceled", err)
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		opts         Options
		wantEndpoint string
		wantErr      error
	}{
		{Options{Model: "m"}, "https://api.openai.com/v1/embeddings", nil},
		{Options{Model: "m", BaseURL: "http://localhost:8080"}, "http://localhost:8080/v1/embeddings", nil},
		{Options{Model: "m", BaseURL: "http://localhost:8080/v1/"}, "http://localhost:8080/v1/embeddings", nil},
		{Options{Model: "m", BaseURL: "http://h/openai/v1"}, "http://h/openai/v1/embeddings", nil},
		{Options{}, "", habilis.ErrInvalid},
		{Options{Model: "m", Dimensions: -1}, "", habilis.ErrInvalid},
		{Options{Model: "m", BaseURL: "localhost:8080"}, "", habilis.ErrInvalid},
	}
	for _, tt := range tests {
		e, err := New(tt.opts)
		if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
			t.Errorf("New(%+v) = %v, want %v", tt.opts, err, tt.wantErr)
			continue
		}
		if err == nil && e.endpoint != tt.wantEndpoint {
			t.Errorf("New(%+v) posts to %q, want %q", tt.opts, e.endpoint, tt.wantEndpoint)
		}
	}
}
