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
		Args: cobra.MinimumNArgs(2),
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
	if strings.TrimSpace(o.query) == "" {
		return usagef("fill: the query is empty")
	}
	b, err := openBackend(ctx, o.g, false)
	if err != nil {
		return err
	}
	info, err := b.Tool(ctx, o.tool)
	b.Close()
	if err != nil {
		return fmt.Errorf("fill: %w", err)
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

// Reasons eval --fill gives for rows it cannot score (keys of skipped_by).
const (
	skipNoGold         = "no_gold_arguments"
	skipNotOneTool     = "not_one_expected_tool"
	skipUnknownTool    = "tool_not_in_catalog"
	skipSchemaMismatch = "gold_argument_not_in_schema"
)

// fillEvalShown bounds the misses eval --fill reports.
const fillEvalShown = 10

// fillReport is the outcome of eval --fill. Rates are in [0, 1].
type fillReport struct {
	// Queries counts the scored rows.
	Queries int    `json:"queries"`
	Tools   int    `json:"tools"`
	Filler  string `json:"filler"`
	// Exact is the share of rows whose filled call matches the gold answer.
	Exact float64 `json:"exact"`
	// ArgPrecision is the share of filled arguments with an acceptable
	// value; ArgRecall the share of required gold arguments filled
	// acceptably.
	ArgPrecision float64 `json:"arg_precision"`
	ArgRecall    float64 `json:"arg_recall"`
	// InventedRate is the share of filled values the request does not
	// support.
	InventedRate float64 `json:"invented_rate"`
	// Complete is the share of rows whose fill had nothing missing.
	Complete float64 `json:"complete"`
	// BaselineExact is the exact rate of filling nothing at all: rows whose
	// gold arguments are all optional.
	BaselineExact float64          `json:"baseline_exact"`
	Totals        fill.ScoreTotals `json:"totals"`
	// FillErrors counts rows where every filler failed; they score as
	// filled with nothing.
	FillErrors int `json:"fill_errors"`
	// Skipped counts rows not scored, by reason in SkippedBy.
	Skipped   int            `json:"skipped"`
	SkippedBy map[string]int `json:"skipped_by"`
	// Misses are the first rows not filled exactly.
	Misses []fillMiss `json:"misses"`
}

// fillMiss is one row not filled exactly.
type fillMiss struct {
	Query string          `json:"query"`
	Tool  string          `json:"tool"`
	Got   map[string]any  `json:"got"`
	Gold  fill.Acceptable `json:"gold"`
}

// runEvalFill scores argument filling on the rows of qs that have gold
// arguments and one expected tool. Relative dates are disabled (zero Now) so
// that figures do not depend on the day they are measured.
func runEvalFill(ctx context.Context, o *evalOptions, tools []habilis.Tool, qs []eval.Query, stdout io.Writer) error {
	fillers, err := o.fillers(o.g, time.Time{})
	if err != nil {
		return err
	}
	byName := make(map[string]habilis.Tool, len(tools))
	for _, t := range tools {
		byName[t.Name] = t
	}
	rep := &fillReport{Tools: len(tools), Filler: fillerName(fillers), SkippedBy: map[string]int{}, Misses: []fillMiss{}}
	skip := func(reason string) {
		rep.Skipped++
		rep.SkippedBy[reason]++
	}
	schemas := map[string]*fill.Schema{}
	var totals, baseline fill.ScoreTotals
	complete := 0
	bar := o.g.newProgress("filling")
	defer bar.finish()
	for i, q := range qs {
		bar.update(i, len(qs))
		gold := goldAnswer(q)
		if gold == nil {
			skip(skipNoGold)
			continue
		}
		if len(q.Expected) != 1 {
			skip(skipNotOneTool)
			continue
		}
		tool, ok := byName[q.Expected[0]]
		if !ok {
			skip(skipUnknownTool)
			continue
		}
		s, ok := schemas[tool.Name]
		if !ok {
			if s, err = fill.ParseSchema(tool.InputSchema); err != nil {
				return fmt.Errorf("eval --fill: tool %q: %w", tool.Name, err)
			}
			schemas[tool.Name] = s
		}
		if !goldFits(gold, s) {
			skip(skipSchemaMismatch)
			continue
		}
		got := map[string]any{}
		r, err := fill.Fill(ctx, tool, q.Query, fill.Options{Fillers: fillers})
		switch {
		case err == nil:
			got = r.Arguments
			if r.Complete {
				complete++
			}
		case ctx.Err() != nil, errors.Is(err, habilis.ErrUnavailable), errors.Is(err, habilis.ErrNotFound):
			// Every later row would fail the same way.
			return fmt.Errorf("eval --fill: query %d: %w", i+1, err)
		default:
			rep.FillErrors++
		}
		row := fill.Score(gold, got, q.Query, s)
		totals.Add(row)
		baseline.Add(fill.Score(gold, map[string]any{}, q.Query, s))
		if !row.Exact && len(rep.Misses) < fillEvalShown {
			rep.Misses = append(rep.Misses, fillMiss{Query: q.Query, Tool: tool.Name, Got: got, Gold: gold})
		}
	}
	bar.update(len(qs), len(qs))
	bar.finish()
	rep.Queries = totals.Rows
	rep.Totals = totals
	rep.Exact, rep.ArgPrecision, rep.ArgRecall, rep.InventedRate = totals.ExactRate(), totals.Precision(), totals.Recall(), totals.InventedRate()
	rep.BaselineExact = baseline.ExactRate()
	if totals.Rows > 0 {
		rep.Complete = float64(complete) / float64(totals.Rows)
	}
	if o.g.json {
		err = writeJSON(stdout, struct {
			Fill *fillReport `json:"fill"`
		}{rep})
	} else {
		printFillReport(stdout, rep)
	}
	if err != nil {
		return err
	}
	if rep.Queries == 0 {
		return fmt.Errorf("eval --fill: %s: no row has gold arguments for one tool of the catalog: %w", o.queries, habilis.ErrInvalid)
	}
	if rep.Exact < o.minAcc {
		return &exitCodeError{exitAccuracy, fmt.Errorf("eval --fill: exact %.4f is below --min-acc %v", rep.Exact, o.minAcc)}
	}
	return nil
}

// goldAnswer returns a row's acceptable values: its own lists when it has
// them, else each gold argument as the one acceptable value; nil without
// gold arguments.
func goldAnswer(q eval.Query) fill.Acceptable {
	if q.Acceptable != nil {
		return fill.Acceptable(q.Acceptable)
	}
	if q.Arguments == nil {
		return nil
	}
	gold := make(fill.Acceptable, len(q.Arguments))
	for k, v := range q.Arguments {
		gold[k] = []any{v}
	}
	return gold
}

// goldFits reports whether every argument the gold answer requires is
// declared by the tool's schema. A row written for another version of the
// tool (BFCL's schema variants share a name) cannot be scored fairly
// against this one.
func goldFits(gold fill.Acceptable, s *fill.Schema) bool {
	for name, vals := range gold {
		if _, ok := s.Properties[name]; ok || slices.Contains(vals, any("")) {
			continue
		}
		return false
	}
	return true
}

func fillerName(fs []fill.Filler) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name()
	}
	return strings.Join(names, ">")
}

func printFillReport(w io.Writer, r *fillReport) {
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
		fmt.Fprintf(w, "\nnot exact (%d shown):\n", len(r.Misses))
		for _, m := range r.Misses {
			got, _ := json.Marshal(m.Got)
			gold, _ := json.Marshal(m.Gold)
			fmt.Fprintf(w, "  %q -> %s\n      got  %s\n      gold %s\n", truncate(m.Query, 80), m.Tool, truncate(string(got), 100), truncate(string(gold), 100))
		}
	}
}
