package eval_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/catalog"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/eval"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/memstore"
)

// TestParseCalls checks how a row's "calls" (BFCL's gold calls) give its
// acceptable values: those of its only call; none for several calls, for
// a call without them or for null; an error naming the file, line and
// field for a malformed one.
func TestParseCalls(t *testing.T) {
	for _, tt := range []struct {
		calls string
		want  map[string][]any
		err   string
	}{
		{`null`, nil, ""},
		{`[]`, nil, ""},
		{`[{"name": "f"}]`, nil, ""},
		{`[{"acceptable": null}]`, nil, ""},
		{`[{"acceptable": {"city": ["Paris", "paris"], "unit": [""]}}]`, map[string][]any{"city": {"Paris", "paris"}, "unit": {""}}, ""},
		{`[{"acceptable": {"a": [1]}}, {"acceptable": {"b": [2]}}]`, nil, ""},
		{`{"acceptable": {"a": [1]}}`, nil, `q.jsonl:1: field "calls": must be an array of call objects`},
		{`[{"acceptable": {"a": 1}}]`, nil, `q.jsonl:1: field "calls": [0].acceptable: must map each argument to an array of values`},
		{`[{}, {"acceptable": ["a"]}]`, nil, `q.jsonl:1: field "calls": [1].acceptable`},
	} {
		row := `{"query": "weather in Paris", "expected": ["get_weather"], "calls": ` + tt.calls + `}`
		qs, err := eval.ParseQueries("q.jsonl", strings.NewReader(row))
		if tt.err != "" {
			if !errors.Is(err, habilis.ErrInvalid) || err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseQueries(calls %s) error = %v, want ErrInvalid saying %q", tt.calls, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseQueries(calls %s): %v", tt.calls, err)
			continue
		}
		if diff := cmp.Diff(tt.want, qs[0].Acceptable); diff != "" {
			t.Errorf("ParseQueries(calls %s) acceptable (-want +got):\n%s", tt.calls, diff)
		}
	}
}

// TestCandidatesInline checks the catalogs candidates mode builds from
// rows that define tools inline: an inline definition stands in for the
// catalog's tool of its name, names and definitions mix, a name given
// twice counts once, and rows whose lists define the same tools share a
// catalog while a definition that differs makes another.
func TestCandidatesInline(t *testing.T) {
	tools, err := catalog.Parse("tools.json", []byte(perRequest))
	if err != nil {
		t.Fatal(err)
	}
	translate := `{"name": "translate", "description": "Translate text into another language."}`
	qs, err := eval.ParseQueries("q.jsonl", strings.NewReader(
		`{"query": "q1", "expected": [], "candidates": ["send_email", {"name": "get_weather", "description": "Weather on Mars."}, "send_email"]}
{"query": "q2", "expected": [], "candidates": [`+translate+`, "get_weather"]}
{"query": "q3", "expected": [], "candidates": ["get_weather", `+translate+`]}
{"query": "q4", "expected": [], "candidates": [{"name": "translate", "description": "Translate text into French."}]}
{"query": "q5", "expected": []}
`))
	if err != nil {
		t.Fatal(err)
	}
	// Each router's store is kept, to read back the catalog loaded in it.
	var stores []*memstore.Store
	keep := func(ctx context.Context) (*selector.Router, error) {
		st := memstore.New()
		stores = append(stores, st)
		return newRouterOver(ctx, st)
	}
	if _, err := eval.RunCandidates(t.Context(), keep, tools, qs, eval.Options{}); err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, st := range stores {
		r, err := newRouterOver(t.Context(), st)
		if err != nil {
			t.Fatal(err)
		}
		var descs []string
		for _, tool := range r.Tools() {
			descs = append(descs, tool.Name+": "+tool.Description)
		}
		got = append(got, descs)
	}
	want := [][]string{
		{"get_weather: Weather on Mars.", "send_email: Send an email message to a recipient."},
		{"get_weather: Get the current weather in a city: temperature, rain and wind.", "translate: Translate text into another language."},
		{"translate: Translate text into French."},
		{"convert_currency: Convert an amount of money from one currency to another.", "get_weather: Get the current weather in a city: temperature, rain and wind.", "send_email: Send an email message to a recipient."},
	}
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("RunCandidates loaded catalogs (-want +got):\n%s", diff)
	}
}

func newRouterOver(ctx context.Context, st habilis.Store) (*selector.Router, error) {
	return selector.New(ctx, st, selector.Config{Embedder: lexical.New(lexical.Options{})})
}

// FuzzParseQueries checks that ParseQueries never panics on a queries
// file, that every error is an habilis.ErrInvalid naming the file, and
// that what it accepts holds a query and an expected list on each row,
// with candidates that are names, the inline ones among them.
func FuzzParseQueries(f *testing.F) {
	for _, s := range []string{
		candidateRows,
		`{"query": "weather in Paris", "expected": ["get_weather"], "arguments": {"city": "Paris"}, "calls": [{"acceptable": {"city": ["Paris"]}}]}`,
		`{"query": "x", "expected": [], "candidates": [{"type": "function", "function": {"name": "f", "description": "d"}}, "g"]}`,
		`{"query": "x", "expected": [], "candidates": null}` + "\n\n" + `{"query": "y", "expected": ["a", "b"]}`,
		"\xEF\xBB\xBF{\"query\": \"x\", \"expected\": []}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		qs, err := eval.ParseQueries("fuzz.jsonl", strings.NewReader(string(data)))
		if err != nil {
			if !errors.Is(err, habilis.ErrInvalid) || !strings.HasPrefix(err.Error(), "fuzz.jsonl") {
				t.Fatalf("ParseQueries error %q is not an habilis.ErrInvalid naming the file", err)
			}
			return
		}
		if len(qs) == 0 {
			t.Fatal("ParseQueries returned no queries and no error")
		}
		for i, q := range qs {
			if strings.TrimSpace(q.Query) == "" || q.Expected == nil {
				t.Errorf("query %d = %+v: want a query and an expected list", i, q)
			}
			for _, c := range q.Candidates {
				if strings.TrimSpace(c) == "" {
					t.Errorf("query %d has a blank candidate: %q", i, q.Candidates)
				}
			}
			for _, tool := range q.Inline {
				if !slices.Contains(q.Candidates, tool.Name) {
					t.Errorf("query %d: inline tool %q is not among its candidates %q", i, tool.Name, q.Candidates)
				}
			}
		}
	})
}

// TestWithoutExamples checks that the queries that are examples of the
// catalog, ignoring case and spacing, are left out of a measurement (a
// query measured against a catalog holding it as an example tells
// nothing), and counted.
func TestWithoutExamples(t *testing.T) {
	tools := []habilis.Tool{
		{Name: "get_weather", Description: "d", Examples: []string{"Weather in Paris", "is it raining"}},
		{Name: "send_email", Description: "d"},
	}
	qs := []eval.Query{{Query: "weather  in paris"}, {Query: "weather in Rome"}, {Query: " Is it raining "}, {Query: "is it raining now"}}
	kept, dropped := eval.WithoutExamples(tools, qs)
	var got []string
	for _, q := range kept {
		got = append(got, q.Query)
	}
	if diff := cmp.Diff([]string{"weather in Rome", "is it raining now"}, got); diff != "" || dropped != 2 {
		t.Errorf("WithoutExamples dropped %d (want 2), kept (-want +got):\n%s", dropped, diff)
	}
}
