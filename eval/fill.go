package eval

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/fill"
)

// Reasons Fill gives for rows it cannot score (keys of SkippedBy).
const (
	SkipNoGold         = "no_gold_arguments"
	SkipNotOneTool     = "not_one_expected_tool"
	SkipUnknownTool    = "tool_not_in_catalog"
	SkipSchemaMismatch = "gold_argument_not_in_schema"
)

// FillReport is the outcome of scoring argument filling. Rates are in
// [0, 1].
type FillReport struct {
	// Queries counts the scored rows.
	Queries int    `json:"queries"`
	Tools   int    `json:"tools"`
	Filler  string `json:"filler"`
	// Exact is the share of rows whose filled call matches the gold answer.
	Exact float64 `json:"exact"`
	// ArgPrecision is the share of filled arguments with an acceptable
	// value; ArgRecall the share of required gold arguments filled
	// acceptably.
	ArgPrecision float64 `json:"arg_precision"`
	ArgRecall    float64 `json:"arg_recall"`
	// InventedRate is the share of filled values the request does not
	// support.
	InventedRate float64 `json:"invented_rate"`
	// Complete is the share of rows whose fill had nothing missing.
	Complete float64 `json:"complete"`
	// BaselineExact is the exact rate of filling nothing at all: rows whose
	// gold arguments are all optional.
	BaselineExact float64          `json:"baseline_exact"`
	Totals        fill.ScoreTotals `json:"totals"`
	// FillErrors counts rows where every filler failed; they score as
	// filled with nothing.
	FillErrors int `json:"fill_errors"`
	// Skipped counts rows not scored, by reason in SkippedBy.
	Skipped   int            `json:"skipped"`
	SkippedBy map[string]int `json:"skipped_by"`
	// Misses are the rows not filled exactly, in order.
	Misses []FillMiss `json:"misses"`
}

// FillMiss is one row not filled exactly.
type FillMiss struct {
	Query string          `json:"query"`
	Tool  string          `json:"tool"`
	Got   map[string]any  `json:"got"`
	Gold  fill.Acceptable `json:"gold"`
}

// FillOptions tune Fill.
type FillOptions struct {
	// Fillers are the chain fill.Fill runs. Their reference time should
	// be zero, so that relative dates are not filled and figures do not
	// depend on the day they are measured.
	Fillers []fill.Filler
	// Progress, when set, is called as rows are filled.
	Progress func(done, total int)
}

// Fill scores argument filling on the rows of qs that have gold arguments
// and one expected tool of tools: each fills that tool (no selection) and
// is compared with its gold answer, honouring the row's acceptable values.
// Rows it cannot score are counted by reason. It stops at the first row
// whose filler is unavailable or unknown, since every later row would
// fail the same way, and returns ErrInvalid when no row can be scored,
// since every figure would then read 0.
func Fill(ctx context.Context, tools []habilis.Tool, qs []Query, opts FillOptions) (*FillReport, error) {
	f := &filling{opts: opts, byName: make(map[string]habilis.Tool, len(tools)), schemas: map[string]*fill.Schema{},
		rep: &FillReport{Tools: len(tools), Filler: fillerName(opts.Fillers), SkippedBy: map[string]int{}, Misses: []FillMiss{}}}
	for _, t := range tools {
		f.byName[t.Name] = t
	}
	for i, q := range qs {
		if opts.Progress != nil {
			opts.Progress(i, len(qs))
		}
		if err := f.row(ctx, i, q); err != nil {
			return nil, err
		}
	}
	if opts.Progress != nil {
		opts.Progress(len(qs), len(qs))
	}
	if f.totals.Rows == 0 {
		return nil, &NothingScoredError{Skipped: f.rep.Skipped, SkippedBy: f.rep.SkippedBy}
	}
	return f.report(), nil
}

// NothingScoredError is Fill's error when no row could be scored: it says
// why each was skipped and what a scorable row holds, and unwraps to
// habilis.ErrInvalid.
type NothingScoredError struct {
	// Skipped and SkippedBy are as in FillReport.
	Skipped   int
	SkippedBy map[string]int
}

func (e *NothingScoredError) Error() string {
	var why []string
	for _, reason := range slices.Sorted(maps.Keys(e.SkippedBy)) {
		why = append(why, fmt.Sprintf("%s: %d", reason, e.SkippedBy[reason]))
	}
	return fmt.Sprintf("no row has gold arguments for one tool of the catalog (skipped %d rows: %s): "+
		"give rows \"arguments\" and one \"expected\" tool of the catalog", e.Skipped, strings.Join(why, ", "))
}

func (e *NothingScoredError) Unwrap() error { return habilis.ErrInvalid }

// filling is the state of one Fill.
type filling struct {
	opts             FillOptions
	byName           map[string]habilis.Tool
	schemas          map[string]*fill.Schema
	rep              *FillReport
	totals, baseline fill.ScoreTotals
	complete         int
}

// row fills and scores the i-th row, q, or counts why it cannot.
func (f *filling) row(ctx context.Context, i int, q Query) error {
	tool, s, gold, reason, err := f.scorable(q)
	if err != nil || reason != "" {
		if reason != "" {
			f.rep.Skipped++
			f.rep.SkippedBy[reason]++
		}
		return err
	}
	got := map[string]any{}
	r, err := fill.Fill(ctx, tool, q.Query, fill.Options{Fillers: f.opts.Fillers})
	switch {
	case err == nil:
		got = r.Arguments
		if r.Complete {
			f.complete++
		}
	case ctx.Err() != nil, errors.Is(err, habilis.ErrUnavailable), errors.Is(err, habilis.ErrNotFound):
		// Every later row would fail the same way.
		return fmt.Errorf("eval: fill: query %d: %w", i+1, err)
	default:
		f.rep.FillErrors++
	}
	scored := fill.Score(gold, got, q.Query, s)
	f.totals.Add(scored)
	f.baseline.Add(fill.Score(gold, map[string]any{}, q.Query, s))
	if !scored.Exact {
		f.rep.Misses = append(f.rep.Misses, FillMiss{Query: q.Query, Tool: tool.Name, Got: got, Gold: gold})
	}
	return nil
}

// scorable returns q's tool, its schema and q's gold answer, or the reason
// q cannot be scored.
func (f *filling) scorable(q Query) (habilis.Tool, *fill.Schema, fill.Acceptable, string, error) {
	gold := goldAnswer(q)
	if gold == nil {
		return habilis.Tool{}, nil, nil, SkipNoGold, nil
	}
	if len(q.Expected) != 1 {
		return habilis.Tool{}, nil, nil, SkipNotOneTool, nil
	}
	tool, ok := f.byName[q.Expected[0]]
	if !ok {
		return habilis.Tool{}, nil, nil, SkipUnknownTool, nil
	}
	s, ok := f.schemas[tool.Name]
	if !ok {
		var err error
		if s, err = fill.ParseSchema(tool.InputSchema); err != nil {
			return habilis.Tool{}, nil, nil, "", fmt.Errorf("eval: fill: tool %q: %w", tool.Name, err)
		}
		f.schemas[tool.Name] = s
	}
	if !goldFits(gold, s) {
		return habilis.Tool{}, nil, nil, SkipSchemaMismatch, nil
	}
	return tool, s, gold, "", nil
}

// report returns the figures of the rows scored.
func (f *filling) report() *FillReport {
	rep, totals := f.rep, f.totals
	rep.Queries = totals.Rows
	rep.Totals = totals
	rep.Exact, rep.ArgPrecision, rep.ArgRecall, rep.InventedRate = totals.ExactRate(), totals.Precision(), totals.Recall(), totals.InventedRate()
	rep.BaselineExact = f.baseline.ExactRate()
	if totals.Rows > 0 {
		rep.Complete = float64(f.complete) / float64(totals.Rows)
	}
	return rep
}

// goldAnswer returns a row's acceptable values: its own lists when it has
// them, else each gold argument as the one acceptable value; nil without
// gold arguments.
func goldAnswer(q Query) fill.Acceptable {
	if q.Acceptable != nil {
		return fill.Acceptable(q.Acceptable)
	}
	if q.Arguments == nil {
		return nil
	}
	gold := make(fill.Acceptable, len(q.Arguments))
	for k, v := range q.Arguments {
		gold[k] = []any{v}
	}
	return gold
}

// goldFits reports whether every argument the gold answer requires is
// declared by the tool's schema. A row written for another version of the
// tool (BFCL's schema variants share a name) cannot be scored fairly
// against this one.
func goldFits(gold fill.Acceptable, s *fill.Schema) bool {
	for name, vals := range gold {
		if _, ok := s.Properties[name]; ok || slices.Contains(vals, any("")) {
			continue
		}
		return false
	}
	return true
}

// fillerName names a chain of fillers, first to last.
func fillerName(fs []fill.Filler) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name()
	}
	return strings.Join(names, ">")
}
