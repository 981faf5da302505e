package embedutil

import (
	"context"
	"fmt"

	"github.com/habilis-router/habilis"
)

// Model is the part of a model embedder that does not depend on its
// server's API: what Info reports, the prefixes of queries and documents,
// the Batcher that sends the requests, and the wording of Embed's errors.
// An embedder keeps one and builds requests and reads answers in its
// SendFunc. It is safe for concurrent use.
type Model struct {
	opts  ModelOptions
	batch *Batcher
}

// ModelOptions describe a model embedder to NewModel.
type ModelOptions struct {
	// Kind and Model are what Info reports ("ollama", "nomic-embed-text").
	Kind, Model string
	// Where is the server, named in errors.
	Where string
	// QueryPrefix and DocumentPrefix are prepended to texts of each
	// purpose.
	QueryPrefix, DocumentPrefix string
	// Batch tunes the requests.
	Batch Options
}

// NewModel returns the Model that opts describe, sending requests with
// send.
func NewModel(opts ModelOptions, send SendFunc) *Model {
	return &Model{opts: opts, batch: New(opts.Batch, send)}
}

// Info reports the embedder's kind, model and dimension (0 until the first
// vector, unless Options.Dim fixed it).
func (m *Model) Info() habilis.EmbedderInfo {
	return habilis.EmbedderInfo{Kind: m.opts.Kind, Model: m.opts.Model, Dim: m.batch.Dim()}
}

// Probe embeds one short text to learn the model's dimension, checking on
// the way that the server answers and serves the model.
func (m *Model) Probe(ctx context.Context) (habilis.EmbedderInfo, error) {
	if _, err := m.Embed(ctx, []string{"probe"}, habilis.Query); err != nil {
		return habilis.EmbedderInfo{}, err
	}
	return m.Info(), nil
}

// Embed returns one unit vector per text, in order, each text preceded by
// its purpose's prefix. Errors name the embedder's kind, model and server
// in words for its user ("embed with ollama model M at HOST: ..."), and
// wrap what the request or the check of its answer returned.
func (m *Model) Embed(ctx context.Context, texts []string, p habilis.Purpose) ([]habilis.Vector, error) {
	prefix, err := Prefix(p, m.opts.QueryPrefix, m.opts.DocumentPrefix)
	if err != nil {
		return nil, fmt.Errorf("embed with %s model %s: %w", m.opts.Kind, m.opts.Model, err)
	}
	vs, err := m.batch.Embed(ctx, texts, prefix)
	if err != nil {
		return nil, fmt.Errorf("embed with %s model %s at %s: %w", m.opts.Kind, m.opts.Model, m.opts.Where, err)
	}
	return vs, nil
}
