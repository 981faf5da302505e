package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/catalog"
	"github.com/habilis-router/habilis/eval"
	"github.com/habilis-router/habilis/selector"
	"github.com/spf13/cobra"
)

// evalOptions are the flags of `habilis eval`.
type evalOptions struct {
	g       *globalOptions
	tools   string
	queries string
	fit     string
	self    bool
	mode    string
	k       int
	minAcc  float64
	// excludeExamples drops queries that are examples of the catalog.
	excludeExamples bool
	// half keeps one half of the queries ("a" or "b", by a hash of the
	// text); fitSplit fits on half a and evaluates on half b.
	half     string
	fitSplit bool
	// fill scores argument filling instead of selection.
	fill bool
	// baseline measures a baseline instead of habilis ("bm25"); where
	// keeps the query rows whose FIELD holds VALUE.
	baseline string
	where    []string
	// candidates routes rows within their own candidates lists.
	candidates bool
	fillerFlags
}

func (o *evalOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.tools, "tools", "", "catalog file to evaluate (required)")
	f.StringVar(&o.queries, "queries", "", "JSONL file of labelled queries: {\"query\": ..., \"expected\": [tools]}")
	f.StringVar(&o.fit, "fit", "", "JSONL file of labelled queries to calibrate on before evaluating")
	f.BoolVar(&o.self, "self", false, "evaluate on the catalog's own examples, each held out of its tool (5 folds)")
	f.StringVar(&o.mode, "mode", string(habilis.ModeHybrid), "ranking: description, centroid or hybrid")
	f.IntVarP(&o.k, "k", "k", selector.DefaultK, "recall cut-off")
	f.Float64Var(&o.minAcc, "min-acc", 0, "exit with code 4 when top-1 accuracy (with --fill: the exact rate) is below this, after printing the report")
	f.BoolVar(&o.fill, "fill", false, "score argument filling on queries with gold arguments instead of selection")
	f.BoolVar(&o.excludeExamples, "exclude-examples", false, "skip queries that are examples of the catalog (ignoring case and spacing)")
	f.StringVar(&o.half, "half", "", "evaluate one half of the queries, a or b, split by an FNV-1a hash of each query's text")
	f.BoolVar(&o.fitSplit, "fit-split", false, "fit on half a of the queries and evaluate on half b")
	f.StringVar(&o.baseline, "baseline", "", "measure a baseline instead of habilis: bm25 (decisions at its best single threshold on the top score)")
	f.BoolVar(&o.candidates, "candidates", true, "route each row that has a candidates list within those tools; false routes every row within --tools")
	f.StringArrayVar(&o.where, "where", nil, "keep only query rows whose FIELD holds VALUE (FIELD=VALUE, e.g. pooled_ok=true); repeatable, all must hold")
	o.fillerFlags.addFlags(cmd)
}

func newEvalCmd(g *globalOptions) *cobra.Command {
	o := &evalOptions{g: g}
	cmd := &cobra.Command{
		Use:   "eval --tools FILE (--queries FILE | --self | --fill --queries FILE)",
		Short: "Measure routing accuracy on labelled queries",
		Long: `Eval loads the catalog into a throwaway store (never --store), runs every labelled
query and reports top-1 accuracy, recall@k, MRR, decision accuracy, no-tool
detection, latency, the worst tools and the most frequent confusions. It shows
the first few of each list; --json lists every misrouted query and every wrong
and missed abstention, to compare two runs query by query.

--self evaluates on the catalog's own examples instead: in 5 folds, every fifth
example of each tool is held out of it and becomes a query expecting that tool.

--fill scores argument filling instead: every query with gold arguments and
exactly one expected tool fills that tool (no selection) with --filler (and
--escalate), and is compared with its gold answer, honouring a row's
calls[0].acceptable lists (BFCL's format). It reports the share of exact
calls, argument precision and recall, and the share of values the request
does not support (invented_rate, 0 by construction), next to the exact rate of
filling nothing. Rows it cannot score are counted by reason under skipped_by.

A query row with a "candidates" list (tool names of --tools, or inline tool
definitions in any catalog shape) is routed within those tools only, as a
per-request catalog would be (Prefilter's tools_json, an agent's tools); rows
without one use the whole catalog. --tools may be left out when every row
defines its candidates inline.

--baseline bm25 measures Okapi BM25 on the same rows instead (one document a
tool: name, description, examples, arguments; in candidates mode with each
list's own idf), deciding at the single threshold on its top score that gives
the best decision accuracy over all the rows.

With --min-acc X it exits with code 4 when acc_at_1 < X (with --fill, the exact
rate), after printing the report, so it can gate a CI job.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runEval(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	o.addFlags(cmd)
	return cmd
}

// evalOutput is the eval report with the rows the flags left out.
type evalOutput struct {
	*eval.Result
	// Excluded counts queries dropped by --exclude-examples; FitQueries
	// the labelled queries fitted on.
	Excluded   int `json:"excluded,omitempty"`
	FitQueries int `json:"fit_queries,omitempty"`
}

func runEval(ctx context.Context, o *evalOptions, stdout io.Writer) error {
	if err := o.g.noRemote("eval"); err != nil {
		return err
	}
	mode, filters, err := o.check()
	if err != nil {
		return err
	}
	tools, qs, err := o.read(filters)
	if err != nil {
		return err
	}
	if len(qs) == 0 && len(filters) > 0 && o.queries != "" {
		return fmt.Errorf("eval: no row of %s matches --where %s: %w", o.queries, strings.Join(o.where, " --where "), habilis.ErrInvalid)
	}
	if o.fill {
		return runEvalFill(ctx, o, tools, qs, stdout)
	}
	s := &eval.Setup{Tools: tools, Self: o.self, Baseline: o.baseline, Mode: mode, K: o.k}
	out := &evalOutput{}
	if s.Queries, s.Fit, out.Excluded, err = o.rows(tools, qs); err != nil {
		return err
	}
	if o.baseline == "" { // BM25 needs no embedder
		if s.Config, err = o.g.routerConfig(); err != nil {
			return err
		}
	}
	out.FitQueries = len(s.Fit)
	bar := o.g.newProgress("eval")
	s.Progress = bar.set
	out.Result, err = eval.Evaluate(ctx, s)
	bar.finish()
	if err != nil && o.self {
		return fmt.Errorf("eval --self: %s: %w", o.tools, err)
	} else if err != nil {
		return err
	}
	if o.g.json {
		err = writeJSON(stdout, out)
	} else {
		printEval(stdout, out)
	}
	if err != nil {
		return err
	}
	return checkMinAcc(out.Report, o.minAcc)
}

// checkMinAcc is --min-acc's gate on rep's acc@1, which is over the queries
// that expect a tool: without any it measures nothing, and its 0 is no
// accuracy to gate on.
func checkMinAcc(rep *eval.Report, minAcc float64) error {
	switch {
	case minAcc > 0 && rep.Queries == rep.NoTool.Queries:
		return fmt.Errorf("eval: --min-acc: no query expects a tool, so there is no acc@1 to compare: %w", habilis.ErrInvalid)
	case rep.AccAt1 < minAcc:
		return &exitCodeError{exitAccuracy, fmt.Errorf("eval: acc_at_1 %.4f is below --min-acc %v", rep.AccAt1, minAcc)}
	}
	return nil
}

// read reads the catalog and the query rows --where keeps, without their
// candidates lists with --candidates=false.
func (o *evalOptions) read(filters []eval.Filter) ([]habilis.Tool, []eval.Query, error) {
	var tools []habilis.Tool
	var qs []eval.Query
	var err error
	if o.tools != "" {
		if tools, err = catalog.Read(o.tools); err != nil {
			return nil, nil, fmt.Errorf("eval: %w", err)
		}
	}
	if o.queries != "" {
		if qs, err = eval.ReadQueries(o.queries); err != nil {
			return nil, nil, err
		}
	}
	qs = eval.Where(qs, filters)
	if !o.candidates {
		for i := range qs {
			qs[i].HasCandidates, qs[i].Candidates, qs[i].Inline = false, nil, nil
		}
	}
	return tools, qs, nil
}

// rows returns the queries to measure and to fit on, as --exclude-examples,
// --half, --fit-split and --fit choose them, and how many examples of the
// catalog were dropped.
func (o *evalOptions) rows(tools []habilis.Tool, qs []eval.Query) (measure, fit []eval.Query, excluded int, err error) {
	if o.excludeExamples {
		qs, excluded = eval.WithoutExamples(tools, qs)
	}
	if o.fitSplit {
		fit, qs = eval.Halves(qs)
	} else if o.half != "" {
		a, b := eval.Halves(qs)
		qs = a
		if o.half == "b" {
			qs = b
		}
	}
	if o.fit != "" {
		if fit, err = eval.ReadQueries(o.fit); err != nil {
			return nil, nil, 0, err
		}
	}
	if err := o.checkCandidates(tools, qs, fit); err != nil {
		return nil, nil, 0, err
	}
	return qs, fit, excluded, nil
}

// check validates the flags and returns the mode and the row filters.
func (o *evalOptions) check() (habilis.Mode, []eval.Filter, error) {
	mode, err := modeFlag(o.mode)
	if err != nil {
		return "", nil, err
	}
	if err := o.checkSources(); err != nil {
		return "", nil, err
	}
	if err := o.checkSettings(); err != nil {
		return "", nil, err
	}
	filters := make([]eval.Filter, len(o.where))
	for i, w := range o.where {
		if filters[i], err = eval.ParseFilter(w); err != nil {
			return "", nil, &usageError{err: fmt.Errorf("--where: %w", err)}
		}
	}
	return mode, filters, nil
}

// checkSources refuses flags that leave unsaid what is measured: the
// catalog, and the queries or --self.
func (o *evalOptions) checkSources() error {
	switch {
	case o.tools == "" && (o.self || o.fill || o.queries == ""):
		return usagef("eval: --tools FILE is required")
	case o.fill && (o.queries == "" || o.self || o.fit != "" || o.baseline != ""):
		return usagef("eval: --fill needs --queries FILE and excludes --self, --fit and --baseline")
	case o.queries == "" && !o.self:
		return usagef("eval: give --queries FILE or --self")
	case o.queries != "" && o.self:
		return usagef("eval: --queries and --self exclude each other")
	}
	return nil
}

// checkSettings refuses values out of range and settings that exclude
// each other.
func (o *evalOptions) checkSettings() error {
	if err := checkKFlag(o.k); err != nil {
		return err
	}
	switch {
	case o.minAcc < 0:
		return usagef("--min-acc %v: want a non-negative accuracy", o.minAcc)
	case o.half != "" && o.half != "a" && o.half != "b":
		return usagef("--half %q: want a or b", o.half)
	case o.fitSplit && (o.fit != "" || o.half != "" || o.queries == ""):
		return usagef("eval: --fit-split needs --queries FILE and excludes --fit and --half")
	case o.baseline != "" && o.baseline != "bm25":
		return usagef("--baseline %q: want bm25", o.baseline)
	case o.baseline != "" && (o.self || o.fit != "" || o.fitSplit):
		return usagef("eval: --baseline excludes --self, --fit and --fit-split")
	}
	return nil
}

// checkCandidates refuses what candidates mode cannot do: fit (each query
// has a catalog of its own) and, without --tools, rows that do not define
// their candidates inline.
func (o *evalOptions) checkCandidates(tools []habilis.Tool, qs, fitQs []eval.Query) error {
	perQuery := slices.ContainsFunc(qs, func(q eval.Query) bool { return q.HasCandidates })
	if perQuery && len(fitQs) > 0 {
		return usagef("eval: --fit and --fit-split need one catalog; these queries carry candidates lists")
	}
	if len(tools) == 0 && o.tools == "" {
		for i, q := range qs {
			if !q.HasCandidates {
				return usagef("eval: --tools FILE is required: query %d has no candidates list", i+1)
			}
		}
	}
	return nil
}

// evalShown bounds each list of the human eval report, and
// confusionShown the queries it shows of a confusion; --json carries
// every one, for comparing two runs query by query.
const (
	evalShown      = 10
	confusionShown = 3
)

// shown is the header of a list of which the report shows the first
// evalShown of n: "(10 of 57 shown)".
func shown(n int) string {
	return fmt.Sprintf("(%d of %d shown)", min(evalShown, n), n)
}

// figure writes a rate over n queries, "–" when there are none.
func figure(v float64, n int) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprintf("%.3f", v)
}

func printEval(w io.Writer, out *evalOutput) {
	r := out.Report
	src := "labelled queries"
	if out.Folds > 0 {
		src = fmt.Sprintf("held-out examples, %d folds", out.Folds)
	}
	how := fmt.Sprintf("%s mode", r.Mode)
	if r.Baseline != "" {
		how = fmt.Sprintf("%s baseline deciding at its best single threshold %.3f", r.Baseline, r.Threshold)
	}
	fmt.Fprintf(w, "%d queries (%s), %d tools, %s, k=%d\n", r.Queries, src, r.Tools, how, r.K)
	// Figures over the tool queries, and the AUROC, which needs both
	// kinds, measure nothing without them: "–", not 0.
	toolQ := r.Queries - r.NoTool.Queries
	tw := newTable(w)
	fmt.Fprintf(tw, "  acc@1\t%s\n", figure(r.AccAt1, toolQ))
	fmt.Fprintf(tw, "  ranking acc@1\t%s\t(before the gate: as a ranker that never abstains)\n", figure(r.RankAccAt1, toolQ))
	fmt.Fprintf(tw, "  recall@%d\t%s\n", r.K, figure(r.RecallAtK, toolQ))
	fmt.Fprintf(tw, "  mrr\t%s\n", figure(r.MRR, toolQ))
	fmt.Fprintf(tw, "  decision accuracy\t%.3f\n", r.DecisionAccuracy)
	if r.NoTool.Queries > 0 {
		// Abstain precision is over the abstentions, right and wrong.
		abstained := int(math.Round(r.NoTool.AbstainRecall*float64(r.NoTool.Queries) + r.NoTool.WrongAbstainRate*float64(toolQ)))
		fmt.Fprintf(tw, "  no-tool\t%d queries, auroc %s, abstain precision %s, abstain recall %.3f\n",
			r.NoTool.Queries, figure(r.NoTool.AUROC, min(toolQ, r.NoTool.Queries)), figure(r.NoTool.AbstainPrecision, abstained), r.NoTool.AbstainRecall)
		fmt.Fprintf(tw, "  accepted no-tool\t%.3f of no-tool queries got a tool\n", r.NoTool.AcceptedRate)
	}
	fmt.Fprintf(tw, "  wrong abstentions\t%s of tool queries\n", figure(r.NoTool.WrongAbstainRate, toolQ))
	if r.Baseline == "" {
		fmt.Fprintf(tw, "  latency\tp50 %.0fµs, p99 %.0fµs\n", r.Latency.P50, r.Latency.P99)
	}
	tw.Flush()
	if out.Fit != nil {
		fmt.Fprintln(w, "\nfit:")
		printFit(w, out.Fit)
	}

	if len(r.PerTool) > 0 {
		fmt.Fprintln(w, "\nworst tools:")
		tw = newTable(w)
		fmt.Fprintln(tw, "  TOOL\tQUERIES\tACC@1")
		for _, pt := range r.PerTool[:min(evalShown, len(r.PerTool))] {
			fmt.Fprintf(tw, "  %s\t%d\t%.3f\n", pt.Tool, pt.Queries, pt.AccAt1)
		}
		tw.Flush()
	}
	if len(r.Confusions) > 0 {
		fmt.Fprintln(w, "\ntop confusions (expected -> chosen):")
		for _, c := range r.Confusions[:min(evalShown, len(r.Confusions))] {
			fmt.Fprintf(w, "  %s -> %s: %d\n", c.Expected, c.Chosen, c.Count)
			for _, q := range c.Queries[:min(confusionShown, len(c.Queries))] {
				fmt.Fprintf(w, "      %q\n", truncate(q, 80))
			}
		}
	}
	if len(r.WrongAbstentions) > 0 {
		fmt.Fprintf(w, "\nabstained on tool queries %s:\n", shown(len(r.WrongAbstentions)))
		for _, m := range r.WrongAbstentions[:min(evalShown, len(r.WrongAbstentions))] {
			fmt.Fprintf(w, "  %q expected %s\n", truncate(m.Query, 80), strings.Join(m.Expected, ", "))
		}
	}
	if len(r.MissedAbstentions) > 0 {
		fmt.Fprintf(w, "\nchose a tool for no-tool queries %s:\n", shown(len(r.MissedAbstentions)))
		for _, m := range r.MissedAbstentions[:min(evalShown, len(r.MissedAbstentions))] {
			fmt.Fprintf(w, "  %q got %s\n", truncate(m.Query, 80), m.Chosen)
		}
	}
}
