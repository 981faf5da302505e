package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/fill"
	"github.com/habilis-router/habilis/internal/httpclient"
)

func textResult(isErr bool, format string, a ...any) *habilis.ToolResult {
	return &habilis.ToolResult{Content: []habilis.Content{{Type: "text", Text: fmt.Sprintf(format, a...)}}, IsError: isErr}
}

// Options configure Run. The zero value allows nothing to run.
type Options struct {
	// AllowedKinds lists the executor kinds that may run ("http",
	// "command", "mcp"). Nil allows none: a catalog is data, possibly
	// written by someone else, and loading it must not by itself let it
	// start programs or call the network; the operator opts in.
	AllowedKinds []string
	// LookupEnv resolves the environment variable names a spec mentions
	// (header values "env:NAME", a command's env list). Nil means every
	// variable is unset. Only names written in the spec are ever looked up.
	LookupEnv func(name string) (string, bool)
	// Timeout bounds a run whose spec sets none; 0 means 30 seconds.
	Timeout time.Duration
	// MaxOutput caps the bytes of output kept from any tool; 0 means
	// 1 MiB. A spec's max_output can only lower it.
	MaxOutput int
	// HTTPClient makes HTTP and MCP-over-HTTP requests; nil means a new
	// default client.
	HTTPClient *http.Client
	// MCPTransport, when set, connects to MCP servers instead of the
	// spec's transport (for servers running in the same process).
	MCPTransport func(ctx context.Context, spec *Spec) (mcp.Transport, error)
}

func (o *Options) timeout(s *Spec) time.Duration {
	switch {
	case s.RunTimeout() > 0:
		return s.RunTimeout()
	case o.Timeout > 0:
		return o.Timeout
	}
	return 30 * time.Second
}

func (o *Options) maxOutput(s *Spec) int {
	limit := o.MaxOutput
	if limit <= 0 {
		limit = 1 << 20
	}
	if s.MaxOutput > 0 && s.MaxOutput < limit {
		limit = s.MaxOutput
	}
	return limit
}

// httpClient returns the client for HTTP and MCP-over-HTTP requests.
func (o *Options) httpClient() *http.Client {
	if o.HTTPClient == nil {
		return &http.Client{}
	}
	return o.HTTPClient
}

func (o *Options) lookup(name string) (string, bool) {
	if o.LookupEnv == nil {
		return "", false
	}
	return o.LookupEnv(name)
}

// Run executes tool with args as its Executor declares. Failures of the
// tool itself (a non-zero exit, a non-2xx status, a timeout, a refused
// kind) come back as a Result with IsError set. A tool without an executor
// gives a SelectionOnly result. Run returns an error only for a malformed
// spec (wrapping habilis.ErrInvalid) or when ctx ends.
func Run(ctx context.Context, tool habilis.Tool, args map[string]any, opts Options) (*habilis.ToolResult, error) {
	if !Declared(tool) {
		r := textResult(false, "tool %q is selection-only: it declares no executor, so nothing ran", tool.Name)
		r.SelectionOnly = true
		return r, nil
	}
	spec, err := ParseSpec(tool.Executor)
	if err != nil {
		return nil, fmt.Errorf("run %q: %w", tool.Name, err)
	}
	if !slices.Contains(opts.AllowedKinds, spec.Kind) {
		return textResult(true, "tool %q: executor kind %q is not allowed here (allowed: %s)",
			tool.Name, spec.Kind, allowedList(opts.AllowedKinds)), nil
	}
	if args == nil {
		args = map[string]any{}
	}
	timeout := opts.timeout(spec)
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var r *habilis.ToolResult
	switch spec.Kind {
	case KindHTTP:
		r = runHTTP(rctx, spec, args, &opts)
	case KindCommand:
		r = runCommand(rctx, spec, args, &opts)
	case KindMCP:
		r = runMCP(rctx, tool, spec, args, &opts)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("run %q: %w", tool.Name, err)
	}
	if rctx.Err() != nil && r.IsError {
		r = textResult(true, "tool %q timed out after %s", tool.Name, timeout)
	}
	r.Ran = true
	return r, nil
}

// Declared reports whether tool declares an executor; a tool without one
// is selection-only.
func Declared(tool habilis.Tool) bool {
	raw := bytes.TrimSpace(tool.Executor)
	return len(raw) > 0 && string(raw) != "null"
}

func allowedList(kinds []string) string {
	if len(kinds) == 0 {
		return "none"
	}
	return strings.Join(kinds, ", ")
}

// limitWriter keeps the first max bytes written and counts the rest, so a
// chatty process is never blocked or killed by a full pipe.
type limitWriter struct {
	buf       bytes.Buffer
	max       int
	truncated bool
}

func (w *limitWriter) Write(p []byte) (int, error) {
	room := w.max - w.buf.Len()
	if room < len(p) {
		w.truncated = true
		if room > 0 {
			w.buf.Write(p[:room])
		}
		return len(p), nil
	}
	w.buf.Write(p)
	return len(p), nil
}

func truncNote(max int) string { return fmt.Sprintf("\n[output truncated at %d bytes]", max) }

// outputResult turns a successful tool's output into a result: an MCP
// result passes through, other JSON objects also become structured content.
func outputResult(out []byte, truncated bool, max int) *habilis.ToolResult {
	if truncated {
		return &habilis.ToolResult{Content: []habilis.Content{{Type: "text", Text: string(out) + truncNote(max)}}, Truncated: true}
	}
	trimmed := bytes.TrimSpace(out)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var probe struct {
			Content json.RawMessage `json:"content"`
		}
		var mr habilis.ToolResult
		if json.Unmarshal(trimmed, &probe) == nil && len(probe.Content) > 0 && probe.Content[0] == '[' &&
			json.Unmarshal(trimmed, &mr) == nil {
			if mr.Content == nil {
				mr.Content = []habilis.Content{}
			}
			mr.SelectionOnly, mr.Truncated = false, false
			return &mr
		}
		var obj map[string]any
		if json.Unmarshal(trimmed, &obj) == nil {
			return &habilis.ToolResult{Content: []habilis.Content{{Type: "text", Text: string(out)}}, StructuredContent: obj}
		}
	}
	return &habilis.ToolResult{Content: []habilis.Content{{Type: "text", Text: string(out)}}}
}

func runHTTP(ctx context.Context, spec *Spec, args map[string]any, opts *Options) *habilis.ToolResult {
	req, err := newRequest(ctx, spec, args)
	if err != nil {
		return textResult(true, "%v", err)
	}
	if err := setHeaders(req.Header, spec.Headers, opts); err != nil {
		return textResult(true, "%v", err)
	}
	resp, err := opts.httpClient().Do(req)
	if err != nil {
		return textResult(true, "%s %s: %v", spec.Method, spec.URL, err)
	}
	defer resp.Body.Close()
	max := opts.maxOutput(spec)
	out, err := io.ReadAll(io.LimitReader(resp.Body, int64(max)+1))
	if err != nil {
		return textResult(true, "%s %s: read response: %v", spec.Method, spec.URL, err)
	}
	truncated := len(out) > max
	if truncated {
		out = out[:max]
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return statusResult(spec, resp.Status, out, truncated, max)
	}
	return outputResult(out, truncated, max)
}

// newRequest builds the request: the arguments as query parameters for
// GET and DELETE, else as a JSON body.
func newRequest(ctx context.Context, spec *Spec, args map[string]any) (*http.Request, error) {
	u, _ := url.Parse(spec.URL) // validated by ParseSpec
	var body io.Reader
	if spec.Method == "GET" || spec.Method == "DELETE" {
		q := u.Query()
		for _, k := range slices.Sorted(maps.Keys(args)) {
			q.Set(k, argString(args[k]))
		}
		u.RawQuery = q.Encode()
	} else {
		b, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("encode arguments: %v", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, spec.Method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("build request: %v", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	return req, nil
}

// statusResult is the error result of an answer outside 2xx: the status
// and what the server said, out, cut at max bytes.
func statusResult(spec *Spec, status string, out []byte, truncated bool, max int) *habilis.ToolResult {
	text := fmt.Sprintf("%s %s: HTTP %s", spec.Method, spec.URL, status)
	if len(out) > 0 {
		text += ": " + string(out)
	}
	if truncated {
		text += truncNote(max)
	}
	return &habilis.ToolResult{Content: []habilis.Content{{Type: "text", Text: text}}, IsError: true, Truncated: truncated}
}

// setHeaders adds the spec's headers, resolving "env:NAME" values.
func setHeaders(h http.Header, headers map[string]string, opts *Options) error {
	for _, name := range slices.Sorted(maps.Keys(headers)) {
		v := headers[name]
		if ref, ok := strings.CutPrefix(v, "env:"); ok {
			val, found := opts.lookup(ref)
			if !found {
				return fmt.Errorf("header %s: environment variable %s is not set", name, ref)
			}
			v = val
		}
		h.Set(name, v)
	}
	return nil
}

// argString renders an argument as one command-line or query value.
func argString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case nil:
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// command prepares argv to run in the spec's directory with only the
// environment the spec names.
func command(ctx context.Context, argv []string, spec *Spec, opts *Options) *exec.Cmd {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = processEnv(spec.Env, opts)
	cmd.Dir = spec.Dir
	cmd.WaitDelay = time.Second // a grandchild holding the pipes cannot hang the run
	return cmd
}

// processEnv builds a process environment from the spec's names only.
func processEnv(names []string, opts *Options) []string {
	env := []string{}
	for _, name := range names {
		if v, ok := opts.lookup(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return env
}

func runCommand(ctx context.Context, spec *Spec, args map[string]any, opts *Options) *habilis.ToolResult {
	argv := make([]string, len(spec.Argv))
	for i, a := range spec.Argv {
		name := fill.TemplateName(a)
		if name == "" {
			argv[i] = a
			continue
		}
		v, ok := args[name]
		if !ok {
			return textResult(true, "argument %q is required by argv[%d] but was not given", name, i)
		}
		argv[i] = argString(v)
	}
	cmd := command(ctx, argv, spec, opts)
	if spec.Stdin == "json" {
		b, err := json.Marshal(args)
		if err != nil {
			return textResult(true, "encode arguments: %v", err)
		}
		cmd.Stdin = bytes.NewReader(b)
	}
	max := opts.maxOutput(spec)
	stdout := &limitWriter{max: max}
	stderr := &limitWriter{max: max}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	if err != nil {
		text := fmt.Sprintf("%s: %v", argv[0], err)
		if ctx.Err() != nil {
			text = fmt.Sprintf("%s: %v", argv[0], ctx.Err())
		}
		if s := strings.TrimSpace(stderr.buf.String()); s != "" {
			text += "\n" + s
		}
		if stderr.truncated {
			text += truncNote(max)
		}
		return &habilis.ToolResult{Content: []habilis.Content{{Type: "text", Text: text}}, IsError: true, Truncated: stderr.truncated}
	}
	return outputResult(stdout.buf.Bytes(), stdout.truncated, max)
}

func mcpTransport(ctx context.Context, spec *Spec, opts *Options) (mcp.Transport, error) {
	if opts.MCPTransport != nil {
		return opts.MCPTransport(ctx, spec)
	}
	if spec.Transport == "stdio" {
		return &mcp.CommandTransport{Command: command(ctx, spec.Command, spec, opts), TerminateDuration: time.Second}, nil
	}
	client := opts.httpClient()
	if len(spec.Headers) > 0 {
		h := http.Header{}
		if err := setHeaders(h, spec.Headers, opts); err != nil {
			return nil, err
		}
		client = httpclient.WithHeaders(client, h)
	}
	return &mcp.StreamableClientTransport{Endpoint: spec.URL, HTTPClient: client, MaxRetries: -1, DisableStandaloneSSE: true}, nil
}

func runMCP(ctx context.Context, tool habilis.Tool, spec *Spec, args map[string]any, opts *Options) *habilis.ToolResult {
	transport, err := mcpTransport(ctx, spec, opts)
	if err != nil {
		return textResult(true, "mcp: %v", err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "habilis", Version: "0"}, nil)
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return textResult(true, "mcp: connect: %v", err)
	}
	defer cs.Close()
	name := spec.Tool
	if name == "" {
		name = tool.Name
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return textResult(true, "mcp: call %q: %v", name, err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		return textResult(true, "mcp: call %q: encode result: %v", name, err)
	}
	var r habilis.ToolResult
	if err := json.Unmarshal(b, &r); err != nil {
		return textResult(true, "mcp: call %q: decode result: %v", name, err)
	}
	if r.Content == nil {
		r.Content = []habilis.Content{}
	}
	capResult(&r, opts.maxOutput(spec))
	return &r
}

// capResult truncates text and data beyond max bytes in total.
func capResult(r *habilis.ToolResult, max int) {
	left := max
	for i := range r.Content {
		c := &r.Content[i]
		size := len(c.Text) + len(c.Data)
		if size <= left {
			left -= size
			continue
		}
		r.Truncated = true
		if len(c.Text) > left {
			c.Text = c.Text[:left] + truncNote(max)
			left = 0
		} else {
			left -= len(c.Text)
		}
		if c.Data != "" {
			c.Data = ""
			c.Text += truncNote(max)
		}
	}
	if r.Truncated {
		if b, err := json.Marshal(r.StructuredContent); err == nil && len(b) > max {
			r.StructuredContent = nil
		}
	}
}

// Executor runs tools with fixed Options; it is the fill.Runner the
// program hands to the surfaces that run tools.
type Executor struct{ opts Options }

// New returns an Executor that runs tools with opts.
func New(opts Options) *Executor { return &Executor{opts: opts} }

// Run is RunFilled with the Executor's options.
func (e *Executor) Run(ctx context.Context, tool habilis.Tool, fr *fill.Result) (*habilis.ToolResult, error) {
	return RunFilled(ctx, tool, fr, e.opts)
}

// RunFilled runs tool with the arguments of a fill result, but only when
// the result is complete: with an argument missing or a value the tool
// would refuse, nothing runs and the result is an error whose text asks
// the fill's questions, so a caller can pass it on to the user.
func RunFilled(ctx context.Context, tool habilis.Tool, fr *fill.Result, opts Options) (*habilis.ToolResult, error) {
	if fr == nil {
		return nil, fmt.Errorf("run %q: no fill result: %w", tool.Name, habilis.ErrInvalid)
	}
	if !fr.Complete {
		var lines []string
		for _, m := range fr.Missing {
			lines = append(lines, m.Question)
		}
		for _, p := range fr.Problems {
			lines = append(lines, p.String())
		}
		return textResult(true, "tool %q did not run: %s", tool.Name, strings.Join(lines, " ")), nil
	}
	return Run(ctx, tool, fr.Arguments, opts)
}
