package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/habilis-router/habilis/eval"
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
the other half as examples, so no query is scored against itself.`,
		Args: cobra.ExactArgs(1),
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
	r, closeRouter, err := openRouter(ctx, o.g, true)
	if err != nil {
		return fmt.Errorf("fit %s: %w", o.file, err)
	}
	defer closeRouter()
	rep, err := fitRouter(ctx, r, qs, o.noExamples)
	if err != nil {
		return fmt.Errorf("fit %s: %w", o.file, err)
	}
	if o.g.json {
		return writeJSON(stdout, rep)
	}
	fmt.Fprintf(stdout, "fitted %s: %d labelled queries\n", o.file, len(qs))
	printFields(stdout, "  ", rep)
	return nil
}

// toMap renders each top-level field of a JSON-tagged value as compact JSON.
func toMap(v any) (map[string]string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	m := make(map[string]string, len(raw))
	for k, r := range raw {
		m[k] = string(r)
	}
	return m, nil
}
