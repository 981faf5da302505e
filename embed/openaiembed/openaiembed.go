// Package openaiembed is a habilis.Embedder backed by any server with an
// OpenAI-compatible embeddings endpoint: OpenAI itself, llama.cpp's server,
// vLLM, text-embeddings-inference, LM Studio, Ollama.
package openaiembed

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/embedutil"
)

// DefaultBaseURL is OpenAI's API.
const DefaultBaseURL = "https://api.openai.com/v1"

// maxErrorBody bounds how much of an error answer is read for its message.
const maxErrorBody = 64 << 10

// Options configure an Embedder. Only Model is required.
type Options struct {
	// BaseURL is the server's base URL; "" means DefaultBaseURL. Requests
	// go to BaseURL + "/v1/embeddings", or BaseURL + "/embeddings" when it
	// already ends in "/v1".
	BaseURL string
	// Model is the model name the server knows ("text-embedding-3-small").
	Model string
	// APIKey, when set, is sent as a bearer token.
	APIKey string
	// Dimensions, when positive, asks models that can shorten their
	// vectors for this many dimensions (sent as "dimensions"), and every
	// vector must have it; 0 means the model's own, found on first use.
	Dimensions int
	// BatchSize is the most texts per request; 0 means 64.
	BatchSize int
	// Concurrency is the most requests in flight per Embed call; 0 means 2.
	Concurrency int
	// Timeout bounds each request; 0 means 60s.
	Timeout time.Duration
	// Retries is how many times a request is sent again after a transient
	// failure (unreachable server, HTTP 5xx or 429, timeout), with
	// exponential backoff and jitter, honouring Retry-After; 0 means 3,
	// negative means never.
	Retries int
	// Backoff is the wait before the first retry; 0 means 200ms.
	Backoff time.Duration
	// HTTPClient sends the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// QueryPrefix and DocumentPrefix are prepended to query and document
	// texts, for models trained with instructions. Changing them changes the
	// vectors: re-index the catalog.
	QueryPrefix    string
	DocumentPrefix string
}

// Embedder embeds texts through an OpenAI-compatible server. It is safe for
// concurrent use.
//
// Its Info, Probe and Embed are embedutil.Model's: Info reports Kind
// "openai", the model and its dimension (Dimensions when set, else 0 until
// the first Embed or Probe); Probe embeds one short text to learn the
// dimension, checking on the way that the server answers and serves the
// model; Embed returns one unit vector per text, in order. Embed returns
// ErrUnavailable when the server cannot be reached or keeps failing, and
// ErrInvalid when the server refuses the request (unknown model, bad key),
// answers malformed, or answers with vectors of another dimension than
// before or than Dimensions.
type Embedder struct {
	*embedutil.Model
	opts     Options
	endpoint string
	http     *http.Client
}

var _ habilis.Embedder = (*Embedder)(nil)

// New returns an Embedder for opts. It does no I/O. It returns ErrInvalid
// for a missing model, a malformed base URL or negative dimensions.
func New(opts Options) (*Embedder, error) {
	if opts.Model == "" {
		return nil, fmt.Errorf("no model: %w", habilis.ErrInvalid)
	}
	if opts.Dimensions < 0 {
		return nil, fmt.Errorf("dimensions %d: %w", opts.Dimensions, habilis.ErrInvalid)
	}
	if opts.BaseURL == "" {
		opts.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(opts.BaseURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("base URL %q: want a URL like %s: %w", opts.BaseURL, DefaultBaseURL, habilis.ErrInvalid)
	}
	base := strings.TrimSuffix(u.String(), "/")
	opts.BaseURL = base
	endpoint := base + "/v1/embeddings"
	if strings.HasSuffix(base, "/v1") {
		endpoint = base + "/embeddings"
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	e := &Embedder{opts: opts, endpoint: endpoint, http: hc}
	batch := embedutil.Options{BatchSize: opts.BatchSize, Concurrency: opts.Concurrency, Timeout: opts.Timeout, Retries: opts.Retries,
		Backoff: opts.Backoff, Dim: opts.Dimensions}
	e.Model = embedutil.NewModel(embedutil.ModelOptions{Kind: "openai", Model: opts.Model, Where: opts.BaseURL,
		QueryPrefix: opts.QueryPrefix, DocumentPrefix: opts.DocumentPrefix, Batch: batch}, e.send)
	return e, nil
}

type request struct {
	Model      string   `json:"model"`
	Input      []string `json:"input"`
	Dimensions int      `json:"dimensions,omitempty"`
}

type response struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

// send is one POST to the embeddings endpoint.
func (e *Embedder) send(ctx context.Context, texts []string) ([][]float32, error) {
	body, err := json.Marshal(request{Model: e.opts.Model, Input: texts, Dimensions: e.opts.Dimensions})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if e.opts.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.opts.APIKey)
	}
	resp, err := e.http.Do(req)
	if err != nil {
		return nil, embedutil.Unreachable(err)
	}
	defer resp.Body.Close()

	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return nil, embedutil.Status(resp.StatusCode, errorMessage(b), embedutil.RetryAfter(resp.Header, time.Now()))
	}
	var r response
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, embedutil.Mark(fmt.Errorf("malformed answer from %s: %w", e.endpoint, err), habilis.ErrInvalid)
	}
	if len(r.Data) != len(texts) {
		return nil, embedutil.Mark(fmt.Errorf("malformed answer from %s: %d vectors for %d texts", e.endpoint, len(r.Data), len(texts)), habilis.ErrInvalid)
	}
	// Servers may answer out of order; index says which text each vector
	// belongs to.
	sort.SliceStable(r.Data, func(i, j int) bool { return r.Data[i].Index < r.Data[j].Index })
	out := make([][]float32, len(r.Data))
	for i, d := range r.Data {
		if d.Index != i {
			return nil, embedutil.Mark(fmt.Errorf("malformed answer from %s: indices are not 0 to %d", e.endpoint, len(texts)-1), habilis.ErrInvalid)
		}
		out[i] = d.Embedding
	}
	return out, nil
}

// errorMessage extracts the message of an error answer: OpenAI's
// {"error": {"message": ...}}, the {"error": "..."} of some servers, or the
// body itself.
func errorMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &v) == nil {
		var obj struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &obj) == nil && obj.Message != "":
			return obj.Message
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return s
		case v.Message != "":
			return v.Message
		}
	}
	const max = 512
	s := strings.TrimSpace(string(body))
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}
