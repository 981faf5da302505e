package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ollama/ollama/api"
	"github.com/spf13/cobra"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/embed/ollamaembed"
	"github.com/habilis-router/habilis/eval"
	"github.com/habilis-router/habilis/fill"
	"github.com/habilis-router/habilis/fill/ollamafill"
)

// fillerFlags are the flags that choose who fills arguments, shared by fill,
// run and eval --fill.
type fillerFlags struct {
	filler   string
	escalate string
}

func (o *fillerFlags) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.filler, "filler", "builtin", "who fills the arguments: builtin (no model) or ollama:MODEL[@HOST]")
	f.StringVar(&o.escalate, "escalate", "", "filler asked for what the first one leaves missing or gets rejected: builtin or ollama:MODEL[@HOST]")
}

// fillers parses --filler and --escalate into the chain fill.Fill runs.
// now is the reference time for relative dates; zero disables them.
func (o *fillerFlags) fillers(g *globalOptions, now time.Time) ([]fill.Filler, error) {
	small, err := parseFiller(g, "--filler", o.filler, now)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(o.escalate) == "" {
		return []fill.Filler{small}, nil
	}
	large, err := parseFiller(g, "--escalate", o.escalate, now)
	if err != nil {
		return nil, err
	}
	return []fill.Filler{fill.Escalating{Small: small, Large: large}}, nil
}

// parseFiller reads one filler spec: "builtin" or "ollama:MODEL[@HOST]". A
// model name may hold a colon ("ollama:qwen3:0.6b"); the host defaults to
// OLLAMA_HOST, then to the local server the ollama embedder uses too.
func parseFiller(g *globalOptions, flag, spec string, now time.Time) (fill.Filler, error) {
	spec = strings.TrimSpace(spec)
	kind, rest, _ := strings.Cut(spec, ":")
	switch kind {
	case "builtin", "extractor":
		if rest != "" {
			return nil, usagef("%s %q: builtin takes no model", flag, spec)
		}
		return &fill.Extractor{Now: now}, nil
	case "ollama":
		model, host, _ := strings.Cut(rest, "@")
		if model == "" {
			return nil, usagef("%s %q: want ollama:MODEL[@HOST]", flag, spec)
		}
		if host == "" {
			host = g.getenv("OLLAMA_HOST")
		}
		if host == "" {
			host = ollamaembed.DefaultHost
		}
		if !strings.Contains(host, "://") {
			host = "http://" + host
		}
		u, err := url.Parse(host)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, usagef("%s %q: host %q: want a URL like %s", flag, spec, host, ollamaembed.DefaultHost)
		}
		return ollamafill.New(api.NewClient(u, http.DefaultClient), model, ollamafill.Options{}), nil
	}
	return nil, usagef("%s %q: want builtin or ollama:MODEL[@HOST]", flag, spec)
}

// fillOptions are the flags of `habilis fill`.
type fillOptions struct {
	g *globalOptions
	fillerFlags
	tool  string
	query string
}

func newFillCmd(g *globalOptions) *cobra.Command {
	o := &fillOptions{g: g}
	cmd := &cobra.Command{
		Use:   "fill TOOL QUERY...",
		Short: "Fill a tool's arguments from a request",
		Long: `Fill fills the arguments of the stored tool TOOL from QUERY (its words joined by
spaces), extractively: every value must come from the request, and a value it
does not support is dropped and reported. Required arguments nobody could fill
come back as missing, each with a question to ask the user. Nothing runs.

--filler builtin (the default) needs no model; ollama:MODEL[@HOST] asks a chat
model on an Ollama server (HOST defaults to OLLAMA_HOST, then
` + ollamaembed.DefaultHost + `). --escalate names a second filler asked only for what
the first leaves missing or gets rejected; the result says who filled what.`,
		Args: minArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.tool, o.query = args[0], strings.Join(args[1:], " ")
			return runFill(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	o.addFlags(cmd)
	return cmd
}

func runFill(ctx context.Context, o *fillOptions, stdout io.Writer) error {
	// One reference time for relative dates, for the fillers and for the
	// check of what they propose.
	now := time.Now()
	fillers, err := o.fillers(o.g, now)
	if err != nil {
		return err
	}
	if err := checkQuery("fill", o.query); err != nil {
		return err
	}
	b, err := openBackend(ctx, o.g, false)
	if err != nil {
		return err
	}
	info, err := b.Tool(ctx, o.tool)
	b.Close()
	if err != nil {
		return toolErr("fill", err)
	}
	r, err := fill.Fill(ctx, info.Tool, o.query, fill.Options{Fillers: fillers, Now: now})
	if err != nil {
		return err
	}
	if o.g.json {
		return writeJSON(stdout, r)
	}
	printFill(stdout, r)
	return nil
}

// printFill prints a fill result: the arguments with who filled them, then
// what was rejected and why, then the questions for what is missing.
func printFill(w io.Writer, r *fill.Result) {
	if len(r.Arguments) > 0 {
		tw := newTable(w)
		fmt.Fprintln(tw, "ARGUMENT\tVALUE\tFILLED BY")
		for _, name := range slices.Sorted(maps.Keys(r.Arguments)) {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", name, truncate(valueText(r.Arguments[name]), 60), r.FilledBy[name])
		}
		tw.Flush()
	} else {
		fmt.Fprintln(w, "no arguments filled")
	}
	if len(r.Defaults) > 0 {
		fmt.Fprintln(w, "\ndefaults (not said, left to the tool):")
		for _, name := range slices.Sorted(maps.Keys(r.Defaults)) {
			fmt.Fprintf(w, "  %s = %s\n", name, valueText(r.Defaults[name]))
		}
	}
	if len(r.Rejected) > 0 {
		fmt.Fprintln(w, "\nrejected:")
		for _, rej := range r.Rejected {
			by := ""
			if rej.By != "" {
				by = " from " + rej.By
			}
			fmt.Fprintf(w, "  %s = %s%s: %s\n", rej.Path, truncate(valueText(rej.Value), 40), by, rej.Reason)
		}
	}
	if len(r.Problems) > 0 {
		fmt.Fprintln(w, "\nproblems:")
		for _, p := range r.Problems {
			fmt.Fprintf(w, "  %s\n", p)
		}
	}
	if len(r.Missing) > 0 {
		fmt.Fprintln(w, "\nmissing:")
		for _, m := range r.Missing {
			fmt.Fprintf(w, "  %s: %s\n", m.Name, m.Question)
		}
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "\nfiller %s failed: %s\n", e.Filler, e.Error)
	}
	if r.Complete {
		fmt.Fprintf(w, "\n%s: complete\n", r.Tool)
	} else {
		fmt.Fprintf(w, "\n%s: incomplete\n", r.Tool)
	}
}

// valueText renders an argument value for a table: strings as written,
// everything else as JSON.
func valueText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// runEvalFill scores argument filling on the rows of qs that have gold
// arguments and one expected tool (eval.Fill). Relative dates are
// disabled (zero Now) so that figures do not depend on the day they are
// measured.
func runEvalFill(ctx context.Context, o *evalOptions, tools []habilis.Tool, qs []eval.Query, stdout io.Writer) error {
	fillers, err := o.fillers(o.g, time.Time{})
	if err != nil {
		return err
	}
	bar := o.g.newProgress("filling")
	rep, err := eval.Fill(ctx, tools, qs, eval.FillOptions{Fillers: fillers, Progress: bar.update})
	bar.finish()
	if _, ok := errors.AsType[*eval.NothingScoredError](err); ok {
		return fmt.Errorf("eval --fill: %s: %w", o.queries, err)
	}
	if err != nil {
		return err
	}
	if o.g.json {
		err = writeJSON(stdout, struct {
			Fill *eval.FillReport `json:"fill"`
		}{rep})
	} else {
		printFillReport(stdout, rep)
	}
	if err != nil {
		return err
	}
	if rep.Exact < o.minAcc {
		return &exitCodeError{exitAccuracy, fmt.Errorf("eval --fill: exact %.4f is below --min-acc %v", rep.Exact, o.minAcc)}
	}
	return nil
}

func printFillReport(w io.Writer, r *eval.FillReport) {
	fmt.Fprintf(w, "%d queries with gold arguments, %d tools, filler %s\n", r.Queries, r.Tools, r.Filler)
	tw := newTable(w)
	fmt.Fprintf(tw, "  exact\t%.3f (filling nothing: %.3f)\n", r.Exact, r.BaselineExact)
	fmt.Fprintf(tw, "  arg precision\t%.3f\n", r.ArgPrecision)
	fmt.Fprintf(tw, "  arg recall\t%.3f\n", r.ArgRecall)
	fmt.Fprintf(tw, "  invented rate\t%.3f\n", r.InventedRate)
	fmt.Fprintf(tw, "  complete\t%.3f\n", r.Complete)
	if r.FillErrors > 0 {
		fmt.Fprintf(tw, "  fill errors\t%d\n", r.FillErrors)
	}
	tw.Flush()
	if r.Skipped > 0 {
		fmt.Fprintf(w, "\nskipped %d rows:\n", r.Skipped)
		for _, reason := range slices.Sorted(maps.Keys(r.SkippedBy)) {
			fmt.Fprintf(w, "  %s: %d\n", reason, r.SkippedBy[reason])
		}
	}
	if len(r.Misses) > 0 {
		fmt.Fprintf(w, "\nnot exact %s:\n", shown(len(r.Misses)))
		for _, m := range r.Misses[:min(evalShown, len(r.Misses))] {
			got, _ := json.Marshal(m.Got)
			gold, _ := json.Marshal(m.Gold)
			fmt.Fprintf(w, "  %q -> %s\n      got  %s\n      gold %s\n", truncate(m.Query, 80), m.Tool, truncate(string(got), 100), truncate(string(gold), 100))
		}
	}
}
