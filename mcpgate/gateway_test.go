package mcpgate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/habilis-router/habilis/internal/testutil"
)

// weatherAndFiles is a fixture of two in-process servers whose tools a
// user might have: a weather server and a file server, both with a tool
// called "search".
func weatherAndFiles() *fixture {
	f := newFixture()
	weather := f.server("weather", nil)
	f.tool(weather, &mcp.Tool{Name: "get_forecast", Description: "Get the weather forecast (rain, temperature, wind) for a city for the coming days",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"the city"},"days":{"type":"integer","minimum":1,"maximum":10}},"required":["city"],"additionalProperties":false}`)},
		func(_ context.Context, args json.RawMessage) *mcp.CallToolResult {
			var a struct{ City string }
			_ = json.Unmarshal(args, &a)
			return &mcp.CallToolResult{
				Content:           []mcp.Content{&mcp.TextContent{Text: "rain in " + a.City}},
				StructuredContent: map[string]any{"city": a.City, "rain": true},
			}
		})
	f.tool(weather, &mcp.Tool{Name: "search", Description: "Search weather stations by name"},
		func(context.Context, json.RawMessage) *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "station 7"}}}
		})
	files := f.server("files", nil)
	f.tool(files, &mcp.Tool{Name: "read_file", Description: "Read the complete contents of a text file from the file system",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"path of the file"}},"required":["path"]}`)},
		func(context.Context, json.RawMessage) *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "no such file"}}, IsError: true}
		})
	f.tool(files, &mcp.Tool{Name: "search", Description: "Search files by name pattern"},
		func(context.Context, json.RawMessage) *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "notes.txt"}}}
		})
	f.tool(files, &mcp.Tool{Name: "search_tools", Description: "Search the tool shed inventory"},
		func(context.Context, json.RawMessage) *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a hammer"}}}
		})
	return f
}

func TestGatewayNamesAndStatus(t *testing.T) {
	f := weatherAndFiles()
	g := f.gateway(t, f.options())
	type row struct{ Name, Server, Upstream string }
	var got []row
	for _, ti := range g.Tools() {
		got = append(got, row{ti.Name, ti.Server, ti.Upstream})
	}
	want := []row{
		{"files__search", "files", "search"},
		{"files__search_tools", "files", "search_tools"},
		{"get_forecast", "weather", "get_forecast"},
		{"read_file", "files", "read_file"},
		{"weather__search", "weather", "search"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Tools() (-want +got):\n%s", diff)
	}
	wantServers := []ServerStatus{
		{Name: "files", Transport: "memory", Status: StatusReady, Tools: 3},
		{Name: "weather", Transport: "memory", Status: StatusReady, Tools: 2},
	}
	if diff := cmp.Diff(wantServers, g.Servers()); diff != "" {
		t.Errorf("Servers() (-want +got):\n%s", diff)
	}
}

func TestGatewaySearch(t *testing.T) {
	f := weatherAndFiles()
	g := f.gateway(t, f.options())
	for _, tc := range []struct {
		query  string
		k      int
		first  string
		server string
		n      int
	}{
		{"will it rain in Lisbon tomorrow", 0, "get_forecast", "weather", 5},
		{"show me the contents of the file notes.txt", 2, "read_file", "files", 2},
		{"find weather stations called Lisbon Airport", 1, "weather__search", "weather", 1},
	} {
		res, err := g.Search(t.Context(), tc.query, tc.k)
		if err != nil {
			t.Fatalf("Search(%q): %v", tc.query, err)
		}
		if len(res.Tools) != tc.n {
			t.Fatalf("Search(%q, %d) gave %d tools, want %d: %+v", tc.query, tc.k, len(res.Tools), tc.n, res)
		}
		top := res.Tools[0]
		if top.Name != tc.first || top.Server != tc.server {
			t.Errorf("Search(%q) first = %s on %s, want %s on %s (%+v)", tc.query, top.Name, top.Server, tc.first, tc.server, res)
		}
		if top.Description == "" || !json.Valid(top.InputSchema) {
			t.Errorf("Search(%q) first tool lacks its definition: %+v", tc.query, top)
		}
		for i := 1; i < len(res.Tools); i++ {
			if res.Tools[i].Passed && !res.Tools[i-1].Passed {
				t.Errorf("Search(%q): %s passed its gate but comes after %s, which did not", tc.query, res.Tools[i].Name, res.Tools[i-1].Name)
			}
		}
	}
}

func TestGatewaySearchAbstains(t *testing.T) {
	f := weatherAndFiles()
	g := f.gateway(t, f.options())
	res, err := g.Search(t.Context(), "compose a sonnet about autumn leaves falling", 3)
	if err != nil {
		t.Fatal(err)
	}
	// Whether the router abstains here is its business; what the gateway
	// promises is that an abstention still lists the closest tools and
	// says why, and a non-abstention lists a passing tool first.
	if res.Abstained {
		if len(res.Tools) != 3 || res.Reason == "" || res.Tools[0].Passed {
			t.Errorf("abstained answer = %+v, want 3 tools that did not pass, and a reason", res)
		}
		if !strings.Contains(res.Reason, "closest tools are listed") {
			t.Errorf("reason %q does not say the tools are only the closest", res.Reason)
		}
	} else if !res.Tools[0].Passed {
		t.Errorf("answer without abstention lists %s first, which did not pass", res.Tools[0].Name)
	}
	if _, err := g.Search(t.Context(), " ", 3); err == nil {
		t.Errorf("Search with a blank query: no error")
	}
	if _, err := g.Search(t.Context(), "rain", -1); err == nil {
		t.Errorf("Search with k = -1: no error")
	}
}

func TestGatewayCall(t *testing.T) {
	f := weatherAndFiles()
	g := f.gateway(t, f.options())
	ctx := t.Context()
	for _, tc := range []struct {
		name, args string
		wantErr    bool
		wantText   string
		calls      string // the upstream tool that must have run, or ""
	}{
		{"get_forecast", `{"city":"Lisbon","days":2}`, false, "rain in Lisbon", "get_forecast"},
		// The upstream's own error result comes back as it came.
		{"read_file", `{"path":"/nope"}`, true, "no such file", "read_file"},
		{"weather__search", ``, false, "station 7", "search"},
		{"files__search_tools", `{}`, false, "a hammer", "search_tools"},
		{"nope", `{}`, true, `unknown tool "nope": search_tools finds`, ""},
		{"get_forcast", `{}`, true, `unknown tool "get_forcast" (did you mean "get_forecast"?): search_tools finds`, ""},
		{"READ_FILES", `{}`, true, `unknown tool "READ_FILES" (did you mean "read_file"?): search_tools finds`, ""},
		{"serch_tools", `{}`, true, `unknown tool "serch_tools" (did you mean "search_tools"?): search_tools finds`, ""},
		// A tool's own name, when the gateway offers it under its
		// server's (two servers share it, or it is the gateway's own),
		// is refused naming what to call instead.
		{"search", `{}`, true, `unknown tool "search": the gateway offers the tools of that name as "files__search" or "weather__search"`, ""},
		{"search_tools", `{}`, true, `unknown tool "search_tools": the gateway offers the tools of that name as "files__search_tools"`, ""},
		{"get_forecast", `[1]`, true, "must be a JSON object", ""},
		{"get_forecast", `{"days":2}`, true, "city: required argument is missing", ""},
		{"get_forecast", `{"city":"Oslo","days":"two"}`, true, "days: want integer, got string", ""},
		{"get_forecast", `{"city":"Oslo","hours":3}`, true, "hours: unknown argument", ""},
	} {
		before := map[string]int64{}
		for _, n := range []string{"get_forecast", "read_file", "search", "search_tools"} {
			before[n] = f.counter(n).Load()
		}
		res := g.Call(ctx, tc.name, json.RawMessage(tc.args))
		if res.IsError != tc.wantErr || !strings.Contains(text(res), tc.wantText) {
			t.Errorf("Call(%s, %s) = isError %v %q, want isError %v containing %q", tc.name, tc.args, res.IsError, text(res), tc.wantErr, tc.wantText)
		}
		for n, b := range before {
			ran := f.counter(n).Load() > b
			if ran != (n == tc.calls) {
				t.Errorf("Call(%s, %s): upstream tool %s ran = %v", tc.name, tc.args, n, ran)
			}
		}
	}
	res := g.Call(ctx, "get_forecast", json.RawMessage(`{"city":"Porto"}`))
	if diff := cmp.Diff(map[string]any{"city": "Porto", "rain": true}, res.StructuredContent); diff != "" {
		t.Errorf("structured content (-want +got):\n%s", diff)
	}
}

func TestGatewayPagination(t *testing.T) {
	f := newFixture()
	srv := f.server("many", &mcp.ServerOptions{PageSize: 3})
	var want []string
	for i := range 20 {
		name := fmt.Sprintf("tool_%02d", i)
		want = append(want, name)
		f.tool(srv, &mcp.Tool{Name: name, Description: fmt.Sprintf("Tool number %d of many", i)},
			func(context.Context, json.RawMessage) *mcp.CallToolResult { return &mcp.CallToolResult{} })
	}
	g := f.gateway(t, f.options())
	var got []string
	for _, ti := range g.Tools() {
		got = append(got, ti.Name)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools of a server that pages by 3 (-want +got):\n%s", diff)
	}
}

func TestGatewayCallTimeout(t *testing.T) {
	f := newFixture()
	srv := f.server("slow", nil)
	f.tool(srv, &mcp.Tool{Name: "wait_forever", Description: "Wait until cancelled"},
		func(ctx context.Context, _ json.RawMessage) *mcp.CallToolResult {
			<-ctx.Done()
			return &mcp.CallToolResult{}
		})
	opts := f.options()
	opts.CallTimeout = 50 * time.Millisecond
	g := f.gateway(t, opts)
	res := g.Call(t.Context(), "wait_forever", nil)
	if !res.IsError || !strings.Contains(text(res), "did not answer within 50ms") {
		t.Errorf("Call of a tool that never answers = isError %v %q, want a timeout error", res.IsError, text(res))
	}
}

func TestGatewayOversizedResult(t *testing.T) {
	f := newFixture()
	srv := f.server("big", nil)
	big := strings.Repeat("é", 3<<20) // 6 MiB of two-byte characters
	f.tool(srv, &mcp.Tool{Name: "dump", Description: "Dump a lot of text"},
		func(context.Context, json.RawMessage) *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "head"}, &mcp.TextContent{Text: big}, &mcp.TextContent{Text: "tail"}},
				StructuredContent: map[string]any{"big": big}}
		})
	f.tool(srv, &mcp.Tool{Name: "small", Description: "Answer briefly"},
		func(context.Context, json.RawMessage) *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}
		})
	opts := f.options()
	opts.MaxResult = 64 << 10
	g := f.gateway(t, opts)
	res := g.Call(t.Context(), "dump", nil)
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > opts.MaxResult+1024 {
		t.Errorf("capped result is %d bytes, want about %d", len(b), opts.MaxResult)
	}
	if res.StructuredContent != nil || len(res.Content) != 3 || text(res)[:4] != "head" {
		t.Errorf("capped result keeps structured %v, %d items, want the head, the cut text and a note", res.StructuredContent != nil, len(res.Content))
	}
	if note := text(res); !strings.Contains(note, "over the gateway's limit of 65536") {
		t.Errorf("capped result does not say it was cut: ...%s", note[len(note)-200:])
	}
	if res := g.Call(t.Context(), "small", nil); text(res) != "ok" {
		t.Errorf("after an oversized result, small = %q", text(res))
	}
}

func TestGatewayListChanged(t *testing.T) {
	f := weatherAndFiles()
	g := f.gateway(t, f.options())
	f.tool(f.servers["weather"], &mcp.Tool{Name: "air_quality", Description: "Get the air quality index and pollen count of a city"},
		func(context.Context, json.RawMessage) *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "AQI 12"}}}
		})
	testutil.WaitFor(t, "air_quality to be indexed", func() bool {
		res, err := g.Search(t.Context(), "how is the air quality and pollen in Madrid", 1)
		return err == nil && len(res.Tools) == 1 && res.Tools[0].Name == "air_quality"
	})
	if res := g.Call(t.Context(), "air_quality", json.RawMessage(`{}`)); text(res) != "AQI 12" {
		t.Errorf("call of the new tool = %q", text(res))
	}
	f.servers["weather"].RemoveTools("get_forecast")
	testutil.WaitFor(t, "get_forecast to leave the index", func() bool {
		return !slices.ContainsFunc(g.Tools(), func(ti ToolInfo) bool { return ti.Name == "get_forecast" })
	})
	if !strings.Contains(f.logs.String(), "tools changed; listed again") {
		t.Errorf("log does not record the new listing:\n%s", f.logs)
	}
}

// TestGatewaySwapIsAtomic rebuilds the catalog from upstream lists that
// change whole, one generation at a time, while searches run: every
// answer must hold tools of one generation only, each of which the
// gateway can still describe.
func TestGatewaySwapIsAtomic(t *testing.T) {
	f := newFixture()
	opts := f.options()
	u := newUpstream(Server{Name: "gen", Transport: "memory"}, &opts)
	g := &Gateway{opts: opts, ups: []*upstream{u}, upstreams: map[string]*upstream{"gen": u}}
	setGeneration := func(n int) {
		var tools []*mcp.Tool
		for _, w := range []string{"weather", "forecast", "rain", "wind", "temperature"} {
			tools = append(tools, &mcp.Tool{Name: fmt.Sprintf("g%d_%s", n, w), Description: "Get the " + w + " of a city"})
		}
		u.mu.Lock()
		u.status, u.reason = StatusReady, ""
		u.setTools(tools)
		u.mu.Unlock()
	}
	setGeneration(0)
	if err := g.rebuild(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var searches atomic.Int64
	errs := make(chan string, 8)
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				res, err := g.Search(ctx, "will it rain and how windy will it be in Oslo", 5)
				if err != nil {
					if ctx.Err() == nil {
						errs <- err.Error()
					}
					return
				}
				searches.Add(1)
				gens := map[string]bool{}
				for _, ft := range res.Tools {
					gen, _, _ := strings.Cut(ft.Name, "_")
					gens[gen] = true
				}
				if len(res.Tools) != 5 || len(gens) != 1 {
					errs <- fmt.Sprintf("answer mixes generations or lacks tools: %+v", res.Tools)
					return
				}
			}
		})
	}
	for n := 1; n <= 30; n++ {
		setGeneration(n)
		if err := g.rebuild(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if searches.Load() == 0 {
		t.Error("no search ran during the rebuilds")
	}
	if got := g.Tools()[0].Name; got != "g30_forecast" {
		t.Errorf("after the last rebuild the first tool is %s, want g30_forecast", got)
	}
}
