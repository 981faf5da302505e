package mcpgate

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/habilis-router/habilis/internal/testutil"
)

func TestUpstreamFailsToStart(t *testing.T) {
	f := weatherAndFiles()
	g := f.gateway(t, f.options(),
		subprocess(t, "github", "fail"),
		Server{Name: "missing", Transport: TransportStdio, Command: "/nonexistent/mcp-server"},
		Server{Name: "nothing-there", Transport: TransportHTTP, URL: "http://127.0.0.1:1/mcp"},
	)
	down := map[string]string{}
	for _, s := range g.Servers() {
		if s.Status == StatusDown {
			down[s.Name] = s.Reason
		}
	}
	for name, want := range map[string]string{
		"github":        "fatal: GITHUB_TOKEN is not set", // its stderr says why
		"missing":       "/nonexistent/mcp-server",
		"nothing-there": "connect",
	} {
		if !strings.Contains(down[name], want) {
			t.Errorf("server %s: reason %q, want it to mention %q", name, down[name], want)
		}
	}
	if len(down) != 3 {
		t.Errorf("down servers: %v, want github, missing, nothing-there", down)
	}
	res, err := g.Search(t.Context(), "will it rain in Lisbon tomorrow", 3)
	if err != nil {
		t.Fatal(err)
	}
	if res.Tools[0].Name != "get_forecast" || len(res.Unavailable) != 3 {
		t.Errorf("search with three servers down = first %s, unavailable %+v", res.Tools[0].Name, res.Unavailable)
	}
	if !strings.Contains(f.logs.String(), "fatal: GITHUB_TOKEN is not set") {
		t.Errorf("the failing server's stderr is not in the log:\n%s", f.logs)
	}
}

// TestUpstreamFailureReason checks that the reason a server is down says
// what a user needs to fix it: how a stdio server that exits before it
// answers exited, with its last words on stderr, and at which URL an HTTP
// server answered an error.
func TestUpstreamFailureReason(t *testing.T) {
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	f := newFixture()
	g := f.gateway(t, f.options(),
		subprocess(t, "github", "fail"),
		subprocess(t, "silent", "silent"),
		subprocess(t, "garbage", "garbage"),
		Server{Name: "wrong-path", Transport: TransportHTTP, URL: notFound.URL + "/nope"},
	)
	want := map[string]string{
		"github": "connect: the server exited (exit status 2) before it answered; stderr: " +
			"test upstream starting in mode fail | fatal: GITHUB_TOKEN is not set",
		"silent": "connect: the server exited (exit status 1) before it answered",
		// Stopped by the gateway, it did not exit of itself: the reason is
		// what it wrote.
		"garbage": "connect: the server wrote something other than JSON-RPC on stdout (a log line belongs on stderr): " +
			`connection closed: calling "initialize": client is closing: invalid character 'h' in literal true (expecting 'r')`,
		"wrong-path": "connect to " + notFound.URL + "/nope: " + `calling "initialize": sending "initialize": Not Found`,
	}
	got := map[string]string{}
	for _, s := range g.Servers() {
		got[s.Name] = s.Reason
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reasons the servers are down (-want +got):\n%s", diff)
	}
}

func TestUpstreamCrashes(t *testing.T) {
	f := weatherAndFiles()
	g := f.gateway(t, f.options(), subprocess(t, "fragile", "crash"))
	if res := g.Call(t.Context(), "echo", json.RawMessage(`{"message":"hello"}`)); res.IsError || text(res) != "hello" {
		t.Fatalf("echo before the crash = isError %v %q", res.IsError, text(res))
	}
	if !strings.Contains(f.logs.String(), "test upstream starting in mode crash") {
		t.Errorf("the server's stderr is not in the log:\n%s", f.logs)
	}
	res := g.Call(t.Context(), "crash", nil)
	if want := `tool "crash" on server "fragile": the server's connection closed during the call`; !res.IsError || text(res) != want {
		t.Errorf("call that crashes its server = isError %v %q, want %q", res.IsError, text(res), want)
	}
	testutil.WaitFor(t, "the crashed server to be reported down", func() bool {
		return slices.ContainsFunc(g.Servers(), func(s ServerStatus) bool { return s.Name == "fragile" && s.Status == StatusDown })
	})
	var reason string
	for _, s := range g.Servers() {
		if s.Name == "fragile" {
			reason = s.Reason
		}
	}
	for _, want := range []string{"exit status 3", "panic: crash tool called"} {
		if !strings.Contains(reason, want) {
			t.Errorf("reason %q does not mention %q", reason, want)
		}
	}
	res = g.Call(t.Context(), "echo", json.RawMessage(`{"message":"again"}`))
	if !res.IsError || !strings.Contains(text(res), `server "fragile", which is unavailable`) {
		t.Errorf("call to a tool of the crashed server = isError %v %q", res.IsError, text(res))
	}
	search, err := g.Search(t.Context(), "echo a message back", 5)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(search.Tools, func(ft FoundTool) bool { return ft.Server == "fragile" }) || len(search.Unavailable) != 1 {
		t.Errorf("search after the crash = %+v, want no tool of fragile and fragile unavailable", search)
	}
	if res := g.Call(t.Context(), "get_forecast", json.RawMessage(`{"city":"Oslo"}`)); text(res) != "rain in Oslo" {
		t.Errorf("another server after the crash = %q", text(res))
	}
}

func TestUpstreamOverHTTP(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "remote"}, nil)
	var auth string
	addText(srv, "translate", "Translate a message into French", func(args map[string]any) string { return "bonjour" })
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		auth = r.Header.Get("Authorization")
		return srv
	}, nil)
	ts := httptest.NewServer(h)
	f := newFixture()
	g := f.gateway(t, f.options(), Server{Name: "remote", Transport: TransportHTTP, URL: ts.URL, Headers: map[string]string{"Authorization": "Bearer s3cret"}})
	if res := g.Call(t.Context(), "translate", json.RawMessage(`{"message":"hello"}`)); text(res) != "bonjour" {
		t.Fatalf("call over HTTP = isError %v %q", res.IsError, text(res))
	}
	if auth != "Bearer s3cret" {
		t.Errorf("the server saw Authorization %q, want the configured header", auth)
	}
	ts.CloseClientConnections()
	ts.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if res := g.Call(ctx, "translate", json.RawMessage(`{"message":"hello"}`)); !res.IsError {
		t.Errorf("call to a server that went away = %q, want an error result", text(res))
	}
}

func TestUpstreamSlowToStart(t *testing.T) {
	f := weatherAndFiles()
	slow := f.server("slow", nil)
	f.tool(slow, &mcp.Tool{Name: "translate_text", Description: "Translate a text into another language"},
		func(context.Context, json.RawMessage) *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "bonjour"}}}
		})
	release := make(chan struct{})
	opts := f.options()
	opts.StartWait = time.Millisecond
	inProcess := opts.Transport
	opts.Transport = func(s Server) (mcp.Transport, error) {
		if s.Name == "slow" {
			<-release // the server takes its time to start
		}
		return inProcess(s)
	}
	g := f.gateway(t, opts)
	// The other servers may have missed the start wait too: they join as
	// soon as they answer, whatever slow does.
	testutil.WaitFor(t, "the ready servers to join the index", func() bool {
		return len(g.Tools()) == 5
	})
	if res := g.Call(t.Context(), "get_forecast", json.RawMessage(`{"city":"Oslo"}`)); text(res) != "rain in Oslo" {
		t.Errorf("a ready server while another starts = %q", text(res))
	}
	res, err := g.Search(t.Context(), "translate this text into French", 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []Unavailable{{Server: "slow", Reason: "starting: it has not answered yet"}}
	if diff := cmp.Diff(want, res.Unavailable); diff != "" {
		t.Errorf("unavailable while slow starts (-want +got):\n%s", diff)
	}
	// Its tools are not known yet: a call to one says to retry.
	const starting = `tool "translate_text" is not offered yet: server "slow" is still starting; retry in a moment, or use search_tools to find the tools offered now`
	if res := g.Call(t.Context(), "translate_text", nil); !res.IsError || text(res) != starting {
		t.Errorf("call to a starting server's tool = error %v, %q; want an error result %q", res.IsError, text(res), starting)
	}
	close(release)
	testutil.WaitFor(t, "the slow server's tools to join the index", func() bool {
		res, err := g.Search(t.Context(), "translate this text into French", 1)
		return err == nil && len(res.Tools) == 1 && res.Tools[0].Name == "translate_text" && len(res.Unavailable) == 0
	})
	if res := g.Call(t.Context(), "translate_text", nil); text(res) != "bonjour" {
		t.Errorf("call to the late server = %q", text(res))
	}
}

func TestEveryUpstreamDown(t *testing.T) {
	f := newFixture()
	g := f.gateway(t, f.options(), subprocess(t, "github", "fail"))
	res, err := g.Search(t.Context(), "open an issue", 5)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Abstained || len(res.Tools) != 0 || len(res.Unavailable) != 1 || res.Unavailable[0].Server != "github" {
		t.Errorf("search with every server down = %+v, want an abstention naming github", res)
	}
	// The reason says why there is nothing, where it said "the catalog is
	// empty" of a config that names servers.
	if want := "no tool to search: every server is unavailable (see unavailable)"; res.Reason != want {
		t.Errorf("search with every server down: reason %q, want %q", res.Reason, want)
	}
	if res := g.Call(t.Context(), "create_issue", nil); !res.IsError {
		t.Errorf("call with every server down = %q", text(res))
	}
}

// TestUpstreamStartedAgain checks that a server that goes away is started
// again after the restart delay: down meanwhile, with the reason saying
// when it will be started, then back in the index and answering calls.
func TestUpstreamStartedAgain(t *testing.T) {
	f := weatherAndFiles()
	opts := f.options()
	opts.RestartDelay = 50 * time.Millisecond
	var mu sync.Mutex
	var sessions []*mcp.ServerSession
	opts.Transport = func(s Server) (mcp.Transport, error) {
		ct, st := mcp.NewInMemoryTransports()
		ss, err := f.servers[s.Name].Connect(context.Background(), st, nil)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		if s.Name == "weather" {
			sessions = append(sessions, ss)
		}
		mu.Unlock()
		return ct, nil
	}
	g := f.gateway(t, opts)
	status := func() ServerStatus {
		i := slices.IndexFunc(g.Servers(), func(s ServerStatus) bool { return s.Name == "weather" })
		return g.Servers()[i]
	}
	mu.Lock()
	sessions[0].Close() // the server goes away
	mu.Unlock()
	testutil.WaitFor(t, "the weather server to be down", func() bool { return status().Status == StatusDown })
	testutil.WaitFor(t, "the weather server to be started again", func() bool { return status().Status == StatusReady })
	if res := g.Call(t.Context(), "get_forecast", json.RawMessage(`{"city":"Oslo"}`)); res.IsError || text(res) != "rain in Oslo" {
		t.Errorf("call after the restart = isError %v %q, want rain in Oslo", res.IsError, text(res))
	}
	res, err := g.Search(t.Context(), "will it rain in Lisbon tomorrow", 3)
	if err != nil {
		t.Fatal(err)
	}
	if res.Tools[0].Name != "get_forecast" || len(res.Unavailable) != 0 {
		t.Errorf("search after the restart = first %s, unavailable %+v; want get_forecast and none", res.Tools[0].Name, res.Unavailable)
	}
	mu.Lock()
	n := len(sessions)
	mu.Unlock()
	if n != 2 {
		t.Errorf("the weather server was connected %d times, want 2", n)
	}
	// The reason's "starting it again in 50ms" is never logged: down logs
	// the reason before the restart delay is set.
	if !strings.Contains(f.logs.String(), "mcp server started again") {
		t.Errorf("the log does not say the server was started again:\n%s", f.logs)
	}
}

// TestUpstreamRestartReason checks that a server that cannot start says,
// while it is down, when it will be tried again, and that a negative
// delay never restarts it.
func TestUpstreamRestartReason(t *testing.T) {
	for _, tt := range []struct {
		delay time.Duration
		want  string
	}{{time.Hour, "; starting it again in 1h0m0s"}, {-1, ""}} {
		f := weatherAndFiles()
		opts := f.options()
		opts.RestartDelay = tt.delay
		g := f.gateway(t, opts, Server{Name: "missing", Transport: TransportStdio, Command: "/nonexistent/mcp-server"})
		var reason string
		testutil.WaitFor(t, "the missing server's reason", func() bool {
			for _, s := range g.Servers() {
				if s.Name == "missing" {
					reason = s.Reason
				}
			}
			return tt.want == "" || strings.HasSuffix(reason, tt.want)
		})
		if tt.want == "" && strings.Contains(reason, "starting it again") {
			t.Errorf("restart delay %v: reason %q says it will be started again", tt.delay, reason)
		}
	}
}

// TestCloseWhileStarting closes the gateway while a server has not
// answered yet: nothing is logged as a server failure, where "mcp server
// unavailable ... context canceled" was, at every stop of a gateway with a
// slow server.
func TestCloseWhileStarting(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep(1) to stand for a server that never answers")
	}
	f := newFixture()
	opts := f.options()
	opts.StartWait = time.Millisecond
	g, err := New(t.Context(), []Server{{Name: "mute", Transport: TransportStdio, Command: sleep, Args: []string{"60"}}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	if strings.Contains(f.logs.String(), "mcp server unavailable") {
		t.Errorf("closing the gateway while a server starts logged it as a failure:\n%s", f.logs)
	}
}
