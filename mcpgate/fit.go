package mcpgate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/eval"
	"github.com/habilis-router/habilis/internal/suggest"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/memstore"
)

// FitFile returns an Options.Fit that reads the labelled queries of the
// JSONL file at path (eval.ParseQueries) at every build, so that lines
// appended since the last one, by Options.Record or anyone, count. A
// file that does not exist yet, or is empty (as Record creates it), is
// nothing to learn yet. A last line that does not parse and has no
// newline yet is one being appended as the file is read: it is left for
// the next build.
func FitFile(path string) func(context.Context) ([]eval.Query, error) {
	return func(context.Context) ([]eval.Query, error) {
		data, err := os.ReadFile(path)
		if err != nil || len(bytes.TrimSpace(data)) == 0 {
			return nil, err // "open PATH: ..." names the file
		}
		qs, err := eval.ParseQueries(path, bytes.NewReader(data))
		if end := bytes.LastIndexByte(data, '\n') + 1; err != nil && end > 0 && end < len(data) {
			if whole, werr := eval.ParseQueries(path, bytes.NewReader(data[:end])); werr == nil {
				return whole, nil
			}
		}
		return qs, err
	}
}

// fitQueries returns Options.Fit's labelled queries, or none when there is
// no Fit or nothing to learn yet. An error is returned on the first build
// alone, where it stops New; later builds log it and serve unfitted, so
// that a file damaged while serving never takes the gateway down.
func (g *Gateway) fitQueries(ctx context.Context) ([]eval.Query, error) {
	if g.opts.Fit == nil {
		return nil, nil
	}
	qs, err := g.opts.Fit(ctx)
	switch {
	case err == nil && len(qs) > 0:
		return qs, nil
	case err == nil:
		g.opts.Logger.Info("mcp gateway: no labelled queries to fit on yet; the index serves unfitted")
		return nil, nil
	case errors.Is(err, fs.ErrNotExist):
		g.opts.Logger.Info("mcp gateway: no labelled queries to fit on yet; the index serves unfitted", "error", err)
		return nil, nil
	case g.cur.Load() == nil:
		return nil, fmt.Errorf("fit: %w", err)
	default:
		g.opts.Logger.Error("mcp gateway: the labelled queries cannot be read; the index serves unfitted", "error", err)
		return nil, nil
	}
}

// fitted returns a router over a copy of st, the index just built, fitted
// on the queries of qs that name its tools (eval.Fit), or nil when none
// expects a tool or fitting fails (logged: the index then serves
// unfitted). st itself is left unfitted: it seeds the next build, which
// fits afresh on the file as it is then, and what Fit learnt would
// otherwise outlive the rows it came from (a fitted calibration survives
// catalog changes, see selector's calibrate).
func (g *Gateway) fitted(ctx context.Context, st *memstore.Store, entries []*entry, qs []eval.Query) *selector.Router {
	if len(qs) == 0 {
		return nil
	}
	kept, skipped, near := fitRows(qs, entries)
	log := g.opts.Logger
	if skipped > 0 {
		attrs := []any{"skipped", skipped, "of", len(qs)}
		if len(near) > 0 {
			attrs = append(attrs, "did_you_mean", near)
		}
		log.Info("mcp gateway: labelled queries naming tools the index lacks (a server down, a tool renamed, another config) are skipped", attrs...)
	}
	if !slices.ContainsFunc(kept, func(q eval.Query) bool { return len(q.Expected) > 0 }) {
		// A warning: rows there are, but for other tools (a file of another
		// config, or of servers all down), which mcp search --fit, logging
		// warnings alone by default, would otherwise pass over in silence.
		log.Warn("mcp gateway: no labelled query names a tool of the index; nothing to learn yet, the index serves unfitted", "queries", len(qs))
		return nil
	}
	r, rep, err := fitCopy(ctx, st, g.opts.Router, kept)
	if err != nil {
		if ctx.Err() == nil {
			log.Error("mcp gateway: fitting the index failed; it serves unfitted", "error", err)
		}
		return nil
	}
	log.Info("mcp gateway: index fitted on labelled queries", "queries", rep.Queries,
		"added_examples", rep.AddedExamples, "prior_strength", rep.PriorStrength, "gates_learned", rep.GatesLearned)
	return r
}

// fitCopy returns a router over a copy of st fitted on qs, and what
// fitting learnt.
func fitCopy(ctx context.Context, st *memstore.Store, cfg selector.Config, qs []eval.Query) (*selector.Router, *eval.FitReport, error) {
	cp, err := copyStore(ctx, st)
	if err != nil {
		return nil, nil, err
	}
	r, err := selector.New(ctx, cp, cfg)
	if err != nil {
		return nil, nil, err
	}
	rep, err := eval.Fit(ctx, r, qs, eval.FitOptions{})
	if err != nil {
		r.Close()
		return nil, nil, err
	}
	return r, rep, nil
}

// fitRows returns the queries of qs whose expected tools all name tools
// of entries, with those named as the gateway names them, and how many
// were skipped. A tool is named by its name at the gateway or, as in an
// overlay, by its server's name for it when no other server's tool has
// that name too. Queries for no tool are kept. near gives, for the names
// of skipped rows that likely misspell a tool's, the names they most
// likely misspell.
func fitRows(qs []eval.Query, entries []*entry) (kept []eval.Query, skipped int, near map[string][]string) {
	names := gatewayNames(entries)
	kept = make([]eval.Query, 0, len(qs))
	for _, q := range qs {
		expected := make([]string, 0, len(q.Expected))
		ok := true
		for _, e := range q.Expected {
			name, found := names[e]
			ok = ok && found
			if found && !slices.Contains(expected, name) {
				expected = append(expected, name)
			}
			near = unknownNear(e, found, names, near)
		}
		if !ok {
			skipped++
			continue
		}
		kept = append(kept, eval.Query{Query: q.Query, Expected: expected})
	}
	return kept, skipped, near
}

// unknownNear adds to near the names that name, unless found, most likely
// misspells among names' keys, and returns near (nil while empty).
func unknownNear(name string, found bool, names map[string]string, near map[string][]string) map[string][]string {
	if found || near[name] != nil {
		return near
	}
	if s := suggest.UnknownTool(name, names).Suggestions; len(s) > 0 {
		if near == nil {
			near = map[string][]string{}
		}
		near[name] = s
	}
	return near
}

// gatewayNames maps each tool's name at the gateway to itself, and its
// server's name for it to its name at the gateway when no other server
// has a tool of that name.
func gatewayNames(entries []*entry) map[string]string {
	owners := make(map[string]int, len(entries))
	for _, e := range entries {
		owners[e.Upstream]++
	}
	names := make(map[string]string, 2*len(entries))
	for _, e := range entries {
		if owners[e.Upstream] == 1 {
			names[e.Upstream] = e.Name
		}
	}
	for _, e := range entries {
		names[e.Name] = e.Name // the gateway's name wins
	}
	return names
}

// copyStore returns a new store holding src's catalog, vectors included,
// so that nothing is embedded again (which costs a model embedder a round
// trip).
func copyStore(ctx context.Context, src *memstore.Store) (*memstore.Store, error) {
	st := memstore.New()
	snap, err := src.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("index the servers' tools: %w", err)
	}
	if snap.Meta.Version == 0 {
		return st, nil
	}
	if _, err := st.Write(ctx, &habilis.Batch{Replace: true, Put: snap.Records, Meta: snap.Meta}); err != nil {
		return nil, fmt.Errorf("index the servers' tools: %w", err)
	}
	return st, nil
}
