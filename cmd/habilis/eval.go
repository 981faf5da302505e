package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/catalog"
	"github.com/habilis-router/habilis/eval"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/boltstore"
	"github.com/habilis-router/habilis/store/memstore"
	"github.com/spf13/cobra"
)

// selfFolds is how many folds `eval --self` splits the catalog's examples
// into: example i of every tool is held out in fold i mod selfFolds. Five
// folds cost five loads instead of one per example.
const selfFolds = 5

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
detection, latency, the worst tools and the most frequent confusions.

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
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runEval(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	o.addFlags(cmd)
	return cmd
}

// evalOutput is the eval report with what fit changed, when it ran.
type evalOutput struct {
	*eval.Report
	// Folds is how many folds --self ran (0 otherwise).
	Folds int `json:"folds,omitempty"`
	// Fit is what --fit changed; FitFolds holds one per fold with --self.
	Fit      *eval.FitReport   `json:"fit,omitempty"`
	FitFolds []*eval.FitReport `json:"fit_folds,omitempty"`
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
	var tools []habilis.Tool
	if o.tools != "" {
		if tools, err = catalog.Read(o.tools); err != nil {
			return fmt.Errorf("eval: %w", err)
		}
	}
	var qs, fitQs []eval.Query
	if o.queries != "" {
		if qs, err = eval.ReadQueries(o.queries); err != nil {
			return err
		}
	}
	qs = eval.Where(qs, filters)
	if !o.candidates {
		for i := range qs {
			qs[i].HasCandidates, qs[i].Candidates, qs[i].Inline = false, nil, nil
		}
	}
	if o.fill {
		return runEvalFill(ctx, o, tools, qs, stdout)
	}
	excluded := 0
	if o.excludeExamples {
		qs, excluded = eval.WithoutExamples(tools, qs)
	}
	if o.fitSplit {
		fitQs, qs = eval.Halves(qs)
	} else if o.half != "" {
		a, b := eval.Halves(qs)
		qs = a
		if o.half == "b" {
			qs = b
		}
	}
	if o.fit != "" {
		if fitQs, err = eval.ReadQueries(o.fit); err != nil {
			return err
		}
	}
	if err := o.checkCandidates(tools, qs, fitQs); err != nil {
		return err
	}
	run := evalRun{g: o.g, mode: mode, k: o.k, fitQs: fitQs}
	out := &evalOutput{Excluded: excluded, FitQueries: len(fitQs)}
	if err := run.run(ctx, o, tools, qs, out); err != nil {
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
	if out.AccAt1 < o.minAcc {
		return &exitCodeError{exitAccuracy, fmt.Errorf("eval: acc_at_1 %.4f is below --min-acc %v", out.AccAt1, o.minAcc)}
	}
	return nil
}

// check validates the flags and returns the mode and the row filters.
func (o *evalOptions) check() (habilis.Mode, []eval.Filter, error) {
	mode, err := habilis.ParseMode(o.mode)
	if err != nil {
		return "", nil, &usageError{fmt.Errorf("--mode: %w", err)}
	}
	switch {
	case o.tools == "" && (o.self || o.fill || o.queries == ""):
		return "", nil, usagef("eval: --tools FILE is required")
	case o.fill && (o.queries == "" || o.self || o.fit != "" || o.baseline != ""):
		return "", nil, usagef("eval: --fill needs --queries FILE and excludes --self, --fit and --baseline")
	case o.queries == "" && !o.self:
		return "", nil, usagef("eval: give --queries FILE or --self")
	case o.queries != "" && o.self:
		return "", nil, usagef("eval: --queries and --self exclude each other")
	case o.k < 1:
		return "", nil, usagef("-k %d: want at least 1", o.k)
	case o.minAcc < 0:
		return "", nil, usagef("--min-acc %v: want a non-negative accuracy", o.minAcc)
	case o.half != "" && o.half != "a" && o.half != "b":
		return "", nil, usagef("--half %q: want a or b", o.half)
	case o.fitSplit && (o.fit != "" || o.half != "" || o.queries == ""):
		return "", nil, usagef("eval: --fit-split needs --queries FILE and excludes --fit and --half")
	case o.baseline != "" && o.baseline != "bm25":
		return "", nil, usagef("--baseline %q: want bm25", o.baseline)
	case o.baseline != "" && (o.self || o.fit != "" || o.fitSplit):
		return "", nil, usagef("eval: --baseline excludes --self, --fit and --fit-split")
	}
	filters := make([]eval.Filter, len(o.where))
	for i, w := range o.where {
		if filters[i], err = eval.ParseFilter(w); err != nil {
			return "", nil, &usageError{fmt.Errorf("--where: %w", err)}
		}
	}
	return mode, filters, nil
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

// evalRun evaluates catalogs in throwaway stores.
type evalRun struct {
	g     *globalOptions
	mode  habilis.Mode
	k     int
	fitQs []eval.Query
}

// run evaluates qs (or the catalog's own examples with --self) into out:
// habilis or the baseline, over one catalog or each query's candidates.
func (e *evalRun) run(ctx context.Context, o *evalOptions, tools []habilis.Tool, qs []eval.Query, out *evalOutput) error {
	opts := eval.Options{Mode: e.mode, K: e.k}
	perQuery := slices.ContainsFunc(qs, func(q eval.Query) bool { return q.HasCandidates })
	var err error
	switch {
	case o.baseline != "":
		out.Report, err = eval.RunBM25(ctx, tools, qs, opts)
		return err
	case perQuery:
		bar := e.g.newProgress("evaluating")
		opts.Progress = bar.update
		out.Report, err = eval.RunCandidates(ctx, e.scratchRouter, tools, qs, opts)
		bar.finish()
		return err
	}
	dir, err := os.MkdirTemp("", "habilis-eval-")
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	defer os.RemoveAll(dir)
	if !o.self {
		out.Report, out.Fit, err = e.once(ctx, filepath.Join(dir, "eval.db"), tools, qs)
		return err
	}
	var reps []*eval.Report
	for fold := range selfFolds {
		kept, held := holdOut(tools, fold)
		if len(held) == 0 {
			continue
		}
		rep, fit, err := e.once(ctx, filepath.Join(dir, fmt.Sprintf("fold%d.db", fold)), kept, held)
		if err != nil {
			return fmt.Errorf("eval --self: fold %d: %w", fold+1, err)
		}
		reps = append(reps, rep)
		if fit != nil {
			out.FitFolds = append(out.FitFolds, fit)
		}
	}
	if len(reps) == 0 {
		return fmt.Errorf("eval --self: %s: no tool has examples to hold out: %w", o.tools, habilis.ErrInvalid)
	}
	out.Report = mergeReports(reps, len(tools))
	out.Folds = len(reps)
	return nil
}

// scratchRouter returns an empty router over an in-memory store, for one
// query's candidates.
func (e *evalRun) scratchRouter(ctx context.Context) (*selector.Router, error) {
	cfg, err := e.g.routerConfig()
	if err != nil {
		return nil, err
	}
	r, err := selector.New(ctx, memstore.New(), cfg)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	return r, nil
}

// once loads tools into a new bbolt file at path, fits on the labelled
// queries when there are any, and evaluates qs.
func (e *evalRun) once(ctx context.Context, path string, tools []habilis.Tool, qs []eval.Query) (*eval.Report, *eval.FitReport, error) {
	cfg, err := e.g.routerConfig()
	if err != nil {
		return nil, nil, err
	}
	st, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		return nil, nil, fmt.Errorf("eval: %w", err)
	}
	defer st.Close()
	r, err := selector.New(ctx, st, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("eval: %w", err)
	}
	defer r.Close()
	bar := e.g.newProgress("embedding")
	_, err = r.Load(ctx, tools, selector.LoadOptions{Progress: bar.update})
	bar.finish()
	if err != nil {
		return nil, nil, fmt.Errorf("eval: load: %w", err)
	}
	var fit *eval.FitReport
	if len(e.fitQs) > 0 {
		if fit, err = eval.Fit(ctx, r, e.fitQs, eval.FitOptions{}); err != nil {
			return nil, nil, fmt.Errorf("eval: fit: %w", err)
		}
	}
	bar = e.g.newProgress("evaluating")
	rep, err := eval.Run(ctx, r, qs, eval.Options{Mode: e.mode, K: e.k, Progress: bar.update})
	bar.finish()
	if err != nil {
		return nil, nil, err
	}
	return rep, fit, nil
}

// holdOut splits the catalog's examples for one fold of --self: example i
// of every tool is held out when i mod selfFolds is fold, and becomes a
// query expecting its tool.
func holdOut(tools []habilis.Tool, fold int) (kept []habilis.Tool, held []eval.Query) {
	kept = make([]habilis.Tool, len(tools))
	for ti, t := range tools {
		var ex []string
		for i, e := range t.Examples {
			if i%selfFolds == fold {
				held = append(held, eval.Query{Query: e, Expected: []string{t.Name}})
			} else {
				ex = append(ex, e)
			}
		}
		t.Examples = ex
		kept[ti] = t
	}
	return kept, held
}

// mergeReports combines the reports of --self's folds. Rates over tool
// queries are averaged weighted by each fold's tool queries, which is exact;
// no-tool figures by each fold's no-tool queries; latency takes the
// weighted mean of the medians and the worst p99.
func mergeReports(reps []*eval.Report, tools int) *eval.Report {
	out := &eval.Report{Tools: tools, Mode: reps[0].Mode, K: reps[0].K,
		PerTool: []eval.PerTool{}, Confusions: []eval.Confusion{}, WrongAbstentions: []eval.Miss{}, MissedAbstentions: []eval.Miss{}}
	var toolQ, negQ int
	perTool := map[string]*eval.PerTool{}
	conf := map[[2]string]*eval.Confusion{}
	for _, r := range reps {
		tq, nq := r.Queries-r.NoTool.Queries, r.NoTool.Queries
		toolQ += tq
		negQ += nq
		out.Queries += r.Queries
		out.AccAt1 += r.AccAt1 * float64(tq)
		out.RankAccAt1 += r.RankAccAt1 * float64(tq)
		out.RecallAtK += r.RecallAtK * float64(tq)
		out.MRR += r.MRR * float64(tq)
		out.DecisionAccuracy += r.DecisionAccuracy * float64(r.Queries)
		out.NoTool.WrongAbstainRate += r.NoTool.WrongAbstainRate * float64(tq)
		out.NoTool.AUROC += r.NoTool.AUROC * float64(nq)
		out.NoTool.AbstainPrecision += r.NoTool.AbstainPrecision * float64(nq)
		out.NoTool.AbstainRecall += r.NoTool.AbstainRecall * float64(nq)
		out.Latency.P50 += r.Latency.P50 * float64(r.Queries)
		out.Latency.P99 = max(out.Latency.P99, r.Latency.P99)
		for _, pt := range r.PerTool {
			m := perTool[pt.Tool]
			if m == nil {
				m = &eval.PerTool{Tool: pt.Tool}
				perTool[pt.Tool] = m
			}
			m.Queries += pt.Queries
			m.AccAt1 += pt.AccAt1 * float64(pt.Queries)
		}
		for _, c := range r.Confusions {
			key := [2]string{c.Expected, c.Chosen}
			m := conf[key]
			if m == nil {
				m = &eval.Confusion{Expected: c.Expected, Chosen: c.Chosen}
				conf[key] = m
			}
			m.Count += c.Count
			for _, q := range c.Queries {
				if len(m.Queries) < 3 {
					m.Queries = append(m.Queries, q)
				}
			}
		}
		out.WrongAbstentions = append(out.WrongAbstentions, r.WrongAbstentions...)
		out.MissedAbstentions = append(out.MissedAbstentions, r.MissedAbstentions...)
	}
	div := func(x float64, n int) float64 {
		if n == 0 {
			return 0
		}
		return x / float64(n)
	}
	out.AccAt1, out.RecallAtK, out.MRR = div(out.AccAt1, toolQ), div(out.RecallAtK, toolQ), div(out.MRR, toolQ)
	out.RankAccAt1 = div(out.RankAccAt1, toolQ)
	out.NoTool.WrongAbstainRate = div(out.NoTool.WrongAbstainRate, toolQ)
	out.DecisionAccuracy = div(out.DecisionAccuracy, out.Queries)
	out.Latency.P50 = div(out.Latency.P50, out.Queries)
	out.NoTool.Queries = negQ
	out.NoTool.AUROC = div(out.NoTool.AUROC, negQ)
	out.NoTool.AbstainPrecision = div(out.NoTool.AbstainPrecision, negQ)
	out.NoTool.AbstainRecall = div(out.NoTool.AbstainRecall, negQ)
	for _, pt := range perTool {
		pt.AccAt1 = div(pt.AccAt1, pt.Queries)
		out.PerTool = append(out.PerTool, *pt)
	}
	for _, c := range conf {
		out.Confusions = append(out.Confusions, *c)
	}
	out.Order()
	return out
}

// evalShown bounds each list of the human eval report.
const evalShown = 10

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
	tw := newTable(w)
	fmt.Fprintf(tw, "  acc@1\t%.3f\n", r.AccAt1)
	fmt.Fprintf(tw, "  ranking acc@1\t%.3f\t(before the gate: as a ranker that never abstains)\n", r.RankAccAt1)
	fmt.Fprintf(tw, "  recall@%d\t%.3f\n", r.K, r.RecallAtK)
	fmt.Fprintf(tw, "  mrr\t%.3f\n", r.MRR)
	fmt.Fprintf(tw, "  decision accuracy\t%.3f\n", r.DecisionAccuracy)
	if r.NoTool.Queries > 0 {
		fmt.Fprintf(tw, "  no-tool\t%d queries, auroc %.3f, abstain precision %.3f, abstain recall %.3f\n",
			r.NoTool.Queries, r.NoTool.AUROC, r.NoTool.AbstainPrecision, r.NoTool.AbstainRecall)
		fmt.Fprintf(tw, "  accepted no-tool\t%.3f of no-tool queries got a tool\n", r.NoTool.AcceptedRate)
	}
	fmt.Fprintf(tw, "  wrong abstentions\t%.3f of tool queries\n", r.NoTool.WrongAbstainRate)
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
			for _, q := range c.Queries {
				fmt.Fprintf(w, "      %q\n", truncate(q, 80))
			}
		}
	}
	if len(r.WrongAbstentions) > 0 {
		fmt.Fprintf(w, "\nabstained on tool queries (%d shown):\n", min(evalShown, len(r.WrongAbstentions)))
		for _, m := range r.WrongAbstentions[:min(evalShown, len(r.WrongAbstentions))] {
			fmt.Fprintf(w, "  %q expected %s\n", truncate(m.Query, 80), strings.Join(m.Expected, ", "))
		}
	}
	if len(r.MissedAbstentions) > 0 {
		fmt.Fprintf(w, "\nchose a tool for no-tool queries (%d shown):\n", min(evalShown, len(r.MissedAbstentions)))
		for _, m := range r.MissedAbstentions[:min(evalShown, len(r.MissedAbstentions))] {
			fmt.Fprintf(w, "  %q got %s\n", truncate(m.Query, 80), m.Chosen)
		}
	}
}
