package eval

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/catalog"
	"github.com/habilis-router/habilis/internal/suggest"
	"github.com/habilis-router/habilis/selector"
)

// FitOptions tune Fit.
type FitOptions struct {
	// NoExamples keeps the catalog's examples as they are; by default the
	// single-tool labelled queries become examples of their tool.
	NoExamples bool
	// MaxNewExamples bounds the examples added to one tool; 0 means 200.
	MaxNewExamples int
}

// FitReport says what Fit learned and from what.
type FitReport struct {
	Queries       int `json:"queries"`
	ToolQueries   int `json:"tool_queries"`
	NoToolQueries int `json:"no_tool_queries"`
	// BackgroundQueries counts the built-in generic requests the gates
	// were learned against in place of requests for no tool, when the
	// tuning half held none (selector.BackgroundRequests).
	BackgroundQueries int `json:"background_queries,omitempty"`
	// GatesLearned reports that the hybrid threshold, the margin and the
	// confidence were learned from the queries: the tuning half held
	// MinGateQueries queries for a tool or more, and queries for no tool
	// (its own or the background's). Otherwise the gates are those the
	// catalog's examples calibrate, the added queries among them, as a
	// load calibrates them.
	GatesLearned bool `json:"gates_learned"`
	// AddedExamples counts the labelled queries added as examples.
	AddedExamples int `json:"added_examples"`
	// Tuning is what the chosen settings scored on the tuning half, with
	// the other half's queries as examples: an honest preview, since no
	// query scored was also an example.
	Tuning TuningFigures `json:"tuning"`
	// PriorStrength scales the per-tool prior, the log of how often each
	// tool was the answer (0: no prior).
	PriorStrength float32              `json:"prior_strength"`
	Before        selector.Calibration `json:"before"`
	After         selector.Calibration `json:"after"`
	Version       uint64               `json:"version"`
}

// TuningFigures are the tuning half's figures for the chosen settings.
type TuningFigures struct {
	Queries int `json:"queries"`
	// NoToolQueries counts the queries for no tool among them, which
	// AbstainRecall is measured on (0: it measures nothing).
	NoToolQueries int `json:"no_tool_queries"`
	// AccAt1 counts abstentions as wrong; RankAccAt1 is the ranking's
	// top-1 before the gate, and BaselineRankAccAt1 the same with the
	// settings in force before fitting.
	AccAt1             float64 `json:"acc_at_1"`
	RankAccAt1         float64 `json:"rank_acc_at_1"`
	BaselineRankAccAt1 float64 `json:"baseline_rank_acc_at_1"`
	AbstainRecall      float64 `json:"abstain_recall"`
	WrongAbstain       float64 `json:"wrong_abstain_rate"`
}

// The settings Fit chooses among. Weight sets are few and coarse on
// purpose: a fusion of z-scores is flat around equal weights, and a small
// grid cannot overfit a few hundred labelled queries.
var (
	fitWeights = []selector.Weights{
		{Centroid: 1, Description: 0.1, Document: 0.5}, // the default
		{Centroid: 1, Document: 0.5},
		{Centroid: 1},
		{Centroid: 1, Document: 1},
		{Centroid: 1, Description: 0.5, Document: 0.5},
	}
	fitPriors = []float32{0, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3}
)

// Fit learns hybrid mode's settings from labelled queries and stores them
// in r's catalog: the fusion weights, a per-tool prior from how often each
// tool is the answer, the hybrid threshold and the centroid margin (from the
// no-tool queries, or without any from the built-in background's generic
// requests, see withNegatives), and, unless NoExamples, the
// single-tool queries as examples of their tools.
//
// It never scores a query against a catalog that holds it: the queries are
// split in two halves by a hash of their text; the settings are chosen on
// one half against a trial catalog that holds the other half as examples.
// The stored catalog then gets every query as an example.
func Fit(ctx context.Context, r *selector.Router, qs []Query, opts FitOptions) (*FitReport, error) {
	if opts.MaxNewExamples <= 0 {
		opts.MaxNewExamples = 200
	}
	tools := r.Tools()
	rep, err := newFitReport(r, tools, qs)
	if err != nil {
		return nil, err
	}
	tuneQs, exampleQs := splitFit(qs)
	tuneQs, rep.BackgroundQueries = withNegatives(tuneQs)

	// The trial catalog: r's tools with the example half added, in memory.
	trial := r
	if !opts.NoExamples {
		withExamples, _ := addExamples(tools, exampleQs, opts.MaxNewExamples)
		if trial, err = r.Trial(ctx, withExamples); err != nil {
			return nil, fmt.Errorf("trial catalog: %w", err)
		}
		defer trial.Close()
	}
	tuned, figs, strength, learned, err := tune(ctx, trial, tuneQs, counts(exampleQs))
	if err != nil {
		return nil, err
	}
	rep.Tuning, rep.PriorStrength, rep.GatesLearned = figs, strength, learned

	// The stored catalog: every query as an example, the prior from every
	// query's counts, the tuned thresholds.
	if !opts.NoExamples {
		withExamples, added := addExamples(tools, qs, opts.MaxNewExamples)
		rep.AddedExamples = added
		if added > 0 {
			if _, err := r.Load(ctx, withExamples, selector.LoadOptions{}); err != nil {
				return nil, fmt.Errorf("add examples: %w", err)
			}
		}
	}
	cal := r.Calibration()
	cal.Weights = tuned.Weights
	cal.Prior = prior(counts(qs), strength)
	if learned {
		cal.HybridThreshold, cal.Confidence = tuned.HybridThreshold, tuned.Confidence
		cal.Margin, cal.MarginSource = tuned.Margin, tuned.MarginSource
		cal.Samples = len(tuneQs)
		cal.GatesFromExamples = false
	} else {
		// The gates stay the stored catalog's: learned by an earlier fit,
		// or calibrated from all its examples (not the trial's half), and
		// then calibrated again at every write.
		cal.GatesFromExamples = !cal.GatesFitted()
	}
	cal.Fitted = true
	lr, err := r.SetCalibration(ctx, cal)
	if err != nil {
		return nil, fmt.Errorf("store calibration: %w", err)
	}
	rep.After, rep.Version = r.Calibration(), lr.Version
	return rep, nil
}

// MinGateQueries is how many tuning queries for a tool fit needs to learn
// the gates from: a cut at the share MinPass of fewer is one query's
// score, which a small file of recorded traffic would make the gate of the
// whole catalog. With fewer, the catalog keeps the gates its examples
// calibrate.
const MinGateQueries = 20

// withNegatives returns the tuning queries qs and, when none of them is
// for no tool (traffic recorded from tool calls holds none), the built-in
// background's generic requests as requests for no tool, with how many
// were added. Without requests for no tool there is nothing to learn the
// gates against, and the catalog's own gates, calibrated from examples,
// grow stricter with every query added as an example: on MetaTool, fitted
// on half a's requests for a tool alone, half b was wrongly refused 22.0 %
// of the time with the catalog's gates, against 12.7 % fitted with half
// a's 76 requests for no tool; against the background, 12.7 % as well
// (docs/proxy.md, learning from traffic).
func withNegatives(qs []Query) ([]Query, int) {
	for _, q := range qs {
		if len(q.Expected) == 0 {
			return qs, 0
		}
	}
	if len(qs) < MinGateQueries {
		return qs, 0 // too few to learn gates from (see tune)
	}
	bg := selector.BackgroundRequests()
	out := slices.Grow(slices.Clip(qs), len(bg))
	for _, text := range bg {
		out = append(out, Query{Query: text})
	}
	return out, len(bg)
}

// newFitReport counts the labelled queries for a report on fitting r. It
// refuses a query that expects a tool not among tools, and queries none of
// which expects a tool.
func newFitReport(r *selector.Router, tools []habilis.Tool, qs []Query) (*FitReport, error) {
	known := make(map[string]bool, len(tools))
	for _, t := range tools {
		known[t.Name] = true
	}
	rep := &FitReport{Queries: len(qs), Before: r.Calibration()}
	for i, q := range qs {
		for _, e := range q.Expected {
			if !known[e] {
				return nil, fmt.Errorf("query %d %q expects %w", i+1, q.Query, suggest.UnknownTool(e, known))
			}
		}
		if len(q.Expected) == 0 {
			rep.NoToolQueries++
		} else {
			rep.ToolQueries++
		}
	}
	if rep.ToolQueries == 0 {
		return nil, fmt.Errorf("no labelled query expects a tool: %w", habilis.ErrInvalid)
	}
	return rep, nil
}

// splitFit splits queries in two, those tuned on and those added as
// examples to the trial catalog they are tuned against, by a salted hash
// of their text; the salt keeps the split independent of any split the
// caller made with a plain hash of the same text. Queries equal ignoring
// case and spacing go where the first of them goes, so that no query is
// tuned on against a catalog that holds it.
func splitFit(qs []Query) (tune, examples []Query) {
	return splitBy(qs, func(text string) bool {
		h := fnv.New64a()
		h.Write([]byte("habilis fit\x00"))
		h.Write([]byte(text))
		return h.Sum64()>>63 == 0
	})
}

// counts returns how often each tool is expected by single-tool queries.
func counts(qs []Query) map[string]int {
	c := map[string]int{}
	for _, q := range qs {
		if len(q.Expected) == 1 {
			c[q.Expected[0]]++
		}
	}
	return c
}

// prior is strength·ln(1 + count) per tool: tools users ask for more often
// win close calls. Unseen tools get no prior.
func prior(c map[string]int, strength float32) map[string]float32 {
	if strength == 0 || len(c) == 0 {
		return nil
	}
	p := make(map[string]float32, len(c))
	for t, n := range c {
		p[t] = strength * float32(math.Log1p(float64(n)))
	}
	return p
}

// addExamples returns tools with the single-tool queries of qs added as
// examples of their tool (up to limit per tool, skipping ones it already
// has, ignoring case and spacing) and how many were added.
func addExamples(tools []habilis.Tool, qs []Query, limit int) ([]habilis.Tool, int) {
	byName := make(map[string]int, len(tools))
	out := make([]habilis.Tool, len(tools))
	seen := make([]map[string]bool, len(tools))
	for i, t := range tools {
		byName[t.Name] = i
		t.Examples = slices.Clone(t.Examples)
		out[i] = t
		seen[i] = make(map[string]bool, len(t.Examples))
		for _, e := range t.Examples {
			seen[i][normal(e)] = true
		}
	}
	added := make([]int, len(tools))
	total := 0
	for _, q := range qs {
		if len(q.Expected) != 1 {
			continue
		}
		i, ok := byName[q.Expected[0]]
		n := normal(q.Query)
		if !ok || added[i] >= limit || seen[i][n] || len(out[i].Examples) >= catalog.MaxExamples || len(q.Query) > catalog.MaxExampleLen {
			continue
		}
		seen[i][n] = true
		out[i].Examples = append(out[i].Examples, strings.TrimSpace(q.Query))
		added[i]++
		total++
	}
	return out, total
}

func normal(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }

// tune chooses weights and prior strength by top-1 accuracy on qs (ties go
// to the earlier, simpler setting), then the thresholds by how well they
// separate tool queries from no-tool queries, reporting whether it
// learned them.
func tune(ctx context.Context, r *selector.Router, qs []Query, c map[string]int) (selector.Calibration, TuningFigures, float32, bool, error) {
	cal := r.Calibration()
	rows, err := scoreRows(ctx, r, qs)
	if err != nil {
		return cal, TuningFigures{}, 0, false, err
	}
	figs := TuningFigures{Queries: len(rows)}
	figs.BaselineRankAccAt1, _ = rankAccuracy(rows, cal.Weights, cal.Prior)
	var strength float32
	var tops []int
	cal.Weights, strength, figs.RankAccAt1, tops = chooseFusion(rows, c)
	posEv, negEv, posGate, negGate := gateScores(rows, tops)
	learned := len(posEv) >= MinGateQueries && len(negEv) > 0 // LearnGates changes nothing without negEv
	if learned {
		cal.LearnGates(posEv, negEv, posGate, negGate)
	}
	figs.decisions(rows, tops, cal)
	return cal, figs, strength, learned, nil
}

// tuningRow is one tuning query's raw signals and the tools it expects.
type tuningRow struct {
	sc       *selector.Scores
	expected []string
}

// scoreRows embeds qs together and returns their raw signals.
func scoreRows(ctx context.Context, r *selector.Router, qs []Query) ([]tuningRow, error) {
	texts := make([]string, len(qs))
	for i, q := range qs {
		texts[i] = q.Query
	}
	b, err := r.EmbedQueries(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("embed the labelled requests: %w", err)
	}
	rows := make([]tuningRow, 0, len(qs))
	for i, q := range qs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sc, err := b.Scores(ctx, i)
		if err != nil {
			return nil, fmt.Errorf("score %q: %w", q.Query, err)
		}
		rows = append(rows, tuningRow{sc, q.Expected})
	}
	return rows, nil
}

// rankAccuracy returns the share of tool queries whose best fused tool,
// under weights w and prior p, is expected, and each row's best tool.
func rankAccuracy(rows []tuningRow, w selector.Weights, p map[string]float32) (float64, []int) {
	hits, n := 0, 0
	tops := make([]int, len(rows))
	for k, rw := range rows {
		f := rw.sc.Fused(w, p)
		best := 0
		for i := range f {
			if f[i] > f[best] {
				best = i
			}
		}
		tops[k] = best
		if len(rw.expected) == 0 {
			continue
		}
		n++
		if slices.Contains(rw.expected, rw.sc.Tools[best]) {
			hits++
		}
	}
	if n == 0 {
		return 0, tops
	}
	return float64(hits) / float64(n), tops
}

// chooseFusion returns the weights and prior strength of fitWeights and
// fitPriors that rank best (ties to the earlier), their accuracy and
// each row's best tool under them.
func chooseFusion(rows []tuningRow, c map[string]int) (selector.Weights, float32, float64, []int) {
	bestW, bestP, bestAcc := fitWeights[0], float32(0), -1.0
	var bestTops []int
	for _, w := range fitWeights {
		for _, s := range fitPriors {
			acc, tops := rankAccuracy(rows, w, prior(c, s))
			if acc > bestAcc+1e-9 {
				bestW, bestP, bestAcc, bestTops = w, s, acc, tops
			}
		}
	}
	return bestW, bestP, bestAcc, bestTops
}

// gateScores returns what the gates are learned from (LearnGates): the
// top tool's evidence and the best centroid gate excess, for tool queries
// (which should pass) and for no-tool queries (which should not).
func gateScores(rows []tuningRow, tops []int) (posEv, negEv, posGate, negGate []float32) {
	for k, rw := range rows {
		ev := rw.sc.Evidence[tops[k]]
		var gate float32 = -2
		for i, g := range rw.sc.Gate {
			if rw.sc.HasRadius[i] {
				gate = max(gate, g)
			}
		}
		if len(rw.expected) == 0 {
			negEv, negGate = append(negEv, ev), append(negGate, gate)
		} else {
			posEv, posGate = append(posEv, ev), append(posGate, gate)
		}
	}
	return posEv, negEv, posGate, negGate
}

// decisions sets the figures of the calibration cal on the tuning rows,
// whose top tools are tops.
func (figs *TuningFigures) decisions(rows []tuningRow, tops []int, cal selector.Calibration) {
	hits, tool, abst, wrong, none := 0, 0, 0, 0, 0
	for k, rw := range rows {
		top := tops[k]
		abstain := rw.sc.Evidence[top] < cal.HybridThreshold
		if !rw.sc.HasExamples[top] {
			abstain = rw.sc.Description[top] < cal.DescriptionThreshold
		}
		if len(rw.expected) == 0 {
			none++
			if abstain {
				abst++
			}
			continue
		}
		tool++
		if abstain {
			wrong++
		} else if slices.Contains(rw.expected, rw.sc.Tools[top]) {
			hits++
		}
	}
	if tool > 0 {
		figs.AccAt1 = float64(hits) / float64(tool)
		figs.WrongAbstain = float64(wrong) / float64(tool)
	}
	figs.NoToolQueries = none
	if none > 0 {
		figs.AbstainRecall = float64(abst) / float64(none)
	}
}
