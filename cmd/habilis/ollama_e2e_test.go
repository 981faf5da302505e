package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/internal/ollamatest"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/storetest"
)

// Tiny embedding models the end-to-end tests register on a real Ollama
// server: the default one and one of another dimension, to switch to.
const (
	e2eModel   = "habilis-tiny-embed"
	e2eModel24 = "habilis-tiny-embed-24"
)

// ollamaEmbedder starts (or finds) an Ollama server with both tiny models
// and returns the --embedder value for each, or skips the test when no
// server is configured.
func ollamaEmbedder(t *testing.T) (emb, emb24 string) {
	t.Helper()
	s := ollamatest.Server(t)
	ollamatest.CreateEmbedModel(t, s.Client, e2eModel, 0)
	ollamatest.CreateEmbedModel(t, s.Client, e2eModel24, 24)
	return "ollama:" + e2eModel + "@" + s.Host, "ollama:" + e2eModel24 + "@" + s.Host
}

// ollamaStore loads testdata/tools.json into a fresh store with emb and
// returns the store's path and the load report.
func ollamaStore(t *testing.T, emb string) (string, selector.LoadReport) {
	t.Helper()
	store := filepath.Join(t.TempDir(), "habilis.db")
	rep := decode[selector.LoadReport](t, mustRun(t, "--store", store, "--embedder", emb, "load", "--json", testdata("tools.json")))
	return store, rep
}

func TestOllamaLoadSelectCollisions(t *testing.T) {
	emb, _ := ollamaEmbedder(t)
	store, first := ollamaStore(t, emb)
	// 7 descriptions and 43 examples go to the model, 7 tool documents to
	// the lexical embedder that keeps hybrid mode's lexical signal.
	if first.Embedded != 57 || len(first.Added) != 7 || first.Version != 1 {
		t.Errorf("load = embedded %d, added %v, version %d; want 57, 7 tools, 1", first.Embedded, first.Added, first.Version)
	}
	meta := snapshotOf(t, store).Meta
	want := habilis.EmbedderInfo{Kind: "ollama", Model: e2eModel, Dim: ollamatest.DefaultEmbedDim}
	if diff := cmp.Diff(want, meta.Embedder); diff != "" {
		t.Errorf("stored embedder (-want +got):\n%s", diff)
	}
	if meta.Lexical.Kind != "lexical" {
		t.Errorf("stored lexical embedder = %v, want lexical", meta.Lexical)
	}

	// A new process knows the model's dimension only from the server; it
	// must still recognise the stored vectors as its own and reuse them.
	before := snapshotOf(t, store).Records
	second := decode[selector.LoadReport](t, mustRun(t, "--store", store, "--embedder", emb, "load", "--json", testdata("tools.json")))
	if second.Embedded != 0 || second.Unchanged != 7 || len(second.Added)+len(second.Updated)+len(second.Removed) != 0 {
		t.Errorf("second load = %+v, want nothing embedded, 7 tools unchanged", second)
	}
	if diff := cmp.Diff(before, snapshotOf(t, store).Records); diff != "" {
		t.Errorf("second load changed the stored records (-before +after):\n%s", diff)
	}

	tests := []struct {
		query string
		mode  string
		want  string
	}{
		{"is it sunny in Rome right now", "hybrid", "get_weather"},
		{"what is the temperature in Vienna today", "centroid", "get_weather"},
		{"weather forecast for Lisbon next week", "hybrid", "get_forecast"},
		{"will it rain in Denver tomorrow", "centroid", "get_forecast"},
		{"send an email to Frank about the contract", "hybrid", "send_email"},
		{"send a new email message to someone", "description", "send_email"},
		{"read my new emails in the inbox", "hybrid", "read_inbox"},
		{"schedule a meeting with Ivan on Wednesday", "centroid", "create_event"},
		{"create a calendar event for the meeting", "description", "create_event"},
		{"convert 40 euros to dollars", "hybrid", "convert_currency"},
		{"translate see you soon into French", "hybrid", "translate_text"},
		{"translate text into another language", "description", "translate_text"},
	}
	for _, tt := range tests {
		d := decode[habilis.Decision](t, mustRun(t, "--store", store, "--embedder", emb, "select", "--json", "--mode", tt.mode, tt.query))
		if d.Abstained || len(d.Matches) == 0 || d.Matches[0].Tool != tt.want {
			t.Errorf("select(%q, %s) = %+v, want %s first", tt.query, tt.mode, d, tt.want)
		}
	}

	cols := decode[struct {
		Collisions []habilis.Collision `json:"collisions"`
	}](t, mustRun(t, "--store", store, "--embedder", emb, "collisions", "--json")).Collisions
	pairs := make(map[[2]string]habilis.Collision, len(cols))
	for _, c := range cols {
		pairs[[2]string{c.A, c.B}] = c
	}
	// The two pairs of tools that share their vocabulary collide most.
	for _, p := range [][2]string{{"get_forecast", "get_weather"}, {"read_inbox", "send_email"}} {
		c, ok := pairs[p]
		if !ok || c.Severity != habilis.SeverityHigh || len(c.Leaks) == 0 {
			t.Errorf("collisions %s/%s = %+v (found %v), want high severity with leaks", p[0], p[1], c, ok)
		}
		if other := pairs[[2]string{"create_event", "get_weather"}]; c.CentroidSimilarity <= other.CentroidSimilarity {
			t.Errorf("collisions %s/%s centroid similarity %v, want above create_event/get_weather's %v", p[0], p[1], c.CentroidSimilarity, other.CentroidSimilarity)
		}
	}
}

func TestOllamaEval(t *testing.T) {
	emb, _ := ollamaEmbedder(t)
	dir := t.TempDir()
	r := habilisIn(t, dir, t.TempDir(), "--embedder", emb, "eval", "--json", "--tools", testdata("tools.json"), "--queries", testdata("queries.jsonl"))
	if r.code != 0 {
		t.Fatalf("eval: exit %d: %s", r.code, r.stderr)
	}
	checkEvalReport(t, "eval", r.stdout)
	rep := decode[struct {
		Queries int     `json:"queries"`
		Tools   int     `json:"tools"`
		Acc1    float64 `json:"acc_at_1"`
		Recall  float64 `json:"recall_at_k"`
	}](t, r.stdout)
	if rep.Queries != 16 || rep.Tools != 7 {
		t.Errorf("eval = %d queries, %d tools; want 16, 7", rep.Queries, rep.Tools)
	}
	// Every query with a tool shares words with that tool's examples, which
	// is what the bag-of-words model sees.
	if rep.Acc1 < 0.9 || rep.Recall < 0.9 {
		t.Errorf("eval with %s = acc@1 %v, recall@k %v; want both at least 0.9", emb, rep.Acc1, rep.Recall)
	}
	if _, err := os.Stat(filepath.Join(dir, defaultStore)); err == nil {
		t.Errorf("eval created %s", defaultStore)
	}
}

func TestOllamaBadConfigurations(t *testing.T) {
	emb, emb24 := ollamaEmbedder(t)
	host := strings.TrimPrefix(emb, "ollama:"+e2eModel+"@")
	store, _ := ollamaStore(t, emb)
	before := snapshotOf(t, store)
	closed := ollamatest.ClosedAddr(t)
	fresh := filepath.Join(t.TempDir(), "fresh.db")

	tests := []struct {
		name  string
		store string
		args  []string
		want  []string // in stderr
	}{
		{"unreachable load", store, []string{"--embedder", "ollama:" + e2eModel + "@" + closed, "load", testdata("tools.json")},
			[]string{"unreachable", closed}},
		{"unreachable select", store, []string{"--embedder", "ollama:" + e2eModel + "@" + closed, "select", "weather in Paris"},
			[]string{"unreachable", closed}},
		{"unreachable load into a new store", fresh, []string{"--embedder", "ollama:" + e2eModel + "@" + closed, "load", testdata("tools.json")},
			[]string{"unreachable", closed}},
		{"unknown model", fresh, []string{"--embedder", "ollama:habilis-missing@" + host, "load", testdata("tools.json")},
			[]string{`model "habilis-missing" not found`, "ollama pull habilis-missing"}},
		{"lexical select on an ollama store", store, []string{"select", "weather in Paris"},
			[]string{"built with embedder ollama:" + e2eModel + " (dim 256)", "not lexical", "--reindex"}},
		{"lexical load on an ollama store", store, []string{"load", testdata("tools.json")},
			[]string{"built with embedder ollama:" + e2eModel + " (dim 256)", "not lexical", "--reindex"}},
		{"other model on an ollama store", store, []string{"--embedder", emb24, "load", testdata("tools.json")},
			[]string{"built with embedder ollama:" + e2eModel + " (dim 256)", "not ollama:" + e2eModel24 + " (dim 24)", "--reindex to re-embed it with " + emb24}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := habilisRun(t, append([]string{"--store", tt.store}, tt.args...)...)
			if r.code != exitError {
				t.Errorf("exit %d, want %d", r.code, exitError)
			}
			// One line that says it all: no usage dump, no log noise.
			if !strings.HasPrefix(r.stderr, "habilis: ") || strings.Count(r.stderr, "\n") != 1 || !strings.HasSuffix(r.stderr, "\n") {
				t.Errorf("stderr = %q, want one line starting with \"habilis: \"", r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr = %q, want it to mention %q", r.stderr, w)
				}
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
		})
	}
	if diff := cmp.Diff(before, snapshotOf(t, store)); diff != "" {
		t.Errorf("failed commands changed the store (-before +after):\n%s", diff)
	}
	if _, err := os.Stat(fresh); err == nil {
		t.Errorf("failed loads created %s", fresh)
	}

	// --reindex re-embeds the catalog with the other model and it serves.
	d := decode[habilis.Decision](t, mustRun(t, "--store", store, "--embedder", emb24, "--reindex", "select", "--json", "send an email to Frank about the contract"))
	if len(d.Matches) == 0 || d.Matches[0].Tool != "send_email" {
		t.Errorf("select after --reindex = %+v, want send_email first", d)
	}
	after := snapshotOf(t, store)
	want := habilis.EmbedderInfo{Kind: "ollama", Model: e2eModel24, Dim: 24}
	if diff := cmp.Diff(want, after.Meta.Embedder); diff != "" {
		t.Errorf("stored embedder after --reindex (-want +got):\n%s", diff)
	}
	if after.Meta.Version != before.Meta.Version+1 || len(after.Records) != len(before.Records) {
		t.Errorf("after --reindex: version %d with %d tools, want %d with %d", after.Meta.Version, len(after.Records), before.Meta.Version+1, len(before.Records))
	}
	// The new model now owns the store: no --reindex needed, and the old
	// one is refused in turn.
	mustRun(t, "--store", store, "--embedder", emb24, "select", "weather in Paris")
	r := habilisRun(t, "--store", store, "--embedder", emb, "select", "weather in Paris")
	if r.code != exitError || !strings.Contains(r.stderr, "built with embedder ollama:"+e2eModel24+" (dim 24)") {
		t.Errorf("select with the old model after --reindex = exit %d, stderr %q; want 1 naming %s", r.code, r.stderr, e2eModel24)
	}
}

// TestOllamaStaleLexical checks the line that refuses a model store whose
// lexical signal an earlier lexical algorithm made, and that --reindex
// serves it again.
func TestOllamaStaleLexical(t *testing.T) {
	emb, _ := ollamaEmbedder(t)
	store, _ := ollamaStore(t, emb)
	toAlgorithm1(t, store, storetest.Lexical)
	before := snapshotOf(t, store)

	r := habilisRun(t, "--store", store, "--embedder", emb, "select", "weather in Paris")
	want := "built with embedder ollama:" + e2eModel + " (dim 256) and lexical algorithm 1, not ollama:" + e2eModel + " and lexical algorithm " + lexical.Algorithm
	if r.code != exitError || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "--reindex") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("select = exit %d, stderr %q; want 1 and one line saying %q and suggesting --reindex", r.code, r.stderr, want)
	}
	if diff := cmp.Diff(before, snapshotOf(t, store)); diff != "" {
		t.Errorf("the refused select changed the store (-before +after):\n%s", diff)
	}
	d := decode[habilis.Decision](t, mustRun(t, "--store", store, "--embedder", emb, "--reindex", "select", "--json", "send an email to Frank about the contract"))
	if len(d.Matches) == 0 || d.Matches[0].Tool != "send_email" {
		t.Errorf("select after --reindex = %+v, want send_email first", d)
	}
	if got := snapshotOf(t, store).Meta.Lexical.Algorithm(); got != lexical.Algorithm {
		t.Errorf("lexical algorithm after --reindex = %q, want %s", got, lexical.Algorithm)
	}
}
