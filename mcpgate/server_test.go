package mcpgate

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/habilis-router/habilis/internal/testutil"
)

// connect serves g to an SDK client in the same process and returns the
// client's session.
func connect(t *testing.T, g *Gateway, expose Expose, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := g.NewServer(expose).Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent"}, opts).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func clientCall(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s): %v", name, err)
	}
	return res
}

func TestServerSearchAndCall(t *testing.T) {
	f := weatherAndFiles()
	cs := connect(t, f.gateway(t, f.options()), ExposeSearch, nil)
	if diff := cmp.Diff([]string{"call_tool", "search_tools"}, testutil.ToolNames(t, cs)); diff != "" {
		t.Errorf("tools/list (-want +got):\n%s", diff)
	}
	res := clientCall(t, cs, "search_tools", map[string]any{"query": "will it rain in Lisbon tomorrow", "k": 2})
	if res.IsError {
		t.Fatalf("search_tools: %s", text(res))
	}
	// The contract: structuredContent {"tools": [{"name", "description",
	// "inputSchema", "server", "score"}], "abstained", "reason"}, and the
	// same JSON as the text content.
	structured, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var fromText, fromStructured map[string]any
	if err := json.Unmarshal([]byte(text(res)), &fromText); err != nil {
		t.Fatalf("text content is not JSON: %v", err)
	}
	if err := json.Unmarshal(structured, &fromStructured); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fromText, fromStructured); diff != "" {
		t.Errorf("text and structured content differ (-text +structured):\n%s", diff)
	}
	for _, key := range []string{"tools", "abstained", "reason"} {
		if _, ok := fromStructured[key]; !ok {
			t.Errorf("answer lacks %q: %s", key, structured)
		}
	}
	tools := fromStructured["tools"].([]any)
	if len(tools) != 2 {
		t.Fatalf("k=2 gave %d tools", len(tools))
	}
	first := tools[0].(map[string]any)
	for _, key := range []string{"name", "description", "inputSchema", "server", "score"} {
		if _, ok := first[key]; !ok {
			t.Errorf("tool lacks %q: %v", key, first)
		}
	}
	if first["name"] != "get_forecast" || first["server"] != "weather" {
		t.Errorf("first tool = %v on %v, want get_forecast on weather", first["name"], first["server"])
	}
	res = clientCall(t, cs, "call_tool", map[string]any{"name": "get_forecast", "arguments": map[string]any{"city": "Oslo"}})
	if res.IsError || text(res) != "rain in Oslo" {
		t.Errorf("call_tool get_forecast = isError %v %q", res.IsError, text(res))
	}
	res = clientCall(t, cs, "call_tool", map[string]any{"name": "read_file", "arguments": map[string]any{"path": "/x"}})
	if !res.IsError || text(res) != "no such file" {
		t.Errorf("call_tool read_file = isError %v %q, want the upstream's error as it came", res.IsError, text(res))
	}
	for _, bad := range []map[string]any{{}, {"query": ""}, {"query": "rain", "k": 0}, {"query": 3}} {
		if res := clientCall(t, cs, "search_tools", bad); !res.IsError {
			t.Errorf("search_tools %v: not an error: %s", bad, text(res))
		}
	}
	if res := clientCall(t, cs, "call_tool", map[string]any{"arguments": map[string]any{}}); !res.IsError {
		t.Errorf("call_tool without a name: not an error")
	}
}

// exposedClient connects a client that counts list_changed notifications.
func exposedClient(t *testing.T, g *Gateway) (*mcp.ClientSession, *atomic.Int64) {
	t.Helper()
	var changed atomic.Int64
	cs := connect(t, g, ExposeSelected, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed.Add(1) },
	})
	return cs, &changed
}

func TestServerExposeSelectedLists(t *testing.T) {
	f := weatherAndFiles()
	g := f.gateway(t, f.options())
	cs, changed := exposedClient(t, g)
	if diff := cmp.Diff([]string{"call_tool", "search_tools"}, testutil.ToolNames(t, cs)); diff != "" {
		t.Errorf("tools/list before a search (-want +got):\n%s", diff)
	}
	res := clientCall(t, cs, "search_tools", map[string]any{"query": "will it rain in Lisbon tomorrow", "k": 2})
	var answer SearchResult
	if err := json.Unmarshal([]byte(text(res)), &answer); err != nil {
		t.Fatal(err)
	}
	want := []string{"call_tool", "search_tools"}
	for _, ft := range answer.Tools {
		want = append(want, ft.Name)
	}
	slices.Sort(want)
	testutil.WaitFor(t, "notifications/tools/list_changed", func() bool { return changed.Load() > 0 })
	if diff := cmp.Diff(want, testutil.ToolNames(t, cs)); diff != "" {
		t.Errorf("tools/list after the search (-want +got):\n%s", diff)
	}
	if res := clientCall(t, cs, "get_forecast", map[string]any{"city": "Rome"}); text(res) != "rain in Rome" {
		t.Errorf("direct call of an exposed tool = %q", text(res))
	}
	clientCall(t, cs, "search_tools", map[string]any{"query": "read the file notes.txt", "k": 1})
	testutil.WaitFor(t, "the exposed tools to follow the second search", func() bool {
		return slices.Equal(testutil.ToolNames(t, cs), []string{"call_tool", "read_file", "search_tools"})
	})
	if res := clientCall(t, cs, "call_tool", map[string]any{"name": "get_forecast", "arguments": map[string]any{"city": "Bern"}}); text(res) != "rain in Bern" {
		t.Errorf("call_tool of a tool no longer exposed = %q", text(res))
	}
}

// TestServerArgumentMessages: arguments of the wrong type are refused
// naming the field and the JSON it wants, not the decoder's Go names
// ("cannot unmarshal number 2.5 into Go struct field searchArgs.k").
func TestServerArgumentMessages(t *testing.T) {
	f := weatherAndFiles()
	cs := connect(t, f.gateway(t, f.options()), ExposeSearch, nil)
	for _, tt := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"search_tools", map[string]any{"query": 3}, "search_tools: query: must be a string, got number"},
		{"search_tools", map[string]any{"query": "rain", "k": 2.5}, "search_tools: k: must be an integer, got number 2.5"},
		{"search_tools", map[string]any{"query": "rain", "k": "2"}, "search_tools: k: must be an integer, got string"},
		{"call_tool", map[string]any{"name": 5}, "call_tool: name: must be a string, got number"},
	} {
		if res := clientCall(t, cs, tt.tool, tt.args); !res.IsError || text(res) != tt.want {
			t.Errorf("%s %v = isError %v %q, want %q", tt.tool, tt.args, res.IsError, text(res), tt.want)
		}
	}
}

// TestServerUnknownTool checks a tools/call of a tool the session does
// not list: a misspelt name gets the names it likely misspells, a tool
// the gateway offers outside the session's list says to use call_tool,
// and call_tool itself suggests as Call does.
func TestServerUnknownTool(t *testing.T) {
	f := weatherAndFiles()
	cs := connect(t, f.gateway(t, f.options()), ExposeSearch, nil)
	for _, tc := range []struct {
		name, want string
	}{
		{"serch_tools", `unknown tool "serch_tools" (did you mean "search_tools"?): search_tools finds the tools this gateway offers`},
		{"get_forcast", `unknown tool "get_forcast" (did you mean "get_forecast"?): search_tools finds the tools this gateway offers`},
		{"teleport", `unknown tool "teleport": search_tools finds the tools this gateway offers`},
		{"get_forecast", `tool "get_forecast" is not listed in this session: call it with call_tool`},
	} {
		_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tc.name, Arguments: map[string]any{}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CallTool(%s) = %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	res := clientCall(t, cs, "call_tool", map[string]any{"name": "raed_file", "arguments": map[string]any{}})
	if want := `unknown tool "raed_file" (did you mean "read_file"?): search_tools finds the tools this gateway offers`; !res.IsError || text(res) != want {
		t.Errorf("call_tool raed_file = isError %v %q, want %q", res.IsError, text(res), want)
	}
}
