package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis/eval"
)

// evalRows are labelled queries for testdata/tools.json: one new request
// for each tool, two for none, and two of the catalog's own examples in
// other case and spacing.
var evalRows = []struct{ query, tool string }{
	{"is it snowing in Helsinki", "get_weather"},
	{"will it rain in Porto next week", "get_forecast"},
	{"email Carol the minutes", "send_email"},
	{"any unread mail for me", "read_inbox"},
	{"book a meeting with Sam on Friday at 3", "create_event"},
	{"what are 20 francs in yen", "convert_currency"},
	{"say goodbye in Italian", "translate_text"},
	{"write a poem about the sea", ""},
	{"tell me a joke", ""},
	{"CHECK MY INBOX", "read_inbox"},
	{"convert  100 dollars to euros", "convert_currency"},
}

// evalRowsExamples is how many of evalRows are examples of the catalog.
const evalRowsExamples = 2

// rowsReport is what TestEvalRows reads of eval --json.
type rowsReport struct {
	Queries    int `json:"queries"`
	Excluded   int `json:"excluded"`
	FitQueries int `json:"fit_queries"`
	NoTool     struct {
		Queries int `json:"queries"`
	} `json:"no_tool"`
	PerTool []struct {
		Tool    string `json:"tool"`
		Queries int    `json:"queries"`
	} `json:"per_tool"`
}

// scored returns the rows a report measured: queries by expected tool,
// "" for none.
func (r rowsReport) scored() map[string]int {
	m := map[string]int{}
	for _, pt := range r.PerTool {
		m[pt.Tool] = pt.Queries
	}
	if r.NoTool.Queries > 0 {
		m[""] = r.NoTool.Queries
	}
	return m
}

// lowBitFNV1a is the low bit of the 32-bit FNV-1a hash of s, from the
// hash's definition: which half of --half s is in.
func lowBitFNV1a(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h & 1
}

// TestEvalRows checks which rows --exclude-examples, --half and
// --fit-split measure and fit on, against the halves worked out here: the
// halves are disjoint and cover the rows, a and b measure different rows,
// and --fit-split fits on a and measures b.
func TestEvalRows(t *testing.T) {
	var lines []string
	half := [2]map[string]int{{}, {}}
	for i, r := range evalRows {
		expected := []string{}
		if r.tool != "" {
			expected = append(expected, r.tool)
		}
		line, err := json.Marshal(map[string]any{"query": r.query, "expected": expected})
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(line))
		if i < len(evalRows)-evalRowsExamples {
			half[lowBitFNV1a(r.query)][r.tool]++
		}
	}
	qpath := filepath.Join(t.TempDir(), "q.jsonl")
	if err := os.WriteFile(qpath, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if len(half[0]) < 2 || len(half[1]) < 2 {
		t.Fatalf("halves %v: the test needs rows of several tools in each", half)
	}
	run := func(args ...string) rowsReport {
		t.Helper()
		out := mustRun(t, append([]string{"eval", "--json", "--tools", testdata("tools.json"), "--queries", qpath}, args...)...)
		return decode[rowsReport](t, out)
	}
	all := run()
	kept := run("--exclude-examples")
	if all.Queries != len(evalRows) || all.Excluded != 0 || kept.Queries != len(evalRows)-evalRowsExamples || kept.Excluded != evalRowsExamples {
		t.Errorf("eval = %d queries (%d excluded), --exclude-examples %d (%d excluded); want %d (0) and %d (%d)",
			all.Queries, all.Excluded, kept.Queries, kept.Excluded, len(evalRows), len(evalRows)-evalRowsExamples, evalRowsExamples)
	}
	a, b := run("--exclude-examples", "--half", "a"), run("--exclude-examples", "--half", "b")
	if diff := cmp.Diff(half[0], a.scored()); diff != "" {
		t.Errorf("--half a measured (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(half[1], b.scored()); diff != "" {
		t.Errorf("--half b measured (-want +got):\n%s", diff)
	}
	if a.Queries+b.Queries != kept.Queries {
		t.Errorf("--half a and b measure %d + %d queries, want the %d of both", a.Queries, b.Queries, kept.Queries)
	}
	split := run("--exclude-examples", "--fit-split")
	if diff := cmp.Diff(half[1], split.scored()); diff != "" {
		t.Errorf("--fit-split measured (-want +got), want half b:\n%s", diff)
	}
	if split.FitQueries != a.Queries {
		t.Errorf("--fit-split fitted on %d queries, want half a's %d", split.FitQueries, a.Queries)
	}
}

// TestPrintEvalUndefinedFigures: a report of queries that all expect no
// tool prints "–" for the figures over tool queries and for the AUROC,
// which need them, rather than 0.000, which reads as failing them all.
func TestPrintEvalUndefinedFigures(t *testing.T) {
	for _, tt := range []struct {
		name         string
		rep          eval.Report
		dash, number []string
	}{
		{"no tool queries", eval.Report{Queries: 3, K: 5, DecisionAccuracy: 1, NoTool: eval.NoTool{Queries: 3, AbstainRecall: 1}},
			[]string{"acc@1              –", "recall@5           –", "mrr                –", "auroc –", "wrong abstentions  – of tool queries"},
			[]string{"decision accuracy  1.000"}},
		{"both kinds, no abstention", eval.Report{Queries: 4, K: 5, AccAt1: 0.5, NoTool: eval.NoTool{Queries: 2, AUROC: 0.75}},
			[]string{"abstain precision –"}, []string{"acc@1              0.500", "auroc 0.750", "wrong abstentions  0.000 of tool queries"}},
		{"abstentions", eval.Report{Queries: 4, K: 5, NoTool: eval.NoTool{Queries: 2, AbstainPrecision: 0.5, AbstainRecall: 0.5, WrongAbstainRate: 0.5}},
			nil, []string{"abstain precision 0.500"}},
	} {
		var b strings.Builder
		printEval(&b, &evalOutput{Result: &eval.Result{Report: &tt.rep}})
		for _, want := range append(tt.dash, tt.number...) {
			if !strings.Contains(b.String(), want) {
				t.Errorf("%s: report lacks %q:\n%s", tt.name, want, b.String())
			}
		}
	}
}
