package main

import (
	"encoding/json"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/habilis-router/habilis/embed/embedcache"
	"github.com/habilis-router/habilis/eval"
)

// embeddingServer is an OpenAI-compatible embeddings endpoint whose
// vectors follow from a hash of each text; it counts the texts it is
// sent.
type embeddingServer struct {
	*httptest.Server
	mu    sync.Mutex
	texts int
}

func newEmbeddingServer(t *testing.T) *embeddingServer {
	s := &embeddingServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.texts += len(req.Input)
		s.mu.Unlock()
		type datum struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		out := struct {
			Data []datum `json:"data"`
		}{}
		for i, text := range req.Input {
			v := make([]float32, 16)
			for j := range v {
				h := fnv.New32a()
				h.Write([]byte{byte(j)})
				h.Write([]byte(text))
				v[j] = float32(h.Sum32()%997) - 498
			}
			out.Data = append(out.Data, datum{i, v})
		}
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(s.Close)
	return s
}

// sent returns how many texts the server was sent since the last call.
func (s *embeddingServer) sent() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.texts
	s.texts = 0
	return n
}

// TestEmbedCache loads and evaluates a catalog with a model embedder
// several times: what one command embedded, the next ones take from the
// cache, and each sends the server only the probe.
func TestEmbedCache(t *testing.T) {
	srv := newEmbeddingServer(t)
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	emb := "openai:fake@" + srv.URL + "/v1"
	run := func(args ...string) {
		t.Helper()
		cmd := habilisCmd(append([]string{"--embedder", emb}, args...)...)
		cmd.Env = append(cmd.Env, "HABILIS_EMBED_CACHE="+cache)
		if r := runHabilis(t, cmd); r.code != 0 {
			t.Fatalf("habilis %v: exit %d, stderr:\n%s", args, r.code, r.stderr)
		}
	}
	const probe = 1
	// A catalog's first write embeds testdata/tools.json's descriptions
	// and examples, and the background requests its hybrid gates are
	// measured against.
	catalogTexts := 7 + 43 + backgroundRequests(t)
	queries := testdata("queries.jsonl")
	steps := []struct {
		name string
		args []string
		want int
	}{
		{"first load", []string{"--store", filepath.Join(dir, "a.db"), "load", testdata("tools.json")}, probe + catalogTexts},
		{"load into another store", []string{"--store", filepath.Join(dir, "b.db"), "load", testdata("tools.json")}, probe},
		{"eval: its queries are new", []string{"eval", "--tools", testdata("tools.json"), "--queries", queries}, probe + distinctQueries(t, queries)},
		{"eval again", []string{"eval", "--tools", testdata("tools.json"), "--queries", queries}, probe},
		{"without the cache", []string{"--no-embed-cache", "--store", filepath.Join(dir, "c.db"), "load", testdata("tools.json")}, probe + catalogTexts},
	}
	for _, st := range steps {
		run(st.args...)
		if got := srv.sent(); got != st.want {
			t.Errorf("%s: the server embedded %d texts, want %d", st.name, got, st.want)
		}
	}
}

// backgroundRequests counts the background requests of
// selector/background.txt, one a line.
func backgroundRequests(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "selector", "background.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return len(strings.Split(strings.TrimSpace(string(b)), "\n"))
}

// distinctQueries counts the distinct query texts of a JSONL file.
func distinctQueries(t *testing.T, path string) int {
	t.Helper()
	qs, err := eval.ReadQueries(path)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, q := range qs {
		seen[q.Query] = true
	}
	return len(seen)
}

func TestEmbedCacheDir(t *testing.T) {
	type dirCase struct {
		name    string
		env     map[string]string
		noCache bool
		want    string
	}
	tests := []dirCase{
		{"the environment says where", map[string]string{"HABILIS_EMBED_CACHE": "/c", "HOME": "/h"}, false, "/c"},
		{"--no-embed-cache wins", map[string]string{"HABILIS_EMBED_CACHE": "/c", "HOME": "/h"}, true, ""},
		{"no home, no cache", nil, false, ""},
		{"a relative cache home is ignored", map[string]string{"XDG_CACHE_HOME": "rel"}, false, ""},
	}
	if runtime.GOOS != "windows" && runtime.GOOS != "darwin" && runtime.GOOS != "ios" {
		tests = append(tests,
			dirCase{"XDG_CACHE_HOME", map[string]string{"XDG_CACHE_HOME": "/x", "HOME": "/h"}, false, "/x/habilis/embeddings"},
			dirCase{"HOME", map[string]string{"HOME": "/h"}, false, "/h/.cache/habilis/embeddings"})
	}
	for _, tt := range tests {
		g := &globalOptions{getenv: func(k string) string { return tt.env[k] }, noEmbedCache: tt.noCache}
		if got := g.embedCacheDir(); got != filepath.FromSlash(tt.want) {
			t.Errorf("%s: embedCacheDir() = %q, want %q", tt.name, got, tt.want)
		}
	}
	// A model embedder goes behind the cache; the lexical one never does.
	for spec, cached := range map[string]bool{"lexical": false, "openai:m@http://localhost:1/v1": true, "ollama:m": true} {
		g := &globalOptions{embedder: spec, getenv: func(k string) string { return map[string]string{"HOME": "/h"}[k] }}
		emb, err := g.newEmbedder()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := emb.(*embedcache.Embedder); ok != cached {
			t.Errorf("newEmbedder(%q) is cached: %v, want %v", spec, ok, cached)
		}
	}
}
