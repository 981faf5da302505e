package mcpgate

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/catalog"
	"github.com/habilis-router/habilis/fill"
	"github.com/habilis-router/habilis/internal/suggest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The gateway's own tools. An upstream tool of the same name is shown
// with its server's prefix, so that the agent can reach both.
const (
	SearchToolName = "search_tools"
	CallToolName   = "call_tool"
)

// prefixSep joins a server's name and a tool's in the name of a tool that
// two servers share ("github__search"): MCP's name rules allow it, and it
// does not occur in ordinary tool names.
const prefixSep = "__"

// ToolInfo is one tool the gateway offers, with where it lives.
type ToolInfo struct {
	// Name is the tool's name at the gateway: the upstream's own name, or
	// SERVER__NAME when another server has a tool of that name too.
	Name string `json:"name"`
	// Server is the upstream server's name in the config.
	Server string `json:"server"`
	// Upstream is the tool's name on its server.
	Upstream string `json:"upstream_name"`
	// Title is the upstream's display name, if any.
	Title       string `json:"title,omitempty"`
	Description string `json:"description"`
	// InputSchema is the upstream's schema, as it sent it.
	InputSchema json.RawMessage `json:"inputSchema"`
	// Examples come from the overlay.
	Examples []string `json:"examples,omitempty"`
}

// entry is a tool as the gateway keeps it: its definition, the tool it
// is indexed as, and the validator of its arguments (nil when the schema
// uses what the validator does not read; the upstream then judges).
type entry struct {
	ToolInfo
	def   *mcp.Tool
	check *fill.Schema
}

// serverTools is one ready upstream's tool list.
type serverTools struct {
	server string
	tools  []*mcp.Tool
}

// unsafeChars are what a server name may hold that a tool name may not.
var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// prefixed returns the name of server's tool when another server shares
// its name.
func prefixed(server, tool string) string {
	return unsafeChars.ReplaceAllString(server, "_") + prefixSep + tool
}

// nameTools gives every tool of every list its gateway name: its own,
// unless another server has a tool of that name or it is one of the
// gateway's own, in which case it is prefixed with its server's name.
// Lists come sorted by server, so names do not depend on which server
// answered first. A name that still clashes, or a tool listed twice by
// its server, is left out and logged.
func nameTools(lists []serverTools, overlay Overlay, logger *slog.Logger) []*entry {
	owners := map[string]int{SearchToolName: 1, CallToolName: 1}
	for _, l := range lists {
		seen := map[string]bool{}
		for _, t := range l.tools {
			if !seen[t.Name] {
				owners[t.Name]++
				seen[t.Name] = true
			}
		}
	}
	var out []*entry
	taken := map[string]bool{SearchToolName: true, CallToolName: true}
	for _, l := range lists {
		for _, t := range l.tools {
			name := t.Name
			if owners[name] > 1 {
				name = prefixed(l.server, t.Name)
			}
			if taken[name] {
				logger.Warn("mcp tool left out: its name clashes", "server", l.server, "tool", t.Name, "name", name)
				continue
			}
			taken[name] = true
			out = append(out, newEntry(name, l.server, t, overlay))
		}
	}
	slices.SortFunc(out, func(a, b *entry) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// newEntry makes the gateway's entry of an upstream tool.
func newEntry(name, server string, t *mcp.Tool, overlay Overlay) *entry {
	e := &entry{def: t, ToolInfo: ToolInfo{Name: name, Server: server, Upstream: t.Name, Title: t.Title}}
	e.Description = describe(t)
	e.InputSchema = objectSchema(t.InputSchema)
	if ex, ok := overlay[name]; ok {
		e.Examples = ex
	} else if ex, ok := overlay[t.Name]; ok {
		e.Examples = ex
	}
	if s, err := fill.ParseSchema(e.InputSchema); err == nil {
		e.check = s
	}
	return e
}

// describe returns what a tool does in words: its description, or, for a
// tool that has none, its title or name, so that routing has some text.
func describe(t *mcp.Tool) string {
	annotated := ""
	if t.Annotations != nil {
		annotated = t.Annotations.Title
	}
	return catalog.Describe(t.Name, t.Description, t.Title, annotated)
}

// objectSchema returns a tool's input schema as JSON: the upstream's when
// it is an object, {"type": "object"} when it sent none.
func objectSchema(s any) json.RawMessage {
	if s == nil {
		return json.RawMessage(`{"type":"object"}`)
	}
	b, err := json.Marshal(s)
	if err != nil || len(b) == 0 || b[0] != '{' {
		return json.RawMessage(`{"type":"object"}`)
	}
	return b
}

// habilisTool is the tool the index holds for e.
func (e *entry) habilisTool() habilis.Tool {
	meta := map[string]string{"server": e.Server}
	if e.Title != "" {
		meta["title"] = e.Title
	}
	return habilis.Tool{Name: e.Name, Description: e.Description, Examples: e.Examples, InputSchema: e.InputSchema, Meta: meta}
}

// unmatchedOverlay returns the overlay's names that name no tool, sorted,
// and for those that likely misspell a tool's name, the names they most
// likely misspell.
func unmatchedOverlay(overlay Overlay, entries []*entry) (names []string, near map[string][]string) {
	known := map[string]bool{}
	for _, e := range entries {
		known[e.Name], known[e.Upstream] = true, true
	}
	for name := range overlay {
		if !known[name] {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		if s := suggest.UnknownTool(name, known).Suggestions; len(s) > 0 {
			if near == nil {
				near = map[string][]string{}
			}
			near[name] = s
		}
	}
	return names, near
}

// refusal says why arguments break a tool's schema, or "" when they do not
// (or the schema is beyond the validator).
func (e *entry) refusal(args map[string]any) string {
	if e.check == nil {
		return ""
	}
	ps := fill.Validate(e.check, args)
	if len(ps) == 0 {
		return ""
	}
	msgs := make([]string, len(ps))
	for i, p := range ps {
		msgs[i] = p.String()
	}
	return fmt.Sprintf("arguments of %q refused before reaching server %q: %s", e.Name, e.Server, strings.Join(msgs, "; "))
}
