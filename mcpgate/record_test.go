package mcpgate

import (
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis/eval"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// recordingGateway returns a gateway over the weather and files servers
// that records its traffic, and the record's path.
func recordingGateway(t *testing.T) (*Gateway, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "traffic.jsonl")
	rec, err := eval.OpenRecorder(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	f := weatherAndFiles()
	opts := f.options()
	opts.Record = rec
	return f.gateway(t, opts), path
}

// TestServerRecord drives the gateway with SDK clients and checks each
// line of the record: a call records the latest search's query when that
// search found the tool, once per search, through call_tool or a tool
// exposed by the search; calls with no search, of a tool the search did
// not find or of a tool the gateway lacks record nothing.
func TestServerRecord(t *testing.T) {
	g, path := recordingGateway(t)

	cs := connect(t, g, ExposeSearch, nil)
	call := func(name string, args map[string]any) {
		t.Helper()
		clientCall(t, cs, "call_tool", map[string]any{"name": name, "arguments": args})
	}
	search := func(q string) {
		t.Helper()
		if res := clientCall(t, cs, "search_tools", map[string]any{"query": q, "k": 1}); res.IsError {
			t.Fatalf("search_tools %q: %s", q, text(res))
		}
	}
	call("get_forecast", map[string]any{"city": "Oslo"}) // no search yet
	search("will it rain in Lisbon tomorrow")
	call("get_forecast", map[string]any{"city": "Lisbon"})
	call("get_forecast", map[string]any{"city": "Porto"}) // recorded once per search
	call("read_file", map[string]any{"path": "/x"})       // not found by the search
	call("no_such_tool", nil)
	search("read the file notes.txt")
	call("get_forecast", map[string]any{"city": "Lisbon"}) // the latest search counts
	call("read_file", map[string]any{"path": "/notes.txt"})

	direct := connect(t, g, ExposeSelected, nil)
	clientCall(t, direct, "search_tools", map[string]any{"query": "weather forecast for Rome", "k": 1})
	clientCall(t, direct, "get_forecast", map[string]any{"city": "Rome"})

	want := []string{
		"will it rain in Lisbon tomorrow|get_forecast|mcp",
		"read the file notes.txt|read_file|mcp",
		"weather forecast for Rome|get_forecast|mcp",
	}
	if diff := cmp.Diff(want, testutil.RecordedRows(t, path)); diff != "" {
		t.Errorf("recorded (-want +got):\n%s", diff)
	}
}

// TestServerRecordConcurrent runs sessions at once: each records its own
// search, whole lines, none lost.
func TestServerRecordConcurrent(t *testing.T) {
	g, path := recordingGateway(t)
	var want []string
	var wg sync.WaitGroup
	for i := range 8 {
		q := fmt.Sprintf("will it rain in city %d tomorrow", i)
		want = append(want, q+"|get_forecast|mcp")
		cs := connect(t, g, ExposeSearch, nil)
		wg.Go(func() {
			for _, p := range []*mcp.CallToolParams{
				{Name: "search_tools", Arguments: map[string]any{"query": q, "k": 1}},
				{Name: "call_tool", Arguments: map[string]any{"name": "get_forecast", "arguments": map[string]any{"city": "x"}}},
			} {
				if res, err := cs.CallTool(t.Context(), p); err != nil || res.IsError {
					t.Errorf("%s: %v %v", p.Name, err, res)
				}
			}
		})
	}
	wg.Wait()
	got := testutil.RecordedRows(t, path)
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded by concurrent sessions (-want +got):\n%s", diff)
	}
}
