package lexical

import (
	"bytes"
	"context"
	"errors"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/vec"
)

// testTools is a small catalog of distinct tools, each with a description
// and examples, for behaviour tests.
var testTools = []struct {
	name, description string
	examples          []string
}{
	{"get_weather", "Current weather and forecasts for a city.", []string{
		"What's the weather like in Paris today?",
		"Will it rain in London tomorrow?",
		"Give me the forecast for Tokyo this weekend.",
		"How hot is it in Madrid right now?",
	}},
	{"book_flight", "Search and book airline flights.", []string{
		"Book me a flight from Berlin to Rome next Friday.",
		"Find cheap flights to New York in March.",
		"I need a plane ticket to Lisbon.",
		"Are there direct flights from Oslo to Paris?",
	}},
	{"convertCurrency", "Convert amounts between currencies at today's exchange rate.", []string{
		"How many euros is 100 dollars?",
		"Convert 250 GBP to yen.",
		"What is the exchange rate from CHF to USD?",
		"How much is 40 pounds in Canadian dollars?",
	}},
	{"recipe-finder", "Find cooking recipes by ingredient or dish.", []string{
		"How do I make lasagna?",
		"Give me a recipe with chicken and rice.",
		"What can I cook with eggs, spinach and cheese?",
		"Vegetarian dinner ideas, please.",
	}},
}

func testCorpus() []string {
	var c []string
	for _, tool := range testTools {
		c = append(c, tool.name+" "+tool.description)
		c = append(c, tool.examples...)
	}
	return c
}

func fit(t testing.TB, opts Options) (habilis.CorpusEmbedder, []byte) {
	t.Helper()
	e, state, err := New(opts).Fit(context.Background(), testCorpus())
	if err != nil {
		t.Fatalf("Fit() error = %v", err)
	}
	return e, state
}

func embed(t testing.TB, e habilis.Embedder, p habilis.Purpose, texts ...string) []habilis.Vector {
	t.Helper()
	vs, err := e.Embed(context.Background(), texts, p)
	if err != nil {
		t.Fatalf("Embed(%q) error = %v", texts, err)
	}
	if len(vs) != len(texts) {
		t.Fatalf("Embed(%q) returned %d vectors, want %d", texts, len(vs), len(texts))
	}
	return vs
}

// checkVector reports what is wrong with v: it must be zero, or sparse
// with strictly ascending indices and unit norm.
func checkVector(v habilis.Vector) string {
	if v.IsZero() {
		if v.Values != nil || v.Dense != nil {
			return "zero vector with values"
		}
		return ""
	}
	if !v.IsSparse() || len(v.Indices) != len(v.Values) {
		return "not a sparse vector"
	}
	for i := 1; i < len(v.Indices); i++ {
		if v.Indices[i] <= v.Indices[i-1] {
			return "indices not strictly ascending"
		}
	}
	for _, x := range v.Values {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) || x <= 0 {
			return "value not finite and positive"
		}
	}
	if n := vec.Norm(v.Values); math.Abs(float64(n)-1) > 1e-5 {
		return "norm is not 1"
	}
	return ""
}

func TestEmbedVectors(t *testing.T) {
	fitted, _ := fit(t, Options{})
	embedders := map[string]habilis.Embedder{"unfitted": New(Options{}), "fitted": fitted}
	texts := []string{
		"",
		"   ",
		"?!",
		"a",
		"What's the weather in Paris?",
		"unknown words only: zyxw qqqq",
		strings.Repeat("weather ", 1000),
		"\xff\xfe\xfd",
		"getWeather_forecast-v2.json",
		strings.Repeat("x", 10000),
	}
	for name, e := range embedders {
		for _, p := range []habilis.Purpose{habilis.Document, habilis.Query} {
			for i, v := range embed(t, e, p, texts...) {
				if msg := checkVector(v); msg != "" {
					t.Errorf("%s: Embed(%q, %v): %s", name, texts[i], p, msg)
				}
			}
		}
	}
}

func TestEmbedZero(t *testing.T) {
	fitted, _ := fit(t, Options{})
	for _, text := range []string{"", " \t\n", "...", "\xff"} {
		if v := embed(t, fitted, habilis.Query, text)[0]; !v.IsZero() {
			t.Errorf("Embed(%q) = %v, want the zero vector", text, v)
		}
	}
}

func TestEmbedDeterministic(t *testing.T) {
	texts := append(testCorpus(), "some query about Paris weather", "")
	a, _ := fit(t, Options{})
	b, _ := fit(t, Options{})
	for _, p := range []habilis.Purpose{habilis.Document, habilis.Query} {
		va, vb := embed(t, a, p, texts...), embed(t, b, p, texts...)
		if diff := cmp.Diff(va, vb); diff != "" {
			t.Errorf("Embed(%v) differs between two fits (-first +second):\n%s", p, diff)
		}
		// One text at a time gives the same vectors as a batch: the
		// reused working memory leaks nothing between texts.
		for i, text := range texts {
			if diff := cmp.Diff(va[i], embed(t, a, p, text)[0]); diff != "" {
				t.Errorf("Embed(%q) alone differs from the batch (-batch +alone):\n%s", text, diff)
			}
		}
	}
}

func TestFitRestoreRoundTrip(t *testing.T) {
	for _, opts := range []Options{{}, {WordWeight: 2, CharWeight: -1, BigramWeight: 0.5}} {
		fitted, state := fit(t, opts)
		_, again := fit(t, opts)
		if !bytes.Equal(state, again) {
			t.Errorf("Fit(%+v) gave different states for the same corpus", opts)
		}
		// Restore ignores the receiver's options: the state carries them.
		restored, err := New(Options{CharWeight: 3}).Restore(state)
		if err != nil {
			t.Fatalf("Restore(Fit state) error = %v", err)
		}
		if got, want := restored.Info(), fitted.Info(); got != want {
			t.Errorf("Restore(state).Info() = %v, want %v", got, want)
		}
		texts := append(testCorpus(), "cheap flights to Paris", "¿Qué tiempo hace?")
		for _, p := range []habilis.Purpose{habilis.Document, habilis.Query} {
			if diff := cmp.Diff(embed(t, fitted, p, texts...), embed(t, restored, p, texts...)); diff != "" {
				t.Errorf("Restore(state) vectors differ from Fit's (-fit +restore):\n%s", diff)
			}
		}
		_, restate, err := restored.Fit(context.Background(), testCorpus())
		if err != nil {
			t.Fatalf("Fit() error = %v", err)
		}
		if !bytes.Equal(state, restate) {
			t.Errorf("Fit(%+v) on a restored embedder gave another state", opts)
		}
	}
}

func TestInfo(t *testing.T) {
	unfitted := New(Options{}).Info()
	fitted, _ := fit(t, Options{})
	other, _, err := New(Options{}).Fit(context.Background(), []string{"another catalog", "with other words"})
	if err != nil {
		t.Fatalf("Fit() error = %v", err)
	}
	infos := []habilis.EmbedderInfo{unfitted, fitted.Info(), other.Info(), New(Options{BigramWeight: -1}).Info()}
	seen := map[string]bool{}
	for _, info := range infos {
		if info.Kind != "lexical" || info.Model != "" || info.Dim != 0 {
			t.Errorf("Info() = %+v, want kind lexical, no model, dim 0", info)
		}
		if !strings.HasPrefix(info.Version, Algorithm+"-") {
			t.Errorf("Info().Version = %q, want prefix %q", info.Version, Algorithm+"-")
		}
		if seen[info.Version] {
			t.Errorf("Info().Version %q repeats for a different fit or options", info.Version)
		}
		seen[info.Version] = true
		if !info.Space(unfitted) {
			t.Errorf("Info() = %v, not in the same space as %v", info, unfitted)
		}
	}
}

func TestRestoreCorrupt(t *testing.T) {
	_, state := fit(t, Options{})
	flip := bytes.Clone(state)
	flip[len(flip)/2] ^= 0x10
	wrongFormat := bytes.Clone(state)
	wrongFormat[3] = 9
	tests := map[string][]byte{
		"nil":          nil,
		"empty":        {},
		"magic only":   []byte(stateMagic),
		"wrong magic":  append([]byte("xyz"), state[3:]...),
		"wrong format": wrongFormat,
		"truncated":    state[:len(state)-5],
		"no checksum":  state[:len(state)-4],
		"flipped bit":  flip,
		"trailing":     append(bytes.Clone(state), 0),
		"garbage":      bytes.Repeat([]byte{0xff}, 64),
	}
	// States whose checksum is right but whose content is not.
	bad := func(weights [numFamilies]float32, docs uint32, ids, dfs []uint32) []byte {
		return encodeState(weights, docs, ids, dfs)
	}
	w := [numFamilies]float32{1, 1, 1}
	tests["negative weight"] = bad([numFamilies]float32{1, -1, 1}, 3, nil, nil)
	tests["NaN weight"] = bad([numFamilies]float32{float32(math.NaN()), 1, 1}, 3, nil, nil)
	tests["df above docs"] = bad(w, 3, []uint32{5}, []uint32{4})
	tests["zero df"] = bad(w, 3, []uint32{5}, []uint32{0})
	tests["repeated id"] = bad(w, 3, []uint32{5, 5}, []uint32{1, 1})
	// The second id's gap wraps in 32 bits, so it decodes beyond them.
	tests["id beyond 32 bits"] = bad(w, 3, []uint32{0xf0000000, 0x10000000}, []uint32{1, 1})
	for name, s := range tests {
		got, err := New(Options{}).Restore(s)
		if !errors.Is(err, habilis.ErrInvalid) || got != nil {
			t.Errorf("Restore(%s) = %v, %v, want nil, ErrInvalid", name, got, err)
		}
	}
}

// TestParaphraseRanksItsTool checks real routing: requests worded unlike
// any example still reach their tool's centroid first, fitted or not.
func TestParaphraseRanksItsTool(t *testing.T) {
	fitted, _ := fit(t, Options{})
	queries := []struct{ query, tool string }{
		{"is it going to be sunny in Berlin on Sunday", "get_weather"},
		{"I want to fly to Madrid, find me a ticket", "book_flight"},
		{"how much are 75 euros in US dollars", "convertCurrency"},
		{"what should I cook tonight with some chicken", "recipe-finder"},
		{"currency conversion please", "convertCurrency"},
	}
	for name, e := range map[string]habilis.Embedder{"fitted": fitted, "unfitted": New(Options{})} {
		centroids := make([]habilis.Vector, len(testTools))
		for i, tool := range testTools {
			vs := embed(t, e, habilis.Document, append([]string{tool.description}, tool.examples...)...)
			idx, val := make([][]uint32, len(vs)), make([][]float32, len(vs))
			for k, v := range vs {
				idx[k], val[k] = v.Indices, v.Values
			}
			centroids[i].Indices, centroids[i].Values = vec.MeanSparse(idx, val)
		}
		for _, q := range queries {
			qv := embed(t, e, habilis.Query, q.query)[0]
			best, bestScore := "", float32(-1)
			for i, c := range centroids {
				if s := vec.SparseDot(qv.Indices, qv.Values, c.Indices, c.Values); s > bestScore {
					best, bestScore = testTools[i].name, s
				}
			}
			if best != q.tool {
				t.Errorf("%s: best tool for %q = %s (%.3f), want %s", name, q.query, best, bestScore, q.tool)
			}
		}
	}
}

func TestEmbedCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New(Options{}).Embed(ctx, []string{"x"}, habilis.Query); !errors.Is(err, context.Canceled) {
		t.Errorf("Embed(canceled) error = %v, want context.Canceled", err)
	}
	if _, _, err := New(Options{}).Fit(ctx, []string{"x"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Fit(canceled) error = %v, want context.Canceled", err)
	}
}

func TestCounter(t *testing.T) {
	var c counter
	want := map[uint32]uint32{}
	for i := range uint32(5000) {
		id := (i * 7919) % 3001 << 1 // repeats, and id 0
		c.add(id)
		want[id]++
	}
	ids, counts := c.atLeast(2)
	got := map[uint32]uint32{}
	for i, id := range ids {
		if i > 0 && id <= ids[i-1] {
			t.Fatalf("atLeast(2) ids not ascending at %d", i)
		}
		got[id] = counts[i]
	}
	for id, n := range want {
		if n < 2 {
			delete(want, id)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("atLeast(2) mismatch (-want +got):\n%s", diff)
	}
}

// TestCounterMerge checks that merged counters count what one counter fed
// everything would.
func TestCounterMerge(t *testing.T) {
	var one, a, b counter
	for i := range uint32(5000) {
		id := (i * 7919) % 3001
		one.add(id)
		if i%3 == 0 {
			a.add(id)
		} else {
			b.add(id)
		}
	}
	a.merge(&b)
	wantIDs, wantCounts := one.atLeast(1)
	gotIDs, gotCounts := a.atLeast(1)
	if !slices.Equal(gotIDs, wantIDs) || !slices.Equal(gotCounts, wantCounts) {
		t.Errorf("merged counter = %v %v, want %v %v", gotIDs, gotCounts, wantIDs, wantCounts)
	}
}

// TestEmbedWorkers checks that Fit and Embed, which share many texts out
// over GOMAXPROCS goroutines, give the same state and vectors whatever
// their number, and that a cancelled context still fails them.
func TestEmbedWorkers(t *testing.T) {
	ctx := context.Background()
	corpus := benchCorpus(1000)
	var wantState []byte
	var wantVecs []habilis.Vector
	for _, procs := range []int{1, 2, 5} {
		old := runtime.GOMAXPROCS(procs)
		e, state, err := New(Options{}).Fit(ctx, corpus)
		if err != nil {
			t.Fatal(err)
		}
		vs, err := e.Embed(ctx, corpus, habilis.Document)
		if err != nil {
			t.Fatal(err)
		}
		canceled, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := e.Embed(canceled, corpus, habilis.Document); !errors.Is(err, context.Canceled) {
			t.Errorf("GOMAXPROCS %d: Embed(canceled) error = %v, want context.Canceled", procs, err)
		}
		if _, _, err := e.Fit(canceled, corpus); !errors.Is(err, context.Canceled) {
			t.Errorf("GOMAXPROCS %d: Fit(canceled) error = %v, want context.Canceled", procs, err)
		}
		runtime.GOMAXPROCS(old)
		if procs == 1 {
			wantState, wantVecs = state, vs
			continue
		}
		if !bytes.Equal(state, wantState) {
			t.Errorf("GOMAXPROCS %d: Fit state differs from one goroutine's", procs)
		}
		if diff := cmp.Diff(wantVecs, vs); diff != "" {
			t.Errorf("GOMAXPROCS %d: vectors differ from one goroutine's (-want +got):\n%s", procs, diff)
		}
	}
}
