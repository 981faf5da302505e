package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/api"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/selector"
)

// upstream is a real HTTP server standing for an OpenAI-compatible API: it
// keeps the body of the last chat request and answers with a fixed one.
type upstream struct {
	url  string
	mu   sync.Mutex
	body []byte
}

const upstreamAnswer = `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`

func startUpstream(t *testing.T) *upstream {
	t.Helper()
	u := &upstream{}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.body = b
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, upstreamAnswer)
	})}
	go srv.Serve(lis)
	t.Cleanup(func() { srv.Close() })
	u.url = "http://" + lis.Addr().String() + "/v1"
	return u
}

// forwardedTools names the tools of the last chat request.
func (u *upstream) forwardedTools(t *testing.T) []string {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	var req struct {
		Tools []struct {
			Function struct{ Name string } `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(u.body, &req); err != nil {
		t.Fatalf("upstream got %q: %v", u.body, err)
	}
	var names []string
	for _, tool := range req.Tools {
		names = append(names, tool.Function.Name)
	}
	return names
}

// chatRequest is a chat request with n OpenAI tools: the sample catalog's
// seven, then made-up ones.
func chatRequest(t *testing.T, n int, ask string) string {
	t.Helper()
	tools, err := os.ReadFile(testdata("tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	var catalog []struct{ Name, Description string }
	if err := json.Unmarshal(tools, &catalog); err != nil {
		t.Fatal(err)
	}
	var defs []string
	for i := range n {
		name, desc := fmt.Sprintf("extra_%02d", i), fmt.Sprintf("Made-up tool number %d for widgets", i)
		if i < len(catalog) {
			name, desc = catalog[i].Name, catalog[i].Description
		}
		defs = append(defs, fmt.Sprintf(`{"type":"function","function":{"name":%q,"description":%q}}`, name, desc))
	}
	return fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":%q}],"tools":[%s]}`, ask, strings.Join(defs, ","))
}

// TestProxyCommand runs `habilis proxy` in front of an upstream: chat
// requests have their tools cut, and the same listener serves the JSON API
// and the gRPC one that --remote uses.
func TestProxyCommand(t *testing.T) {
	up := startUpstream(t)
	dir := t.TempDir()
	store := filepath.Join(dir, "habilis.db")
	srv := startServe(t, "--store", store, "proxy", "--listen", "127.0.0.1:0", "--upstream", up.url, "--k", "2")
	base := "http://" + srv.addr

	status, hdr, answer := testutil.Post(t, base+"/v1/chat/completions", chatRequest(t, 20, "mail the report to Bob"))
	if status != 200 || answer != upstreamAnswer {
		t.Fatalf("chat through the proxy: %d %q, want the upstream's answer", status, answer)
	}
	got := up.forwardedTools(t)
	if len(got) != 2 || !strings.Contains(strings.Join(got, ","), "send_email") {
		t.Errorf("forwarded %v, want 2 tools with send_email", got)
	}
	if hdr.Get(api.HeaderToolsBefore) != "20" || hdr.Get(api.HeaderToolsAfter) != "2" || hdr.Get(api.HeaderSelected) != strings.Join(got, ",") {
		t.Errorf("headers %v, want 20 tools before, 2 after, %v selected", hdr, got)
	}

	// The served catalog, empty at start, is loaded and changed from the
	// CLI through the same listener.
	load := habilisRun(t, "--remote", srv.addr, "load", testdata("tools.json"))
	if load.code != 0 || !strings.Contains(load.stdout, "7 tools") {
		t.Fatalf("load --remote: exit %d, stdout %q, stderr %q", load.code, load.stdout, load.stderr)
	}
	status, _, sel := testutil.Post(t, base+"/habilis.v1.ToolRouter/Select", `{"query": "what's the weather in Oslo right now", "k": 1}`)
	if status != 200 || !strings.Contains(sel, `"get_weather"`) {
		t.Errorf("JSON Select after load --remote: %d %s, want get_weather", status, sel)
	}
	// With the catalog holding every tool of a request, its examples
	// choose: the proxy forwards what the catalog's Select ranks first.
	// The request's descriptions alone would not put get_weather among
	// two for this one ("Current weather conditions for a city:
	// temperature, rain, wind" shares no word with it); the catalog's
	// example "how hot is it in Madrid today" does.
	const ask = "how hot is it in Madrid today"
	_, _, sel = testutil.Post(t, base+"/habilis.v1.ToolRouter/Select", fmt.Sprintf(`{"query": %q, "k": 2}`, ask))
	var want struct{ Matches []struct{ Tool string } }
	if err := json.Unmarshal([]byte(sel), &want); err != nil || len(want.Matches) != 2 || want.Matches[0].Tool != "get_weather" {
		t.Fatalf("JSON Select %q: %s (%v), want get_weather first of two", ask, sel, err)
	}
	testutil.Post(t, base+"/v1/chat/completions", chatRequest(t, 7, ask))
	if got := up.forwardedTools(t); !slices.Equal(got, []string{want.Matches[0].Tool, want.Matches[1].Tool}) {
		t.Errorf("forwarded %v with the catalog loaded, want the catalog's selection %v", got, want.Matches)
	}

	code, rest := srv.stop(t)
	if code != 0 || !strings.Contains(rest, "stopped") {
		t.Errorf("proxy after SIGTERM: exit %d, stdout %q, stderr %q", code, rest, srv.stderr)
	}
}

// TestRemoteCatalog manages a served catalog from the CLI: load, tools rm
// and collisions with --remote, over gRPC and over serve's HTTP listener.
func TestRemoteCatalog(t *testing.T) {
	dir := t.TempDir()
	srv := startServe(t, "--store", filepath.Join(dir, "habilis.db"), "serve", "--addr", "127.0.0.1:0", "--http", "127.0.0.1:0")
	if !strings.HasPrefix(srv.http, "http://") {
		t.Fatalf("serve --http printed %q, want an http:// URL", srv.http)
	}
	// The HTTP listener takes gRPC too; the second load changes nothing.
	for i, addr := range []string{strings.TrimPrefix(srv.http, "http://"), srv.addr} {
		rep := decode[selector.LoadReport](t, mustRun(t, "--remote", addr, "--json", "load", testdata("tools.json")))
		if rep.Tools != 7 || (i == 1) != (rep.Unchanged == 7) {
			t.Errorf("load --remote %s: %d tools, %d unchanged; want 7, and all unchanged the second time", addr, rep.Tools, rep.Unchanged)
		}
	}
	out := mustRun(t, "--remote", srv.addr, "tools", "rm", "get_weather", "translate_text")
	if !strings.Contains(out, "removed get_weather, translate_text") && !strings.Contains(out, "removed translate_text, get_weather") {
		t.Errorf("tools rm --remote: %q", out)
	}
	list := decode[struct{ Tools []habilis.Tool }](t, mustRun(t, "--remote", srv.addr, "--json", "tools", "list"))
	if len(list.Tools) != 5 {
		t.Errorf("tools list --remote after rm: %d tools, want 5", len(list.Tools))
	}
	cols := decode[struct{ Collisions []habilis.Collision }](t, mustRun(t, "--remote", srv.addr, "--json", "collisions"))
	local := decode[struct{ Collisions []habilis.Collision }](t, mustRun(t, "--store", loadedStore(t), "--json", "collisions"))
	if len(cols.Collisions) == 0 || len(local.Collisions) == 0 {
		t.Errorf("collisions --remote: %d, locally: %d, want some in both", len(cols.Collisions), len(local.Collisions))
	}
	table := mustRun(t, "--remote", srv.addr, "collisions")
	if !strings.Contains(table, "SEVERITY") {
		t.Errorf("collisions --remote printed %q, want the table", table)
	}

	if code, _ := srv.stop(t); code != 0 {
		t.Errorf("serve after SIGTERM: exit %d, stderr %q", code, srv.stderr)
	}
}

// TestServeWithoutUpstream points an OpenAI client's requests at serve's
// HTTP listener started without --upstream: they are answered 404 in
// OpenAI's error shape, saying what to start, where they got "404 page not
// found".
func TestServeWithoutUpstream(t *testing.T) {
	srv := startServe(t, "--store", filepath.Join(t.TempDir(), "habilis.db"), "serve", "--addr", "127.0.0.1:0", "--http", "127.0.0.1:0")
	const want = `{"error":{"code":null,"message":"this habilis server proxies no OpenAI-compatible API: ` +
		`start habilis serve with --upstream URL (the API's base URL, ending in /v1), or habilis proxy --upstream URL",` +
		`"type":"invalid_request_error"}}`
	status, hdr, body := testutil.Post(t, srv.http+"/v1/chat/completions", chatRequest(t, 2, "mail the report to Bob"))
	if status != http.StatusNotFound || hdr.Get("Content-Type") != "application/json" || body != want {
		t.Errorf("chat request to serve without --upstream: %d %q %s\nwant 404 application/json %s", status, hdr.Get("Content-Type"), body, want)
	}
	res, err := http.Get(srv.http + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound || string(b) != want {
		t.Errorf("GET /v1/models from serve without --upstream: %d %s, want 404 %s", res.StatusCode, b, want)
	}
}

// TestProxyUpstreamWithoutPath starts the proxy with an upstream URL
// without its /v1, the mistake that sends chat requests to the upstream's
// /chat/completions, where an OpenAI-compatible server answers 404: the
// proxy serves as told and warns at start, with the URL to try.
func TestProxyUpstreamWithoutPath(t *testing.T) {
	up := startUpstream(t)
	bare := strings.TrimSuffix(up.url, "/v1")
	srv := startServe(t, "--store", filepath.Join(t.TempDir(), "habilis.db"), "proxy", "--listen", "127.0.0.1:0", "--upstream", bare)
	if status, _, body := testutil.Post(t, "http://"+srv.addr+"/v1/chat/completions", chatRequest(t, 2, "hi")); status != http.StatusOK || body != upstreamAnswer {
		t.Errorf("chat through the proxy: %d %q, want the upstream's answer", status, body)
	}
	if code, _ := srv.stop(t); code != 0 {
		t.Fatalf("proxy after SIGTERM: exit %d, stderr %q", code, srv.stderr)
	}
	want := fmt.Sprintf(`--upstream %s has no path: chat requests go to %s/chat/completions; `+
		`an OpenAI-compatible API's base URL usually ends in /v1 (%s/v1)`, bare, bare, bare)
	if n := strings.Count(srv.stderr.String(), want); n != 1 {
		t.Errorf("stderr holds the warning %d times, want once:\n%s\nwant %q", n, srv.stderr, want)
	}
}

// TestProxyBaseURLWithoutV1 sends what an OpenAI client whose base URL
// lacks /v1 sends: a 404 in OpenAI's error shape that gives the base URL to
// set, where the client reported "404 page not found"; other paths stay a
// plain 404.
func TestProxyBaseURLWithoutV1(t *testing.T) {
	up := startUpstream(t)
	srv := startServe(t, "--store", filepath.Join(t.TempDir(), "habilis.db"), "proxy", "--listen", "127.0.0.1:0", "--upstream", up.url)
	base := "http://" + srv.addr
	for _, path := range []string{"/chat/completions", "/models", "/embeddings"} {
		want := `{"error":{"code":null,"message":"` + path + ` is served under /v1 here: set the OpenAI client's base URL to ` + base + `/v1",` +
			`"type":"invalid_request_error"}}`
		status, _, body := testutil.Post(t, base+path, chatRequest(t, 2, "mail the report to Bob"))
		if status != http.StatusNotFound || body != want {
			t.Errorf("POST %s = %d %s, want 404 %s", path, status, body, want)
		}
	}
	if status, _, body := testutil.Post(t, base+"/elsewhere", `{}`); status != http.StatusNotFound || body != "404 page not found\n" {
		t.Errorf("POST /elsewhere = %d %q, want a plain 404", status, body)
	}
}

// TestListenAddressInUse starts serve and proxy on an address another
// process holds: the error names the flag that gave it and says what to
// do, where it read "proxy: ADDR: listen tcp ADDR: bind: address already
// in use".
func TestListenAddressInUse(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	addr := lis.Addr().String()
	store := filepath.Join(t.TempDir(), "habilis.db")
	// The gateway listens before it starts its servers: this one would
	// leave a mark.
	mark := filepath.Join(t.TempDir(), "started")
	started := writeConfig(t, map[string]any{"marker": map[string]any{"command": "sh", "args": []string{"-c", "touch " + mark + "; exec sleep 60"}}})
	inUse := "listen tcp " + addr + ": bind: address already in use: another process serves there; stop it or give another address\n"
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"proxy", "--upstream", "http://127.0.0.1:1/v1", "--listen", addr}, "habilis: proxy: --listen: " + inUse},
		{[]string{"serve", "--addr", addr}, "habilis: serve: --addr: " + inUse},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--http", addr}, "habilis: serve: --http: " + inUse},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--metrics-addr", addr}, "habilis: serve: --metrics-addr: " + inUse},
		{[]string{"mcp", "serve", "--config", started, "--http", addr}, "habilis: mcp serve: --http: " + inUse},
	} {
		r := habilisRun(t, append([]string{"--store", store}, tt.args...)...)
		if r.code != exitError || r.stderr != tt.want {
			t.Errorf("habilis %v: exit %d, stderr:\n%s\nwant exit 1, stderr:\n%s", tt.args, r.code, r.stderr, tt.want)
		}
	}
	if _, err := os.Stat(mark); err == nil {
		t.Errorf("mcp serve --http on an address in use started its servers first")
	}
}

// TestRemoteRefusals checks that a broken file is refused before it
// reaches the server, named as a local load names it, that an unknown tool
// changes nothing, and that MCP servers' tools go with their executors.
func TestRemoteRefusals(t *testing.T) {
	srv := startServe(t, "--store", filepath.Join(t.TempDir(), "habilis.db"), "serve", "--addr", "127.0.0.1:0", "--tools", testdata("tools.json"))
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"load", testdata("broken.json")}, "broken.json"},
		{[]string{"tools", "rm", "teleport", "get_forecast"}, "teleport"},
	} {
		r := habilisRun(t, append([]string{"--remote", srv.addr}, tt.args...)...)
		if r.code != exitError || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("habilis --remote %v: exit %d, stderr %q; want 1 naming %s", tt.args, r.code, r.stderr, tt.want)
		}
	}
	list := decode[struct{ Tools []habilis.Tool }](t, mustRun(t, "--remote", srv.addr, "--json", "tools", "list"))
	if len(list.Tools) != 7 {
		t.Errorf("after the refused calls: %d tools, want 7 still", len(list.Tools))
	}
	// MCP servers' tools go as tools, with their executors.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r := habilisWith(t, "", []string{testUpstreamEnv + "=clock"}, "--remote", srv.addr, "load", "--merge", "--mcp", `'`+exe+`' -test.run=none`)
	if r.code != 0 || !strings.Contains(r.stdout, "2 added") {
		t.Errorf("load --remote --mcp: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	echo := decode[selector.ToolInfo](t, mustRun(t, "--remote", srv.addr, "--json", "tools", "show", "echo"))
	var spec struct{ Kind string }
	if json.Unmarshal(echo.Tool.Executor, &spec) != nil || spec.Kind != "mcp" {
		t.Errorf("echo loaded with --remote --mcp has executor %s, want an mcp one", echo.Tool.Executor)
	}
	if code, _ := srv.stop(t); code != 0 {
		t.Errorf("serve after SIGTERM: exit %d, stderr %q", code, srv.stderr)
	}
}

func TestProxyBadFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"proxy"}, "--upstream is required"},
		{[]string{"proxy", "--upstream", "localhost:11434/v1"}, `habilis: --upstream "localhost:11434/v1": want an http or https base URL`},
		{[]string{"proxy", "--upstream", "http://127.0.0.1:1/v1", "--k", "0"}, "-k 0"},
		{[]string{"proxy", "--upstream", "http://127.0.0.1:1/v1", "--min-tools", "-1"}, "--min-tools"},
		{[]string{"serve", "--upstream", "http://127.0.0.1:1/v1"}, "--upstream needs --http"},
		{[]string{"--remote", "127.0.0.1:1", "proxy", "--upstream", "http://127.0.0.1:1/v1"}, "--remote"},
	} {
		r := habilisIn(t, dir, "", append([]string{"--store", filepath.Join(dir, "h.db")}, tt.args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("habilis %v: exit %d, stderr %q; want 2 mentioning %q", tt.args, r.code, r.stderr, tt.want)
		}
	}
}
