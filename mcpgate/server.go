package mcpgate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/eval"
	"github.com/habilis-router/habilis/internal/jsonform"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Expose says which tools a client's tools/list holds.
type Expose string

const (
	// ExposeSearch lists search_tools and call_tool only.
	ExposeSearch Expose = "search"
	// ExposeSelected also lists the tools the session's last search found,
	// and tells the client when they change (notifications/tools/
	// list_changed), for clients that call tools directly.
	ExposeSelected Expose = "selected"
)

// ParseExpose returns the Expose named s ("" is ExposeSearch).
func ParseExpose(s string) (Expose, error) {
	switch Expose(s) {
	case "", ExposeSearch:
		return ExposeSearch, nil
	case ExposeSelected:
		return ExposeSelected, nil
	}
	return "", fmt.Errorf("expose %q: want search or selected: %w", s, habilis.ErrInvalid)
}

// The gateway's own tools, as the agent sees them.
var (
	searchTool = &mcp.Tool{
		Name: SearchToolName,
		Description: "Find the tools that fit a request among every tool of the MCP servers behind this gateway. " +
			"Returns the k best tools, best first, each with its full definition (name, description, inputSchema), " +
			"its server, its score and whether it passed its gate; abstained is true with a reason when no tool fits. " +
			"Then call one with call_tool.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"query":{"type":"string","description":"the request to find a tool for, in the user's words"},` +
			`"k":{"type":"integer","minimum":1,"maximum":50,"description":"how many tools to return (default 5)"}},` +
			`"required":["query"]}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
	}
	callTool = &mcp.Tool{
		Name: CallToolName,
		Description: "Call a tool that search_tools found, by its name, with arguments that match its inputSchema. " +
			"Returns the tool's own result.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"name":{"type":"string","description":"the tool's name, as search_tools gave it"},` +
			`"arguments":{"type":"object","description":"the tool's arguments"}},` +
			`"required":["name"]}`),
	}
)

// NewServer returns an MCP server for one client session that offers the
// gateway's tools. An HTTP gateway makes one per session, so that what
// ExposeSelected lists follows that session's searches.
func (g *Gateway) NewServer(expose Expose) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "habilis", Title: "habilis MCP gateway", Version: g.opts.version()}, &mcp.ServerOptions{
		Instructions: "This server stands in front of several MCP servers. To act on a request, call search_tools " +
			"with the request to find the tools that fit it, then call_tool with one tool's name and arguments.",
		Logger:       g.opts.Logger,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	s := &session{g: g, srv: srv, expose: expose}
	srv.AddTool(searchTool, s.search)
	srv.AddTool(callTool, s.call)
	srv.AddReceivingMiddleware(s.unknownTool)
	return srv
}

// unknownTool words the SDK's refusal of a tools/call naming a tool the
// session does not list as call_tool words an unknown tool (Call): with
// the names it most likely misspells and where to find the others, or,
// for a tool the gateway offers, how to call it. The error stays a
// JSON-RPC invalid-params error, as the SDK sends it.
func (s *session) unknownTool(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		call, ok := req.(*mcp.CallToolRequest)
		var we *jsonrpc.Error
		if !ok || call.Params == nil || !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams ||
			we.Message != fmt.Sprintf("unknown tool %q", call.Params.Name) {
			return res, err
		}
		name, c := call.Params.Name, s.g.cur.Load()
		msg := fmt.Sprintf("unknown tool %q%s: search_tools finds the tools this gateway offers", name, habilis.DidYouMean(c.near(name)))
		if c.byName[name] != nil {
			msg = fmt.Sprintf("tool %q is not listed in this session: call it with %s", name, CallToolName)
		}
		return nil, &jsonrpc.Error{Code: we.Code, Message: msg, Data: we.Data}
	}
}

// session is one client's server and the tools it exposes.
type session struct {
	g      *Gateway
	srv    *mcp.Server
	expose Expose

	mu      sync.Mutex
	exposed []string

	last lastSearch
}

// lastSearch is a session's last search, for Options.Record: its query,
// the tools it found, and those called since.
type lastSearch struct {
	mu            sync.Mutex
	query         string
	found, called map[string]bool
}

// remember makes res the session's last search for query.
func (l *lastSearch) remember(query string, res *SearchResult) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.query, l.found, l.called = query, make(map[string]bool, len(res.Tools)), map[string]bool{}
	for _, t := range res.Tools {
		l.found[t.Name] = true
	}
}

// record records that the session called the tool named, if its last
// search found it and it was not recorded since, and the gateway still
// offers it.
func (s *session) record(name string) {
	rec := s.g.opts.Record
	if rec == nil || s.g.cur.Load().byName[name] == nil {
		return
	}
	l := &s.last
	l.mu.Lock()
	query, ok := l.query, l.found[name] && !l.called[name]
	if ok {
		l.called[name] = true
	}
	l.mu.Unlock()
	if ok {
		rec.Record(eval.SourceMCP, query, name)
	}
}

// searchArgs are search_tools' arguments.
type searchArgs struct {
	Query string `json:"query"`
	K     *int   `json:"k"`
}

func (s *session) search(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a searchArgs
	if err := json.Unmarshal(orEmpty(req.Params.Arguments), &a); err != nil {
		return argsError("search_tools", `{"query": string, "k": integer}`, err), nil
	}
	if strings.TrimSpace(a.Query) == "" {
		return errorResult("search_tools: query: must not be empty"), nil
	}
	k := 0
	if a.K != nil {
		if k = *a.K; k < 1 {
			return errorResult("search_tools: k: %d: want at least 1", k), nil
		}
	}
	res, err := s.g.Search(ctx, a.Query, k)
	if err != nil {
		if errors.Is(err, habilis.ErrInvalid) {
			return errorResult("search_tools: %v", err), nil
		}
		return nil, err
	}
	b, err := res.Encode()
	if err != nil {
		return nil, err
	}
	if s.expose == ExposeSelected {
		s.show(res.Tools)
	}
	if s.g.opts.Record != nil {
		s.last.remember(a.Query, res)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}, nil
}

// argsError words why the arguments of the gateway's tool do not decode:
// the field and the JSON it wants ("k: must be an integer, got number
// 2.5"), not the decoder's Go names, or else the whole shape wanted.
func argsError(tool, want string, err error) *mcp.CallToolResult {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return errorResult("%s: %s: must be %s, got %s", tool, te.Field, jsonform.Of(te.Type), te.Value)
	}
	return errorResult("%s: arguments: want %s: %v", tool, want, err)
}

func (s *session) call(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(orEmpty(req.Params.Arguments), &a); err != nil {
		return argsError("call_tool", `{"name": string, "arguments": object}`, err), nil
	}
	if a.Name == "" {
		return errorResult("call_tool: name: must not be empty"), nil
	}
	s.record(a.Name)
	return s.g.Call(ctx, a.Name, a.Arguments), nil
}

// Encode returns the answer as search_tools sends it: compact JSON
// without HTML escapes ("<" stays "<"), since a model reads it and every
// byte is a share of a token.
func (r *SearchResult) Encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func orEmpty(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage(`{}`)
	}
	return raw
}

// show makes the session's tools/list hold the tools found besides the
// gateway's own; the server tells the client the list changed.
func (s *session) show(found []FoundTool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.g.cur.Load()
	var names []string
	for _, f := range found {
		e := c.byName[f.Name]
		if e == nil || !s.add(e) {
			continue
		}
		names = append(names, e.Name)
	}
	var gone []string
	for _, n := range s.exposed {
		if !slices.Contains(names, n) {
			gone = append(gone, n)
		}
	}
	s.srv.RemoveTools(gone...)
	s.exposed = names
}

// add lists one upstream tool on the session's server, calling through
// the gateway. It reports false for a tool the SDK would refuse (a schema
// that is not an object); that tool stays reachable through call_tool.
func (s *session) add(e *entry) (ok bool) {
	var schema map[string]any
	if json.Unmarshal(e.InputSchema, &schema) != nil || schema["type"] != "object" {
		return false
	}
	defer func() {
		if r := recover(); r != nil {
			s.g.opts.Logger.Warn("mcp tool not exposed", "tool", e.Name, "error", r)
			ok = false
		}
	}()
	def := *e.def
	def.Name, def.Description, def.InputSchema = e.Name, e.Description, e.InputSchema
	name := e.Name
	s.srv.AddTool(&def, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.record(name)
		return s.g.Call(ctx, name, req.Params.Arguments), nil
	})
	return true
}
