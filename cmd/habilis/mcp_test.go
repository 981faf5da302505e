package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/mcpgate"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testUpstreamEnv makes this test binary an MCP server over stdio (see
// serveTestUpstream) instead of running tests; the gateway under test
// starts it as an upstream, in the mode the variable names.
const testUpstreamEnv = "MCP_TEST_UPSTREAM"

// serveTestUpstream serves one of two small servers that share a tool
// name (echo): "notes" (save_note, count_words) and "clock"
// (current_time).
func serveTestUpstream(mode string) int {
	fmt.Fprintf(os.Stderr, "test upstream %s: ready\n", mode)
	srv := mcp.NewServer(&mcp.Implementation{Name: mode}, nil)
	text := func(name, desc, schema string, answer func(map[string]any) string) {
		srv.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(schema)},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				var args map[string]any
				_ = json.Unmarshal(req.Params.Arguments, &args)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: answer(args)}}}, nil
			})
	}
	text("echo", "Echo a message back unchanged", `{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`,
		func(a map[string]any) string { return mode + ": " + fmt.Sprint(a["message"]) })
	switch mode {
	case "notes":
		text("save_note", "Save a note to the user's notebook", `{"type":"object","properties":{"text":{"type":"string","description":"the note"}},"required":["text"]}`,
			func(a map[string]any) string { return "saved: " + fmt.Sprint(a["text"]) })
		text("count_words", "Count the words of a text", `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`,
			func(a map[string]any) string { return fmt.Sprint(len(strings.Fields(fmt.Sprint(a["text"])))) })
	case "clock":
		text("current_time", "Tell the current time in a time zone", `{"type":"object","properties":{"timezone":{"type":"string","description":"an IANA time zone"}},"required":["timezone"]}`,
			func(a map[string]any) string { return "12:00 in " + fmt.Sprint(a["timezone"]) })
	}
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		return 1
	}
	return 0
}

// writeConfig writes an mcpServers file of servers (name → entry) and
// returns its path.
func writeConfig(t *testing.T, servers map[string]any) string {
	t.Helper()
	b, err := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// testUpstreams is a config of the notes and clock test servers.
func testUpstreams(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return writeConfig(t, map[string]any{
		"notes": map[string]any{"command": exe, "env": map[string]string{testUpstreamEnv: "notes"}},
		"clock": map[string]any{"command": exe, "env": map[string]string{testUpstreamEnv: "clock"}},
	})
}

// gatewayOverStdio starts `habilis mcp serve` with args as an MCP client's
// host would, and returns the client's session and the gateway's stderr.
func gatewayOverStdio(t *testing.T, args ...string) (*mcp.ClientSession, *testutil.Buffer) {
	t.Helper()
	cmd := habilisCmd(append([]string{"mcp", "serve"}, args...)...)
	stderr := &testutil.Buffer{}
	cmd.Stderr = stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to habilis mcp serve: %v\nstderr:\n%s", err, stderr)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, stderr
}

// gatewayOverHTTP starts `habilis mcp serve --http` and returns a client's
// session, the gateway's stderr, and the gateway's process.
func gatewayOverHTTP(t *testing.T, args ...string) (*mcp.ClientSession, *testutil.Buffer, *exec.Cmd) {
	t.Helper()
	url, stderr, cmd := startGatewayHTTP(t, args...)
	return connectHTTP(t, url, stderr), stderr, cmd
}

// startGatewayHTTP starts `habilis mcp serve --http` with args and returns
// the URL it serves, its stderr and its process, killed when t ends.
func startGatewayHTTP(t *testing.T, args ...string) (string, *testutil.Buffer, *exec.Cmd) {
	t.Helper()
	cmd := habilisCmd(append([]string{"mcp", "serve", "--http", "127.0.0.1:0"}, args...)...)
	stderr := &testutil.Buffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(line, "listening on ")
	if err != nil || !ok {
		t.Fatalf("habilis mcp serve --http printed %q (%v)\nstderr:\n%s", line, err, stderr)
	}
	url, _, _ := strings.Cut(addr, " ")
	return url, stderr, cmd
}

// connectHTTP connects a client session to the gateway at url, closed when
// t ends.
func connectHTTP(t *testing.T, url string, stderr *testutil.Buffer) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent"}, nil).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v\nstderr:\n%s", url, err, stderr)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// searchTools calls search_tools and decodes its answer, checking that
// the text content holds the same JSON as the structured content.
func searchTools(t *testing.T, cs *mcp.ClientSession, query string, k int) mcpgate.SearchResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": query, "k": k}})
	if err != nil {
		t.Fatalf("search_tools(%q): %v", query, err)
	}
	if res.IsError {
		t.Fatalf("search_tools(%q): %s", query, resultText(res))
	}
	structured, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var a, b mcpgate.SearchResult
	if err := json.Unmarshal([]byte(resultText(res)), &a); err != nil {
		t.Fatalf("search_tools(%q): text is not the answer: %v", query, err)
	}
	if err := json.Unmarshal(structured, &b); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("search_tools(%q): text and structured content differ (-text +structured):\n%s", query, diff)
	}
	return b
}

// callThrough calls a tool through call_tool.
func callThrough(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": name, "arguments": args}})
	if err != nil {
		t.Fatalf("call_tool(%s): %v", name, err)
	}
	return res
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func names(ft []mcpgate.FoundTool) []string {
	var out []string
	for _, f := range ft {
		out = append(out, f.Name)
	}
	return out
}

// checkGateway searches and calls through a gateway over the notes and
// clock test servers.
func checkGateway(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	if diff := cmp.Diff([]string{"call_tool", "search_tools"}, testutil.ToolNames(t, cs)); diff != "" {
		t.Errorf("tools/list (-want +got):\n%s", diff)
	}
	ans := searchTools(t, cs, "what time is it in the Europe/Lisbon time zone", 3)
	if len(ans.Tools) != 3 || ans.Tools[0].Name != "current_time" || ans.Tools[0].Server != "clock" {
		t.Fatalf("search for the time = %v", ans.Tools)
	}
	if res := callThrough(t, cs, "current_time", map[string]any{"timezone": "Europe/Lisbon"}); res.IsError || resultText(res) != "12:00 in Europe/Lisbon" {
		t.Errorf("call_tool current_time = isError %v %q", res.IsError, resultText(res))
	}
	ans = searchTools(t, cs, "echo this message back to me", 5)
	if !slices.Contains(names(ans.Tools), "notes__echo") || !slices.Contains(names(ans.Tools), "clock__echo") {
		t.Errorf("search for echo = %v, want both servers' echo, prefixed", names(ans.Tools))
	}
	if res := callThrough(t, cs, "notes__echo", map[string]any{"message": "hi"}); resultText(res) != "notes: hi" {
		t.Errorf("call_tool notes__echo = %q", resultText(res))
	}
	if res := callThrough(t, cs, "save_note", map[string]any{}); !res.IsError || !strings.Contains(resultText(res), "text: required argument is missing") {
		t.Errorf("call_tool save_note without its text = isError %v %q", res.IsError, resultText(res))
	}
}

func TestMCPServeStdio(t *testing.T) {
	cs, stderr := gatewayOverStdio(t, "--config", testUpstreams(t), "--log-level", "info")
	checkGateway(t, cs)
	// The upstreams' stderr reaches habilis' log, on its stderr: the
	// protocol on stdout worked throughout.
	for _, want := range []string{"test upstream notes: ready", "test upstream clock: ready"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("habilis' stderr lacks the upstream's %q:\n%s", want, stderr)
		}
	}
}

func TestMCPServeHTTP(t *testing.T) {
	cs, stderr, cmd := gatewayOverHTTP(t, "--config", testUpstreams(t))
	checkGateway(t, cs)
	cs.Close()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("habilis mcp serve --http after SIGTERM: %v\nstderr:\n%s", err, stderr)
	}
}

func TestMCPTools(t *testing.T) {
	config := testUpstreams(t)
	l := decode[mcpgate.Listing](t, mustRun(t, "mcp", "tools", "--config", config, "--json"))
	type row struct{ Name, Server, Upstream string }
	var got []row
	for _, ti := range l.Tools {
		got = append(got, row{ti.Name, ti.Server, ti.Upstream})
	}
	want := []row{
		{"clock__echo", "clock", "echo"},
		{"count_words", "notes", "count_words"},
		{"current_time", "clock", "current_time"},
		{"notes__echo", "notes", "echo"},
		{"save_note", "notes", "save_note"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mcp tools --json (-want +got):\n%s", diff)
	}
	if l.ListBytes == 0 || l.GatewayBytes == 0 {
		t.Errorf("list_bytes %d, gateway_bytes %d", l.ListBytes, l.GatewayBytes)
	}
	out := mustRun(t, "mcp", "tools", "--config", config)
	for _, want := range []string{"notes__echo   notes   echo", "5 tools from 2 servers"} {
		if !strings.Contains(out, want) {
			t.Errorf("mcp tools lacks %q:\n%s", want, out)
		}
	}
	// An overlay name that matches no tool (a misspelling) is said.
	overlay := filepath.Join(t.TempDir(), "overlay.json")
	if err := os.WriteFile(overlay, []byte(`{"save_note": {"examples": ["jot this down"]}, "save_notes": {"examples": ["remember this"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	l = decode[mcpgate.Listing](t, mustRun(t, "mcp", "tools", "--config", config, "--overlay", overlay, "--json"))
	if diff := cmp.Diff([]string{"save_notes"}, l.OverlayUnmatched); diff != "" {
		t.Errorf("mcp tools --overlay --json overlay_unmatched (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string][]string{"save_notes": {"save_note"}}, l.OverlaySuggestions); diff != "" {
		t.Errorf("mcp tools --overlay --json overlay_suggestions (-want +got):\n%s", diff)
	}
	if out := mustRun(t, "mcp", "tools", "--config", config, "--overlay", overlay); !strings.Contains(out, `--overlay names tools no server that answered has: save_notes (did you mean "save_note"?)`+"\n") {
		t.Errorf("mcp tools --overlay does not name the overlay's unknown tool:\n%s", out)
	}
	ans := decode[mcpgate.SearchResult](t, mustRun(t, "mcp", "search", "--config", config, "-k", "2", "count the words of this text"))
	if len(ans.Tools) != 2 || ans.Tools[0].Name != "count_words" {
		t.Errorf("mcp search = %+v", ans)
	}
}

// TestMCPToolsServerDown checks that mcp tools says how many servers
// answered and which did not, once each.
func TestMCPToolsServerDown(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	config := writeConfig(t, map[string]any{
		"notes":   map[string]any{"command": exe, "env": map[string]string{testUpstreamEnv: "notes"}},
		"missing": map[string]any{"command": "/nonexistent/mcp-server"},
	})
	r := habilisRun(t, "mcp", "tools", "--config", config)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	const want = "3 tools from 1 of 2 servers, 1 not ready (missing); their tools/list results hold "
	if r.code != exitOK || !strings.HasPrefix(lines[len(lines)-1], want) {
		t.Errorf("mcp tools with a server down = exit %d, stdout:\n%s\nwant exit 0, ending in %q...", r.code, r.stdout, want)
	}
	const down = "server \"missing\" is down: connect: fork/exec /nonexistent/mcp-server: no such file or directory\n"
	if n := strings.Count(r.stdout, down); n != 1 || strings.Contains(r.stderr, "/nonexistent") {
		t.Errorf("mcp tools says %d times on stdout %q, stderr:\n%s\nwant once, on stdout only", n, down, r.stderr)
	}
}

func TestMCPErrors(t *testing.T) {
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.json")
	if err := os.WriteFile(broken, []byte(`{"mcpServers": {"fs": {"command": "x", "args": "-y"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"mcp", "serve"}, exitUsage, "--config FILE is required"},
		{[]string{"mcp", "tools", "--config", broken}, exitError, `broken.json: server "fs": field "args": must be an array of strings`},
		{[]string{"mcp", "serve", "--config", broken, "--expose", "all"}, exitUsage, `--expose: expose "all": want search or selected`},
		{[]string{"mcp", "tools", "--config", filepath.Join(dir, "missing.json")}, exitError, "missing.json: no such file"},
	} {
		r := habilisRun(t, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("habilis %v: exit %d, stderr %q; want exit %d and %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
}

func TestMCPServeExposeSelected(t *testing.T) {
	cs, _ := gatewayOverStdio(t, "--config", testUpstreams(t), "--expose", "selected")
	ans := searchTools(t, cs, "count the words of this text", 2)
	want := []string{"call_tool", "search_tools"}
	want = append(want, names(ans.Tools)...)
	slices.Sort(want)
	testutil.WaitFor(t, "tools/list to hold the found tools", func() bool {
		return slices.Equal(testutil.ToolNames(t, cs), want)
	})
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "count_words", Arguments: map[string]any{"text": "one two three"}})
	if err != nil || res.IsError || resultText(res) != "3" {
		t.Errorf("direct call of an exposed tool = %v, %v", res, err)
	}
}

// TestMCPServeOnTerminal runs mcp serve over stdio as a user who starts it
// in a terminal does: habilis says on stderr what it waits for, where it
// printed nothing at the default log level, and a line typed there that is
// not MCP is named as such.
func TestMCPServeOnTerminal(t *testing.T) {
	for _, tt := range []struct {
		name  string
		tty   bool
		input string
		note  bool
		err   string
	}{
		{"terminal, Ctrl-D", true, "", true, ""},
		{"terminal, a line typed", true, "hello\n", true, "mcp serve: stdin is not MCP (JSON-RPC messages, one a line): invalid character 'h' looking for beginning of value"},
		{"a client's pipe", false, "", false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g, stderr, _ := progressOptions(false)
			o := newMCPOptions(g)
			o.config, o.stdin, o.stdinTTY = testUpstreams(t), strings.NewReader(tt.input), tt.tty
			var stdout bytes.Buffer
			err := runMCPServe(t.Context(), o, &stdout)
			if got := fmt.Sprint(err); (tt.err == "" && err != nil) || (tt.err != "" && got != tt.err) {
				t.Errorf("runMCPServe = %v, want %q", err, tt.err)
			}
			const note = "habilis mcp serve: serving MCP over stdio (5 tools from 2 servers, 0 not ready) to the MCP client that " +
				"started it, which speaks JSON-RPC on stdin: in a terminal nothing shows. To try the servers, run habilis mcp tools " +
				"or habilis mcp search with the same --config; to serve HTTP, --http ADDR. Ctrl-D stops it.\n"
			if got := stderr.String(); (got == note) != tt.note {
				t.Errorf("stderr:\n%s\nwant the note %v:\n%s", got, tt.note, note)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout, which carries only MCP: %q", stdout.String())
			}
		})
	}
}

// TestServersSummary checks the line mcp tools ends with and serve logs,
// in the singular for one.
func TestServersSummary(t *testing.T) {
	ready := mcpgate.ServerStatus{Name: "memory", Status: mcpgate.StatusReady}
	down := mcpgate.ServerStatus{Name: "github", Status: mcpgate.StatusDown}
	for _, tt := range []struct {
		tools   int
		servers []mcpgate.ServerStatus
		want    string
	}{
		{9, []mcpgate.ServerStatus{ready}, "9 tools from 1 server, 0 not ready"},
		{1, []mcpgate.ServerStatus{ready, ready}, "1 tool from 2 servers, 0 not ready"},
		{0, []mcpgate.ServerStatus{down}, "0 tools from 0 of 1 server, 1 not ready (github)"},
		{9, []mcpgate.ServerStatus{ready, down}, "9 tools from 1 of 2 servers, 1 not ready (github)"},
	} {
		if got := serversSummary(tt.tools, tt.servers); got != tt.want {
			t.Errorf("serversSummary(%d, %v) = %q, want %q", tt.tools, tt.servers, got, tt.want)
		}
	}
}

// TestMCPSearchWaitsOutTimeout checks that mcp search, which waits for
// every server, reports one that never answers as it ended, past its
// --connect-timeout and the wait for its process to stop, where it said
// "starting: it has not answered yet" of a server it had given up on.
func TestMCPSearchWaitsOutTimeout(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep(1) to stand for a server that never answers")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	config := writeConfig(t, map[string]any{
		"notes": map[string]any{"command": exe, "env": map[string]string{testUpstreamEnv: "notes"}},
		"mute":  map[string]any{"command": sleep, "args": []string{"60"}},
	})
	r := habilisRun(t, "mcp", "search", "--config", config, "--connect-timeout", "1s", "save a note")
	var res mcpgate.SearchResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != exitOK {
		t.Fatalf("mcp search: exit %d, stdout %q (%v), stderr:\n%s", r.code, r.stdout, err, r.stderr)
	}
	want := []mcpgate.Unavailable{{Server: "mute", Reason: "connect: no answer within 1s"}}
	if diff := cmp.Diff(want, res.Unavailable); diff != "" {
		t.Errorf("mcp search with a server that never answers: unavailable (-want +got):\n%s", diff)
	}
}

// TestMCPServeHTTPBeyondLoopback checks that the gateway warns when --http
// listens beyond this machine, where anyone who reaches it may call every
// tool of its servers, and only then.
func TestMCPServeHTTPBeyondLoopback(t *testing.T) {
	const warning = "answers beyond this machine with no authentication"
	for _, tt := range []struct {
		addr string
		warn bool
	}{
		{"0.0.0.0:0", true},
		{"127.0.0.1:0", false},
	} {
		_, stderr, cmd := startGatewayHTTP(t, "--config", testUpstreams(t), "--http", tt.addr)
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("mcp serve --http %s after SIGTERM: %v\nstderr:\n%s", tt.addr, err, stderr)
		}
		if got := strings.Count(stderr.String(), warning); got != boolCount(tt.warn) {
			t.Errorf("mcp serve --http %s: stderr holds %q %d times, want %d:\n%s", tt.addr, warning, got, boolCount(tt.warn), stderr)
		}
	}
}

// boolCount is 1 for true and 0 for false.
func boolCount(b bool) int {
	if b {
		return 1
	}
	return 0
}
