package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/fill"
)

// helperEnv switches the test binary into a helper process, the standard
// way to test subprocesses without building another program.
const helperEnv = "HABILIS_EXECUTOR_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode))
	}
	os.Exit(m.Run())
}

func helper(mode string) int {
	switch mode {
	case "stdin":
		io.Copy(os.Stdout, os.Stdin)
	case "argv":
		json.NewEncoder(os.Stdout).Encode(os.Args[1:])
	case "env":
		json.NewEncoder(os.Stdout).Encode(os.Environ())
	case "hang":
		time.Sleep(time.Hour)
	case "flood":
		chunk := strings.Repeat("x", 4096)
		for range 256 {
			fmt.Fprint(os.Stdout, chunk)
		}
	case "fail":
		fmt.Fprintln(os.Stderr, "no such city")
		return 3
	case "mcp":
		if err := newMCPServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	default:
		return 2
	}
	return 0
}

func env(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

func tool(t *testing.T, spec any) habilis.Tool {
	t.Helper()
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	return habilis.Tool{Name: "weather", Description: "weather", InputSchema: json.RawMessage(`{"type":"object"}`), Executor: b}
}

var all = []string{KindHTTP, KindCommand, KindMCP}

func TestParseSpecErrors(t *testing.T) {
	tests := []struct {
		spec  string
		field string
	}{
		{`{}`, "kind"},
		{`{"kind":"ftp"}`, "kind"},
		{`{"kind":"http"}`, "url"},
		{`{"kind":"http","url":"file:///etc/passwd"}`, "url"},
		{`{"kind":"http","url":"http://x","method":"TRACE"}`, "method"},
		{`{"kind":"http","url":"http://x","timeout":"soon"}`, "timeout"},
		{`{"kind":"http","url":"http://x","timeout":"-1s"}`, "timeout"},
		{`{"kind":"http","url":"http://x","headers":{"A":"env:BAD-NAME"}}`, "headers.A"},
		{`{"kind":"http","url":"http://x","timout":"5s"}`, "timout"},
		{`{"kind":"command"}`, "argv"},
		{`{"kind":"command","argv":["{prog}"]}`, "argv[0]"},
		{`{"kind":"command","argv":["p","--city={city}"]}`, "argv[1]"},
		{`{"kind":"command","argv":["p"],"stdin":"yaml"}`, "stdin"},
		{`{"kind":"command","argv":["p"],"env":["A B"]}`, "env[0]"},
		{`{"kind":"command","argv":["p"],"max_output":-1}`, "max_output"},
		{`{"kind":"mcp"}`, "command"},
		{`{"kind":"mcp","transport":"stdio"}`, "command"},
		{`{"kind":"mcp","transport":"http"}`, "url"},
		{`{"kind":"mcp","transport":"ws","url":"http://x"}`, "transport"},
		{`[1]`, "executor"},
	}
	for _, tt := range tests {
		_, err := ParseSpec(json.RawMessage(tt.spec))
		if err == nil || !errors.Is(err, habilis.ErrInvalid) || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("ParseSpec(%s) = %v, want an invalid-input error naming %q", tt.spec, err, tt.field)
		}
	}
}

func TestParseSpecDefaults(t *testing.T) {
	tests := []struct {
		spec string
		want Spec
	}{
		{`{"kind":"http","url":"http://127.0.0.1/x"}`, Spec{Kind: "http", URL: "http://127.0.0.1/x", Method: "POST"}},
		{`{"kind":"command","argv":["p","{city}"]}`, Spec{Kind: "command", Argv: []string{"p", "{city}"}, Stdin: "json"}},
		{`{"kind":"mcp","command":["srv"]}`, Spec{Kind: "mcp", Command: []string{"srv"}, Transport: "stdio"}},
		{`{"kind":"mcp","url":"http://127.0.0.1:1/mcp","tool":"w"}`, Spec{Kind: "mcp", URL: "http://127.0.0.1:1/mcp", Transport: "http", Tool: "w"}},
	}
	for _, tt := range tests {
		got, err := ParseSpec(json.RawMessage(tt.spec))
		if err != nil {
			t.Errorf("ParseSpec(%s): %v", tt.spec, err)
			continue
		}
		if diff := cmp.Diff(tt.want, *got, cmp.AllowUnexported(Spec{})); diff != "" {
			t.Errorf("ParseSpec(%s) mismatch (-want +got):\n%s", tt.spec, diff)
		}
	}
}

func TestRunSelectionOnly(t *testing.T) {
	r, err := Run(context.Background(), habilis.Tool{Name: "w"}, map[string]any{"city": "Paris"}, Options{AllowedKinds: all})
	if err != nil {
		t.Fatal(err)
	}
	if !r.SelectionOnly || r.Ran || r.IsError || !strings.Contains(r.Text(), "selection-only") {
		t.Errorf("Run(no executor) = %+v, want a selection-only result", r)
	}
}

func TestRunNotAllowed(t *testing.T) {
	var hits int
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	defer ts.Close()
	tl := tool(t, map[string]any{"kind": "http", "url": ts.URL})
	for _, allowed := range [][]string{nil, {KindCommand}} {
		r, err := Run(context.Background(), tl, nil, Options{AllowedKinds: allowed})
		if err != nil {
			t.Fatal(err)
		}
		if !r.IsError || r.Ran || !strings.Contains(r.Text(), "not allowed") {
			t.Errorf("Run(allowed %v) = %+v, want a not-allowed error result", allowed, r)
		}
	}
	if hits != 0 {
		t.Errorf("server got %d requests, want 0", hits)
	}
}

func TestRunBadSpec(t *testing.T) {
	tl := habilis.Tool{Name: "w", Executor: json.RawMessage(`{"kind":"http"}`)}
	if _, err := Run(context.Background(), tl, nil, Options{AllowedKinds: all}); !errors.Is(err, habilis.ErrInvalid) {
		t.Errorf("Run(spec without url) error = %v, want ErrInvalid", err)
	}
}

// runCase is one run of a tool and what its result must show. Zero fields
// other than isError are not checked.
type runCase struct {
	name string
	spec map[string]any
	// maxOutput is Options.MaxOutput.
	maxOutput int
	isError   bool
	// structured is the whole structured content; fields are some of its
	// members.
	structured any
	fields     map[string]any
	// textJSON is the text content read as JSON.
	textJSON  any
	contains  []string
	text      string
	truncated bool
	result    *habilis.ToolResult
}

func (c runCase) check(t *testing.T, r *habilis.ToolResult) {
	t.Helper()
	if r.IsError != c.isError {
		t.Errorf("Run(%s) = %+v, want IsError %v", c.name, r, c.isError)
	}
	if c.truncated && !r.Truncated {
		t.Errorf("Run(%s) truncated = false, want true", c.name)
	}
	if c.result != nil {
		if diff := cmp.Diff(c.result, r); diff != "" {
			t.Errorf("Run(%s) mismatch (-want +got):\n%s", c.name, diff)
		}
	}
	c.checkStructured(t, r)
	c.checkText(t, r)
}

func (c runCase) checkStructured(t *testing.T, r *habilis.ToolResult) {
	t.Helper()
	if c.structured != nil && !cmp.Equal(r.StructuredContent, c.structured) {
		t.Errorf("Run(%s) structured content = %v, want %v", c.name, r.StructuredContent, c.structured)
	}
	if c.fields != nil {
		sc, _ := r.StructuredContent.(map[string]any)
		for k, want := range c.fields {
			if !cmp.Equal(sc[k], want) {
				t.Errorf("Run(%s) structured content[%q] = %v, want %v", c.name, k, sc[k], want)
			}
		}
	}
}

func (c runCase) checkText(t *testing.T, r *habilis.ToolResult) {
	t.Helper()
	if c.textJSON != nil {
		var got any
		if err := json.Unmarshal([]byte(r.Text()), &got); err != nil {
			t.Errorf("Run(%s) text = %q: %v", c.name, r.Text(), err)
		} else if diff := cmp.Diff(c.textJSON, got); diff != "" {
			t.Errorf("Run(%s) text mismatch (-want +got):\n%s", c.name, diff)
		}
	}
	for _, sub := range c.contains {
		if !strings.Contains(r.Text(), sub) {
			t.Errorf("Run(%s) text = %.300q, want it to contain %q", c.name, r.Text(), sub)
		}
	}
	if c.text != "" && r.Text() != c.text {
		t.Errorf("Run(%s) text = %.300q, want %.300q", c.name, r.Text(), c.text)
	}
}

// newHTTPTool serves the endpoints the HTTP tests call.
func newHTTPTool(t *testing.T) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/echo":
			var args map[string]any
			json.Unmarshal(body, &args)
			json.NewEncoder(w).Encode(map[string]any{
				"method": r.Method, "args": args, "auth": r.Header.Get("Authorization"),
				"type": r.Header.Get("Content-Type"), "query": r.URL.RawQuery,
			})
		case "/down":
			http.Error(w, "maintenance", http.StatusServiceUnavailable)
		case "/big":
			w.Write([]byte(strings.Repeat("y", 10000)))
		case "/mcp-shape":
			w.Write([]byte(`{"content":[{"type":"text","text":"no rain"}],"isError":true}`))
		case "/slow":
			<-r.Context().Done() // answers only when the client gives up
		}
	}))
	t.Cleanup(ts.Close)
	return ts
}

func TestHTTP(t *testing.T) {
	ts := newHTTPTool(t)
	args := map[string]any{"city": "Paris", "days": 3.0}
	cases := []runCase{{
		name: "post",
		spec: map[string]any{"kind": "http", "url": ts.URL + "/echo",
			"headers": map[string]string{"Authorization": "env:API_TOKEN"}},
		structured: map[string]any{"method": "POST", "args": map[string]any{"city": "Paris", "days": 3.0},
			"auth": "Bearer s3cret", "type": "application/json", "query": ""},
	}, {
		name:   "get",
		spec:   map[string]any{"kind": "http", "method": "GET", "url": ts.URL + "/echo"},
		fields: map[string]any{"query": "city=Paris&days=3", "method": "GET"},
	}, {
		name: "env not set",
		spec: map[string]any{"kind": "http", "url": ts.URL + "/echo",
			"headers": map[string]string{"Authorization": "env:OTHER_TOKEN"}},
		isError:  true,
		contains: []string{"OTHER_TOKEN is not set"},
	}, {
		name:     "non-2xx",
		spec:     map[string]any{"kind": "http", "url": ts.URL + "/down"},
		isError:  true,
		contains: []string{"503", "maintenance"},
	}, {
		name:      "non-2xx output cap",
		spec:      map[string]any{"kind": "http", "url": ts.URL + "/down", "max_output": 5},
		isError:   true,
		contains:  []string{"HTTP 503 Service Unavailable: maint\n[output truncated at 5 bytes]"},
		truncated: true,
	}, {
		name:     "timeout",
		spec:     map[string]any{"kind": "http", "url": ts.URL + "/slow", "timeout": "50ms"},
		isError:  true,
		contains: []string{"timed out after 50ms"},
	}, {
		name:      "output cap",
		spec:      map[string]any{"kind": "http", "url": ts.URL + "/big", "max_output": 100},
		text:      strings.Repeat("y", 100) + "\n[output truncated at 100 bytes]",
		truncated: true,
	}, {
		name:      "options cap wins",
		spec:      map[string]any{"kind": "http", "url": ts.URL + "/big", "max_output": 100},
		maxOutput: 10,
		text:      strings.Repeat("y", 10) + "\n[output truncated at 10 bytes]",
		truncated: true,
	}, {
		name:    "mcp shape passes through",
		spec:    map[string]any{"kind": "http", "url": ts.URL + "/mcp-shape"},
		isError: true,
		result:  &habilis.ToolResult{Content: []habilis.Content{{Type: "text", Text: "no rain"}}, IsError: true, Ran: true},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := Options{AllowedKinds: all, MaxOutput: c.maxOutput,
				LookupEnv: env(map[string]string{"API_TOKEN": "Bearer s3cret"})}
			r, err := Run(context.Background(), tool(t, c.spec), args, opts)
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, r)
		})
	}
}

func TestHTTPCanceled(t *testing.T) {
	ts := newHTTPTool(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tl := tool(t, map[string]any{"kind": "http", "url": ts.URL + "/echo"})
	if _, err := Run(ctx, tl, map[string]any{"city": "Paris"}, Options{AllowedKinds: all}); !errors.Is(err, context.Canceled) {
		t.Errorf("Run(canceled) error = %v, want context.Canceled", err)
	}
}

// commandSpec is a command tool that runs this test binary as helper mode,
// with extra fields.
func commandSpec(extra map[string]any) map[string]any {
	spec := map[string]any{"kind": "command", "argv": []string{os.Args[0]}, "env": []string{helperEnv}}
	for k, v := range extra {
		spec[k] = v
	}
	return spec
}

func commandOpts(mode string) Options {
	return Options{AllowedKinds: []string{KindCommand, KindMCP},
		LookupEnv: env(map[string]string{helperEnv: mode, "CITY_API": "k1", "SECRET": "do-not-pass"})}
}

func TestCommand(t *testing.T) {
	args := map[string]any{"city": "Paris; rm -rf ~ && echo $HOME `id`", "days": 3.0}
	cases := []struct {
		mode string // the helper's
		runCase
	}{{"stdin", runCase{
		name:       "stdin json",
		spec:       commandSpec(nil),
		structured: map[string]any{"city": args["city"], "days": 3.0},
	}}, {"argv", runCase{
		name:     "argv verbatim",
		spec:     commandSpec(map[string]any{"argv": []string{os.Args[0], "--city", "{city}", "{days}", "$HOME; rm -rf /"}, "stdin": "none"}),
		textJSON: []any{"--city", "Paris; rm -rf ~ && echo $HOME `id`", "3", "$HOME; rm -rf /"},
	}}, {"argv", runCase{
		name:     "missing template argument",
		spec:     commandSpec(map[string]any{"argv": []string{os.Args[0], "{country}"}}),
		isError:  true,
		contains: []string{`"country"`},
	}}, {"env", runCase{
		name:     "only listed env",
		spec:     commandSpec(map[string]any{"env": []string{helperEnv, "CITY_API", "UNSET_VAR"}}),
		textJSON: []any{helperEnv + "=env", "CITY_API=k1"},
	}}, {"hang", runCase{
		name:     "timeout kills",
		spec:     commandSpec(map[string]any{"timeout": "100ms"}),
		isError:  true,
		contains: []string{"timed out after 100ms"},
	}}, {"flood", runCase{
		name:      "output cap",
		spec:      commandSpec(map[string]any{"max_output": 1000}),
		text:      strings.Repeat("x", 1000) + "\n[output truncated at 1000 bytes]",
		truncated: true,
	}}, {"fail", runCase{
		name:     "failure",
		spec:     commandSpec(nil),
		isError:  true,
		contains: []string{"exit status 3", "no such city"},
	}}, {"", runCase{
		name:    "no such program",
		spec:    map[string]any{"kind": "command", "argv": []string{"/nonexistent/habilis-tool"}},
		isError: true,
	}}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Run(context.Background(), tool(t, c.spec), args, commandOpts(c.mode))
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, r)
		})
	}
}

type weatherIn struct {
	City string `json:"city"`
}

func newMCPServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "weather-server", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "get_weather", Description: "weather for a city"},
		func(ctx context.Context, req *mcp.CallToolRequest, in weatherIn) (*mcp.CallToolResult, any, error) {
			if in.City == "Atlantis" {
				return nil, nil, fmt.Errorf("unknown city %q", in.City)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sunny in " + in.City}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "long_report", Description: "a long report"},
		func(ctx context.Context, req *mcp.CallToolRequest, in weatherIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("z", 5000)}}}, nil, nil
		})
	return s
}

func TestMCP(t *testing.T) {
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newMCPServer() }, nil))
	defer hs.Close()
	inMemory := func(ctx context.Context, _ *Spec) (mcp.Transport, error) {
		st, ct := mcp.NewInMemoryTransports()
		if _, err := newMCPServer().Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}
	transports := []struct {
		name string
		spec map[string]any
		opts Options
	}{
		{"in-memory", map[string]any{"kind": "mcp", "transport": "http", "url": "http://unused.invalid/mcp"},
			Options{AllowedKinds: all, MCPTransport: inMemory}},
		{"streamable http", map[string]any{"kind": "mcp", "transport": "http", "url": hs.URL}, Options{AllowedKinds: all}},
		{"stdio", map[string]any{"kind": "mcp", "transport": "stdio", "command": []string{os.Args[0]}, "env": []string{helperEnv}},
			commandOpts("mcp")},
	}
	calls := []struct {
		remote  string
		city    string
		text    string
		isError bool
		trunc   bool
	}{
		{"get_weather", "Paris", "sunny in Paris", false, false},
		{"get_weather", "Atlantis", `unknown city "Atlantis"`, true, false},
		{"no_such_tool", "Paris", "no_such_tool", true, false},
		{"long_report", "Paris", strings.Repeat("z", 64) + "\n[output truncated at 64 bytes]", false, true},
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			for _, c := range calls {
				spec := map[string]any{"tool": c.remote, "max_output": 64}
				for k, v := range tr.spec {
					spec[k] = v
				}
				r, err := Run(context.Background(), tool(t, spec), map[string]any{"city": c.city}, tr.opts)
				if err != nil {
					t.Fatalf("Run(%s, %s): %v", c.remote, c.city, err)
				}
				if r.IsError != c.isError || r.Truncated != c.trunc || !strings.Contains(r.Text(), c.text) {
					t.Errorf("Run(%s, %s) = %+v, want text containing %q, isError %v, truncated %v", c.remote, c.city, r, c.text, c.isError, c.trunc)
				}
			}
		})
	}
}

func TestMCPUnreachable(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	ts.Close() // a loopback address nobody listens on any more
	r, err := Run(context.Background(), tool(t, map[string]any{"kind": "mcp", "url": ts.URL}), nil, Options{AllowedKinds: all})
	if err != nil {
		t.Fatal(err)
	}
	if !r.IsError || !strings.Contains(r.Text(), "connect") {
		t.Errorf("Run(unreachable MCP server) = %+v, want a connect error result", r)
	}
}

func TestRunFilled(t *testing.T) {
	var got []map[string]any
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var args map[string]any
		json.NewDecoder(r.Body).Decode(&args)
		got = append(got, args)
		w.Write([]byte(`{"forecast":"sunny"}`))
	}))
	defer ts.Close()
	tl := tool(t, map[string]any{"kind": "http", "url": ts.URL})
	tl.InputSchema = json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"The city to get the weather for"}},"required":["city"]}`)
	opts := Options{AllowedKinds: all}
	for _, q := range []string{"weather in Paris", "weather please"} {
		fr, err := fill.Fill(context.Background(), tl, q, fill.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r, err := RunFilled(context.Background(), tl, fr, opts)
		if err != nil {
			t.Fatal(err)
		}
		if fr.Complete == r.IsError {
			t.Errorf("RunFilled(%q) = %+v, want isError %v", q, r, !fr.Complete)
		}
		if !fr.Complete && !strings.Contains(r.Text(), "Which city do you want the weather for?") {
			t.Errorf("RunFilled(%q) = %q, want the question", q, r.Text())
		}
	}
	if diff := cmp.Diff([]map[string]any{{"city": "Paris"}}, got); diff != "" {
		t.Errorf("requests mismatch (-want +got):\n%s", diff)
	}
}
