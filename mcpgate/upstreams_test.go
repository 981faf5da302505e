package mcpgate

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/selector"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// upstreamEnv makes the test binary an MCP server over stdio instead of
// running tests (TestMain), in the mode it names.
const upstreamEnv = "MCPGATE_TEST_UPSTREAM"

func TestMain(m *testing.M) {
	if mode := os.Getenv(upstreamEnv); mode != "" {
		os.Exit(runTestUpstream(mode))
	}
	os.Exit(m.Run())
}

// runTestUpstream serves a test server on stdin and stdout. Modes:
// "crash" (tools echo and crash, which ends the process mid-call), and
// "fail" (writes to stderr and exits before answering), "silent" (exits
// with status 1 before answering, saying nothing, as false(1) does), and
// "garbage" (writes a line that is not JSON-RPC, then runs until stopped).
func runTestUpstream(mode string) int {
	switch mode {
	case "silent":
		return 1
	case "garbage":
		fmt.Println("this is not JSON-RPC")
		time.Sleep(time.Minute) // until the gateway stops it
		return 0
	}
	fmt.Fprintln(os.Stderr, "test upstream starting in mode", mode)
	if mode == "fail" {
		fmt.Fprintln(os.Stderr, "fatal: GITHUB_TOKEN is not set")
		return 2
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "test-" + mode}, nil)
	addText(srv, "echo", "Echo a message back unchanged", func(args map[string]any) string {
		return fmt.Sprint(args["message"])
	})
	srv.AddTool(&mcp.Tool{Name: "crash", Description: "Crash the server process", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "panic: crash tool called, exiting")
			os.Exit(3)
			return nil, nil
		})
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		return 1
	}
	return 0
}

// subprocess is the config of a stdio server running this test binary in
// mode.
func subprocess(t *testing.T, name, mode string) Server {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Server{Name: name, Transport: TransportStdio, Command: exe, Env: map[string]string{upstreamEnv: mode}}
}

// addText adds a tool with a message argument whose handler answers text.
func addText(srv *mcp.Server, name, desc string, answer func(map[string]any) string) {
	srv.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(
		`{"type":"object","properties":{"message":{"type":"string","description":"the message"}},"required":["message"]}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args map[string]any
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: answer(args)}}}, nil
		})
}

// fixture holds in-process MCP servers by name and the options that
// connect a gateway to them; servers not among them start as configured.
type fixture struct {
	servers map[string]*mcp.Server
	logs    *testutil.Buffer
	// calls counts the calls each in-process tool received.
	calls sync.Map // name → *atomic.Int64
}

func newFixture() *fixture {
	return &fixture{servers: map[string]*mcp.Server{}, logs: &testutil.Buffer{}}
}

// server returns a new in-process server called name.
func (f *fixture) server(name string, opts *mcp.ServerOptions) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: name}, opts)
	f.servers[name] = s
	return s
}

// counter returns the call counter of a tool.
func (f *fixture) counter(tool string) *atomic.Int64 {
	c, _ := f.calls.LoadOrStore(tool, new(atomic.Int64))
	return c.(*atomic.Int64)
}

// tool adds a tool to srv whose handler counts its calls and answers with
// answer.
func (f *fixture) tool(srv *mcp.Server, def *mcp.Tool, answer func(ctx context.Context, args json.RawMessage) *mcp.CallToolResult) {
	if def.InputSchema == nil {
		def.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	n := f.counter(def.Name)
	srv.AddTool(def, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		n.Add(1)
		return answer(ctx, req.Params.Arguments), nil
	})
}

func (f *fixture) options() Options {
	return Options{
		// A server that goes away stays down unless a test says otherwise,
		// so that what tests see of it does not race its restart.
		RestartDelay: -1,
		Router:       selector.Config{Embedder: lexical.New(lexical.Options{})},
		Environ:      os.Environ(),
		Logger:       slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Transport: func(s Server) (mcp.Transport, error) {
			srv, ok := f.servers[s.Name]
			if !ok {
				return nil, nil // not in process: start it as configured
			}
			ct, st := mcp.NewInMemoryTransports()
			if _, err := srv.Connect(context.Background(), st, nil); err != nil {
				return nil, err
			}
			return ct, nil
		},
	}
}

// configs returns a config entry for every in-process server.
func (f *fixture) configs() []Server {
	var out []Server
	for name := range f.servers {
		out = append(out, Server{Name: name, Transport: "memory"})
	}
	return out
}

// gateway starts a gateway over the fixture's servers and more (which
// start as configured), closed when the test ends.
func (f *fixture) gateway(t *testing.T, opts Options, more ...Server) *Gateway {
	t.Helper()
	g, err := New(t.Context(), append(f.configs(), more...), opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// text returns the text of a result's text items, joined.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}
