package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/selector"
	"github.com/spf13/cobra"
)

// selectOptions are the flags of `habilis select`.
type selectOptions struct {
	g        *globalOptions
	query    string
	mode     string
	k        int
	pin      []string
	deny     []string
	failOpen bool
}

func (o *selectOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.mode, "mode", string(habilis.ModeHybrid), "ranking: description, centroid or hybrid")
	f.IntVarP(&o.k, "k", "k", selector.DefaultK, "how many tools to return at most")
	f.StringArrayVar(&o.pin, "pin", nil, "always include this tool (repeatable)")
	f.StringArrayVar(&o.deny, "deny", nil, "never include this tool (repeatable)")
	f.BoolVar(&o.failOpen, "fail-open", false, "return the k best tools whether or not they pass their gates")
}

func newSelectCmd(g *globalOptions) *cobra.Command {
	o := &selectOptions{g: g}
	cmd := &cobra.Command{
		Use:   "select QUERY...",
		Short: "Select the tools for a request",
		Long: `Select ranks the catalog's tools for QUERY (its words joined by spaces) and
says which pass their gates, or that the router abstains and why.`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.query = strings.Join(args, " ")
			return runSelect(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	o.addFlags(cmd)
	return cmd
}

func runSelect(ctx context.Context, o *selectOptions, stdout io.Writer) error {
	mode, err := modeFlag(o.mode)
	if err != nil {
		return err
	}
	if err := checkKFlag(o.k); err != nil {
		return err
	}
	if err := checkQuery("select", o.query); err != nil {
		return err
	}
	b, err := openBackend(ctx, o.g, false)
	if err != nil {
		return err
	}
	defer b.Close()
	d, err := b.Select(ctx, o.query, habilis.SelectOptions{K: o.k, Mode: mode, Pinned: o.pin, Denied: o.deny, FailOpen: o.failOpen})
	if err != nil {
		return toolErr("select", err)
	}
	if o.g.json {
		return writeJSON(stdout, d)
	}
	printDecision(stdout, d)
	return nil
}

func printDecision(w io.Writer, d *habilis.Decision) {
	if len(d.Matches) > 0 {
		tw := newTable(w)
		fmt.Fprintln(tw, "#\tTOOL\tSCORE\tCENTROID\tDESCRIPTION\tRADIUS\tMARGIN\tGATE SCORE\tGATE\tPASSED\tCOLLIDES WITH")
		for i, m := range d.Matches {
			passed := "no"
			if m.Passed {
				passed = "yes"
			}
			if m.Pinned {
				passed += " (pinned)"
			}
			radius := fmt.Sprintf("%.3f", m.Radius)
			if m.RadiusSource == "catalog" {
				radius += "*"
			}
			fmt.Fprintf(tw, "%d\t%s\t%.3f\t%.3f\t%.3f\t%s\t%.3f\t%.3f\t%.3f\t%s\t%s\n", i+1, m.Tool, m.Score, m.CentroidScore,
				m.DescriptionScore, radius, m.Margin, m.GateScore, m.Gate, passed, strings.Join(m.CollidesWith, ","))
		}
		tw.Flush()
	}
	switch {
	case d.Abstained:
		fmt.Fprintf(w, "%s (%s mode)\n", withPrefix("abstained", d.Reason), d.Mode)
	case d.Ambiguous:
		fmt.Fprintf(w, "%s (%s mode)\n", withPrefix("ambiguous", d.Reason), d.Mode)
	case len(d.Matches) > 0:
		fmt.Fprintf(w, "selected %s (%s mode)\n", d.Matches[0].Tool, d.Mode)
	}
}

// withPrefix returns "label: reason", unless reason already starts with
// label.
func withPrefix(label, reason string) string {
	switch {
	case reason == "":
		return label
	case strings.HasPrefix(reason, label):
		return reason
	}
	return label + ": " + reason
}
