package catalog

import (
	"encoding/json"

	"github.com/habilis-router/habilis"
)

// OpenAIDef is a tool as an OpenAI function tool, one of the shapes Parse
// reads: {"type": "function", "function": {...}}.
type OpenAIDef struct {
	Type     string         `json:"type"`
	Function OpenAIFunction `json:"function"`
}

// OpenAIFunction is the "function" of an OpenAIDef. Examples are
// habilis' own addition to the shape, left out when empty.
type OpenAIFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Examples    []string        `json:"examples,omitempty"`
}

// MCPDef is a tool as an entry of an MCP tools/list result, one of the
// shapes Parse reads. Title and Examples are left out when empty.
type MCPDef struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Examples    []string        `json:"examples,omitempty"`
}

// OpenAI returns t as an OpenAI function tool, with its examples.
func OpenAI(t habilis.Tool) OpenAIDef {
	return OpenAIDef{Type: "function", Function: OpenAIFunction{Name: t.Name, Description: t.Description, Parameters: Schema(t), Examples: t.Examples}}
}

// MCP returns t as an MCP tool, with its examples and the title its Meta
// holds, if any.
func MCP(t habilis.Tool) MCPDef {
	return MCPDef{Name: t.Name, Title: t.Meta["title"], Description: t.Description, InputSchema: Schema(t), Examples: t.Examples}
}

// Schema returns t's input schema, or {"type":"object"} when it has none
// (a remote server's tool may come without).
func Schema(t habilis.Tool) json.RawMessage {
	if len(t.InputSchema) == 0 {
		return json.RawMessage(`{"type":"object"}`)
	}
	return t.InputSchema
}
