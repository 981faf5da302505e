// Package ollamaembed is a habilis.Embedder backed by an Ollama server's
// /api/embed endpoint.
package ollamaembed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/embedutil"
)

// DefaultHost is where Ollama listens unless told otherwise.
const DefaultHost = "http://127.0.0.1:11434"

// Options configure an Embedder. Only Model is required.
type Options struct {
	// Host is the server's base URL; "" means DefaultHost. A host without
	// a scheme ("gpu-box:11434") means http.
	Host string
	// Model is the embedding model, as Ollama names it
	// ("nomic-embed-text", "all-minilm:l6-v2").
	Model string
	// BatchSize is the most texts per request; 0 means 64.
	BatchSize int
	// Concurrency is the most requests in flight per Embed call; 0 means 2.
	Concurrency int
	// Timeout bounds each request, including the model's load on first
	// use; 0 means 60s.
	Timeout time.Duration
	// Retries is how many times a request is sent again after a transient
	// failure (unreachable server, HTTP 5xx or 429, timeout), with
	// exponential backoff and jitter; 0 means 3, negative means never.
	Retries int
	// Backoff is the wait before the first retry; 0 means 200ms.
	Backoff time.Duration
	// KeepAlive is how long the server keeps the model loaded after a
	// request; 0 means the server's default (5 minutes), negative means
	// until the server stops.
	KeepAlive time.Duration
	// Truncate, when set, says whether the server may cut texts longer
	// than the model's context (nil means the server's default: it does);
	// when false such texts fail with ErrInvalid.
	Truncate *bool
	// HTTPClient sends the requests; nil means http.DefaultClient.
	// Timeout applies on top of the client's own.
	HTTPClient *http.Client
	// QueryPrefix and DocumentPrefix are prepended to query and document
	// texts, for models trained with instructions (nomic-embed-text's
	// "search_query: " and "search_document: "). Changing them changes the
	// vectors: re-index the catalog.
	QueryPrefix    string
	DocumentPrefix string
}

// Embedder embeds texts with an Ollama model. It is safe for concurrent use.
//
// Its Info, Probe and Embed are embedutil.Model's: Info reports Kind
// "ollama", the model and its dimension (0 until the first Embed or Probe);
// Probe embeds one short text to learn the dimension, checking on the way
// that the server answers and serves the model; Embed returns one unit
// vector per text, in order. Embed returns ErrUnavailable when the server
// cannot be reached or keeps failing, and ErrInvalid when the model is
// missing, cannot embed, or answers with vectors of another dimension than
// before.
type Embedder struct {
	*embedutil.Model
	opts   Options
	client *api.Client
}

var _ habilis.Embedder = (*Embedder)(nil)

// New returns an Embedder for opts. It does no I/O: the dimension is found
// by the first Embed or by Probe. It returns ErrInvalid for a missing model
// or a malformed host.
func New(opts Options) (*Embedder, error) {
	if opts.Model == "" {
		return nil, fmt.Errorf("no model: %w", habilis.ErrInvalid)
	}
	if opts.Host == "" {
		opts.Host = DefaultHost
	}
	if !strings.Contains(opts.Host, "://") {
		opts.Host = "http://" + opts.Host
	}
	u, err := url.Parse(opts.Host)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("host %q: want a URL like %s: %w", opts.Host, DefaultHost, habilis.ErrInvalid)
	}
	opts.Host = strings.TrimSuffix(u.String(), "/")
	hc := opts.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	e := &Embedder{opts: opts, client: api.NewClient(u, hc)}
	batch := embedutil.Options{BatchSize: opts.BatchSize, Concurrency: opts.Concurrency, Timeout: opts.Timeout, Retries: opts.Retries, Backoff: opts.Backoff}
	e.Model = embedutil.NewModel(embedutil.ModelOptions{Kind: "ollama", Model: opts.Model, Where: opts.Host,
		QueryPrefix: opts.QueryPrefix, DocumentPrefix: opts.DocumentPrefix, Batch: batch}, e.send)
	return e, nil
}

// send is one /api/embed request.
func (e *Embedder) send(ctx context.Context, texts []string) ([][]float32, error) {
	req := &api.EmbedRequest{Model: e.opts.Model, Input: texts, Truncate: e.opts.Truncate}
	if e.opts.KeepAlive != 0 {
		req.KeepAlive = &api.Duration{Duration: e.opts.KeepAlive}
	}
	resp, err := e.client.Embed(ctx, req)
	if err != nil {
		return nil, e.classify(err)
	}
	return resp.Embeddings, nil
}

// classify turns the client's errors into the embedder's: the server's
// answers by status, undecodable answers as malformed, anything else as an
// unreachable server.
func (e *Embedder) classify(err error) error {
	var status api.StatusError
	var auth api.AuthorizationError
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &status) && status.StatusCode == http.StatusNotFound:
		return embedutil.Mark(fmt.Errorf("model %q not found; pull it with: ollama pull %s", e.opts.Model, e.opts.Model), habilis.ErrInvalid)
	case errors.As(err, &status):
		return embedutil.Status(status.StatusCode, status.ErrorMessage, 0)
	case errors.As(err, &auth):
		return embedutil.Status(auth.StatusCode, auth.Error(), 0)
	case errors.As(err, &syntax), errors.As(err, &typ):
		return embedutil.Mark(fmt.Errorf("malformed answer (is this an Ollama server?): %w", err), habilis.ErrInvalid)
	}
	return embedutil.Unreachable(err)
}
