package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/selector"
	"github.com/spf13/cobra"
)

func newToolsCmd(g *globalOptions) *cobra.Command {
	return newGroupCmd("tools", "List, show, remove and export the catalog's tools",
		newToolsListCmd(g), newToolsShowCmd(g), newToolsRmCmd(g), newToolsExportCmd(g))
}

// newGroupCmd returns a command that only holds subs: alone it prints its
// help, and an unknown subcommand is a usage error (NoArgs) rather than
// help.
func newGroupCmd(use, short string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(subs...)
	return cmd
}

// toolsOptions are the flags of the tools subcommands.
type toolsOptions struct {
	g     *globalOptions
	names []string
}

func newToolsListCmd(g *globalOptions) *cobra.Command {
	o := &toolsOptions{g: g}
	return &cobra.Command{
		Use:   "list",
		Short: "List the catalog's tools",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runToolsList(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
}

func newToolsShowCmd(g *globalOptions) *cobra.Command {
	o := &toolsOptions{g: g}
	return &cobra.Command{
		Use:   "show NAME",
		Short: "Show one tool: schema, examples, radius, margin, its gate in each mode and collisions",
		Args:  rangeArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.names = args
			return runToolsShow(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
}

func newToolsRmCmd(g *globalOptions) *cobra.Command {
	o := &toolsOptions{g: g}
	return &cobra.Command{
		Use:     "rm NAME...",
		Aliases: []string{"remove"},
		Short:   "Remove tools from the catalog (all or none)",
		Args:    minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.names = args
			return runToolsRm(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
}

func runToolsList(ctx context.Context, o *toolsOptions, stdout io.Writer) error {
	tools, err := catalogTools(ctx, o.g, "tools list")
	if err != nil {
		return err
	}
	if o.g.json {
		return writeJSON(stdout, struct {
			Tools []habilis.Tool `json:"tools"`
		}{tools})
	}
	tw := newTable(stdout)
	fmt.Fprintln(tw, "NAME\tEXAMPLES\tDESCRIPTION")
	for _, t := range tools {
		fmt.Fprintf(tw, "%s\t%d\t%s\n", t.Name, len(t.Examples), truncate(t.Description, 70))
	}
	tw.Flush()
	fmt.Fprintf(stdout, "%d tools\n", len(tools))
	return nil
}

func runToolsShow(ctx context.Context, o *toolsOptions, stdout io.Writer) error {
	b, err := openBackend(ctx, o.g, false)
	if err != nil {
		return err
	}
	defer b.Close()
	info, err := b.Tool(ctx, o.names[0])
	if err != nil {
		return toolErr("tools show", err)
	}
	if lb, ok := b.(*localBackend); ok {
		if err := lb.r.StoredCalibrationError(); err != nil {
			fmt.Fprintf(o.g.stderr, "habilis: warning: store %s: %v; showing the gates of the stored index's copy; %s\n", lb.store, err, damagedHint)
		}
	}
	if o.g.json {
		return writeJSON(stdout, info)
	}
	printToolInfo(stdout, info)
	return nil
}

func printToolInfo(w io.Writer, info *selector.ToolInfo) {
	t := info.Tool
	fmt.Fprintf(w, "name:        %s\n", t.Name)
	fmt.Fprintf(w, "description: %s\n", t.Description)
	switch info.RadiusSource {
	case "examples":
		fmt.Fprintf(w, "radius:      %.3f (least similar example: %q)\n", info.Radius, info.RadiusExample)
	default:
		fmt.Fprintf(w, "radius:      %.3f (from the catalog-wide threshold: fewer than 2 examples)\n", info.Radius)
	}
	fmt.Fprintf(w, "margin:      %.3f\n", info.Margin)
	fmt.Fprintf(w, "gates:       a request passes a mode's gate when its gate score reaches it\n")
	for _, m := range []habilis.Mode{habilis.ModeHybrid, habilis.ModeCentroid, habilis.ModeDescription} {
		if g, ok := info.Gates[m]; ok {
			fmt.Fprintf(w, "  %-12s %.3f on the %s\n", m, g, cmp.Or(info.GateScores[m], "score"))
		}
	}
	if n := len(t.Examples); n > 0 && n < selector.MinHeldOutExamples {
		fmt.Fprintf(w, "  (fewer than %d examples: hybrid mode also lets through what it would without them, %.3f on the %s)\n",
			selector.MinHeldOutExamples, info.FallbackGate, cmp.Or(info.FallbackGateScore, "score"))
	}
	if len(info.CollidesWith) > 0 {
		fmt.Fprintf(w, "collides:    %s\n", strings.Join(info.CollidesWith, ", "))
	} else {
		fmt.Fprintf(w, "collides:    none\n")
	}
	fmt.Fprintf(w, "examples:    %d\n", len(t.Examples))
	for _, e := range t.Examples {
		fmt.Fprintf(w, "  - %s\n", e)
	}
	var schema bytes.Buffer
	if json.Indent(&schema, t.InputSchema, "  ", "  ") != nil {
		schema.Reset()
		schema.Write(t.InputSchema)
	}
	fmt.Fprintf(w, "schema:\n  %s\n", schema.String())
}

func runToolsRm(ctx context.Context, o *toolsOptions, stdout io.Writer) error {
	b, err := openBackend(ctx, o.g, true)
	if err != nil {
		return err
	}
	defer b.Close()
	rep, err := b.DeleteTools(ctx, o.names)
	if err != nil {
		return toolErr("tools rm", err)
	}
	if o.g.json {
		return writeJSON(stdout, nonNilReport(rep))
	}
	fmt.Fprintf(stdout, "removed %s; catalog version %d, %d tools left\n", strings.Join(rep.Removed, ", "), rep.Version, rep.Tools)
	return nil
}

// toolErr wraps the error of op on tools the user named, adding where to
// find the catalog's tools when one is not in it.
func toolErr(op string, err error) error {
	if errors.Is(err, habilis.ErrNotFound) {
		return fmt.Errorf("%s: %w; habilis tools list names the catalog's tools", op, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}
