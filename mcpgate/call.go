package mcpgate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/suggest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// errorResult is a tool result that reports a failure to the agent, which
// can read it and try something else (MCP's advice for errors a model
// should see).
func errorResult(format string, a ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, a...)}}, IsError: true}
}

// Call forwards a call of the tool the gateway calls name to its server
// and returns the server's result as it came, isError included; a result
// over the size limit is cut, with a note. Anything that keeps the call
// from completing (an unknown tool, arguments that break the tool's
// schema, a server that is down, a timeout) is a result with isError set
// that says why: Call never fails otherwise, so a bad upstream cannot
// take the agent's session down.
func (g *Gateway) Call(ctx context.Context, name string, args json.RawMessage) *mcp.CallToolResult {
	c := g.cur.Load()
	e := c.byName[name]
	if e == nil {
		if server, ok := c.lost[name]; ok {
			return errorResult("tool %q is on server %q, which is unavailable: %s", name, server, c.reason(server))
		}
		if starting := c.starting(); len(starting) > 0 {
			// The tool may be one of theirs: they have not listed any yet.
			servers := "server " + starting[0] + " is"
			if len(starting) > 1 {
				servers = "servers " + strings.Join(starting, ", ") + " are"
			}
			return errorResult("tool %q is not offered yet: %s still starting; retry in a moment, or use search_tools to find the tools offered now", name, servers)
		}
		if alts := c.renamed(name); len(alts) > 0 {
			return errorResult("unknown tool %q: the gateway offers the tools of that name as %s", name, strings.Join(alts, " or "))
		}
		return errorResult("unknown tool %q%s: search_tools finds the tools this gateway offers", name, habilis.DidYouMean(c.near(name)))
	}
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	var m map[string]any
	if err := json.Unmarshal(args, &m); err != nil {
		return errorResult("arguments of %q must be a JSON object", name)
	}
	if msg := e.refusal(m); msg != "" {
		return errorResult("%s", msg)
	}
	status, reason, _, cs := g.upstreams[e.Server].snapshot()
	if status != StatusReady {
		return errorResult("tool %q is on server %q, which is unavailable: %s", name, e.Server, reason)
	}
	cctx, cancel := context.WithTimeout(ctx, g.opts.callTimeout())
	defer cancel()
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: e.Upstream, Arguments: args})
	switch {
	case err == nil:
		return capResult(res, g.opts.maxResult())
	case errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		return errorResult("tool %q on server %q did not answer within %s", name, e.Server, g.opts.callTimeout())
	case errors.Is(err, mcp.ErrConnectionClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		// A server that exits mid-call ends its output: the SDK reports
		// that as EOF, and its closing connection as ErrConnectionClosed.
		return errorResult("tool %q on server %q: the server's connection closed during the call", name, e.Server)
	}
	return errorResult("tool %q on server %q: %v", name, e.Server, err)
}

// renamed returns the quoted gateway names of the tools whose name on
// their server is upstream, when the gateway offers them under another
// (see nameTools): an agent that knows a tool by that name is told which
// to call.
func (c *view) renamed(upstream string) []string {
	var names []string
	for _, e := range c.entries {
		if e.Upstream == upstream && e.Name != upstream {
			names = append(names, strconv.Quote(e.Name))
		}
	}
	return names
}

// near returns the tools' names at the gateway, its own tools' among
// them, that name most likely misspells.
func (c *view) near(name string) []string {
	names := make([]string, 0, len(c.byName)+2)
	names = append(names, SearchToolName, CallToolName)
	for n := range c.byName {
		names = append(names, n)
	}
	return suggest.Names(name, names)
}

// starting returns the quoted names of the servers still starting.
func (c *view) starting() []string {
	var names []string
	for _, s := range c.servers {
		if s.Status == StatusStarting {
			names = append(names, strconv.Quote(s.Name))
		}
	}
	return names
}

// reason returns why a server is down.
func (c *view) reason(server string) string {
	for _, s := range c.servers {
		if s.Name == server {
			return s.Reason
		}
	}
	return "unknown server"
}

// capResult returns res unchanged when its JSON fits in max bytes, and
// otherwise a copy that keeps the content up to the first item that does
// not fit (that one cut to fit when it is text, dropped otherwise), the
// structured content only if it still fits, and a note saying what was
// cut, so that one huge result cannot flood the agent's context.
func capResult(res *mcp.CallToolResult, max int) *mcp.CallToolResult {
	whole, err := json.Marshal(res)
	if err == nil && len(whole) <= max {
		return res
	}
	out := &mcp.CallToolResult{Meta: res.Meta, IsError: res.IsError, Content: []mcp.Content{}}
	left := max
	for _, item := range res.Content {
		b, err := json.Marshal(item)
		if err != nil {
			continue
		}
		if len(b) <= left {
			out.Content = append(out.Content, item)
			left -= len(b)
			continue
		}
		if t, ok := item.(*mcp.TextContent); ok && left > 0 {
			out.Content = append(out.Content, &mcp.TextContent{Text: cutUTF8(t.Text, left), Annotations: t.Annotations})
		}
		left = 0
	}
	if res.StructuredContent != nil && left > 0 {
		if b, err := json.Marshal(res.StructuredContent); err == nil && len(b) <= left {
			out.StructuredContent = res.StructuredContent
		}
	}
	out.Content = append(out.Content, &mcp.TextContent{Text: fmt.Sprintf(
		"[habilis: the result was %d bytes of JSON, over the gateway's limit of %d; what did not fit was cut]", len(whole), max)})
	return out
}

// cutUTF8 returns the longest prefix of s of at most n bytes that does not
// split a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
