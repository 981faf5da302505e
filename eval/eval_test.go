package eval_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/catalog"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/eval"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/memstore"
)

func TestAUROC(t *testing.T) {
	tests := []struct {
		name     string
		pos, neg []float64
		want     float64
	}{
		{"separated", []float64{0.9, 0.8}, []float64{0.1, 0.2}, 1},
		{"inverted", []float64{0.1}, []float64{0.9, 0.8}, 0},
		{"all tied", []float64{0.5, 0.5}, []float64{0.5}, 0.5},
		// Pairs (pos, neg): (0.9,0.5) win, (0.9,0.7) win, (0.4,0.5) loss,
		// (0.4,0.7) loss: 2 of 4.
		{"half", []float64{0.9, 0.4}, []float64{0.5, 0.7}, 0.5},
		// (0.6,0.6) tie counts half, (0.6,0.2) win: 1.5 of 2.
		{"tie counts half", []float64{0.6}, []float64{0.6, 0.2}, 0.75},
		{"no negatives", []float64{0.6}, nil, 0},
	}
	for _, tt := range tests {
		if got := eval.AUROC(tt.pos, tt.neg); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("AUROC(%s: %v, %v) = %v, want %v", tt.name, tt.pos, tt.neg, got, tt.want)
		}
	}
}

func TestParseQueries(t *testing.T) {
	good := `{"query": "weather in Rome", "expected": ["get_weather"]}

{"query": "write a haiku", "expected": []}
`
	qs, err := eval.ParseQueries("q.jsonl", strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 2 || qs[0].Expected[0] != "get_weather" || qs[1].Expected == nil || len(qs[1].Expected) != 0 {
		t.Errorf("ParseQueries(good) = %+v, want two queries, the second expecting no tool", qs)
	}
	bad := []struct{ text, want string }{
		{`{"query": "x", "expected": ["a"]}` + "\n" + `{"query": "y"`, "q.jsonl:2:"},
		{`{"expected": ["a"]}`, `q.jsonl:1: field "query"`},
		{`{"query": "  ", "expected": ["a"]}`, `q.jsonl:1: field "query"`},
		{`{"query": "x"}`, `q.jsonl:1: field "expected": missing`},
		{`{"query": "x", "expected": "a"}`, `q.jsonl:1: field "expected"`},
		{`{"query": 5, "expected": ["a"]}`, `q.jsonl:1: field "query": must be a non-empty string, got number`},
		{`{"query": "x", "expected": ["a"], "arguments": "Porto"}`, `q.jsonl:1: field "arguments": must be an object of argument values, got string`},
		{`["x", ["a"]]`, `q.jsonl:1: a row must be a JSON object, got array`},
		// Nothing to measure: eval would report every figure as 0.
		{"", "q.jsonl: holds no queries"},
		{"\n  \n", "q.jsonl: holds no queries"},
	}
	for _, b := range bad {
		_, err := eval.ParseQueries("q.jsonl", strings.NewReader(b.text))
		if err == nil || !strings.Contains(err.Error(), b.want) || !errors.Is(err, habilis.ErrInvalid) {
			t.Errorf("ParseQueries(%q) error = %v, want one containing %q and wrapping ErrInvalid", b.text, err, b.want)
		}
	}
}

func router(t *testing.T) (*selector.Router, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "habilis.db")
	r := testutil.LexicalRouter(t, testutil.BoltStore(t, path))
	tools, err := catalog.Read("../selector/testdata/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Load(context.Background(), tools, selector.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	return r, path
}

func TestRun(t *testing.T) {
	r, _ := router(t)
	qs := []eval.Query{
		{Query: "send an email to dave about the offsite", Expected: []string{"send_email"}},
		{Query: "how many euros do I get for 20 dollars", Expected: []string{"convert_currency"}},
		{Query: "what time is it in Lima", Expected: []string{"current_time"}},
		{Query: "compose a sonnet about autumn leaves", Expected: []string{}},
		{Query: "write a limerick about a cat", Expected: []string{}},
	}
	var calls []int
	progress := func(done, total int) {
		if total != len(qs) {
			t.Errorf("progress total = %d, want %d", total, len(qs))
		}
		calls = append(calls, done)
	}
	rep, err := eval.Run(context.Background(), r, qs, eval.Options{Mode: habilis.ModeHybrid, K: 3, Progress: progress})
	if err != nil {
		t.Fatal(err)
	}
	// Every query reports progress, no-tool ones included.
	if want := []int{1, 2, 3, 4, 5}; !slices.Equal(calls, want) {
		t.Errorf("progress calls = %v, want %v", calls, want)
	}
	if rep.Queries != 5 || rep.Tools != 7 || rep.K != 3 || rep.Mode != habilis.ModeHybrid {
		t.Errorf("Run header = %d queries, %d tools, k %d, mode %s; want 5, 7, 3, hybrid", rep.Queries, rep.Tools, rep.K, rep.Mode)
	}
	if rep.AccAt1 != 1 || rep.RecallAtK != 1 || rep.MRR != 1 {
		t.Errorf("Run on easy queries: acc@1 %v, recall %v, mrr %v; want 1, 1, 1", rep.AccAt1, rep.RecallAtK, rep.MRR)
	}
	if rep.NoTool.Queries != 2 || rep.NoTool.AbstainRecall != 1 || rep.DecisionAccuracy != 1 {
		t.Errorf("Run no-tool figures = %+v, decision accuracy %v; want the sonnet and the limerick abstained on and every decision right", rep.NoTool, rep.DecisionAccuracy)
	}
	if rep.NoTool.AUROC != 1 {
		t.Errorf("Run AUROC = %v, want 1: the three tool queries are more confident than the sonnet and the limerick", rep.NoTool.AUROC)
	}
	// A misroute is reported as a confusion with its query.
	wrong := []eval.Query{{Query: "send an email to dave about the offsite", Expected: []string{"convert_currency"}}}
	rep, err = eval.Run(context.Background(), r, wrong, eval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.AccAt1 != 0 || len(rep.Confusions) != 1 || rep.Confusions[0].Chosen != "send_email" || rep.Confusions[0].Expected != "convert_currency" {
		t.Errorf("Run(misroute) = acc %v, confusions %+v; want 0 and send_email chosen for convert_currency", rep.AccAt1, rep.Confusions)
	}
}

func TestFit(t *testing.T) {
	r, _ := router(t)
	ctx := context.Background()
	var qs []eval.Query
	for _, q := range []string{"mail the slides to Ann", "email my landlord about the heating", "send Tom a note by email", "drop an email to support", "please email the draft to Lee", "email the team the agenda"} {
		qs = append(qs, eval.Query{Query: q, Expected: []string{"send_email"}})
	}
	for _, q := range []string{"convert 5 francs to yen", "what are 80 dollars in pounds", "change 12 euros into kroner", "how much is 3 pounds in dollars"} {
		qs = append(qs, eval.Query{Query: q, Expected: []string{"convert_currency"}})
	}
	qs = append(qs, eval.Query{Query: "paint my fence blue", Expected: []string{}}, eval.Query{Query: "knit a scarf pattern", Expected: []string{}})
	before := r.Version()
	rep, err := eval.Fit(ctx, r, qs, eval.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Queries != 12 || rep.ToolQueries != 10 || rep.NoToolQueries != 2 || rep.AddedExamples != 10 {
		t.Errorf("Fit report counts = %+v, want 12 queries, 10 with a tool, 2 without, 10 added", rep)
	}
	if !rep.After.Fitted || r.Version() <= before || !r.Calibration().Fitted {
		t.Errorf("after Fit: fitted %v, version %d (was %d); want a fitted calibration stored in a new version", r.Calibration().Fitted, r.Version(), before)
	}
	if rep.Tuning.Queries == 0 || rep.Tuning.Queries == len(qs) {
		t.Errorf("Fit tuned on %d of %d queries, want a held-out part of them", rep.Tuning.Queries, len(qs))
	}
	info, err := r.Tool("send_email")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(info.Tool.Examples, "mail the slides to Ann") {
		t.Errorf("send_email examples after Fit = %q, want the labelled queries added", info.Tool.Examples)
	}
	// A later catalog change keeps what fit learned: the weights (ten
	// queries learn no gate, see TestFitKeepsWhatItLearned).
	cal := r.Calibration()
	if _, err := r.Delete(ctx, []string{"lookup_word"}); err != nil {
		t.Fatal(err)
	}
	if got := r.Calibration(); !got.Fitted || got.Weights != cal.Weights {
		t.Errorf("calibration after a delete = %+v, want the fitted one %+v kept", got, cal)
	}
}

// TestFitKeepsWhatItLearned checks that a later write keeps the gates fit
// learned, and calibrates again from the examples the gates it did not
// learn (too few queries for a tool), as for a catalog fit never saw,
// rather than freezing those of the catalog it fitted.
func TestFitKeepsWhatItLearned(t *testing.T) {
	ctx := context.Background()
	qs := trafficQueries()
	for _, tt := range []struct {
		name    string
		qs      []eval.Query
		learned bool
	}{{"learned", qs, true}, {"too few to learn gates from", qs[:6], false}} {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := router(t)
			rep, err := eval.Fit(ctx, r, tt.qs, eval.FitOptions{})
			if err != nil {
				t.Fatal(err)
			}
			fitted := r.Calibration()
			if rep.GatesLearned != tt.learned || fitted.GatesFitted() != tt.learned || !fitted.Fitted {
				t.Fatalf("Fit: gates learned %v, stored as fitted %v (fitted %v); want %v", rep.GatesLearned, fitted.GatesFitted(), fitted.Fitted, tt.learned)
			}
			if _, err := r.Delete(ctx, []string{"lookup_word"}); err != nil {
				t.Fatal(err)
			}
			got := r.Calibration()
			// The same catalog loaded afresh: its gates from its examples.
			fresh := testutil.LexicalRouter(t, memstore.New())
			if _, err := fresh.Load(ctx, r.Tools(), selector.LoadOptions{}); err != nil {
				t.Fatal(err)
			}
			want := fresh.Calibration()
			if tt.learned {
				want = fitted
			}
			if got.Weights != fitted.Weights || !got.Fitted || got.HybridThreshold != want.HybridThreshold ||
				got.DescriptionThreshold != want.DescriptionThreshold || got.Margin != want.Margin {
				t.Errorf("after a delete: weights %v, hybrid %v, description %v, margin %v; want weights %v kept and the gates %v, %v, %v",
					got.Weights, got.HybridThreshold, got.DescriptionThreshold, got.Margin, fitted.Weights,
					want.HybridThreshold, want.DescriptionThreshold, want.Margin)
			}
		})
	}
}

// trafficQueries returns 64 labelled queries all for a tool, as recorded
// traffic holds them: 40 for send_email and 24 for convert_currency,
// enough for fit to learn the gates from.
func trafficQueries() []eval.Query {
	var qs []eval.Query
	for _, who := range []string{"Ann", "Bob", "Carl", "Dana", "Lee", "my landlord", "the team", "support", "Tom", "my boss"} {
		for _, what := range []string{"email %s the slides", "send %s a note by email", "mail the invoice to %s", "write to %s by email"} {
			qs = append(qs, eval.Query{Query: fmt.Sprintf(what, who), Expected: []string{"send_email"}})
		}
	}
	for _, amount := range []string{"5 francs", "80 dollars", "12 euros", "3 pounds", "40 kroner", "100 yen", "7 rupees", "60 pesos"} {
		for _, into := range []string{"convert %s to yen", "what are %s in pounds", "how much is %s in dollars"} {
			qs = append(qs, eval.Query{Query: fmt.Sprintf(into, amount), Expected: []string{"convert_currency"}})
		}
	}
	return qs
}

// TestFitWithoutNoToolQueries checks that queries all for a tool, as
// recorded traffic is, learn the gates against the built-in background's
// generic requests, and that queries for no tool leave the background
// out.
func TestFitWithoutNoToolQueries(t *testing.T) {
	qs := trafficQueries()
	for _, tt := range []struct {
		name       string
		qs         []eval.Query
		background int
		learned    bool
	}{
		{"tool queries alone", qs, len(selector.BackgroundRequests()), true},
		{"too few to learn gates from", qs[:12], 0, false},
		{"with queries for no tool", append(slices.Clone(qs), eval.Query{Query: "paint my fence blue"}, eval.Query{Query: "knit a scarf pattern"},
			eval.Query{Query: "sing me a lullaby"}, eval.Query{Query: "what is the capital of Peru"}), 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := router(t)
			rep, err := eval.Fit(t.Context(), r, tt.qs, eval.FitOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.BackgroundQueries != tt.background {
				t.Errorf("Fit learned against %d background requests, want %d", rep.BackgroundQueries, tt.background)
			}
			// The gates were learned (fit's margin), not kept from the
			// examples, and the tuning half measured abstentions; or,
			// from too few queries, kept.
			if learned := rep.After.MarginSource == "fit"; learned != tt.learned || (learned && rep.Tuning.AbstainRecall == 0) {
				t.Errorf("Fit: margin from %q, tuning half abstains on %v of no-tool queries; want gates learned %v, some requests for no tool refused",
					rep.After.MarginSource, rep.Tuning.AbstainRecall, tt.learned)
			}
			// The report says so, and counts the no-tool queries its
			// abstention figure rests on.
			if rep.GatesLearned != tt.learned || (rep.Tuning.NoToolQueries == 0) == tt.learned {
				t.Errorf("Fit report: gates learned %v, %d no-tool queries in the tuning half; want learned %v, some no-tool queries iff learned",
					rep.GatesLearned, rep.Tuning.NoToolQueries, tt.learned)
			}
		})
	}
}

func TestFitRefuses(t *testing.T) {
	r, _ := router(t)
	ctx := context.Background()
	before := r.Version()
	unknown := []eval.Query{{Query: "x", Expected: []string{"teleport"}}}
	if _, err := eval.Fit(ctx, r, unknown, eval.FitOptions{}); !errors.Is(err, habilis.ErrNotFound) || !strings.Contains(err.Error(), "teleport") {
		t.Errorf("Fit(unknown tool) error = %v, want ErrNotFound naming teleport", err)
	}
	none := []eval.Query{{Query: "paint my fence blue", Expected: []string{}}}
	if _, err := eval.Fit(ctx, r, none, eval.FitOptions{}); !errors.Is(err, habilis.ErrInvalid) {
		t.Errorf("Fit(no query for a tool) error = %v, want ErrInvalid", err)
	}
	if r.Version() != before {
		t.Errorf("a refused Fit moved the catalog from version %d to %d", before, r.Version())
	}
}

// selfCatalog returns the test catalog, how many examples it holds and a
// router configuration with the lexical embedder.
func selfCatalog(t *testing.T) ([]habilis.Tool, int, selector.Config) {
	t.Helper()
	tools, err := catalog.Read("../selector/testdata/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	examples := 0
	for _, tool := range tools {
		examples += len(tool.Examples)
	}
	return tools, examples, selector.Config{Embedder: lexical.New(lexical.Options{})}
}

func TestEvaluateSelf(t *testing.T) {
	tools, examples, cfg := selfCatalog(t)
	var steps []string
	progress := func(step string, done, total int) {
		if len(steps) == 0 || steps[len(steps)-1] != step {
			steps = append(steps, step)
		}
	}
	res, err := eval.Evaluate(context.Background(), &eval.Setup{Config: cfg, Tools: tools, Self: true, Progress: progress})
	if err != nil {
		t.Fatal(err)
	}
	if res.Queries != examples || res.Folds != eval.SelfFolds || res.Tools != len(tools) {
		t.Errorf("Evaluate(self) = %d queries in %d folds over %d tools, want %d in %d over %d", res.Queries, res.Folds, res.Tools, examples, eval.SelfFolds, len(tools))
	}
	if !slices.Contains(steps, "embedding") || !slices.Contains(steps, "evaluating") {
		t.Errorf("Evaluate(self) progress steps = %v, want embedding and evaluating", steps)
	}
	bare := []habilis.Tool{{Name: "a", Description: "does a"}}
	if _, err := eval.Evaluate(context.Background(), &eval.Setup{Config: cfg, Tools: bare, Self: true}); !errors.Is(err, habilis.ErrInvalid) {
		t.Errorf("Evaluate(self, no examples) error = %v, want ErrInvalid", err)
	}
}

func TestEvaluateFitAndBaseline(t *testing.T) {
	ctx := context.Background()
	tools, _, cfg := selfCatalog(t)
	qs := []eval.Query{
		{Query: "send an email to dave about the offsite", Expected: []string{"send_email"}},
		{Query: "compose a sonnet about autumn leaves", Expected: []string{}},
	}
	fit := []eval.Query{
		{Query: "mail the slides to Ann", Expected: []string{"send_email"}},
		{Query: "convert 5 francs to yen", Expected: []string{"convert_currency"}},
		{Query: "knit a scarf pattern", Expected: []string{}},
	}
	res, err := eval.Evaluate(ctx, &eval.Setup{Config: cfg, Tools: tools, Queries: qs, Fit: fit})
	if err != nil {
		t.Fatal(err)
	}
	if res.Queries != 2 || res.Fit == nil || res.Fit.Queries != 3 || res.Folds != 0 {
		t.Errorf("Evaluate(fit) = %d queries, fit %+v, %d folds; want 2 queries after fitting on 3, no folds", res.Queries, res.Fit, res.Folds)
	}
	if _, err := eval.Evaluate(ctx, &eval.Setup{Tools: tools, Queries: qs, Baseline: "bm26"}); !errors.Is(err, habilis.ErrInvalid) {
		t.Errorf("Evaluate(baseline bm26) error = %v, want ErrInvalid", err)
	}
	res, err = eval.Evaluate(ctx, &eval.Setup{Tools: tools, Queries: qs, Baseline: "bm25"})
	if err != nil || res.Baseline != "bm25" || res.Queries != 2 {
		t.Errorf("Evaluate(baseline bm25) = %+v, %v; want BM25's report over 2 queries", res, err)
	}
}

// TestParseQueriesByteOrderMark checks that a queries file starting with
// a UTF-8 byte order mark, as editors on Windows write it, reads as
// without one, as a catalog does: it was refused as "invalid character
// 'ï'". A mark on a later line is no line start and is refused.
func TestParseQueriesByteOrderMark(t *testing.T) {
	row := `{"query": "weather in Rome", "expected": ["get_weather"]}`
	qs, err := eval.ParseQueries("q.jsonl", strings.NewReader("\uFEFF"+row+"\n"+row+"\n"))
	if err != nil {
		t.Fatalf("ParseQueries(a file with a byte order mark): %v", err)
	}
	if len(qs) != 2 || qs[0].Query != "weather in Rome" {
		t.Errorf("ParseQueries(a file with a byte order mark) = %+v, want two rows for Rome", qs)
	}
	if _, err := eval.ParseQueries("q.jsonl", strings.NewReader(row+"\n\uFEFF"+row+"\n")); !errors.Is(err, habilis.ErrInvalid) || !strings.Contains(err.Error(), "q.jsonl:2") {
		t.Errorf("ParseQueries(a byte order mark on line 2) error = %v, want ErrInvalid naming q.jsonl:2", err)
	}
}

// TestReadQueriesErrors checks the errors of a queries file that cannot
// be read as one: missing, a directory (named once; it read "DIR:1: read
// DIR: is a directory"), or a line past the limit (named by its number).
func TestReadQueriesErrors(t *testing.T) {
	dir := t.TempDir()
	long := filepath.Join(dir, "long.jsonl")
	row := `{"query": "weather in Rome", "expected": ["get_weather"]}` + "\n"
	if err := os.WriteFile(long, []byte(row+`{"query": "`+strings.Repeat("a", 16<<20)+`", "expected": []}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path string
		is   error
		want string
	}{
		{filepath.Join(dir, "nope.jsonl"), fs.ErrNotExist, "no such file"},
		{dir, nil, "is a directory"},
		{long, habilis.ErrInvalid, long + ":2: longer than 16 MiB"},
	} {
		_, err := eval.ReadQueries(tt.path)
		if err == nil || (tt.is != nil && !errors.Is(err, tt.is)) || !strings.Contains(err.Error(), tt.want) || strings.Count(err.Error(), tt.path) != 1 {
			t.Errorf("ReadQueries(%s) error = %v, want one wrapping %v, saying %q and naming the file once", tt.path, err, tt.is, tt.want)
		}
	}
}

// TestEvaluateUnknownExpected: a query routed within the catalog that
// expects a tool the catalog lacks (a misspelt name) is refused, in every
// kind of evaluation, rather than scored as a confusion; within a
// candidates list it is a query whose tool is not offered.
func TestEvaluateUnknownExpected(t *testing.T) {
	ctx := context.Background()
	tools, _, cfg := selfCatalog(t)
	qs := []eval.Query{
		{Query: "send an email to dave", Expected: []string{"send_email"}},
		{Query: "convert 5 francs to yen", Expected: []string{"convert_curency"}},
	}
	for _, baseline := range []string{"", "bm25"} {
		_, err := eval.Evaluate(ctx, &eval.Setup{Config: cfg, Tools: tools, Queries: qs, Baseline: baseline})
		if !errors.Is(err, habilis.ErrNotFound) || !strings.Contains(err.Error(), `"convert 5 francs to yen" expects tool "convert_curency"`) {
			t.Errorf("Evaluate(baseline %q, unknown expected tool) error = %v, want ErrNotFound naming the query and the tool", baseline, err)
		}
	}
	offered := []eval.Query{{Query: "convert 5 francs to yen", Expected: []string{"convert_curency"}, Candidates: []string{"send_email"}, HasCandidates: true}}
	if _, err := eval.Evaluate(ctx, &eval.Setup{Config: cfg, Tools: tools, Queries: offered}); err != nil {
		t.Errorf("Evaluate(expected tool outside the candidates list) error = %v, want a report", err)
	}
}
