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
}

func (o *collisionsOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Float32Var(&o.threshold, "threshold", 0, "centroid similarity above which two tools collide (0: the default)")
	f.StringVar(&o.failOn, "fail-on", "", "exit with code 3 when a collision at or above this severity exists: low, medium or high")
}

func newCollisionsCmd(g *globalOptions) *cobra.Command {
	o := &collisionsOptions{g: g}
	cmd := &cobra.Command{
		Use:   "collisions",
		Short: "Report tools whose regions overlap",
		Long: `Collisions reports pairs of tools whose centroids are close, whose gate regions
intersect, or whose examples leak into each other, worst first, with the culprit
examples. With --fail-on it exits with code 3 when a collision at or above that
severity exists, after printing the report, so it can gate a CI job.`,
		Args: cobra.NoArgs,
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
	if o.g.json {
		err = writeJSON(stdout, struct {
			Collisions []habilis.Collision `json:"collisions"`
		}{cols})
	} else {
		printCollisions(stdout, cols)
	}
	if err != nil {
		return err
	}
	if failOn != "" && collision.AtLeast(cols, failOn) {
		return &exitCodeError{exitCollisions, fmt.Errorf("collisions: found a collision of severity %s or higher", failOn)}
	}
	return nil
}

// maxLeaksShown bounds the culprit examples printed per collision.
const maxLeaksShown = 5

func printCollisions(w io.Writer, cols []habilis.Collision) {
	if len(cols) == 0 {
		fmt.Fprintln(w, "no collisions")
		return
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "SEVERITY\tA\tB\tCENTROID SIM\tOVERLAP\tLEAKS")
	for _, c := range cols {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%.3f\t%d\n", c.Severity, c.A, c.B, c.CentroidSimilarity, c.Overlap, len(c.Leaks))
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
	fmt.Fprintf(w, "\n%d collisions\n", len(cols))
}
