package main

import (
	"context"
	"io"

	"github.com/habilis-router/habilis/catalog"
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
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runToolsExport(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&o.format, "format", "mcp", "mcp or openai")
	return cmd
}

func runToolsExport(ctx context.Context, o *exportOptions, stdout io.Writer) error {
	if o.format != "mcp" && o.format != "openai" {
		return usagef("--format %q: want mcp or openai", o.format)
	}
	tools, err := catalogTools(ctx, o.g, "tools export")
	if err != nil {
		return err
	}
	if o.format == "openai" {
		out := make([]catalog.OpenAIDef, len(tools))
		for i, t := range tools {
			out[i] = catalog.OpenAI(t)
		}
		return writeJSON(stdout, out)
	}
	out := make([]catalog.MCPDef, len(tools))
	for i, t := range tools {
		out[i] = catalog.MCP(t)
	}
	return writeJSON(stdout, struct {
		Tools []catalog.MCPDef `json:"tools"`
	}{out})
}
