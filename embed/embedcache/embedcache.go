// Package embedcache keeps a model embedder's vectors on disk, so that a
// text embedded once with a model is never sent to its server again: a
// catalog loaded twice, evaluated after loading, or fitted on queries an
// evaluation already embedded costs the server nothing the second time.
//
// Entries are content-addressed: one file per vector, named by a hash of
// the purpose and the text, in a directory per embedder identity (kind,
// model and what else changes its vectors, such as instruction prefixes)
// and per generation of that model's weights.
//
// A model name does not pin its weights: `ollama pull` may bring new ones
// under the same name, and an OpenAI-compatible server may swap the model
// it serves. Each process therefore embeds one fixed probe text before
// it reads the cache, and uses the generation whose stored probe vector
// is that one (cosine at least probeAgreement); a model whose probe moved
// starts a new generation, and vectors of the old weights are never read
// again. This costs one request per process and detects any change of
// weights that moves the probe's vector, which is every change in
// practice; what it cannot tell apart are two models that embed the probe
// alike, such as a model and a slightly different quantisation of it,
// whose vectors are then interchangeable anyway. Ollama's model digest
// would detect a re-pull without the request but exists for Ollama only.
//
// The cache never evicts: a vector takes its dimension × 4 bytes (2 KiB
// for 512 dimensions) plus the file system's block. Removing the
// directory, or any file in it, is always safe.
package embedcache

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync"

	"github.com/habilis-router/habilis"
)

// probeText is embedded by every process before it reads the cache, to
// tell the model's weights apart (see the package comment).
const probeText = "habilis embedding cache probe: will it rain in Lisbon tomorrow?"

// probeAgreement is the cosine a generation's probe vector must reach
// with the model's probe vector now. Servers may differ in the last bits
// from one request to the next (batching on a GPU); weights that differ
// move the probe far more.
const probeAgreement = 0.9999

// Options configure a cache.
type Options struct {
	// Dir is the cache's root directory, shared by every embedder; it is
	// created when missing. Required.
	Dir string
	// Identity names what, beyond the embedder's kind and model, changes
	// its vectors (instruction prefixes, requested dimensions); "" when
	// nothing does.
	Identity string
	// Queries caches texts embedded as queries too. By default only
	// documents (catalog texts) are cached, so that a server does not
	// write its users' requests to disk; commands that embed labelled
	// queries in bulk (eval, fit) set it.
	Queries bool
	// Logger is told once when the cache cannot be written; nil discards.
	Logger *slog.Logger
}

// Embedder is a habilis.Embedder that answers from the cache what it
// can and asks the embedder it wraps for the rest. It is safe for
// concurrent use.
type Embedder struct {
	inner habilis.Embedder
	opts  Options
	ns    string // the identity's directory

	mu  sync.Mutex
	gen string // the generation's directory, once the probe has run
	dim int

	warned sync.Once
}

// New returns inner with a cache in opts.Dir. It does no I/O. It returns
// ErrInvalid without a directory.
func New(inner habilis.Embedder, opts Options) (*Embedder, error) {
	if opts.Dir == "" {
		return nil, fmt.Errorf("embedcache: no directory: %w", habilis.ErrInvalid)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	info := inner.Info()
	id := sha256.Sum256([]byte(info.Kind + "\x00" + info.Model + "\x00" + info.Version + "\x00" + opts.Identity))
	return &Embedder{inner: inner, opts: opts, ns: filepath.Join(opts.Dir, hex.EncodeToString(id[:8]))}, nil
}

// Info is the wrapped embedder's, with the dimension the probe found when
// the wrapped embedder has not embedded anything itself.
func (e *Embedder) Info() habilis.EmbedderInfo {
	info := e.inner.Info()
	if info.Dim == 0 {
		e.mu.Lock()
		info.Dim = e.dim
		e.mu.Unlock()
	}
	return info
}

// Probe embeds the probe text, which checks that the server answers and
// serves the model and finds the cache's generation, and returns Info.
func (e *Embedder) Probe(ctx context.Context) (habilis.EmbedderInfo, error) {
	if _, err := e.generation(ctx); err != nil {
		return habilis.EmbedderInfo{}, err
	}
	return e.Info(), nil
}

// Embed returns one unit vector per text, in order: from the cache where
// it holds one, from the wrapped embedder otherwise, each text sent once
// however often it occurs. Vectors it embeds are written to the cache; a
// cache that cannot be written is logged once and otherwise ignored. Its
// errors are the wrapped embedder's.
func (e *Embedder) Embed(ctx context.Context, texts []string, p habilis.Purpose) ([]habilis.Vector, error) {
	if len(texts) == 0 || (p == habilis.Query && !e.opts.Queries) {
		return e.inner.Embed(ctx, texts, p)
	}
	gen, err := e.generation(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]habilis.Vector, len(texts))
	paths := make([]string, len(texts))
	// Each text is looked up once: first is where it first occurs, and a
	// repeat takes that occurrence's vector. Texts the cache lacks are
	// missing, their first occurrences at.
	first := make(map[string]int, len(texts))
	var missing []string
	var at []int
	for i, t := range texts {
		if _, seen := first[t]; seen {
			continue
		}
		first[t] = i
		paths[i] = e.entry(gen, p, t)
		if v, ok := e.read(paths[i]); ok {
			out[i] = v
			continue
		}
		missing = append(missing, t)
		at = append(at, i)
	}
	if len(missing) > 0 {
		if err := e.fill(ctx, out, paths, missing, at, p); err != nil {
			return nil, err
		}
	}
	for i, t := range texts {
		if j := first[t]; j != i {
			out[i] = out[j]
		}
	}
	return out, nil
}

// fill embeds the missing texts with the wrapped embedder, puts each
// vector at its text's first occurrence at in out and writes it to the
// cache.
func (e *Embedder) fill(ctx context.Context, out []habilis.Vector, paths, missing []string, at []int, p habilis.Purpose) error {
	vs, err := e.inner.Embed(ctx, missing, p)
	if err != nil {
		return err
	}
	if len(vs) != len(missing) {
		return fmt.Errorf("embedcache: %d vectors for %d texts: %w", len(vs), len(missing), habilis.ErrUnavailable)
	}
	for k, i := range at {
		out[i] = vs[k]
		e.write(paths[i], vs[k])
	}
	return nil
}

// generation returns the directory of the generation whose probe vector
// is the model's now, creating it when there is none; the probe runs once
// per Embedder, again after a failure.
func (e *Embedder) generation(ctx context.Context) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.gen != "" {
		return e.gen, nil
	}
	vs, err := e.inner.Embed(ctx, []string{probeText}, habilis.Query)
	if err != nil {
		return "", err
	}
	if len(vs) != 1 || len(vs[0].Dense) == 0 {
		return "", fmt.Errorf("embedcache: probe: want one dense vector: %w", habilis.ErrInvalid)
	}
	probe := vs[0].Dense
	e.dim = len(probe)
	e.gen = e.findGeneration(probe)
	return e.gen, nil
}

// findGeneration returns the generation directory whose stored probe
// agrees with probe, or a new one named by probe's hash.
func (e *Embedder) findGeneration(probe []float32) string {
	raw := encode(probe)
	sum := sha256.Sum256(raw)
	fresh := filepath.Join(e.ns, hex.EncodeToString(sum[:6]))
	dirs, _ := os.ReadDir(e.ns)
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		dir := filepath.Join(e.ns, d.Name())
		if v, ok := decode(readFile(filepath.Join(dir, "probe")), len(probe)); ok && cosine(v, probe) >= probeAgreement {
			return dir
		}
	}
	if err := os.MkdirAll(fresh, 0o755); err != nil {
		e.warn(err)
		return fresh
	}
	if err := writeAtomic(filepath.Join(fresh, "probe"), raw); err != nil {
		e.warn(err)
	}
	return fresh
}

// entry returns the file of text's vector for purpose p in gen: a hash
// of both, under a directory of its first byte, so that no directory
// holds more than a few thousand files.
func (e *Embedder) entry(gen string, p habilis.Purpose, text string) string {
	h := sha256.New()
	h.Write([]byte{byte(p)})
	h.Write([]byte(text))
	name := hex.EncodeToString(h.Sum(nil))
	return filepath.Join(gen, name[:2], name[2:])
}

// read returns the vector in path, when there is one of the model's
// dimension and unit length; anything else (no file, a damaged one) is a
// miss.
func (e *Embedder) read(path string) (habilis.Vector, bool) {
	v, ok := decode(readFile(path), e.dim)
	if !ok {
		return habilis.Vector{}, false
	}
	return habilis.Vector{Dense: v}, true
}

// write stores v in path, atomically: a reader sees the whole vector or
// none.
func (e *Embedder) write(path string, v habilis.Vector) {
	if len(v.Dense) != e.dim {
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		e.warn(err)
		return
	}
	if err := writeAtomic(path, encode(v.Dense)); err != nil {
		e.warn(err)
	}
}

func (e *Embedder) warn(err error) {
	e.warned.Do(func() {
		e.opts.Logger.Warn("embedding cache not written; texts will be embedded again next time", "dir", e.opts.Dir, "err", err)
	})
}

// readFile returns path's content, or nil when it cannot be read.
func readFile(path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return b
}

// writeAtomic writes data to a temporary file beside path and renames it
// into place.
func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

// encode writes v as little-endian float32s.
func encode(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// decode reads dim little-endian float32s, which must be finite and of
// unit norm (within float32 rounding).
func decode(b []byte, dim int) ([]float32, bool) {
	if dim == 0 || len(b) != 4*dim {
		return nil, false
	}
	v := make([]float32, dim)
	var norm float64
	for i := range v {
		x := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, false
		}
		v[i] = x
		norm += float64(x) * float64(x)
	}
	if math.Abs(norm-1) > 1e-3 {
		return nil, false
	}
	return v, true
}

func cosine(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

var _ habilis.Embedder = (*Embedder)(nil)
