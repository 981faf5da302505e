package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/collision"
	"github.com/spf13/cobra"
)

// collisionsOptions are the flags of `habilis collisions`.
type collisionsOptions struct {
	g         *globalOptions
	threshold float32
	failOn    string
	// minSeverity and limit bound what is printed (not what --fail-on
	// looks at).
	minSeverity string
	limit       int
}

func (o *collisionsOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Float32Var(&o.threshold, "threshold", 0, "centroid similarity above which two tools collide (0: the default)")
	f.StringVar(&o.failOn, "fail-on", "", "exit with code 3 when a collision at or above this severity exists: low, medium or high")
	f.StringVar(&o.minSeverity, "min-severity", "medium", "print only collisions at or above this severity: low, medium or high (low adds the pairs whose regions merely overlap)")
	f.IntVar(&o.limit, "limit", 0, "print at most this many collisions, worst first (0: all)")
}

func newCollisionsCmd(g *globalOptions) *cobra.Command {
	o := &collisionsOptions{g: g}
	cmd := &cobra.Command{
		Use:   "collisions",
		Short: "Report tools whose regions overlap",
		Long: `Collisions reports pairs of tools whose centroids are close, whose gate regions
intersect, or whose examples leak into each other, worst first, with the culprit
examples. Severity rests on evidence that a request would be misrouted: high when
two or more of one tool's examples, left out of it, are routed to the other tool
and pass its gate (or the centroids nearly coincide), medium for one such
example, low when the regions merely overlap. Misroutes count only between
neighbours: tools that are each other's nearest other tool for a quarter of
their examples (NEAREST); one shared word does not make unrelated tools collide.
A tool without examples takes part by its description: paired, at low severity,
with the tool without examples whose description is its nearest when it is that
tool's nearest too and their similarity reaches --threshold, and receiving
other tools' examples.
--min-severity (medium by default: low adds the pairs that only overlap) and
--limit bound what is printed; --json's "total" counts every collision found. With --fail-on it exits with
code 3 when a collision at or above that severity exists (printed or not),
after printing the report, so it can gate a CI job.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCollisions(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	o.addFlags(cmd)
	return cmd
}

func runCollisions(ctx context.Context, o *collisionsOptions, stdout io.Writer) error {
	failOn := habilis.Severity(o.failOn)
	if o.failOn != "" && failOn.Rank() == 0 {
		return usagef("--fail-on %q: want low, medium or high", o.failOn)
	}
	minSev := habilis.Severity(o.minSeverity)
	if minSev.Rank() == 0 {
		return usagef("--min-severity %q: want low, medium or high", o.minSeverity)
	}
	if o.limit < 0 {
		return usagef("--limit %d: want 0 (all) or more", o.limit)
	}
	// The negated test also refuses NaN, which every comparison fails.
	if !(o.threshold >= 0 && o.threshold <= 1) {
		return usagef("--threshold %v: want a similarity in [0, 1]", o.threshold)
	}
	b, err := openBackend(ctx, o.g, false)
	if err != nil {
		return err
	}
	defer b.Close()
	cols, err := b.Collisions(ctx, o.threshold)
	if err != nil {
		return fmt.Errorf("collisions: %w", err)
	}
	shown := shownCollisions(cols, minSev, o.limit)
	if o.g.json {
		// Total counts every collision found, so that a reader of the
		// JSON knows what --min-severity and --limit left out.
		err = writeJSON(stdout, struct {
			Collisions []habilis.Collision `json:"collisions"`
			Total      int                 `json:"total"`
		}{shown, len(cols)})
	} else {
		if len(shown) == 0 && len(cols) > 0 {
			fmt.Fprintf(stdout, "no collisions at %s severity or above\n", minSev)
		} else {
			printCollisions(stdout, shown)
		}
		if len(shown) < len(cols) {
			fmt.Fprintf(stdout, "(%d of %d collisions shown: --min-severity %s, --limit %d; --min-severity low --limit 0 shows all)\n",
				len(shown), len(cols), minSev, o.limit)
		}
		err = noteBareTools(ctx, b, stdout)
	}
	if err != nil {
		return err
	}
	if failOn != "" && collision.AtLeast(cols, failOn) {
		return &exitCodeError{exitCollisions, fmt.Errorf("collisions: found a collision of severity %s or higher", failOn)}
	}
	return nil
}

// noteBareTools says, under the table, what the report of a catalog with
// tools without examples, or with one (which the leak analysis cannot hold
// out: it takes two), rests on for them.
func noteBareTools(ctx context.Context, b backend, w io.Writer) error {
	tools, err := b.Tools(ctx)
	if err != nil {
		return fmt.Errorf("collisions: %w", err)
	}
	bare, one := 0, 0
	for _, t := range tools {
		switch len(t.Examples) {
		case 0:
			bare++
		case 1:
			one++
		}
	}
	have := func(n int) string {
		if n == 1 {
			return "has"
		}
		return "have"
	}
	var which string
	switch {
	case bare > 0 && one > 0:
		which = fmt.Sprintf("%d of %d tools have no examples and %d %s one", bare, len(tools), one, have(one))
	case bare > 0:
		which = fmt.Sprintf("%d of %d tools have no examples", bare, len(tools))
	case one > 0:
		which = fmt.Sprintf("%d of %d tools %s one example", one, len(tools), have(one))
	default:
		return nil
	}
	fmt.Fprintf(w, "note: %s: they pair by nearest descriptions (--threshold) and\n"+
		"  by other tools' examples routed to them, and with no two examples of their own to hold out\n"+
		"  no misroute of their requests shows; add examples, or run `habilis fit` on labelled requests\n", which)
	return nil
}

// shownCollisions returns the collisions at or above min, at most limit of
// them (0: all), in the report's order (worst first).
func shownCollisions(cols []habilis.Collision, min habilis.Severity, limit int) []habilis.Collision {
	out := make([]habilis.Collision, 0, len(cols))
	for _, c := range cols {
		if c.Severity.Rank() >= min.Rank() && (limit == 0 || len(out) < limit) {
			out = append(out, c)
		}
	}
	return out
}

// maxLeaksShown bounds the culprit examples printed per collision.
const maxLeaksShown = 5

func printCollisions(w io.Writer, cols []habilis.Collision) {
	if len(cols) == 0 {
		fmt.Fprintln(w, "no collisions")
		return
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "SEVERITY\tA\tB\tMISROUTED A→B B→A\tNEAREST A→B B→A\tCENTROID SIM\tOVERLAP\tLEAKS")
	for _, c := range cols {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d %d\t%d %d\t%.3f\t%.3f\t%d\n", c.Severity, c.A, c.B, c.MisroutesAB, c.MisroutesBA,
			c.NearestAB, c.NearestBA, c.CentroidSimilarity, c.Overlap, len(c.Leaks))
	}
	tw.Flush()
	for _, c := range cols {
		if len(c.Leaks) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s <-> %s culprits:\n", c.A, c.B)
		for i, l := range c.Leaks {
			if i == maxLeaksShown {
				fmt.Fprintf(w, "  ... and %d more\n", len(c.Leaks)-i)
				break
			}
			var how []string
			if l.RanksFirst {
				how = append(how, "ranks it first")
			}
			if l.PassesGate {
				how = append(how, "passes its gate")
			}
			fmt.Fprintf(w, "  %s example %q -> %s: %s (%.3f vs own %.3f)\n", l.From, truncate(l.Example, 60), l.Into,
				strings.Join(how, ", "), l.Score, l.OwnScore)
		}
	}
	noun := "collisions"
	if len(cols) == 1 {
		noun = "collision"
	}
	fmt.Fprintf(w, "\n%d %s\n", len(cols), noun)
}
