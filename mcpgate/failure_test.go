package mcpgate

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
	if !res.IsError {
		t.Errorf("call that crashes its server = %q, want an error result", text(res))
	}
	eventually(t, "the crashed server to be reported down", func() bool {
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
