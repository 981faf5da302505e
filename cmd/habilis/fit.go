package main

import (
	"context"
	"fmt"
	"io"

	"github.com/habilis-router/habilis/eval"
	"github.com/habilis-router/habilis/selector"
	"github.com/spf13/cobra"
)

// fitOptions are the flags of `habilis fit`.
type fitOptions struct {
	g          *globalOptions
	file       string
	noExamples bool
}

func newFitCmd(g *globalOptions) *cobra.Command {
	o := &fitOptions{g: g}
	cmd := &cobra.Command{
		Use:   "fit FILE",
		Short: "Calibrate margins and fusion from labelled queries",
		Long: `Fit learns the store's calibration (margins, thresholds, hybrid fusion) from the
labelled queries in FILE (JSONL: {"query": ..., "expected": [tools]}, [] for no
tool) and stores it, then prints what changed.

Unless --no-examples is given, each single-tool query also becomes an example
of its tool (up to 200 per tool), so the stored catalog then holds more
examples than the file it was loaded from: loading that file again drops them.
Settings are chosen on half of the queries against a trial catalog that holds
the other half as examples, so no query is scored against itself. When that
half holds no query for no tool (traffic recorded with --record holds none),
the thresholds are learned against the built-in generic requests instead.
With fewer than 20 queries for a tool in it, no gate is learned: the
thresholds are those the catalog's examples calibrate, the queries added as
examples among them, every later load calibrates them again, and fit says so.
Learned gates are kept through later loads, and with them the description
threshold, the one-example threshold and the noise floor, which fit never
learns. The fusion weights and prior are kept either way.`,
		Args: rangeArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.file = args[0]
			return runFit(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&o.noExamples, "no-examples", false, "learn the settings only; do not add the queries as examples")
	return cmd
}

func runFit(ctx context.Context, o *fitOptions, stdout io.Writer) error {
	if err := o.g.noRemote("fit"); err != nil {
		return err
	}
	qs, err := eval.ReadQueries(o.file)
	if err != nil {
		return fmt.Errorf("fit: %w", err)
	}
	o.g.progress = o.g.newProgress("fit")
	defer o.g.progress.finish()
	r, closeRouter, err := openRouterAs(ctx, o.g, accessUpdate)
	if err != nil {
		return fmt.Errorf("fit %s: %w", o.file, err)
	}
	defer closeRouter()
	rep, err := eval.Fit(ctx, r, qs, eval.FitOptions{NoExamples: o.noExamples})
	o.g.progress.finish()
	if err != nil {
		return toolErr("fit "+o.file, namedDamage(o.g.store, err))
	}
	if o.g.json {
		return writeJSON(stdout, rep)
	}
	fmt.Fprintf(stdout, "fitted %s: %d labelled queries\n", o.file, len(qs))
	printFit(stdout, rep)
	return nil
}

// printFit shows what fitting changed: the labelled queries it used, the
// settings before and after, and what the chosen settings scored on the
// tuning half. --json has every field.
func printFit(w io.Writer, rep *eval.FitReport) {
	fmt.Fprintf(w, "  queries: %d (%d for a tool, %d for none); %d added as examples; catalog version %d\n",
		rep.Queries, rep.ToolQueries, rep.NoToolQueries, rep.AddedExamples, rep.Version)
	if rep.BackgroundQueries > 0 {
		fmt.Fprintf(w, "  no query for no tool in the tuning half: the gates were learned against the %d built-in generic requests\n", rep.BackgroundQueries)
	}
	if !rep.GatesLearned {
		fmt.Fprintf(w, "  gates: not learned: the tuning half holds %d queries for a tool, fewer than %d; the thresholds below are\n"+
			"  calibrated from the catalog's examples (%d added), as every later load calibrates them again\n",
			rep.Tuning.Queries-rep.Tuning.NoToolQueries, eval.MinGateQueries, rep.AddedExamples)
	}
	b, a := rep.Before, rep.After
	tw := newTable(w)
	fmt.Fprintln(tw, "  SETTING\tBEFORE\tAFTER")
	row := func(name string, before, after float32) {
		fmt.Fprintf(tw, "  %s\t%.4f\t%.4f\n", name, before, after)
	}
	row("hybrid threshold", b.HybridThreshold, a.HybridThreshold)
	row("margin", b.Margin, a.Margin)
	row("threshold (one example)", b.Threshold, a.Threshold)
	row("description threshold", b.DescriptionThreshold, a.DescriptionThreshold)
	row("noise floor", b.NoiseFloor, a.NoiseFloor)
	weights := func(x selector.Weights) string {
		return fmt.Sprintf("centroid %.2g, description %.2g, document %.2g, example %.2g", x.Centroid, x.Description, x.Document, x.Example)
	}
	fmt.Fprintf(tw, "  weights\t%s\t%s\n", weights(b.Weights), weights(a.Weights))
	fmt.Fprintf(tw, "  prior\t%d tools\t%d tools, strength %.2g\n", len(b.Prior), len(a.Prior), rep.PriorStrength)
	tw.Flush()
	t := rep.Tuning
	none := "no query for no tool"
	if t.NoToolQueries > 0 {
		none = fmt.Sprintf("abstains on %.3f of its %d no-tool queries", t.AbstainRecall, t.NoToolQueries)
	}
	fmt.Fprintf(w, "  tuning half (%d queries): ranking acc@1 %.3f (before %.3f), acc@1 %.3f, %s, abstains wrongly on %.3f of tool queries\n",
		t.Queries, t.RankAccAt1, t.BaselineRankAccAt1, t.AccAt1, none, t.WrongAbstain)
}
