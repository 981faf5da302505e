package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/fill"
	"github.com/habilis-router/habilis/fill/executor"
	"github.com/habilis-router/habilis/selector"
)

// runOptions are the flags of `habilis run`.
type runOptions struct {
	g *globalOptions
	fillerFlags
	query string
	mode  string
	yes   bool
	allow []string

	// stdin answers the confirmation prompt; interactive reports that it
	// is a terminal, the only place a person can answer from.
	stdin       io.Reader
	interactive bool
}

func (o *runOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.mode, "mode", string(habilis.ModeHybrid), "ranking: description, centroid or hybrid")
	f.BoolVarP(&o.yes, "yes", "y", false, "run without asking for confirmation")
	f.StringSliceVar(&o.allow, "allow", nil, "executor kinds allowed to run: http, command, mcp (default none)")
	o.fillerFlags.addFlags(cmd)
}

func newRunCmd(g *globalOptions) *cobra.Command {
	o := &runOptions{g: g}
	cmd := &cobra.Command{
		Use:   "run QUERY...",
		Short: "Select a tool for a request, fill its arguments and run it",
		Long: `Run selects the best tool for QUERY (its words joined by spaces), fills its
arguments from the request (see habilis fill) and runs it as its catalog entry
declares, printing the result in MCP's CallToolResult shape.

Nothing runs unless its executor kind is allowed with --allow (http, command,
mcp; none by default) and the run is confirmed: run asks on the terminal, or
--yes confirms in advance. When stdin is not a terminal and --yes is not given,
run refuses (exit 1).

Outcomes that run nothing exit 0: the router abstained (JSON "abstained": true),
a required argument is missing (its question is printed), or the tool is
selection-only (it declares no executor). A result with isError set (the tool
failed, or its kind is not allowed) is printed and exits 1.`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.query = strings.Join(args, " ")
			o.stdin = cmd.InOrStdin()
			o.interactive = isTerminal(o.stdin)
			return runRun(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	o.addFlags(cmd)
	return cmd
}

// runOutput is what run prints with --json.
type runOutput struct {
	Query    string            `json:"query"`
	Decision *habilis.Decision `json:"decision"`
	// Abstained repeats the decision's abstention: nothing was filled or run.
	Abstained bool `json:"abstained"`
	// Tool is the selected tool, when there is one.
	Tool string       `json:"tool,omitempty"`
	Fill *fill.Result `json:"fill,omitempty"`
	// Ran reports that the tool's executor was started.
	Ran bool `json:"ran"`
	// Result is the executor's answer; absent when nothing was attempted
	// (abstention, missing arguments).
	Result *habilis.ToolResult `json:"result,omitempty"`
}

func runRun(ctx context.Context, o *runOptions, stdout io.Writer) error {
	mode, err := modeFlag(o.mode)
	if err != nil {
		return err
	}
	allowed, err := allowedKinds(o.allow)
	if err != nil {
		return err
	}
	// One reference time for relative dates, for the fillers and for the
	// check of what they propose.
	now := time.Now()
	fillers, err := o.fillers(o.g, now)
	if err != nil {
		return err
	}
	if err := checkQuery("run", o.query); err != nil {
		return err
	}

	out := &runOutput{Query: o.query}
	tool, err := o.selectTool(ctx, mode, out)
	if err != nil {
		return err
	}
	if tool == nil {
		return o.print(stdout, out)
	}
	out.Fill, err = fill.Fill(ctx, *tool, o.query, fill.Options{Fillers: fillers, Now: now})
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	if !out.Fill.Complete {
		return o.print(stdout, out)
	}

	// A selection-only tool has no kind: the executor says so and runs
	// nothing. A kind not allowed gets an error result, with a hint.
	kind := ""
	if executor.Declared(*tool) {
		spec, err := executor.ParseSpec(tool.Executor)
		if err != nil {
			return fmt.Errorf("run %q: %w", tool.Name, err)
		}
		kind = spec.Kind
	}
	allowedKind := kind != "" && slices.Contains(allowed, kind)
	if allowedKind {
		if err := o.confirm(*tool, kind, out.Fill.Arguments); err != nil {
			return err
		}
	}
	out.Result, err = executor.RunFilled(ctx, *tool, out.Fill, executor.Options{AllowedKinds: allowed, LookupEnv: o.g.lookupEnv})
	if err != nil {
		return err
	}
	out.Ran = out.Result.Ran
	if kind != "" && !allowedKind {
		addHint(out.Result, fmt.Sprintf("pass --allow %s to let habilis run %s tools", kind, kind))
	}
	if err := o.print(stdout, out); err != nil {
		return err
	}
	if out.Result.IsError {
		return fmt.Errorf("run: %s returned an error result", tool.Name)
	}
	return nil
}

// selectTool selects for the query and returns the top tool, or nil when
// the router abstains. It closes the backend before anything runs, so a
// long tool run never holds the store.
func (o *runOptions) selectTool(ctx context.Context, mode habilis.Mode, out *runOutput) (*habilis.Tool, error) {
	b, err := openBackend(ctx, o.g, false)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	d, err := b.Select(ctx, o.query, habilis.SelectOptions{K: selector.DefaultK, Mode: mode})
	if err != nil {
		return nil, fmt.Errorf("run: select: %w", err)
	}
	out.Decision = d
	if d.Abstained || len(d.Matches) == 0 {
		out.Abstained = true
		return nil, nil
	}
	out.Tool = d.Matches[0].Tool
	info, err := b.Tool(ctx, out.Tool)
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	return &info.Tool, nil
}

// confirm asks on the terminal before a tool runs, unless --yes was given.
// Without a terminal there is nobody to ask, so it refuses.
func (o *runOptions) confirm(tool habilis.Tool, kind string, args map[string]any) error {
	if o.yes {
		return nil
	}
	if !o.interactive {
		return fmt.Errorf("run: %s (%s) needs confirmation but stdin is not a terminal: pass --yes to run it without asking; nothing ran", tool.Name, kind)
	}
	b, _ := json.Marshal(args)
	fmt.Fprintf(o.g.stderr, "Run %s (%s) with %s? [y/N] ", tool.Name, kind, b)
	line, err := bufio.NewReader(o.stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("run: read confirmation: %w", err)
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return fmt.Errorf("run: %s not confirmed; nothing ran", tool.Name)
}

// addHint appends advice to a result's first text item.
func addHint(r *habilis.ToolResult, hint string) {
	for i := range r.Content {
		if r.Content[i].Type == "text" {
			r.Content[i].Text += ": " + hint
			return
		}
	}
	r.Content = append(r.Content, habilis.Content{Type: "text", Text: hint})
}

// incompleteAdvice says what the user must change for an incomplete fill
// to run: answer its questions, change the values the tool refuses, or both.
func incompleteAdvice(r *fill.Result) string {
	switch {
	case len(r.Missing) > 0 && len(r.Problems) > 0:
		return "answer the questions above, change the values the tool refuses (problems above), and ask again"
	case len(r.Problems) > 0:
		return "the tool refuses a value the request gives (problems above): ask again with a value it accepts"
	}
	return "answer the questions above and ask again"
}

func (o *runOptions) print(w io.Writer, out *runOutput) error {
	if o.g.json {
		return writeJSON(w, out)
	}
	d := out.Decision
	switch {
	case out.Abstained:
		fmt.Fprintf(w, "%s (%s mode); nothing ran\n", withPrefix("abstained", d.Reason), d.Mode)
		return nil
	case d.Ambiguous:
		fmt.Fprintf(w, "selected %s (%s mode), %s\n", out.Tool, d.Mode, withPrefix("ambiguous", d.Reason))
	default:
		fmt.Fprintf(w, "selected %s (%s mode)\n", out.Tool, d.Mode)
	}
	fmt.Fprintln(w)
	printFill(w, out.Fill)
	if !out.Fill.Complete {
		fmt.Fprintf(w, "\nnothing ran: %s\n", incompleteAdvice(out.Fill))
		return nil
	}
	r := out.Result
	switch {
	case r.SelectionOnly:
		fmt.Fprintf(w, "\n%s is selection-only: it declares no executor, so nothing ran\n", out.Tool)
		return nil
	case r.IsError:
		fmt.Fprintln(w, "\nerror result:")
	default:
		fmt.Fprintln(w, "\nresult:")
	}
	for _, c := range r.Content {
		switch c.Type {
		case "text":
			fmt.Fprintln(w, strings.TrimRight(c.Text, "\n"))
		default:
			fmt.Fprintf(w, "[%s %s%s]\n", c.Type, c.MimeType, c.URI)
		}
	}
	if r.Truncated {
		fmt.Fprintln(w, "(output truncated)")
	}
	return nil
}
