package eval

import (
	"context"
	"fmt"
	"slices"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/suggest"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/memstore"
)

// SelfFolds is how many folds a self-evaluation splits the catalog's
// examples into: example i of every tool is held out in fold i mod
// SelfFolds. Five folds cost five loads instead of one per example.
const SelfFolds = 5

// Setup is one evaluation: a catalog, the labelled queries measured on
// it, and how.
type Setup struct {
	// Config configures the routers the evaluation loads catalogs into,
	// each over an in-memory store of its own that nothing outlives.
	Config selector.Config
	Tools  []habilis.Tool
	// Queries are the labelled queries measured: those that carry a
	// candidates list within their own catalogs (RunCandidates), the
	// others within Tools.
	Queries []Query
	// Self measures the catalog's own examples instead of Queries: in
	// SelfFolds folds, example i of every tool is held out of it when i
	// mod SelfFolds is the fold, and becomes a query expecting that tool.
	Self bool
	// Fit, when not empty, are labelled queries fitted on (Fit) before
	// measuring, in every fold with Self, less those measured there
	// (ignoring case and spacing), which fitting would make examples of
	// the catalog they are measured on. It needs one catalog: queries
	// with candidates lists are not fitted for.
	Fit []Query
	// Baseline "bm25" measures Okapi BM25 on Queries instead (RunBM25).
	Baseline string
	// Mode and K are Options'.
	Mode habilis.Mode
	K    int
	// Progress, when set, is told how each step advances: "embedding" a
	// catalog and "evaluating" the queries.
	Progress func(step string, done, total int)
}

// Result is an evaluation's report with what fitting changed, when it ran.
type Result struct {
	*Report
	// Folds is how many folds Self ran (0 otherwise).
	Folds int `json:"folds,omitempty"`
	// Fit is what fitting changed; FitFolds holds one per fold with Self.
	Fit      *FitReport   `json:"fit,omitempty"`
	FitFolds []*FitReport `json:"fit_folds,omitempty"`
}

// Evaluate runs the evaluation s describes: the baseline, the queries
// within their candidates lists, the catalog's own examples, or the
// queries within the catalog, fitted on s.Fit first when there are any.
func Evaluate(ctx context.Context, s *Setup) (*Result, error) {
	opts := Options{Mode: s.Mode, K: s.K}
	if err := checkExpected(s.Tools, s.Queries); err != nil {
		return nil, err
	}
	switch {
	case s.Baseline != "" && s.Baseline != "bm25":
		return nil, fmt.Errorf("eval: baseline %q: want bm25: %w", s.Baseline, habilis.ErrInvalid)
	case s.Baseline != "":
		rep, err := RunBM25(ctx, s.Tools, s.Queries, opts)
		return &Result{Report: rep}, err
	case slices.ContainsFunc(s.Queries, func(q Query) bool { return q.HasCandidates }):
		opts.Progress = s.step("evaluating")
		rep, err := RunCandidates(ctx, s.newRouter, s.Tools, s.Queries, opts)
		return &Result{Report: rep}, err
	case s.Self:
		return s.self(ctx)
	}
	rep, fit, err := s.once(ctx, s.Tools, s.Queries)
	if err != nil {
		return nil, err
	}
	return &Result{Report: rep, Fit: fit}, nil
}

// checkExpected refuses a query routed within tools (it has no candidates
// list) that expects a tool tools lack: no decision could be right, so
// a misspelt name would only show as a confusion between two tools. A
// query with a candidates list may expect a tool the list leaves out.
func checkExpected(tools []habilis.Tool, qs []Query) error {
	known := make(map[string]bool, len(tools))
	for _, t := range tools {
		known[t.Name] = true
	}
	for _, q := range qs {
		if q.HasCandidates {
			continue
		}
		for _, e := range q.Expected {
			if !known[e] {
				near := suggest.UnknownTool(e, known).Suggestions
				return fmt.Errorf("eval: query %q expects tool %q, which the catalog does not hold%s: %w", q.Query, e, habilis.DidYouMean(near), habilis.ErrNotFound)
			}
		}
	}
	return nil
}

// step returns the progress function of one step, or nil.
func (s *Setup) step(name string) func(done, total int) {
	if s.Progress == nil {
		return nil
	}
	return func(done, total int) { s.Progress(name, done, total) }
}

// newRouter returns an empty router over an in-memory store.
func (s *Setup) newRouter(ctx context.Context) (*selector.Router, error) {
	r, err := selector.New(ctx, memstore.New(), s.Config)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	return r, nil
}

// once loads tools into a new router, fits it on s.Fit when there are
// any, and measures qs.
func (s *Setup) once(ctx context.Context, tools []habilis.Tool, qs []Query) (*Report, *FitReport, error) {
	r, err := s.newRouter(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	if _, err = r.Load(ctx, tools, selector.LoadOptions{Progress: s.step("embedding")}); err != nil {
		return nil, nil, fmt.Errorf("eval: load: %w", err)
	}
	var fit *FitReport
	if fitQs := without(s.Fit, qs); len(fitQs) > 0 {
		if fit, err = Fit(ctx, r, fitQs, FitOptions{}); err != nil {
			return nil, nil, err
		}
	}
	rep, err := Run(ctx, r, qs, Options{Mode: s.Mode, K: s.K, Progress: s.step("evaluating")})
	if err != nil {
		return nil, nil, err
	}
	return rep, fit, nil
}

// without returns the queries of qs that are not among drop, ignoring
// case and spacing: fitted on, a query becomes an example of the catalog,
// and one measured must not be.
func without(qs, drop []Query) []Query {
	if len(qs) == 0 || len(drop) == 0 {
		return qs
	}
	seen := make(map[string]bool, len(drop))
	for _, q := range drop {
		seen[normal(q.Query)] = true
	}
	var kept []Query
	for _, q := range qs {
		if !seen[normal(q.Query)] {
			kept = append(kept, q)
		}
	}
	return kept
}

// self measures the catalog's own examples, fold by fold, and merges the
// folds' reports.
func (s *Setup) self(ctx context.Context) (*Result, error) {
	res := &Result{}
	var reps []*Report
	for fold := range SelfFolds {
		kept, held := holdOut(s.Tools, fold)
		if len(held) == 0 {
			continue
		}
		rep, fit, err := s.once(ctx, kept, held)
		if err != nil {
			return nil, err
		}
		reps = append(reps, rep)
		if fit != nil {
			res.FitFolds = append(res.FitFolds, fit)
		}
	}
	if len(reps) == 0 {
		return nil, fmt.Errorf("no tool has examples to hold out: %w", habilis.ErrInvalid)
	}
	res.Report = merge(reps, len(s.Tools))
	res.Folds = len(reps)
	return res, nil
}

// holdOut splits the catalog's examples for one fold of a
// self-evaluation: example i of every tool is held out when i mod
// SelfFolds is fold, and becomes a query expecting its tool.
func holdOut(tools []habilis.Tool, fold int) (kept []habilis.Tool, held []Query) {
	kept = make([]habilis.Tool, len(tools))
	for ti, t := range tools {
		var ex []string
		for i, e := range t.Examples {
			if i%SelfFolds == fold {
				held = append(held, Query{Query: e, Expected: []string{t.Name}})
			} else {
				ex = append(ex, e)
			}
		}
		t.Examples = ex
		kept[ti] = t
	}
	return kept, held
}
