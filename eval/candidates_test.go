package eval_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/catalog"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/eval"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/memstore"
)

// perRequest is a catalog of description-only tools that queries pick
// their candidates from.
const perRequest = `[
 {"name": "get_weather", "description": "Get the current weather in a city: temperature, rain and wind.", "arguments": {"city": "the city"}},
 {"name": "convert_currency", "description": "Convert an amount of money from one currency to another.", "arguments": {"amount": "how much", "from": "source currency", "to": "target currency"}},
 {"name": "send_email", "description": "Send an email message to a recipient.", "arguments": {"to": "recipient address", "body": "message text"}}
]`

const candidateRows = `{"query": "what is the weather in Oslo", "expected": ["get_weather"], "candidates": ["get_weather", "send_email"], "split": "x"}
{"query": "convert 20 dollars to euros", "expected": ["convert_currency"], "candidates": ["convert_currency"], "split": "x"}
{"query": "what is the weather in Rome", "expected": [], "candidates": ["send_email"], "split": "y"}
{"query": "translate hello into French", "expected": ["translate"], "candidates": [{"name": "translate", "description": "Translate text into another language.", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}]}
{"query": "tell me a joke", "expected": [], "candidates": []}
`

func newScratch(ctx context.Context) (*selector.Router, error) {
	return selector.New(ctx, memstore.New(), selector.Config{Embedder: lexical.New(lexical.Options{})})
}

func TestRunCandidates(t *testing.T) {
	tools, err := catalog.Parse("tools.json", []byte(perRequest))
	if err != nil {
		t.Fatal(err)
	}
	qs, err := eval.ParseQueries("q.jsonl", strings.NewReader(candidateRows))
	if err != nil {
		t.Fatal(err)
	}
	if !qs[4].HasCandidates || len(qs[4].Candidates) != 0 || len(qs[3].Inline) != 1 {
		t.Fatalf("ParseQueries: rows 4 and 5 = %+v, %+v; want one inline candidate and an empty list", qs[3], qs[4])
	}
	loads := 0
	counting := func(ctx context.Context) (*selector.Router, error) {
		loads++
		return newScratch(ctx)
	}
	rep, err := eval.RunCandidates(context.Background(), counting, tools, qs, eval.Options{K: 3})
	if err != nil {
		t.Fatal(err)
	}
	if loads != 5 {
		t.Errorf("RunCandidates loaded %d catalogs, want 5 (one per distinct list)", loads)
	}
	// Each query ranks only its own candidates: the Rome weather query,
	// offered send_email alone, cannot be routed to get_weather.
	for _, m := range rep.MissedAbstentions {
		if m.Chosen != "" && m.Chosen != "send_email" {
			t.Errorf("no-tool query %q got %s, not among its candidates", m.Query, m.Chosen)
		}
	}
	if rep.RankAccAt1 != 1 || rep.NoTool.Queries != 2 {
		t.Errorf("RunCandidates ranking acc@1 %v over %d no-tool queries, want 1 over 2", rep.RankAccAt1, rep.NoTool.Queries)
	}
	if rep.NoTool.AcceptedRate != 1-rep.NoTool.AbstainRecall {
		t.Errorf("accepted rate %v, want 1 − abstain recall %v", rep.NoTool.AcceptedRate, rep.NoTool.AbstainRecall)
	}
	// An empty list is a catalog without tools: the right decision is to
	// abstain, and it is counted as one.
	if rep.NoTool.AbstainRecall < 0.5 {
		t.Errorf("abstain recall %v, want at least the empty list's query abstained on", rep.NoTool.AbstainRecall)
	}
	unknown := []eval.Query{{Query: "x", Expected: []string{}, Candidates: []string{"nope"}, HasCandidates: true}}
	if _, err := eval.RunCandidates(context.Background(), newScratch, tools, unknown, eval.Options{}); !errors.Is(err, habilis.ErrNotFound) || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("RunCandidates(unknown candidate) error = %v, want ErrNotFound naming it", err)
	}
}

// TestParseCandidatesErrors checks that a bad candidates list is refused
// naming the row, and a bad definition in it by its place in the list:
// they were named by their place among the list's definitions alone
// ("candidates: tool 0" for the list's second element).
func TestParseCandidatesErrors(t *testing.T) {
	for _, tt := range []struct{ candidates, want string }{
		{`"get_weather"`, `q.jsonl:1: field "candidates": must be an array`},
		{`[""]`, `q.jsonl:1: field "candidates"[0]: empty tool name`},
		{`[3]`, `q.jsonl:1: field "candidates"[0]: want a tool name or a tool definition`},
		{`[{"name": "t"}]`, `q.jsonl:1: field "candidates": tool 0 "t": field "description": is required`},
		{`["get_weather", {"name": "t"}]`, `q.jsonl:1: field "candidates": tool 1 "t": field "description": is required`},
		{`["a", {"name": "t", "description": "d", "colour": "red"}, {"name": "u"}]`, `q.jsonl:1: field "candidates": tool 1 "t": field "colour": unknown field`},
		{`["a", {"name": "t", "description": "d", "colour": "red"}, {"name": "u"}]`, `q.jsonl:1: field "candidates": tool 2 "u": field "description"`},
		{`[{"name": "t", "description": "a"}, "b", {"name": "t", "description": "b"}]`,
			`q.jsonl:1: field "candidates": tool 2 "t": field "name": duplicates the name of tool 0`},
	} {
		row := `{"query": "x", "expected": [], "candidates": ` + tt.candidates + `}`
		_, err := eval.ParseQueries("q.jsonl", strings.NewReader(row))
		if !errors.Is(err, habilis.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseQueries(candidates %s) error = %v, want ErrInvalid saying %q", tt.candidates, err, tt.want)
		}
	}
}

func TestWhere(t *testing.T) {
	qs, err := eval.ParseQueries("q.jsonl", strings.NewReader(candidateRows+`{"query": "y", "expected": [], "pooled_ok": true, "n": 3}`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		filter string
		want   []string
	}{
		{"split=y", []string{"what is the weather in Rome"}},
		{"pooled_ok=true", []string{"y"}},
		{"n=3", []string{"y"}},
		{"pooled_ok=false", nil},
	} {
		f, err := eval.ParseFilter(tt.filter)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, q := range eval.Where(qs, []eval.Filter{f}) {
			got = append(got, q.Query)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Where(%s) (-want +got):\n%s", tt.filter, diff)
		}
	}
	if _, err := eval.ParseFilter("pooled_ok"); !errors.Is(err, habilis.ErrInvalid) {
		t.Errorf("ParseFilter(no =) error = %v, want ErrInvalid", err)
	}
}

func TestRunBM25(t *testing.T) {
	// Two tools: "alpha" holds the word "red" twice, "beta" "blue" once.
	// BM25 with N = 2 and df = 1: idf = ln(1 + 1.5/1.5) = ln 2 for both words.
	tools := []habilis.Tool{
		{Name: "alpha", Description: "red red", InputSchema: []byte(`{"type":"object"}`)},
		{Name: "beta", Description: "blue", InputSchema: []byte(`{"type":"object"}`)},
	}
	qs := []eval.Query{
		{Query: "red", Expected: []string{"alpha"}},
		{Query: "blue", Expected: []string{"beta"}},
		{Query: "green", Expected: []string{}},
		{Query: "blue", Expected: []string{}},
	}
	rep, err := eval.RunBM25(context.Background(), tools, qs, eval.Options{K: 2})
	if err != nil {
		t.Fatal(err)
	}
	if rep.RankAccAt1 != 1 || rep.Baseline != "bm25" {
		t.Errorf("RunBM25 ranking acc@1 %v, baseline %q; want 1, bm25", rep.RankAccAt1, rep.Baseline)
	}
	// Documents: "alpha red red" (3 words), "beta blue" (2); average 2.5.
	// "blue" at beta: ln2 · 1 · 2.5 / (1 + 1.5 · (0.25 + 0.75 · 2/2.5)).
	blue := math.Ln2 * 2.5 / (1 + 1.5*(0.25+0.75*2/2.5))
	// The best single threshold takes both tool queries and the green one
	// right (3 of 4): any threshold in (0, blue]; the lowest is blue.
	if math.Abs(rep.Threshold-blue) > 1e-9 || rep.DecisionAccuracy != 0.75 {
		t.Errorf("RunBM25 threshold %v, decision accuracy %v; want %v and 0.75", rep.Threshold, rep.DecisionAccuracy, blue)
	}
}

// TestRunBM25Candidates checks BM25 in candidates mode: each row ranks
// its own list only (a tool left out of it is never chosen), an inline
// definition stands in for the catalog's tool of its name, and a row
// without a list ranks the whole catalog.
func TestRunBM25Candidates(t *testing.T) {
	tools := []habilis.Tool{
		{Name: "alpha", Description: "red red", InputSchema: []byte(`{"type":"object"}`)},
		{Name: "beta", Description: "blue", InputSchema: []byte(`{"type":"object"}`)},
	}
	qs, err := eval.ParseQueries("q.jsonl", strings.NewReader(`{"query": "red", "expected": ["alpha"], "candidates": ["alpha", "beta"]}
{"query": "red", "expected": [], "candidates": ["beta"]}
{"query": "blue", "expected": ["alpha"], "candidates": [{"name": "alpha", "description": "blue blue"}, "beta"]}
{"query": "blue", "expected": ["beta"]}
`))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := eval.RunBM25(context.Background(), tools, qs, eval.Options{K: 2})
	if err != nil {
		t.Fatal(err)
	}
	if rep.RankAccAt1 != 1 || rep.NoTool.Queries != 1 {
		t.Errorf("RunBM25 in candidates mode: ranking acc@1 %v over %d no-tool queries; want 1 over 1", rep.RankAccAt1, rep.NoTool.Queries)
	}
	for _, m := range rep.MissedAbstentions {
		if m.Chosen == "alpha" {
			t.Errorf("RunBM25 chose alpha for %q, whose candidates leave it out", m.Query)
		}
	}
}
