package embedcache

import (
	"context"
	"errors"
	"hash/fnv"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
)

// model is an embedder whose vectors follow from a hash of the text and
// its weights; it records every text it is sent.
type model struct {
	weights string
	dim     int
	fail    error

	mu   sync.Mutex
	sent []string
}

func (m *model) Info() habilis.EmbedderInfo {
	return habilis.EmbedderInfo{Kind: "fake", Model: "m", Dim: m.dim}
}

func (m *model) Embed(_ context.Context, texts []string, p habilis.Purpose) ([]habilis.Vector, error) {
	if m.fail != nil {
		return nil, m.fail
	}
	m.mu.Lock()
	m.sent = append(m.sent, texts...)
	m.mu.Unlock()
	out := make([]habilis.Vector, len(texts))
	for i, t := range texts {
		v := make([]float32, m.dim)
		var norm float64
		for j := range v {
			h := fnv.New32a()
			h.Write([]byte{byte(p), byte(j)})
			h.Write([]byte(m.weights + "\x00" + t))
			v[j] = float32(h.Sum32()%1000) + 1
			norm += float64(v[j]) * float64(v[j])
		}
		for j := range v {
			v[j] /= float32(math.Sqrt(norm))
		}
		out[i] = habilis.Vector{Dense: v}
	}
	return out, nil
}

// texts returns what was sent since the last call, the probe left out.
func (m *model) texts() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, t := range m.sent {
		if t != probeText {
			out = append(out, t)
		}
	}
	m.sent = nil
	return out
}

func embed(t *testing.T, e habilis.Embedder, texts []string, p habilis.Purpose) []habilis.Vector {
	t.Helper()
	vs, err := e.Embed(context.Background(), texts, p)
	if err != nil {
		t.Fatalf("Embed(%q) = %v", texts, err)
	}
	return vs
}

func TestEmbedSendsEachTextOnce(t *testing.T) {
	dir := t.TempDir()
	m := &model{weights: "v1", dim: 8}
	want := embed(t, m, []string{"a", "b", "c"}, habilis.Document)
	m.texts()

	tests := []struct {
		name  string
		texts []string
		p     habilis.Purpose
		sent  []string
	}{
		{"first time, a repeated text once", []string{"a", "b", "a"}, habilis.Document, []string{"a", "b"}},
		{"cached ones not again", []string{"b", "c", "a"}, habilis.Document, []string{"c"}},
		{"all cached", []string{"c", "b", "a"}, habilis.Document, nil},
		{"queries are not cached by default", []string{"a", "a"}, habilis.Query, []string{"a", "a"}},
	}
	e, err := New(m, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		got := embed(t, e, tt.texts, tt.p)
		if diff := cmp.Diff(tt.sent, m.texts()); diff != "" {
			t.Errorf("%s: texts sent (-want +got):\n%s", tt.name, diff)
		}
		if tt.p != habilis.Document {
			continue
		}
		for i, text := range tt.texts {
			if diff := cmp.Diff(want[text[0]-'a'], got[i]); diff != "" {
				t.Errorf("%s: vector of %q (-want +got):\n%s", tt.name, text, diff)
			}
		}
	}

	// Another process with the same model finds every vector.
	e2, _ := New(m, Options{Dir: dir, Queries: true})
	embed(t, e2, []string{"a", "b", "c"}, habilis.Document)
	if sent := m.texts(); len(sent) != 0 {
		t.Errorf("a second embedder sent %q, want nothing", sent)
	}
	// Queries are cached apart from documents when asked for.
	embed(t, e2, []string{"a"}, habilis.Query)
	embed(t, e2, []string{"a"}, habilis.Query)
	if diff := cmp.Diff([]string{"a"}, m.texts()); diff != "" {
		t.Errorf("queries sent (-want +got):\n%s", diff)
	}
}

// TestNewWeights checks that a model whose weights changed under the
// same name gets vectors of its own, and that going back finds the old
// ones.
func TestNewWeights(t *testing.T) {
	dir := t.TempDir()
	v1, v2 := &model{weights: "v1", dim: 8}, &model{weights: "v2", dim: 8}
	for _, step := range []struct {
		m    *model
		sent int
	}{{v1, 2}, {v2, 2}, {v1, 0}, {v2, 0}} {
		e, _ := New(step.m, Options{Dir: dir})
		got := embed(t, e, []string{"x", "y"}, habilis.Document)
		if sent := step.m.texts(); len(sent) != step.sent {
			t.Errorf("weights %s: sent %q, want %d texts", step.m.weights, sent, step.sent)
		}
		want := embed(t, step.m, []string{"x", "y"}, habilis.Document)
		step.m.texts()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("weights %s: vectors (-want +got):\n%s", step.m.weights, diff)
		}
	}
	// A model of another dimension is another generation too.
	e, _ := New(&model{weights: "v1", dim: 4}, Options{Dir: dir})
	if vs := embed(t, e, []string{"x"}, habilis.Document); len(vs[0].Dense) != 4 {
		t.Errorf("vector of dimension %d, want 4", len(vs[0].Dense))
	}
}

// TestDamagedEntry checks that an entry that is not a unit vector of the
// model's dimension is embedded again and replaced.
func TestDamagedEntry(t *testing.T) {
	for _, damage := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"truncated", make([]byte, 12)},
		{"not unit length", encode([]float32{1, 1, 1, 1, 1, 1, 1, 1})},
		{"NaN", encode([]float32{float32(math.NaN()), 0, 0, 0, 0, 0, 0, 0})},
	} {
		t.Run(damage.name, func(t *testing.T) {
			dir := t.TempDir()
			m := &model{weights: "v1", dim: 8}
			e, _ := New(m, Options{Dir: dir})
			want := embed(t, e, []string{"x"}, habilis.Document)
			m.texts()
			path := e.entry(e.gen, habilis.Document, "x")
			if err := os.WriteFile(path, damage.data, 0o644); err != nil {
				t.Fatal(err)
			}
			e2, _ := New(m, Options{Dir: dir})
			got := embed(t, e2, []string{"x"}, habilis.Document)
			if diff := cmp.Diff([]string{"x"}, m.texts()); diff != "" {
				t.Errorf("texts sent (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("vector (-want +got):\n%s", diff)
			}
			if b, _ := os.ReadFile(path); len(b) != 32 {
				t.Errorf("entry holds %d bytes after embedding again, want 32", len(b))
			}
		})
	}
}

func TestUnwritableCacheStillEmbeds(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	m := &model{weights: "v1", dim: 8}
	// A directory below a file can never be created.
	e, _ := New(m, Options{Dir: filepath.Join(file, "cache"), Logger: newLogger(&log)})
	for range 2 {
		if vs := embed(t, e, []string{"x", "y"}, habilis.Document); len(vs) != 2 || len(vs[0].Dense) != 8 {
			t.Fatalf("Embed = %v, want two vectors", vs)
		}
	}
	if n := strings.Count(log.String(), "embedding cache not written"); n != 1 {
		t.Errorf("warned %d times, want once:\n%s", n, log.String())
	}
}

func newLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

func TestErrorsAndInfo(t *testing.T) {
	if _, err := New(&model{dim: 8}, Options{}); !errors.Is(err, habilis.ErrInvalid) {
		t.Errorf("New without a directory = %v, want ErrInvalid", err)
	}
	down := &model{dim: 8, fail: habilis.ErrUnavailable}
	e, _ := New(down, Options{Dir: t.TempDir()})
	if _, err := e.Embed(context.Background(), []string{"x"}, habilis.Document); !errors.Is(err, habilis.ErrUnavailable) {
		t.Errorf("Embed with the server down = %v, want ErrUnavailable", err)
	}
	if _, err := e.Probe(context.Background()); !errors.Is(err, habilis.ErrUnavailable) {
		t.Errorf("Probe with the server down = %v, want ErrUnavailable", err)
	}
	// The probe is retried once the server is back.
	down.fail = nil
	info, err := e.Probe(context.Background())
	if err != nil || info.Dim != 8 || info.Kind != "fake" {
		t.Errorf("Probe = %v, %v; want fake of dimension 8", info, err)
	}
	if vs, err := e.Embed(context.Background(), nil, habilis.Document); err != nil || len(vs) != 0 {
		t.Errorf("Embed(nil) = %v, %v; want no vectors", vs, err)
	}
}
