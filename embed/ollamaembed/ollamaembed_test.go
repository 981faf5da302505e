package ollamaembed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/ollamatest"
	"github.com/habilis-router/habilis/internal/vec"
)

func TestMain(m *testing.M) { os.Exit(ollamatest.Main(m)) }

// model is the tiny embedding model ollamatest.EmbedServer registers; its
// dimension is ollamatest.DefaultEmbedDim.
const model = ollamatest.TinyEmbedModel

func newEmbedder(tb testing.TB, opts Options) *Embedder {
	tb.Helper()
	e, err := New(opts)
	if err != nil {
		tb.Fatalf("New(%+v) error: %v", opts, err)
	}
	return e
}

func TestEmbedBatchesInOrder(t *testing.T) {
	s := ollamatest.EmbedServer(t)
	texts := make([]string, 40)
	for i := range texts {
		texts[i] = fmt.Sprintf("note %d about the weather in city %d", i, i*7)
	}
	batched := ollamatest.Embed(t, newEmbedder(t, Options{Host: s.Host, Model: model, BatchSize: 7, Concurrency: 3}), texts, habilis.Document)
	one := newEmbedder(t, Options{Host: s.Host, Model: model})
	for i, text := range texts {
		alone := ollamatest.Embed(t, one, []string{text}, habilis.Document)[0]
		if got := vec.Dot(batched[i].Dense, alone.Dense); got < 0.999 {
			t.Errorf("Embed(%d texts in batches of 7)[%d]·Embed(%q) = %v, want 1", len(texts), i, text, got)
		}
		if i > 0 {
			if got := vec.Dot(batched[i].Dense, batched[i-1].Dense); got > 0.999 {
				t.Errorf("vectors %d and %d are equal (%v); the texts differ", i-1, i, got)
			}
		}
	}
}

func TestDimensionAndNorm(t *testing.T) {
	s := ollamatest.EmbedServer(t)
	ollamatest.CreateEmbedModel(t, s.Client, "habilis-tiny-embed-24", 24)
	tests := []struct {
		model string
		dim   int
	}{
		{model, ollamatest.DefaultEmbedDim},
		{"habilis-tiny-embed-24", 24},
	}
	for _, tt := range tests {
		e := newEmbedder(t, Options{Host: s.Host, Model: tt.model})
		want := habilis.EmbedderInfo{Kind: "ollama", Model: tt.model}
		if got := e.Info(); got != want {
			t.Errorf("Info() before any call = %+v, want %+v", got, want)
		}
		want.Dim = tt.dim
		got, err := e.Probe(context.Background())
		if err != nil || got != want {
			t.Errorf("Probe() = %+v, %v, want %+v", got, err, want)
		}
		if got := e.Info(); got != want {
			t.Errorf("Info() after Probe = %+v, want %+v", got, want)
		}
		texts := []string{"hello", "What's the WEATHER like in Paris?", "日本語のテキスト", "x"}
		for i, v := range ollamatest.Embed(t, e, texts, habilis.Query) {
			if len(v.Dense) != tt.dim {
				t.Errorf("Embed(%q) has dimension %d, want %d", texts[i], len(v.Dense), tt.dim)
			}
			if n := vec.Norm(v.Dense); math.Abs(float64(n)-1) > 1e-5 {
				t.Errorf("Embed(%q) has norm %v, want 1", texts[i], n)
			}
		}
	}
}

func TestParaphraseScoresHigher(t *testing.T) {
	s := ollamatest.EmbedServer(t)
	ollamatest.CheckParaphrases(t, newEmbedder(t, Options{Host: s.Host, Model: model}))
}

func TestPrefixes(t *testing.T) {
	s := ollamatest.EmbedServer(t)
	plain := newEmbedder(t, Options{Host: s.Host, Model: model})
	prefixed := newEmbedder(t, Options{Host: s.Host, Model: model, QueryPrefix: "search query: ", DocumentPrefix: "search document: "})
	for _, p := range []habilis.Purpose{habilis.Query, habilis.Document} {
		prefix := map[habilis.Purpose]string{habilis.Query: "search query: ", habilis.Document: "search document: "}[p]
		got := ollamatest.Embed(t, prefixed, []string{"weather in paris"}, p)[0]
		want := ollamatest.Embed(t, plain, []string{prefix + "weather in paris"}, p)[0]
		if d := vec.Dot(got.Dense, want.Dense); d < 0.999 {
			t.Errorf("purpose %d: prefixed Embed(%q)·Embed(%q) = %v, want 1", p, "weather in paris", prefix+"weather in paris", d)
		}
	}
}

func TestModelMissing(t *testing.T) {
	s := ollamatest.EmbedServer(t)
	e := newEmbedder(t, Options{Host: s.Host, Model: "no-such-model"})
	_, err := e.Embed(context.Background(), []string{"hello"}, habilis.Query)
	want := fmt.Sprintf(`embed with ollama model no-such-model at %s: model "no-such-model" not found; pull it with: ollama pull no-such-model`, s.Host)
	if !errors.Is(err, habilis.ErrInvalid) || fmt.Sprint(err) != want {
		t.Errorf("Embed() with a missing model = %v, want ErrInvalid %q", err, want)
	}
}

func TestTruncate(t *testing.T) {
	s := ollamatest.EmbedServer(t)
	long := strings.Repeat("weather ", 600) // more tokens than the model's 512
	no := false
	_, err := newEmbedder(t, Options{Host: s.Host, Model: model, Truncate: &no}).Embed(context.Background(), []string{long}, habilis.Document)
	if !errors.Is(err, habilis.ErrInvalid) || !strings.Contains(err.Error(), "context length") {
		t.Errorf("Embed(600 words) with Truncate false = %v, want ErrInvalid about the context length", err)
	}
	ollamatest.Embed(t, newEmbedder(t, Options{Host: s.Host, Model: model}), []string{long}, habilis.Document)
}

func TestServerDown(t *testing.T) {
	host := "http://" + ollamatest.ClosedAddr(t)
	e := newEmbedder(t, Options{Host: host, Model: "nomic-embed-text", Backoff: time.Millisecond})
	_, err := e.Embed(context.Background(), []string{"hello"}, habilis.Query)
	prefix := fmt.Sprintf("embed with ollama model nomic-embed-text at %s: server unreachable: ", host)
	if !errors.Is(err, habilis.ErrUnavailable) || !strings.HasPrefix(fmt.Sprint(err), prefix) || !strings.Contains(fmt.Sprint(err), "connection refused") {
		t.Errorf("Embed() with no server = %v, want ErrUnavailable starting %q and saying connection refused", err, prefix)
	}
	if got := e.Info().Dim; got != 0 {
		t.Errorf("Info().Dim after a failure = %d, want 0", got)
	}
}

// cancelAfter is a transport that cancels a context once the first request
// has been answered (or has failed), then stays out of the way.
type cancelAfter struct {
	cancel context.CancelFunc
	sent   int
}

func (c *cancelAfter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.sent++
	defer c.cancel()
	return http.DefaultTransport.RoundTrip(r)
}

func TestCancel(t *testing.T) {
	s := ollamatest.EmbedServer(t)
	texts := []string{"weather in paris", "weather in rome"}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := newEmbedder(t, Options{Host: s.Host, Model: model}).Embed(ctx, texts, habilis.Query)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Embed() with a cancelled context = %v, want context.Canceled", err)
	}

	// Cancelled between batches: the first batch's answer arrives, the
	// second is never sent.
	ctx, cancel = context.WithCancel(context.Background())
	tr := &cancelAfter{cancel: cancel}
	e := newEmbedder(t, Options{Host: s.Host, Model: model, BatchSize: 1, Concurrency: 1, HTTPClient: &http.Client{Transport: tr}})
	if _, err := e.Embed(ctx, texts, habilis.Query); !errors.Is(err, context.Canceled) || tr.sent != 1 {
		t.Errorf("Embed() cancelled after the first batch = %v after %d requests, want context.Canceled after 1", err, tr.sent)
	}

	// Cancelled while waiting to retry an unreachable server.
	ctx, cancel = context.WithCancel(context.Background())
	tr = &cancelAfter{cancel: cancel}
	e = newEmbedder(t, Options{Host: ollamatest.ClosedAddr(t), Model: model, Backoff: time.Hour, HTTPClient: &http.Client{Transport: tr}})
	if _, err := e.Embed(ctx, texts, habilis.Query); !errors.Is(err, context.Canceled) || tr.sent != 1 {
		t.Errorf("Embed() cancelled while backing off = %v after %d requests, want context.Canceled after 1", err, tr.sent)
	}
}

func TestDimensionChangeRefused(t *testing.T) {
	s := ollamatest.EmbedServer(t)
	ollamatest.CheckDimensionChange(t, s, func(name string) habilis.Embedder {
		return newEmbedder(t, Options{Host: s.Host, Model: name})
	})
}

func TestNew(t *testing.T) {
	tests := []struct {
		opts     Options
		wantHost string
		wantErr  error
	}{
		{Options{Model: "m"}, DefaultHost, nil},
		{Options{Model: "m", Host: "gpu-box:11434"}, "http://gpu-box:11434", nil},
		{Options{Model: "m", Host: "https://ollama.example.com/"}, "https://ollama.example.com", nil},
		{Options{}, "", habilis.ErrInvalid},
		{Options{Model: "m", Host: "ftp://x"}, "", habilis.ErrInvalid},
		{Options{Model: "m", Host: "http://"}, "", habilis.ErrInvalid},
	}
	for _, tt := range tests {
		e, err := New(tt.opts)
		if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
			t.Errorf("New(%+v) = %v, want %v", tt.opts, err, tt.wantErr)
			continue
		}
		if err == nil && e.opts.Host != tt.wantHost {
			t.Errorf("New(%+v) uses host %q, want %q", tt.opts, e.opts.Host, tt.wantHost)
		}
	}
}

func TestEmbedNothingOrBadPurpose(t *testing.T) {
	// Neither call reaches the (absent) server.
	e := newEmbedder(t, Options{Host: ollamatest.ClosedAddr(t), Model: model, Retries: -1})
	if vs, err := e.Embed(context.Background(), nil, habilis.Query); err != nil || len(vs) != 0 {
		t.Errorf("Embed(nil) = %v, %v, want no vectors and no error", vs, err)
	}
	if _, err := e.Embed(context.Background(), []string{"x"}, habilis.Purpose(7)); !errors.Is(err, habilis.ErrInvalid) {
		t.Errorf("Embed(purpose 7) = %v, want ErrInvalid", err)
	}
}
