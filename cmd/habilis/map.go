package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/collision"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/toolmap"
	"github.com/habilis-router/habilis/toolmap/render"
	"github.com/spf13/cobra"
)

// mapOptions are the flags of `habilis map`.
type mapOptions struct {
	g        *globalOptions
	out      string
	tools    []string
	query    string
	mode     string
	maxTools int
}

func (o *mapOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVarP(&o.out, "out", "o", "map.svg", "file to write: .svg, .png or .html (an interactive page)")
	f.StringSliceVar(&o.tools, "tools", nil, "draw only these tools and the tools they collide with (comma-separated or repeated)")
	f.StringVar(&o.query, "query", "", "add this request, with lines to the tools whose gate it passes")
	f.StringVar(&o.mode, "mode", string(habilis.ModeHybrid), "the request's ranking: description, centroid or hybrid")
	f.IntVar(&o.maxTools, "max-tools", toolmap.DefaultMaxTools, "most tools to draw; a larger catalog shows the named tools, the request's neighbourhood or the colliding tools")
}

func newMapCmd(g *globalOptions) *cobra.Command {
	o := &mapOptions{g: g}
	cmd := &cobra.Command{
		Use:   "map [--out FILE.svg|FILE.png|FILE.html] [--tools NAME...] [--query TEXT]",
		Short: "Draw the catalog: tools, their gates, examples and collisions",
		Long: `Map draws the catalog in two dimensions: each tool at its centroid (its
description vector when it has no examples), a circle for its gate, its
examples around it, colliding tools joined by a line coloured by severity, and
examples that would be routed to another tool drawn in that tool's circle.
Tools with similar centroids lie close together (t-SNE over the centroids'
cosine similarities). Tool names may also follow the flags.

The HTML form is one self-contained page: hovering a point shows its tool or
example, clicking a tool highlights its collisions. With --json the map's
coordinates are printed as well.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.tools = append(o.tools, args...)
			return runMap(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	o.addFlags(cmd)
	return cmd
}

// mapWriters are the output formats, by file extension.
var mapWriters = map[string]func(io.Writer, *toolmap.Map, render.Options) error{
	".svg":  render.SVG,
	".png":  render.PNG,
	".html": render.HTML,
	".htm":  render.HTML,
}

func runMap(ctx context.Context, o *mapOptions, stdout io.Writer) error {
	if err := o.g.noRemote("map"); err != nil {
		return err
	}
	write, ok := mapWriters[strings.ToLower(filepath.Ext(o.out))]
	if !ok {
		return usagef("--out %q: want a file ending in .svg, .png or .html", o.out)
	}
	mode, err := modeFlag(o.mode)
	if err != nil {
		return err
	}
	if o.maxTools < 1 {
		return usagef("--max-tools %d: want at least 1", o.maxTools)
	}
	r, closeFn, err := openRouter(ctx, o.g, false)
	if err != nil {
		return err
	}
	defer closeFn()
	in, err := mapInput(ctx, r, o, mode)
	if err != nil {
		return err
	}
	m, err := toolmap.Build(in)
	if err != nil {
		return toolErr("map", err)
	}
	if err := writeFileAtomic(o.out, func(w io.Writer) error { return write(w, m, render.Options{}) }); err != nil {
		return fmt.Errorf("map: %w", err)
	}
	if o.g.json {
		return writeJSON(stdout, struct {
			Out string `json:"out"`
			*toolmap.Map
		}{o.out, m})
	}
	printMapSummary(stdout, o.out, m)
	return nil
}

// mapInput gathers what the map is built from: the stored records, each
// tool's centroid-mode gate, the collision analysis, and the request's
// decision and similarities.
func mapInput(ctx context.Context, r *selector.Router, o *mapOptions, mode habilis.Mode) (toolmap.Input, error) {
	recs, err := r.Records(ctx)
	if err != nil {
		return toolmap.Input{}, fmt.Errorf("map: %w", err)
	}
	in := toolmap.Input{Records: recs, Gates: make(map[string]float32, len(recs)), Tools: o.tools, MaxTools: o.maxTools}
	for _, rec := range recs {
		ti, err := r.Tool(rec.Tool.Name)
		if err != nil {
			return in, fmt.Errorf("map: %w", err)
		}
		in.Gates[rec.Tool.Name] = ti.Threshold
	}
	if in.Collisions, err = mapCollisions(ctx, r, recs); err != nil {
		return in, fmt.Errorf("map: %w", err)
	}
	if strings.TrimSpace(o.query) == "" {
		return in, nil
	}
	d, err := r.Select(ctx, o.query, habilis.SelectOptions{Mode: mode})
	if err != nil {
		return in, fmt.Errorf("map: %w", err)
	}
	sc, err := r.Scores(ctx, o.query)
	if err != nil {
		return in, fmt.Errorf("map: %w", err)
	}
	q := &toolmap.Query{Text: o.query, Decision: d, Scores: make(map[string]float32, len(sc.Tools))}
	for i, name := range sc.Tools {
		q.Scores[name] = sc.Centroid[i]
	}
	in.Query = q
	return in, nil
}

// mapCollisions returns the catalog's collisions with their leaks, or,
// for a catalog too large to score every example against every tool,
// the pairs that centroids and gates alone reveal, at collision's default
// threshold, the router's too (routerConfig sets none).
func mapCollisions(ctx context.Context, r *selector.Router, recs []habilis.Record) ([]habilis.Collision, error) {
	cols, err := r.Collisions(ctx, 0)
	if err == nil || !errors.Is(err, habilis.ErrInvalid) || len(recs) <= collision.DefaultMaxTools {
		return cols, err
	}
	cal := r.Calibration()
	return collision.Pairs(recs, collision.Options{CatalogThreshold: cal.Threshold, GateFloor: cal.NoiseFloor})
}

// writeFileAtomic writes path through a temporary file in the same
// directory, renamed over it once complete, so that a failure leaves any
// earlier file as it was.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		// The temporary file's name is no name the user gave.
		return &fs.PathError{Op: "write", Path: path, Err: pe.Err}
	} else if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // fails harmlessly once renamed
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

func printMapSummary(w io.Writer, out string, m *toolmap.Map) {
	fmt.Fprintf(w, "wrote %s: %d tools, %d examples, %d collisions", out, len(m.Tools), len(m.Examples), len(m.Links))
	if m.Query != nil {
		fmt.Fprintf(w, ", the request near %s", m.Query.Near)
	}
	fmt.Fprintln(w)
	if m.Shown != "" {
		fmt.Fprintf(w, "  showing %s\n", m.Shown)
	}
	if len(m.Tools) >= 4 {
		// With three tools or fewer every tool's others are its two
		// nearest: the share says nothing of the layout (and with one
		// there is no most similar tool).
		fmt.Fprintf(w, "  %.0f %% of the tools have their most similar tool among their two nearest on the map\n", 100*m.NeighboursKept)
	}
}
