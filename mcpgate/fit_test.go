package mcpgate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/catalog"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/eval"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/memstore"
)

// The fixture's requests that share no word with the tool that serves
// them: unfitted, the gateway abstains on the first with another tool
// first, and ranks weather__search first for the second (checked by
// wantUnfitted).
const (
	umbrellaQuery = "will I need an umbrella in Oslo tomorrow"
	notesQuery    = "where are my notes about taxes"
)

// weatherTraffic records, as mcp serve --record would, requests that teach
// the weather and files servers' words: the forecast for umbrellas and
// picnics, files' search for lost notes. None is a query the tests ask.
func weatherTraffic(t *testing.T, path string) {
	t.Helper()
	rec, err := eval.OpenRecorder(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	for _, r := range [][2]string{
		{"do I need an umbrella in Paris today", "get_forecast"},
		{"should I take an umbrella to Rome tomorrow", "get_forecast"},
		{"is it a good day for a picnic in Berlin", "get_forecast"},
		{"where did I put my tax notes", "files__search"},
		{"look up the Heathrow station", "weather__search"},
	} {
		rec.Record(eval.SourceMCP, r[0], r[1])
	}
}

// top returns the first tool of g's answer to query and whether the
// gateway abstained.
func top(t *testing.T, g *Gateway, query string) (string, bool) {
	t.Helper()
	res, err := g.Search(t.Context(), query, 3)
	if err != nil || len(res.Tools) == 0 {
		t.Fatalf("Search(%q) = %+v, %v", query, res, err)
	}
	return res.Tools[0].Name, res.Abstained
}

// wantRouted checks that g routes the fixture's two requests to the tools
// that serve them, without abstaining.
func wantRouted(t *testing.T, g *Gateway) {
	t.Helper()
	for q, want := range map[string]string{umbrellaQuery: "get_forecast", notesQuery: "files__search"} {
		if got, abstained := top(t, g, q); got != want || abstained {
			t.Errorf("fitted: Search(%q) first = %s (abstained %v), want %s chosen", q, got, abstained, want)
		}
	}
}

// wantUnfitted checks that g does not route the fixture's two requests
// right: what fitting must change.
func wantUnfitted(t *testing.T, g *Gateway) {
	t.Helper()
	if got, abstained := top(t, g, umbrellaQuery); got == "get_forecast" && !abstained {
		t.Errorf("unfitted: Search(%q) chose get_forecast; the fixture no longer shows what fitting changes", umbrellaQuery)
	}
	if got, abstained := top(t, g, notesQuery); got == "files__search" && !abstained {
		t.Errorf("unfitted: Search(%q) chose files__search; the fixture no longer shows what fitting changes", notesQuery)
	}
}

// TestGatewayFitRecorded restarts a gateway on the traffic a recorder
// wrote: requests it abstained on or routed wrong before are routed right,
// rows naming tools it lacks (another config's, a name two servers share)
// are skipped and counted in the log, and the file's own tool names (the
// gateway's, or a server's when no other server has it) both count.
func TestGatewayFitRecorded(t *testing.T) {
	f := weatherAndFiles()
	wantUnfitted(t, f.gateway(t, f.options()))

	path := filepath.Join(t.TempDir(), "traffic.jsonl")
	weatherTraffic(t, path)
	testutil.AppendLines(t, path,
		`{"query": "post the release notes to the team channel", "expected": ["slack__post_message"]}`,
		`{"query": "search for it", "expected": ["search"]}`,
		`{"query": "is there a file called budget.xlsx", "expected": ["files__search", "read_file"]}`,
		`{"query": "compose a sonnet", "expected": []}`)
	f = weatherAndFiles()
	opts := f.options()
	opts.Fit = FitFile(path)
	g := f.gateway(t, opts)
	wantRouted(t, g)
	if !strings.Contains(f.logs.String(), "are skipped\" skipped=2 of=9") {
		t.Errorf("the log does not count the 2 rows of 9 naming tools the gateway lacks:\n%s", f.logs)
	}
	if !strings.Contains(f.logs.String(), `msg="mcp gateway: index fitted on labelled queries" queries=7`) {
		t.Errorf("the log does not say the index was fitted on the 7 usable rows:\n%s", f.logs)
	}
	// 7 rows hold too few for a tool to learn the gates from, and the log
	// says so, as habilis fit does.
	if !strings.Contains(f.logs.String(), "gates_learned=false") {
		t.Errorf("the log does not say the gates were not learned from 7 rows:\n%s", f.logs)
	}
}

// TestGatewayFitAfterStartWait starts a gateway whose start wait is over
// at once: New returns without waiting for the fit, or for the servers,
// and the fitted index is swapped in once fitting ends.
func TestGatewayFitAfterStartWait(t *testing.T) {
	path := filepath.Join(t.TempDir(), "traffic.jsonl")
	weatherTraffic(t, path)
	f := weatherAndFiles()
	opts := f.options()
	opts.Fit = FitFile(path)
	opts.StartWait = time.Nanosecond
	g := f.gateway(t, opts)
	testutil.WaitFor(t, "the fitted index of both servers", func() bool {
		for q, want := range map[string]string{umbrellaQuery: "get_forecast", notesQuery: "files__search"} {
			if res, err := g.Search(t.Context(), q, 1); err != nil || res.Abstained || res.Tools[0].Name != want {
				return false
			}
		}
		return true
	})
}

// TestFitRows checks which rows are kept and how their tools are named:
// by the gateway's name, or by a server's own name when no other server
// has a tool of that name; a row with any tool the gateway lacks, or
// named ambiguously, is skipped; a row for no tool is kept.
func TestFitRows(t *testing.T) {
	tool := func(name string) *mcp.Tool { return &mcp.Tool{Name: name, Description: "does " + name} }
	entries := nameTools([]serverTools{
		{"files", []*mcp.Tool{tool("search"), tool("read_file"), tool("search_tools")}},
		{"weather", []*mcp.Tool{tool("search"), tool("get_forecast")}},
	}, nil, slog.New(slog.DiscardHandler))
	q := func(query string, expected ...string) eval.Query {
		return eval.Query{Query: query, Expected: expected}
	}
	kept, skipped, near := fitRows([]eval.Query{
		q("a", "files__search"),
		q("b", "search_tools"),              // files' own name: files__search_tools
		q("c", "search"),                    // two servers have one
		q("d", "read_file", "get_forecast"), // both known
		q("e", "read_file", "send_email"),   // one unknown
		q("f"),
		q("g", "weather__search", "weather__search"),
		q("h", "get_forcast"), // misspelt
		q("i", "Read-File"),   // misspelt
	}, entries)
	want := []eval.Query{
		q("a", "files__search"),
		q("b", "files__search_tools"),
		q("d", "read_file", "get_forecast"),
		{Query: "f", Expected: []string{}},
		q("g", "weather__search"),
	}
	if diff := cmp.Diff(want, kept); diff != "" || skipped != 4 {
		t.Errorf("fitRows skipped %d, want 4; kept (-want +got):\n%s", skipped, diff)
	}
	wantNear := map[string][]string{"get_forcast": {"get_forecast"}, "Read-File": {"read_file"}}
	if diff := cmp.Diff(wantNear, near); diff != "" {
		t.Errorf("fitRows suggestions (-want +got):\n%s", diff)
	}
}

// TestGatewayFitNothingYet checks that a file that does not exist yet, is
// empty (as Record creates it) or holds no row for a tool of the gateway
// serves the index unfitted and says so: a warning when the file has rows
// but none for a tool of the gateway (a file of another config), which
// mcp search --fit would otherwise pass over in silence.
func TestGatewayFitNothingYet(t *testing.T) {
	dir := t.TempDir()
	unknown := filepath.Join(dir, "other.jsonl")
	testutil.AppendLines(t, unknown, `{"query": "post it to slack", "expected": ["post_message"]}`, `{"query": "hi", "expected": []}`)
	empty := filepath.Join(dir, "empty.jsonl")
	testutil.AppendLines(t, empty)
	for _, tc := range []struct{ path, log string }{
		{filepath.Join(dir, "missing.jsonl"), "level=INFO msg=\"mcp gateway: no labelled queries to fit on yet"},
		{empty, "level=INFO msg=\"mcp gateway: no labelled queries to fit on yet"},
		{unknown, "level=WARN msg=\"mcp gateway: no labelled query names a tool of the index"},
	} {
		f := weatherAndFiles()
		opts := f.options()
		opts.Fit = FitFile(tc.path)
		wantUnfitted(t, f.gateway(t, opts))
		if !strings.Contains(f.logs.String(), tc.log) {
			t.Errorf("%s: the log does not say %q:\n%s", tc.path, tc.log, f.logs)
		}
	}
}

// TestFitFileLineBeingWritten checks that a last line cut short without
// its newline, as a read in the middle of Record's write sees it, is left
// for the next read, and that a damaged line before it is not.
func TestFitFileLineBeingWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "traffic.jsonl")
	weatherTraffic(t, path)
	partial := `{"query": "is it wind`
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(data, partial...), 0o600); err != nil {
		t.Fatal(err)
	}
	qs, err := FitFile(path)(t.Context())
	if err != nil || len(qs) != 5 {
		t.Errorf("FitFile with a line being written: %d queries, %v; want the 5 whole ones", len(qs), err)
	}
	if err := os.WriteFile(path, append(append(data, "not json\n"...), partial...), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := FitFile(path)(t.Context()); err == nil || !strings.Contains(err.Error(), path+":6:") {
		t.Errorf("FitFile with a damaged line before one being written: error %v, want one naming line 6", err)
	}
}

// TestGatewayFitDamaged checks that a file that cannot be read stops New,
// naming the file and line, and that Fit errors reach New as they are.
func TestGatewayFitDamaged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "traffic.jsonl")
	weatherTraffic(t, path)
	testutil.AppendLines(t, path, `{"query": "cut short", "expec`)
	f := weatherAndFiles()
	opts := f.options()
	opts.Fit = FitFile(path)
	_, err := New(t.Context(), f.configs(), opts)
	if want := path + ":6:"; err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, habilis.ErrInvalid) {
		t.Errorf("New with a damaged file: error %v, want one naming %q, wrapping ErrInvalid", err, want)
	}
	opts.Fit = func(context.Context) ([]eval.Query, error) { return nil, fs.ErrPermission }
	if _, err := New(t.Context(), f.configs(), opts); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("New with a Fit that fails: error %v, want ErrPermission", err)
	}
}

// TestGatewayRefitOnListChanged checks that the file is read again at
// each rebuild, not at each line: rows appended while serving count once
// a server's tools change, and a file damaged meanwhile is logged and
// leaves the gateway serving, unfitted.
func TestGatewayRefitOnListChanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "traffic.jsonl")
	f := weatherAndFiles()
	opts := f.options()
	opts.Fit = FitFile(path)
	g := f.gateway(t, opts)
	weatherTraffic(t, path)
	wantUnfitted(t, g) // no rebuild yet

	addTool := func(name, desc string) {
		f.tool(f.servers["weather"], &mcp.Tool{Name: name, Description: desc},
			func(context.Context, json.RawMessage) *mcp.CallToolResult {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}
			})
		testutil.WaitFor(t, name+" to be indexed", func() bool {
			_, ok := g.cur.Load().byName[name]
			return ok
		})
	}
	addTool("air_quality", "Get the air quality index and pollen count of a city")
	wantRouted(t, g)

	testutil.AppendLines(t, path, `not json`)
	addTool("sunrise", "Tell when the sun rises and sets in a city")
	wantUnfitted(t, g)
	if want := fmt.Sprintf("the labelled queries cannot be read; the index serves unfitted\" error=\"%s:6:", path); !strings.Contains(f.logs.String(), want) {
		t.Errorf("the log does not report the damaged line (%q):\n%s", want, f.logs)
	}
}

// BenchmarkFit measures what fitting adds to a build of the index: a
// 60-tool catalog (MCP dev set catalog A's first 60 tools) fitted on 100,
// 1,000 and 5,000 recorded rows (its requests for a tool, numbered to
// make them distinct), with the lexical embedder.
func BenchmarkFit(b *testing.B) {
	tools, err := catalog.Read(filepath.Join("..", "eval", "testdata", "mcp", "A_tools.json"))
	if err != nil {
		b.Fatal(err)
	}
	tools = tools[:60]
	qs, err := eval.ReadQueries(filepath.Join("..", "eval", "testdata", "mcp", "A.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	known := map[string]bool{}
	for _, tl := range tools {
		known[tl.Name] = true
	}
	var requests []eval.Query
	for _, q := range qs {
		if len(q.Expected) > 0 && known[q.Expected[0]] {
			requests = append(requests, eval.Query{Query: q.Query, Expected: q.Expected[:1]})
		}
	}
	ctx := b.Context()
	cfg := selector.Config{Embedder: lexical.New(lexical.Options{})}
	st := memstore.New()
	r, err := selector.New(ctx, st, cfg)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := r.Load(ctx, tools, selector.LoadOptions{}); err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{100, 1000, 5000} {
		rows := make([]eval.Query, n)
		for i := range rows {
			q := requests[i%len(requests)]
			rows[i] = eval.Query{Query: fmt.Sprintf("%s %d", q.Query, i/len(requests)), Expected: q.Expected}
		}
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			for b.Loop() {
				fr, _, err := fitCopy(ctx, st, cfg, rows)
				if err != nil {
					b.Fatal(err)
				}
				fr.Close()
			}
		})
	}
}
