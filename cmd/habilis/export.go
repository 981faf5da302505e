package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/habilis-router/habilis"
	"github.com/spf13/cobra"
)

// exportOptions are the flags of `habilis tools export`.
type exportOptions struct {
	g      *globalOptions
	format string
}

func newToolsExportCmd(g *globalOptions) *cobra.Command {
	o := &exportOptions{g: g}
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write the catalog as MCP or OpenAI tools",
		Long: `Export writes the catalog's tools to stdout as an MCP tools/list result
({"tools": [{"name", "title", "description", "inputSchema", "examples"}]}) or as
OpenAI function tools ([{"type": "function", "function": {"name", "description",
"parameters", "examples"}}]). habilis load reads either back; margins, executors
and meta other than an MCP title are not part of these shapes and are left out.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runToolsExport(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&o.format, "format", "mcp", "mcp or openai")
	return cmd
}

type mcpExport struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Examples    []string        `json:"examples,omitempty"`
}

type openAIExport struct {
	Type     string         `json:"type"`
	Function openAIFunction `json:"function"`
}

type openAIFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Examples    []string        `json:"examples,omitempty"`
}

func runToolsExport(ctx context.Context, o *exportOptions, stdout io.Writer) error {
	if o.format != "mcp" && o.format != "openai" {
		return usagef("--format %q: want mcp or openai", o.format)
	}
	b, err := openBackend(ctx, o.g, false)
	if err != nil {
		return err
	}
	defer b.Close()
	tools, err := b.Tools(ctx)
	if err != nil {
		return fmt.Errorf("tools export: %w", err)
	}
	if o.format == "openai" {
		out := make([]openAIExport, len(tools))
		for i, t := range tools {
			out[i] = openAIExport{Type: "function", Function: openAIFunction{Name: t.Name, Description: t.Description, Parameters: schemaOf(t), Examples: t.Examples}}
		}
		return writeJSON(stdout, out)
	}
	out := make([]mcpExport, len(tools))
	for i, t := range tools {
		out[i] = mcpExport{Name: t.Name, Title: t.Meta["title"], Description: t.Description, InputSchema: schemaOf(t), Examples: t.Examples}
	}
	return writeJSON(stdout, struct {
		Tools []mcpExport `json:"tools"`
	}{out})
}

// schemaOf returns a tool's input schema, {"type": "object"} when it has
// none (a remote server's tool may come without).
func schemaOf(t habilis.Tool) json.RawMessage {
	if len(t.InputSchema) == 0 {
		return json.RawMessage(`{"type":"object"}`)
	}
	return t.InputSchema
}
