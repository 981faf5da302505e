package eval_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/eval"
	"github.com/habilis-router/habilis/fill"
)

// cannedFiller answers each query with the arguments or the error it was
// given for it, and nothing for any other.
type cannedFiller struct {
	args map[string]map[string]any
	errs map[string]error
}

func (c cannedFiller) Fill(_ context.Context, _ habilis.Tool, query string) (map[string]any, error) {
	if err := c.errs[query]; err != nil {
		return nil, err
	}
	return c.args[query], nil
}

func (cannedFiller) Name() string { return "canned" }

// fillTools are two tools whose schemas the rows below are scored against.
var fillTools = []habilis.Tool{
	{Name: "get_weather", Description: "Current weather in a city.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["C","F"]}},"required":["city"]}`)},
	{Name: "send_email", Description: "Send an email.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"},"body":{"type":"string"}},"required":["to","body"]}`)},
}

// fillRows reads rows as a queries file would hold them.
func fillRows(t *testing.T, rows string) []eval.Query {
	t.Helper()
	qs, err := eval.ParseQueries("q.jsonl", strings.NewReader(rows))
	if err != nil {
		t.Fatal(err)
	}
	return qs
}

// TestFill scores rows of every kind with a filler whose answers are
// known: one filled exactly, one with a wrong value, one whose optional
// argument (acceptable "") is left out, one whose filler fails, and rows
// skipped for each reason Fill gives.
func TestFill(t *testing.T) {
	qs := fillRows(t, `{"query": "weather in Paris", "expected": ["get_weather"], "arguments": {"city": "Paris"}}
{"query": "weather in Rome or Oslo", "expected": ["get_weather"], "arguments": {"city": "Oslo"}}
{"query": "weather in Lima", "expected": ["get_weather"], "calls": [{"acceptable": {"city": ["Lima", "lima"], "unit": [""]}}]}
{"query": "mail bob hi", "expected": ["send_email"], "arguments": {"to": "bob", "body": "hi"}}
{"query": "a haiku", "expected": []}
{"query": "weather and mail", "expected": ["get_weather", "send_email"], "arguments": {"city": "x"}}
{"query": "book a flight", "expected": ["book_flight"], "arguments": {"to": "Rome"}}
{"query": "weather in Nice", "expected": ["get_weather"], "arguments": {"city": "Nice", "days": 3}}
`)
	filler := cannedFiller{
		args: map[string]map[string]any{
			"weather in Paris":        {"city": "Paris"},
			"weather in Rome or Oslo": {"city": "Rome"},
			"weather in Lima":         {"city": "Lima"},
		},
		errs: map[string]error{"mail bob hi": errors.New("no answer")},
	}
	var progress [][2]int
	rep, err := eval.Fill(t.Context(), fillTools, qs, eval.FillOptions{Fillers: []fill.Filler{filler},
		Progress: func(done, total int) { progress = append(progress, [2]int{done, total}) }})
	if err != nil {
		t.Fatal(err)
	}
	want := &eval.FillReport{
		Queries: 4, Tools: 2, Filler: "canned",
		Exact: 0.5, ArgPrecision: 2.0 / 3, ArgRecall: 2.0 / 5, Complete: 0.75,
		Totals:     fill.ScoreTotals{Rows: 4, Exact: 2, Gold: 5, Predicted: 3, Correct: 2, Recalled: 2},
		FillErrors: 1,
		Skipped:    4,
		SkippedBy: map[string]int{eval.SkipNoGold: 1, eval.SkipNotOneTool: 1, eval.SkipUnknownTool: 1,
			eval.SkipSchemaMismatch: 1},
		Misses: []eval.FillMiss{
			{Query: "weather in Rome or Oslo", Tool: "get_weather", Got: map[string]any{"city": "Rome"}, Gold: fill.Acceptable{"city": {"Oslo"}}},
			{Query: "mail bob hi", Tool: "send_email", Got: map[string]any{}, Gold: fill.Acceptable{"to": {"bob"}, "body": {"hi"}}},
		},
	}
	if diff := cmp.Diff(want, rep, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("Fill report (-want +got):\n%s", diff)
	}
	if last := progress[len(progress)-1]; last != [2]int{len(qs), len(qs)} {
		t.Errorf("Fill's last progress = %v, want %d of %d", last, len(qs), len(qs))
	}
}

// TestFillRefuses checks the errors that stop Fill: nothing to score (why
// each row was skipped), a filler that is unavailable or names an unknown
// model (every later row would fail too, so the row is named), and a tool
// whose schema cannot be read (the tool named).
func TestFillRefuses(t *testing.T) {
	scorable := `{"query": "weather in Paris", "expected": ["get_weather"], "arguments": {"city": "Paris"}}` + "\n"
	down := fmt.Errorf("ollama: connection refused: %w", habilis.ErrUnavailable)
	noModel := fmt.Errorf("model tiny: %w", habilis.ErrNotFound)
	bad := []habilis.Tool{{Name: "get_weather", Description: "d", InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":7}}}`)}}
	for _, tt := range []struct {
		name   string
		tools  []habilis.Tool
		rows   string
		filler fill.Filler
		is     error
		want   []string
	}{
		{"nothing scorable", fillTools, `{"query": "a haiku", "expected": []}` + "\n" + `{"query": "x", "expected": ["nope"], "arguments": {"a": 1}}` + "\n",
			cannedFiller{}, habilis.ErrInvalid, []string{"skipped 2 rows", eval.SkipNoGold + ": 1", eval.SkipUnknownTool + ": 1", `give rows "arguments"`}},
		{"filler unavailable", fillTools, `{"query": "a haiku", "expected": []}` + "\n" + scorable,
			cannedFiller{errs: map[string]error{"weather in Paris": down}}, habilis.ErrUnavailable, []string{"query 2", "connection refused"}},
		{"model unknown", fillTools, scorable,
			cannedFiller{errs: map[string]error{"weather in Paris": noModel}}, habilis.ErrNotFound, []string{"query 1", "model tiny"}},
		{"schema unreadable", bad, scorable, cannedFiller{}, habilis.ErrInvalid, []string{`tool "get_weather"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := eval.Fill(t.Context(), tt.tools, fillRows(t, tt.rows), eval.FillOptions{Fillers: []fill.Filler{tt.filler}})
			if !errors.Is(err, tt.is) {
				t.Fatalf("Fill = %+v, %v; want an error wrapping %v", rep, err, tt.is)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Fill error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestFillKeepsEveryMiss checks that the report lists every row not filled
// exactly, in order.
func TestFillKeepsEveryMiss(t *testing.T) {
	const n = 25
	var rows strings.Builder
	for i := range n {
		fmt.Fprintf(&rows, "{\"query\": \"weather in town %d\", \"expected\": [\"get_weather\"], \"arguments\": {\"city\": \"town %d\"}}\n", i, i)
	}
	rep, err := eval.Fill(t.Context(), fillTools, fillRows(t, rows.String()), eval.FillOptions{Fillers: []fill.Filler{cannedFiller{}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Misses) != n || rep.Misses[n-1].Query != fmt.Sprint("weather in town ", n-1) {
		t.Errorf("Fill kept %d misses, want all %d, in order", len(rep.Misses), n)
	}
}
