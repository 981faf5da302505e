package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/habilis-router/habilis/catalog"
	"github.com/habilis-router/habilis/selector"
	"github.com/spf13/cobra"
)

// loadOptions are the flags of `habilis load`.
type loadOptions struct {
	g     *globalOptions
	file  string
	merge bool
	// mcp and mcpConfig load the tools of MCP servers instead of a file.
	mcp       string
	mcpConfig string
}

func (o *loadOptions) addFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&o.merge, "merge", false, "keep stored tools the file does not mention (default: the file becomes the whole catalog)")
	cmd.Flags().StringVar(&o.mcp, "mcp", "", "load the tools of the MCP server this command line starts ('COMMAND ARGS...', split as a shell would) instead of a file")
	cmd.Flags().StringVar(&o.mcpConfig, "mcp-config", "", "load the tools of every server of this mcpServers file instead of a file")
}

func newLoadCmd(g *globalOptions) *cobra.Command {
	o := &loadOptions{g: g}
	cmd := &cobra.Command{
		Use:   "load FILE | --mcp 'COMMAND ARGS...' | --mcp-config FILE",
		Short: "Load a catalog file, or the tools of MCP servers, into the store",
		Long: `Load parses FILE (habilis, OpenAI function or MCP tools/list shape), embeds what
changed and commits the catalog in one write. On any error the store is unchanged.

With --mcp or --mcp-config it starts the MCP servers, lists their tools (named
as habilis mcp serve names them) and loads those; each tool's executor calls it
on its server (habilis run --allow mcp), with the server's command, cwd and the
names of its env variables, whose values come from the environment at run time
(header values are not stored).

With --remote ADDR the catalog goes to that server (habilis serve or proxy)
instead, which writes it the same way; it is checked here first.`,
		Args: rangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.file = args[0]
			}
			return runLoad(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	o.addFlags(cmd)
	return cmd
}

// loadOutput is what a local load prints: the write's report, and how
// long the user waited. Opening a large store (reading and indexing it)
// can take longer than the write, so both are given.
type loadOutput struct {
	*selector.LoadReport
	// Open is how long opening the store took: reading and indexing the
	// stored catalog, or reindexing it.
	Open time.Duration `json:"open_ns"`
	// Total is the whole command: reading the file, opening the store and
	// the load (LoadReport.Duration).
	Total time.Duration `json:"total_ns"`
}

func runLoad(ctx context.Context, o *loadOptions, stdout io.Writer) error {
	start := time.Now()
	if err := o.checkSource(); err != nil {
		return err
	}
	if o.g.remote != "" {
		return runLoadRemote(ctx, o, stdout)
	}
	// Parse first: a broken file never opens, let alone touches, the store.
	tools, err := o.readTools(ctx)
	if err != nil {
		return parseError(o.file, err)
	}
	o.g.progress = o.g.newProgress("load")
	defer o.g.progress.finish()
	opening := time.Now()
	r, closeRouter, err := openRouter(ctx, o.g, true)
	if err != nil {
		return fmt.Errorf("load %s: %w", o.file, err)
	}
	defer closeRouter()
	opened := time.Since(opening)
	rep, err := r.Load(ctx, tools, selector.LoadOptions{Merge: o.merge})
	o.g.progress.finish()
	if err != nil {
		return fmt.Errorf("load %s: %w", o.file, namedDamage(o.g.store, err))
	}
	out := &loadOutput{LoadReport: nonNilReport(rep), Open: opened, Total: time.Since(start)}
	if o.g.json {
		return writeJSON(stdout, out)
	}
	printLoadReport(stdout, o.file, rep, out)
	printGateNote(stdout, rep, r.Calibration())
	return nil
}

// printGateNote says what the catalog's gates rest on when its tools have
// few examples or none: what decides "no tool fits" there, and how to make
// it surer.
func printGateNote(w io.Writer, rep *selector.LoadReport, cal selector.Calibration) {
	switch {
	case gatesFitted(cal) || rep.Tools == 0:
	case rep.Bare == rep.Tools && len(cal.Background) > 0:
		fmt.Fprintf(w, "  note: no tool has examples: each tool passes its gate when a request scores higher\n"+
			"  at its description than generic requests do (the built-in background); add examples,\n"+
			"  or run `habilis fit` on labelled requests, for gates that know your traffic\n")
	case rep.Bare == rep.Tools:
		fmt.Fprintf(w, "  note: no tool has examples: the gates rest on how similar the descriptions are to\n"+
			"  each other; add examples, or run `habilis fit` on labelled requests\n")
	case rep.Bare > 0:
		fmt.Fprintf(w, "  note: %d of %d tools have no examples and are gated on their descriptions alone\n", rep.Bare, rep.Tools)
	}
	if fewExamples(rep, cal) {
		tools, examples := "the tools", "examples"
		if rep.Bare > 0 {
			tools = "the tools with examples"
		}
		if rep.MedianExamples == 1 {
			examples = "example"
		}
		fmt.Fprintf(w, "  note: %s have a median of %d %s; with fewer than about %d, the gate\n"+
			"  calibrated from them lets more no-tool requests through: add examples, or run\n"+
			"  `habilis fit` on labelled requests, no-tool ones among them\n", tools, rep.MedianExamples, examples, selector.FewExamples)
	}
}

// fewExamples reports whether the catalog's gate is calibrated from fewer
// examples a tool than selector.FewExamples: not when fit has set it from
// labelled requests, nor when no tool has examples (its gates are the
// descriptions').
func fewExamples(rep *selector.LoadReport, cal selector.Calibration) bool {
	return rep.MedianExamples > 0 && rep.MedianExamples < selector.FewExamples && !gatesFitted(cal)
}

// gatesFitted reports whether fit learned the catalog's gates from labelled
// requests (its margin then says "fit"), not only fitted it: from fewer
// than eval.MinGateQueries requests for a tool it learns none, and the
// gates still rest on the examples.
func gatesFitted(cal selector.Calibration) bool {
	return cal.GatesFitted() && cal.MarginSource == "fit"
}

// parseError is the error of load for a catalog file that does not parse
// or cannot be read. The catalog's problems and os.Open's error name the
// file already.
func parseError(file string, err error) error {
	var ce *catalog.Error
	var pe *fs.PathError
	switch n := countProblems(err); {
	case n > 1:
		return fmt.Errorf("%s has %d problems:\n%w", file, n, err)
	case errors.As(err, &ce), errors.As(err, &pe):
		return err
	}
	return fmt.Errorf("load %s: %w", file, err)
}

// countProblems counts the errors joined in err (catalog problems).
func countProblems(err error) int {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return len(j.Unwrap())
	}
	return 1
}

// printLoadReport prints a load's report; out, when not nil, says how
// long a local load waited in all.
func printLoadReport(w io.Writer, file string, rep *selector.LoadReport, out *loadOutput) {
	fmt.Fprintf(w, "loaded %s: %d tools, %d examples\n", file, rep.Tools, rep.Examples)
	fmt.Fprintf(w, "  %d added, %d updated, %d removed, %d unchanged\n", len(rep.Added), len(rep.Updated), len(rep.Removed), rep.Unchanged)
	fmt.Fprintf(w, "  %d texts embedded, %d reused\n", rep.Embedded, rep.Reused)
	if out != nil {
		fmt.Fprintf(w, "  catalog version %d; %s in all (opening the store %s, the load %s)\n", rep.Version,
			out.Total.Round(time.Millisecond), out.Open.Round(time.Millisecond), rep.Duration.Round(time.Millisecond))
	} else {
		fmt.Fprintf(w, "  catalog version %d, %s\n", rep.Version, rep.Duration.Round(time.Millisecond))
	}
	for _, l := range []struct {
		what  string
		names []string
	}{{"added", rep.Added}, {"updated", rep.Updated}, {"removed", rep.Removed}} {
		if len(l.names) > 0 && len(l.names) <= 20 {
			fmt.Fprintf(w, "  %s: %v\n", l.what, l.names)
		}
	}
}

// nonNilReport makes the report's lists print as [] rather than null.
func nonNilReport(rep *selector.LoadReport) *selector.LoadReport {
	for _, l := range []*[]string{&rep.Added, &rep.Updated, &rep.Removed} {
		if *l == nil {
			*l = []string{}
		}
	}
	return rep
}
