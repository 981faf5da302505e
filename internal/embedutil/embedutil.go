// Package embedutil is what the model embedders (embed/ollamaembed,
// embed/openaiembed) share: splitting texts into batches, sending them
// concurrently with a per-request timeout and retries on transient failures,
// and turning the answers into unit vectors of one dimension. The embedders
// only build requests and read answers.
package embedutil

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/vec"
)

// Options tune a Batcher. Zero values take the defaults documented on each
// field, which are also the embedders' documented defaults.
type Options struct {
	// BatchSize is the most texts per request; 0 means 64.
	BatchSize int
	// Concurrency is the most requests in flight per Embed call; 0 means 2.
	Concurrency int
	// Timeout bounds each request; 0 means 60s.
	Timeout time.Duration
	// Retries is how many times a request that failed transiently is sent
	// again; 0 means 3, negative means never.
	Retries int
	// Backoff is the wait before the first retry, doubled for each next one
	// (up to MaxBackoff) and jittered; 0 means 200ms.
	Backoff time.Duration
	// Dim, when positive, is the dimension every vector must have;
	// otherwise the first vector fixes it.
	Dim int
}

// MaxBackoff caps the wait between retries, including a server's
// Retry-After.
const MaxBackoff = 30 * time.Second

// SendFunc embeds one batch of texts in one request, returning one raw
// vector per text in order. It marks failures worth retrying with Retry.
// Once ctx is done its error does not matter: the Batcher reports the
// caller's ctx.Err() or its own per-request timeout instead.
type SendFunc func(ctx context.Context, texts []string) ([][]float32, error)

// Batcher turns Embed calls into requests. It is safe for concurrent use.
type Batcher struct {
	opts Options
	send SendFunc
	dim  atomic.Int64
}

// New returns a Batcher that sends requests with send.
func New(opts Options, send SendFunc) *Batcher {
	if opts.BatchSize <= 0 {
		opts.BatchSize = 64
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 2
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	switch {
	case opts.Retries == 0:
		opts.Retries = 3
	case opts.Retries < 0:
		opts.Retries = 0
	}
	if opts.Backoff <= 0 {
		opts.Backoff = 200 * time.Millisecond
	}
	b := &Batcher{opts: opts, send: send}
	if opts.Dim > 0 {
		b.dim.Store(int64(opts.Dim))
	}
	return b
}

// Dim returns the vectors' dimension, or 0 before the first vector when
// Options.Dim was not set.
func (b *Batcher) Dim() int { return int(b.dim.Load()) }

// Embed returns one unit vector per text, in order, each text preceded by
// prefix. Errors are returned as the request or check produced them, for
// the embedder to wrap once with its operation; a cancelled ctx gives
// ctx.Err().
func (b *Batcher) Embed(ctx context.Context, texts []string, prefix string) ([]habilis.Vector, error) {
	if len(texts) == 0 {
		return []habilis.Vector{}, nil
	}
	if prefix != "" {
		p := make([]string, len(texts))
		for i, t := range texts {
			p[i] = prefix + t
		}
		texts = p
	}
	out := make([]habilis.Vector, len(texts))
	n := (len(texts) + b.opts.BatchSize - 1) / b.opts.BatchSize
	batch := func(ctx context.Context, i int) error {
		lo := i * b.opts.BatchSize
		hi := min(lo+b.opts.BatchSize, len(texts))
		return b.batch(ctx, texts[lo:hi], out[lo:hi], lo)
	}
	if n == 1 {
		if err := batch(ctx, 0); err != nil {
			return nil, err
		}
		return out, nil
	}

	// Workers take batches in order; the first failure cancels the rest.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(b.opts.Concurrency, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := batch(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return out, nil
}

// batch embeds texts into out, retrying transient failures; first is the
// index of texts[0] in the Embed call, for messages.
func (b *Batcher) batch(ctx context.Context, texts []string, out []habilis.Vector, first int) error {
	for attempt := 0; ; attempt++ {
		raw, err := b.request(ctx, texts)
		if err == nil {
			return b.check(raw, out, first)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var r *retryable
		if !errors.As(err, &r) || attempt >= b.opts.Retries {
			return err
		}
		wait := b.backoff(attempt)
		if r.after > wait {
			wait = min(r.after, MaxBackoff)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// request sends one request under the per-request timeout, which it reports
// as a transient failure of the server rather than as the caller's deadline.
func (b *Batcher) request(ctx context.Context, texts []string) ([][]float32, error) {
	rctx, cancel := context.WithTimeout(ctx, b.opts.Timeout)
	defer cancel()
	raw, err := b.send(rctx, texts)
	if err != nil && ctx.Err() == nil && rctx.Err() != nil {
		err = Retry(Mark(fmt.Errorf("no answer within %v", b.opts.Timeout), habilis.ErrUnavailable), 0)
	}
	return raw, err
}

// backoff returns the wait before retry attempt+1: Backoff·2^attempt,
// capped, with jitter so that clients failing together do not retry
// together.
func (b *Batcher) backoff(attempt int) time.Duration {
	d := b.opts.Backoff << min(attempt, 20)
	if d <= 0 || d > MaxBackoff {
		d = MaxBackoff
	}
	return d/2 + rand.N(d/2+1)
}

// check normalises raw into out after checking its count, dimension and
// values.
func (b *Batcher) check(raw [][]float32, out []habilis.Vector, first int) error {
	if len(raw) != len(out) {
		return Mark(fmt.Errorf("server returned %d vectors for %d texts", len(raw), len(out)), habilis.ErrInvalid)
	}
	for i, v := range raw {
		if len(v) == 0 {
			return Mark(fmt.Errorf("server returned an empty vector for text %d", first+i), habilis.ErrInvalid)
		}
		if b.dim.CompareAndSwap(0, int64(len(v))) {
			// The first vector seen fixes the dimension.
		} else if want := b.Dim(); len(v) != want {
			return Mark(fmt.Errorf("server returned a vector of dimension %d for text %d, want %d: the model changed or does not match the configured dimensions", len(v), first+i, want), habilis.ErrInvalid)
		}
		for _, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return Mark(fmt.Errorf("server returned a vector with %v for text %d", x, first+i), habilis.ErrInvalid)
			}
		}
		if !vec.Normalize(v) {
			return Mark(fmt.Errorf("server returned a zero vector for text %d", first+i), habilis.ErrInvalid)
		}
		out[i] = habilis.Vector{Dense: v}
	}
	return nil
}

// Retry marks err as transient: the Batcher sends the request again, waiting
// at least after when it is positive (a server's Retry-After).
func Retry(err error, after time.Duration) error {
	return &retryable{err: err, after: after}
}

// IsRetry reports whether err was marked with Retry.
func IsRetry(err error) bool {
	var r *retryable
	return errors.As(err, &r)
}

type retryable struct {
	err   error
	after time.Duration
}

func (r *retryable) Error() string { return r.err.Error() }
func (r *retryable) Unwrap() error { return r.err }

// Mark returns err, with its message unchanged, such that errors.Is(err,
// kind) holds as well: "server unreachable: dial tcp ...: connection
// refused" that is also habilis.ErrUnavailable.
func Mark(err, kind error) error {
	return &marked{err: err, kind: kind}
}

type marked struct {
	err  error
	kind error
}

func (m *marked) Error() string   { return m.err.Error() }
func (m *marked) Unwrap() []error { return []error{m.err, m.kind} }

// Prefix returns the instruction prefix an embedder puts before texts of
// purpose p (some models embed queries and documents differently), or
// ErrInvalid for an unknown purpose.
func Prefix(p habilis.Purpose, query, document string) (string, error) {
	switch p {
	case habilis.Query:
		return query, nil
	case habilis.Document:
		return document, nil
	}
	return "", fmt.Errorf("purpose %d: %w", p, habilis.ErrInvalid)
}
