package selector_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/catalog"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/boltstore"
	"github.com/habilis-router/habilis/store/storetest"
)

// openStore opens (or creates) the bbolt store at path, closed when the
// test ends.
func openStore(tb testing.TB, path string) *boltstore.Store {
	tb.Helper()
	st, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

// lexicalRouter opens a router over st with the lexical embedder.
func lexicalRouter(tb testing.TB, st habilis.Store) *selector.Router {
	tb.Helper()
	r, err := selector.New(context.Background(), st, selector.Config{Embedder: lexical.New(lexical.Options{})})
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// open returns a router over a fresh embedded store with the lexical
// embedder, and the store.
func open(t *testing.T) (*selector.Router, *boltstore.Store) {
	t.Helper()
	st := openStore(t, filepath.Join(t.TempDir(), "habilis.db"))
	return lexicalRouter(t, st), st
}

func testCatalog(t *testing.T) []habilis.Tool {
	t.Helper()
	tools, err := catalog.Read("testdata/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	return tools
}

func loaded(t *testing.T) (*selector.Router, *boltstore.Store) {
	t.Helper()
	r, st := open(t)
	if _, err := r.Load(context.Background(), testCatalog(t), selector.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	return r, st
}

func TestSelectRoutesParaphrases(t *testing.T) {
	r, _ := loaded(t)
	tests := []struct {
		query string
		mode  habilis.Mode
		want  string
	}{
		{"please email alice that the report is ready", habilis.ModeHybrid, "send_email"},
		{"please email alice that the report is ready", habilis.ModeCentroid, "send_email"},
		{"how many yen do I get for 40 dollars", habilis.ModeHybrid, "convert_currency"},
		{"is it going to rain in Madrid on Sunday", habilis.ModeHybrid, "weather_forecast"},
		{"what is the temperature in Madrid right now", habilis.ModeCentroid, "get_weather"},
		{"definition of the word serendipity", habilis.ModeDescription, "lookup_word"},
		{"what time is it in Paris", habilis.ModeHybrid, "current_time"},
	}
	for _, tt := range tests {
		d, err := r.Select(context.Background(), tt.query, habilis.SelectOptions{Mode: tt.mode})
		if err != nil {
			t.Fatalf("Select(%q, %s): %v", tt.query, tt.mode, err)
		}
		if d.Abstained || len(d.Matches) == 0 || d.Matches[0].Tool != tt.want {
			t.Errorf("Select(%q, %s) = %+v, want %s first", tt.query, tt.mode, d, tt.want)
			continue
		}
		m := d.Matches[0]
		if !m.Passed || m.Margin <= 0 || m.CollidesWith == nil {
			t.Errorf("Select(%q, %s) first match %+v: want passed, a margin and a non-nil collides_with", tt.query, tt.mode, m)
		}
		if d.Mode != tt.mode || d.Query != tt.query {
			t.Errorf("Select(%q, %s) echoed query %q mode %s", tt.query, tt.mode, d.Query, d.Mode)
		}
	}
}

func TestSelectExplainsGate(t *testing.T) {
	r, _ := loaded(t)
	d, err := r.Select(context.Background(), "send an email to dave about lunch", habilis.SelectOptions{Mode: habilis.ModeCentroid, K: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range d.Matches {
		if !m.Passed {
			t.Errorf("centroid mode returned a match that fails its gate: %+v", m)
		}
		if m.RadiusSource == "examples" && m.CentroidScore < m.Radius-m.Margin {
			t.Errorf("match %s passed with centroid %.3f < radius %.3f − margin %.3f", m.Tool, m.CentroidScore, m.Radius, m.Margin)
		}
		if want := max(m.Radius-m.Margin, r.Calibration().NoiseFloor, r.Calibration().Background[m.Tool].Gates(len(r.Tools()))[1]); m.RadiusSource == "examples" && m.Gate != want {
			t.Errorf("match %s gate = %v, want radius − margin or the noise floor, %v", m.Tool, m.Gate, want)
		}
	}
}

func TestSelectExplainsHybridGate(t *testing.T) {
	r, _ := loaded(t)
	h, err := r.Select(context.Background(), "send an email to dave about lunch", habilis.SelectOptions{K: 3, FailOpen: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range h.Matches {
		cal := r.Calibration()
		bg := cal.Background[m.Tool]
		bgGates := bg.Gates(len(r.Tools()))
		want := max(cal.HybridThreshold, bgGates[2])
		if m.Tool == "lookup_word" { // no examples: gated on its description
			want = max(cal.DescriptionThreshold, bgGates[0])
		}
		if m.Gate != want {
			t.Errorf("hybrid match %s gate = %v, want %v", m.Tool, m.Gate, want)
		}
		if m.Passed != (m.GateScore >= m.Gate) {
			t.Errorf("hybrid match %s passed = %v with gate score %v against gate %v", m.Tool, m.Passed, m.GateScore, m.Gate)
		}
	}
	// With the lexical embedder, a tool's hybrid gate score is its
	// evidence: the mean of its Rocchio and document scores.
	sc, err := r.Scores(context.Background(), "send an email to dave about lunch")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, m := range h.Matches {
		i := slices.Index(sc.Tools, m.Tool)
		if !sc.HasExamples[i] {
			continue
		}
		checked++
		want := (sc.Rocchio[i] + sc.Document[i]) / 2
		if m.GateScore != sc.Evidence[i] || math.Abs(float64(sc.Evidence[i]-want)) > 1e-6 {
			t.Errorf("hybrid match %s gate score %v, evidence %v, want (Rocchio %v + document %v) / 2 = %v",
				m.Tool, m.GateScore, sc.Evidence[i], sc.Rocchio[i], sc.Document[i], want)
		}
	}
	if checked == 0 {
		t.Error("no hybrid match with examples to check the gate score of")
	}
}

func TestToolExplainsGate(t *testing.T) {
	r, _ := loaded(t)
	info, err := r.Tool("send_email")
	if err != nil {
		t.Fatal(err)
	}
	if info.RadiusSource != "examples" || info.RadiusExample == "" || !slices.Contains(info.Tool.Examples, info.RadiusExample) {
		t.Errorf("Tool(send_email) = %+v, want a radius from one of its examples", info)
	}
	word, err := r.Tool("lookup_word")
	if err != nil {
		t.Fatal(err)
	}
	if want := max(r.Calibration().DescriptionThreshold, r.Calibration().Background["lookup_word"].Gates(len(r.Tools()))[0]); word.RadiusSource != "catalog" || word.Threshold != want {
		t.Errorf("Tool(lookup_word) = %+v, want its description gate %v", word, want)
	}
}

func TestCentroidModeAbstains(t *testing.T) {
	r, _ := loaded(t)
	q := "compose a sonnet about autumn leaves"
	d, err := r.Select(context.Background(), q, habilis.SelectOptions{Mode: habilis.ModeCentroid})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Abstained || len(d.Matches) != 0 || d.Reason == "" {
		t.Fatalf("Select(%q, centroid) = %+v, want an abstention with a reason and no matches", q, d)
	}
	open, err := r.Select(context.Background(), q, habilis.SelectOptions{Mode: habilis.ModeCentroid, FailOpen: true, K: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !open.Abstained || len(open.Matches) != 2 {
		t.Errorf("Select(%q, centroid, fail-open) = %+v, want abstained with 2 matches", q, open)
	}
	for _, m := range open.Matches {
		if m.Passed {
			t.Errorf("fail-open match %s says passed after an abstention", m.Tool)
		}
	}
}

func TestPinnedAndDenied(t *testing.T) {
	r, _ := loaded(t)
	ctx := context.Background()
	d, err := r.Select(ctx, "convert 10 dollars to euros", habilis.SelectOptions{Denied: []string{"convert_currency"}, Pinned: []string{"lookup_word"}, FailOpen: true})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range d.Matches {
		names = append(names, m.Tool)
	}
	if slices.Contains(names, "convert_currency") {
		t.Errorf("denied tool returned: %v", names)
	}
	last := d.Matches[len(d.Matches)-1]
	if last.Tool != "lookup_word" || !last.Pinned {
		t.Errorf("Select with pin: last match %+v, want lookup_word pinned", last)
	}
	for _, opts := range []habilis.SelectOptions{{Pinned: []string{"nope"}}, {Denied: []string{"nope"}}} {
		if _, err := r.Select(ctx, "hello", opts); !errors.Is(err, habilis.ErrNotFound) {
			t.Errorf("Select with %+v: err %v, want ErrNotFound", opts, err)
		}
	}
	// A tool both pinned (always returned) and denied (never) is a
	// contradiction, refused rather than settled either way.
	both := habilis.SelectOptions{Pinned: []string{"lookup_word"}, Denied: []string{"lookup_word"}}
	if d, err := r.Select(ctx, "define serendipity", both); !errors.Is(err, habilis.ErrInvalid) {
		t.Errorf("Select with %+v = %+v, %v; want ErrInvalid", both, d, err)
	}
}

// TestDenyingEveryTool checks that a selection denying the whole catalog
// says so, in every mode, rather than that no tool shares a feature with
// the query.
func TestDenyingEveryTool(t *testing.T) {
	r, _ := loaded(t)
	var all []string
	for _, tool := range r.Tools() {
		all = append(all, tool.Name)
	}
	for _, mode := range []habilis.Mode{habilis.ModeHybrid, habilis.ModeCentroid, habilis.ModeDescription} {
		d, err := r.Select(t.Context(), "convert 10 dollars to euros", habilis.SelectOptions{Mode: mode, Denied: all})
		if err != nil {
			t.Fatal(err)
		}
		const want = "every tool of the catalog is denied"
		if !d.Abstained || d.Reason != want || len(d.Matches) != 0 {
			t.Errorf("Select(%s mode, every tool denied) = abstained %v, reason %q, %d matches; want abstained, %q, none", mode, d.Abstained, d.Reason, len(d.Matches), want)
		}
	}
}

func TestSelectRejectsBadInput(t *testing.T) {
	r, _ := loaded(t)
	for _, tt := range []struct {
		query string
		opts  habilis.SelectOptions
	}{
		{"", habilis.SelectOptions{}},
		{"   ", habilis.SelectOptions{}},
		{"weather", habilis.SelectOptions{Mode: "magic"}},
		{"weather", habilis.SelectOptions{K: -1}},
		{"weather", habilis.SelectOptions{K: selector.MaxK + 1}},
	} {
		if _, err := r.Select(context.Background(), tt.query, tt.opts); !errors.Is(err, habilis.ErrInvalid) {
			t.Errorf("Select(%q, %+v): err %v, want ErrInvalid", tt.query, tt.opts, err)
		}
	}
}

func TestAmbiguousWhenCollidingToolsBothFit(t *testing.T) {
	r, _ := loaded(t)
	info, err := r.Tool("get_weather")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(info.CollidesWith, "weather_forecast") {
		t.Fatalf("get_weather collides with %v, want weather_forecast among them", info.CollidesWith)
	}
	d, err := r.Select(context.Background(), "weather in Paris tomorrow", habilis.SelectOptions{Mode: habilis.ModeCentroid})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Ambiguous || d.Reason == "" {
		t.Errorf("Select(weather in Paris tomorrow) = %+v, want ambiguous between the two weather tools", d)
	}
	// Ambiguity rests on the colliding tools, not on the matches asked for.
	for _, k := range []int{1, 2, 5} {
		dk, err := r.Select(context.Background(), "weather in Paris tomorrow", habilis.SelectOptions{Mode: habilis.ModeCentroid, K: k})
		if err != nil {
			t.Fatal(err)
		}
		if dk.Ambiguous != d.Ambiguous || dk.Reason != d.Reason {
			t.Errorf("Select(k=%d) ambiguous %v (%q), want %v (%q) as with the default k", k, dk.Ambiguous, dk.Reason, d.Ambiguous, d.Reason)
		}
	}
}

func TestFailOpenHandsOverK(t *testing.T) {
	r, _ := loaded(t)
	for _, mode := range []habilis.Mode{habilis.ModeCentroid, habilis.ModeHybrid} {
		q := "send an email to dave about lunch"
		closed, err := r.Select(context.Background(), q, habilis.SelectOptions{Mode: mode, K: 3})
		if err != nil {
			t.Fatal(err)
		}
		open, err := r.Select(context.Background(), q, habilis.SelectOptions{Mode: mode, K: 3, FailOpen: true})
		if err != nil {
			t.Fatal(err)
		}
		passed := 0
		for _, m := range closed.Matches {
			if !m.Passed {
				t.Errorf("Select(%q, %s) returned %s, which fails its gate", q, mode, m.Tool)
			}
			passed++
		}
		if passed == 0 || passed == 3 {
			t.Fatalf("Select(%q, %s) passed %d tools, want some but fewer than 3 for this test", q, mode, passed)
		}
		if len(open.Matches) != 3 || open.Matches[0].Tool != closed.Matches[0].Tool || open.Abstained {
			t.Errorf("Select(%q, %s, fail-open) = %+v, want 3 matches led by %s", q, mode, open, closed.Matches[0].Tool)
		}
	}
}

func TestLoadIsIdempotent(t *testing.T) {
	r, _ := open(t)
	ctx := context.Background()
	first, err := r.Load(ctx, testCatalog(t), selector.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if first.Embedded == 0 || len(first.Added) != 7 {
		t.Fatalf("first Load = %+v, want 7 tools added and texts embedded", first)
	}
	second, err := r.Load(ctx, testCatalog(t), selector.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if second.Embedded != 0 || second.Version != first.Version || second.Unchanged != 7 || len(second.Added)+len(second.Updated)+len(second.Removed) != 0 {
		t.Errorf("second Load = %+v, want nothing embedded or changed at version %d", second, first.Version)
	}
}

func TestLoadReplaceMergeAndDelete(t *testing.T) {
	r, _ := loaded(t)
	ctx := context.Background()
	tools := testCatalog(t)
	rep, err := r.Load(ctx, tools[:2], selector.LoadOptions{Merge: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Removed) != 0 || len(r.Tools()) != 7 {
		t.Errorf("merge load removed %v, now %d tools; want none removed, 7 tools", rep.Removed, len(r.Tools()))
	}
	changed := tools[0]
	changed.Description = "Weather right now in any city of the world."
	rep, err = r.Load(ctx, append([]habilis.Tool{changed}, tools[1:3]...), selector.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Removed) != 4 || !slices.Equal(rep.Updated, []string{"get_weather"}) || len(r.Tools()) != 3 {
		t.Errorf("replace load = %+v with %d tools, want 4 removed, get_weather updated, 3 tools", rep, len(r.Tools()))
	}
	if _, err := r.Delete(ctx, []string{"send_email", "missing"}); !errors.Is(err, habilis.ErrNotFound) {
		t.Errorf("Delete(unknown) err %v, want ErrNotFound", err)
	}
	if len(r.Tools()) != 3 {
		t.Errorf("failed Delete changed the catalog: %d tools", len(r.Tools()))
	}
	if _, err := r.Delete(ctx, []string{"send_email"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Tool("send_email"); !errors.Is(err, habilis.ErrNotFound) {
		t.Errorf("Tool(send_email) after delete: err %v, want ErrNotFound", err)
	}
}

// TestTrial checks that a trial catalog is configured as its router,
// holds the tools given, and leaves the router's store as it was.
func TestTrial(t *testing.T) {
	r, st := loaded(t)
	ctx := context.Background()
	before, err := st.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tools := testCatalog(t)[:3]
	tools[0].Examples = append(tools[0].Examples, "how sunny is it in Rome")
	trial, err := r.Trial(ctx, tools)
	if err != nil {
		t.Fatal(err)
	}
	defer trial.Close()
	names := toolNames(trial.Tools())
	want := toolNames(tools)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("Trial tools = %v, want %v", names, want)
	}
	if got, want := trial.Embedder().Info().Kind, r.Embedder().Info().Kind; got != want {
		t.Errorf("Trial embedder kind = %q, want the router's %q", got, want)
	}
	d, err := trial.Select(ctx, "how sunny is it in Rome", habilis.SelectOptions{})
	if err != nil || d.Abstained || d.Matches[0].Tool != tools[0].Name {
		t.Errorf("Trial Select = %+v, %v; want %s, whose new example it is", d, err, tools[0].Name)
	}
	after, err := st.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.Meta.Version != before.Meta.Version || len(after.Records) != len(before.Records) || len(r.Tools()) != 7 {
		t.Errorf("after Trial the store is at version %d with %d records, want %d with %d", after.Meta.Version, len(after.Records), before.Meta.Version, len(before.Records))
	}
	if _, err := r.Trial(ctx, []habilis.Tool{{Name: "x", Description: "a"}, {Name: "x", Description: "b"}}); !errors.Is(err, habilis.ErrInvalid) {
		t.Errorf("Trial(two tools of one name) error = %v, want ErrInvalid", err)
	}
}

func TestFailedWriteKeepsServingOldCatalog(t *testing.T) {
	r, st := loaded(t)
	ctx := context.Background()
	before := r.Version()
	st.Close()
	if _, err := r.Load(ctx, testCatalog(t)[:2], selector.LoadOptions{}); err == nil {
		t.Fatal("Load on a closed store succeeded")
	}
	if r.Version() != before || len(r.Tools()) != 7 {
		t.Errorf("after a failed load: version %d, %d tools; want %d and 7", r.Version(), len(r.Tools()), before)
	}
	if _, err := r.Select(ctx, "send an email to bob", habilis.SelectOptions{}); err != nil {
		t.Errorf("Select after failed load: %v", err)
	}
}

func TestReopenRestoresSameAnswers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "habilis.db")
	ctx := context.Background()
	st := openStore(t, path)
	r := lexicalRouter(t, st)
	if _, err := r.Load(ctx, testCatalog(t), selector.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	q := "is it going to snow in Zurich tomorrow"
	want, err := r.Select(ctx, q, habilis.SelectOptions{K: 3})
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // it holds the file open while it reads the index there
	st.Close()
	r2 := lexicalRouter(t, openStore(t, path))
	got, err := r2.Select(ctx, q, habilis.SelectOptions{K: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Matches) != len(want.Matches) {
		t.Fatalf("after reopen Select(%q) = %+v, want %+v", q, got, want)
	}
	for i := range want.Matches {
		if got.Matches[i].Tool != want.Matches[i].Tool || got.Matches[i].Score != want.Matches[i].Score {
			t.Errorf("after reopen match %d = %+v, want %+v", i, got.Matches[i], want.Matches[i])
		}
	}
}

func TestConcurrentSelectDuringLoads(t *testing.T) {
	r, _ := loaded(t)
	ctx := context.Background()
	tools := testCatalog(t)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				d, err := r.Select(ctx, "send an email to bob", habilis.SelectOptions{FailOpen: true})
				if err != nil {
					t.Errorf("Select during load: %v", err)
					return
				}
				// Either the full catalog (send_email present) or the
				// two-tool one: never a mix with no tools.
				if len(d.Matches) == 0 {
					t.Errorf("Select during load returned no matches")
					return
				}
			}
		}()
	}
	for i := range 10 {
		set := tools
		if i%2 == 0 {
			set = tools[:2]
		}
		if _, err := r.Load(ctx, set, selector.LoadOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
}

// TestLexicalAlgorithmMismatch checks that a store whose lexical vectors an
// earlier algorithm made is refused, naming both algorithms, and changes
// nothing; that a reindex re-embeds it with this one; and that a fit made
// on the old vectors does not survive the reindex.
func TestLexicalAlgorithmMismatch(t *testing.T) {
	ctx := context.Background()
	r, st := loaded(t)
	cal := setFitted(t, r)
	storetest.SetAlgorithm(t, st, storetest.Embedder, "1")
	before := snapshot(t, st)

	_, err := selector.New(ctx, st, selector.Config{Embedder: lexical.New(lexical.Options{})})
	if !errors.Is(err, habilis.ErrEmbedderMismatch) || !strings.Contains(err.Error(), "algorithm 1") ||
		!strings.Contains(err.Error(), "algorithm "+lexical.Algorithm) {
		t.Fatalf("New over an algorithm 1 store: err %v, want ErrEmbedderMismatch naming algorithms 1 and %s", err, lexical.Algorithm)
	}
	if after := snapshot(t, st); after.Meta.Version != before.Meta.Version || after.Meta.Embedder != before.Meta.Embedder {
		t.Errorf("a refused open changed the store: meta %+v, was %+v", after.Meta, before.Meta)
	}

	r, err = selector.New(ctx, st, selector.Config{Embedder: lexical.New(lexical.Options{}), Reindex: true})
	if err != nil {
		t.Fatalf("New(Reindex) over an algorithm 1 store: %v", err)
	}
	after := snapshot(t, st)
	if got := after.Meta.Embedder.Algorithm(); got != lexical.Algorithm || after.Meta.Version != before.Meta.Version+1 || len(after.Records) != len(before.Records) {
		t.Errorf("after reindex: algorithm %q, version %d, %d tools; want %s, %d, %d",
			got, after.Meta.Version, len(after.Records), lexical.Algorithm, before.Meta.Version+1, len(before.Records))
	}
	if got := r.Calibration(); got.Fitted || got.Threshold == cal.Threshold {
		t.Errorf("calibration after reindex: fitted %v, threshold %v; want one estimated from the examples", got.Fitted, got.Threshold)
	}
	if _, err := selector.New(ctx, st, selector.Config{Embedder: lexical.New(lexical.Options{})}); err != nil {
		t.Errorf("New after reindex: %v", err)
	}
}

// setFitted stores r's calibration as one that fit learned, with a
// threshold no estimate from the examples gives, and returns it.
func setFitted(t *testing.T, r *selector.Router) selector.Calibration {
	t.Helper()
	cal := r.Calibration()
	cal.Fitted, cal.MarginSource, cal.Threshold = true, "fit", 0.987
	if _, err := r.SetCalibration(context.Background(), cal); err != nil {
		t.Fatal(err)
	}
	return cal
}
