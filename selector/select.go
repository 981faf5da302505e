package selector

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/habilis-router/habilis"
)

// DefaultK is how many tools a selection returns when K is 0.
const DefaultK = 5

// scratch holds one selection's per-tool score buffers, reused through a
// pool so that a selection over a large catalog allocates little.
type scratch struct {
	cent, desc, doc, roc, fused []float32
	acc                         [][4]float32 // for triSpace
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func (s *scratch) size(n int) {
	if cap(s.cent) < n {
		s.cent, s.desc, s.doc, s.roc, s.fused = make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	}
	s.cent, s.desc, s.doc, s.roc, s.fused = s.cent[:n], s.desc[:n], s.doc[:n], s.roc[:n], s.fused[:n]
	if cap(s.acc) < n {
		s.acc = make([][4]float32, n)
	}
	s.acc = s.acc[:n]
}

// Select returns the tools that fit query, best first, with the figures
// that explain each. It returns ErrInvalid for an empty query or a bad
// option and ErrNotFound for an unknown pinned or denied tool.
func (r *Router) Select(ctx context.Context, query string, opts habilis.SelectOptions) (*habilis.Decision, error) {
	d, _, err := r.SelectRanked(ctx, query, opts)
	return d, err
}

// SelectRanked is Select that also returns the ranking behind the
// decision (up to K tools, whether or not they pass their gates), from the
// same embedding and the same scan: evaluation measures recall and
// abstention on it.
func (r *Router) SelectRanked(ctx context.Context, query string, opts habilis.SelectOptions) (*habilis.Decision, *Ranking, error) {
	if err := r.check(); err != nil {
		return nil, nil, err
	}
	return r.cur.Load().selectQuery(ctx, query, opts)
}

// Ranking is a selection before the gates: every considered tool with its
// figures, best first. Evaluation reads it to measure recall and
// abstention separately from the decision.
type Ranking struct {
	Matches []habilis.Match
	// Confidence that some tool applies (the best tool's), for abstention.
	Confidence float32
	// gate and threshold are the best tool's gate score and threshold.
	gate, threshold float32
	// pinned holds the pinned tools' matches, scored in the same pass.
	pinned []habilis.Match
}

func (ix *index) selectQuery(ctx context.Context, query string, opts habilis.SelectOptions) (*habilis.Decision, *Ranking, error) {
	if strings.TrimSpace(query) == "" {
		return nil, nil, fmt.Errorf("select: query: must not be empty: %w", habilis.ErrInvalid)
	}
	mode, err := habilis.ParseMode(string(opts.Mode))
	if err != nil {
		return nil, nil, fmt.Errorf("select: %w", err)
	}
	k := opts.K
	if k < 0 {
		return nil, nil, fmt.Errorf("select: k %d: must not be negative: %w", k, habilis.ErrInvalid)
	}
	if k == 0 {
		k = DefaultK
	}
	denied := make(map[int]bool, len(opts.Denied))
	for _, n := range opts.Denied {
		i, ok := ix.byName[n]
		if !ok {
			return nil, nil, fmt.Errorf("select: denied tool %q: %w", n, habilis.ErrNotFound)
		}
		denied[i] = true
	}
	pinned := make([]int, 0, len(opts.Pinned))
	for _, n := range opts.Pinned {
		i, ok := ix.byName[n]
		if !ok {
			return nil, nil, fmt.Errorf("select: pinned tool %q: %w", n, habilis.ErrNotFound)
		}
		pinned = append(pinned, i)
	}
	d := &habilis.Decision{Query: query, Mode: mode, Matches: []habilis.Match{}}
	if len(ix.tools) == 0 {
		d.Abstained, d.Reason = true, "the catalog is empty"
		return d, &Ranking{Matches: []habilis.Match{}}, nil
	}
	rk, err := ix.rank(ctx, query, mode, k, denied, pinned)
	if err != nil {
		return nil, nil, err
	}
	var passed []habilis.Match
	for _, m := range rk.Matches {
		if m.Passed {
			passed = append(passed, m)
		}
	}
	switch {
	case mode == habilis.ModeDescription:
		// Description mode ranks only; the gate is reported, not applied.
		d.Matches = rk.Matches
	case len(passed) == 0:
		d.Abstained = true
		d.Reason = abstainReason(rk, mode)
		if opts.FailOpen {
			d.Matches = rk.Matches
		}
	default:
		d.Matches = passed
	}
	if len(d.Matches) > k {
		d.Matches = d.Matches[:k]
	}
	if amb := ambiguous(d.Matches); amb != "" && !d.Abstained {
		d.Ambiguous = true
		d.Reason = amb
	}
	for _, m := range rk.pinned {
		if !slices.ContainsFunc(d.Matches, func(x habilis.Match) bool { return x.Tool == m.Tool }) {
			d.Matches = append(d.Matches, m)
		}
	}
	return d, rk, nil
}

func abstainReason(rk *Ranking, mode habilis.Mode) string {
	if len(rk.Matches) == 0 {
		return "no tool shares any feature with the query"
	}
	best := rk.Matches[0]
	if mode == habilis.ModeHybrid {
		return fmt.Sprintf("no tool fits: every candidate fails its gate (best %s: score %.3f < threshold %.3f)", best.Tool, rk.gate, rk.threshold)
	}
	return fmt.Sprintf("no tool fits: every candidate fails its gate (best %s: score %.3f < gate %.3f)", best.Tool, rk.gate, rk.threshold)
}

// ambiguous returns a reason when two of the passing matches collide.
func ambiguous(ms []habilis.Match) string {
	for i := range ms {
		if !ms[i].Passed {
			continue
		}
		for j := i + 1; j < len(ms); j++ {
			if ms[j].Passed && slices.Contains(ms[i].CollidesWith, ms[j].Tool) {
				return fmt.Sprintf("ambiguous: %s and %s both fit and their regions overlap", ms[i].Tool, ms[j].Tool)
			}
		}
	}
	return ""
}

// signals are one tool's raw scores for a query.
type signals struct {
	tool                 int
	cent, desc, doc, ex  float32
	roc                  float32
	fused                float32
	gateScore, threshold float32
}

// queryVectors embeds the query for the main and the lexical embedder.
func (ix *index) queryVectors(ctx context.Context, query string) (q, ql habilis.Vector, err error) {
	vs, err := ix.emb.Embed(ctx, []string{query}, habilis.Query)
	if err != nil {
		return q, ql, fmt.Errorf("select: embed query: %w", err)
	}
	if len(vs) != 1 {
		return q, ql, fmt.Errorf("select: embed query: %d vectors for 1 text: %w", len(vs), habilis.ErrUnavailable)
	}
	q = vs[0]
	switch {
	case ix.lex == nil:
	case ix.sameLex:
		ql = q
	default:
		ls, err := ix.lex.Embed(ctx, []string{query}, habilis.Query)
		if err != nil {
			return q, ql, fmt.Errorf("select: embed query lexically: %w", err)
		}
		if len(ls) == 1 {
			ql = ls[0]
		}
	}
	return q, ql, nil
}

// signalsOf returns tool i's signals in description and centroid modes,
// ranked by key, with its centroid-mode gate: its centroid score (its
// description score without examples) against its gate threshold.
func (ix *index) signalsOf(s *scratch, key []float32, i int) signals {
	sg := signals{tool: i, cent: s.cent[i], desc: s.desc[i], fused: key[i]}
	sg.threshold, _, _ = ix.gate(i)
	if len(ix.tools[i].tool.Examples) > 0 {
		sg.gateScore = sg.cent
	} else {
		sg.gateScore = sg.desc
	}
	return sg
}

// rank scores every tool and returns the best k (denied tools excluded).
func (ix *index) rank(ctx context.Context, query string, mode habilis.Mode, k int, denied map[int]bool, pinned []int) (*Ranking, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("select: %w", err)
	}
	n := len(ix.tools)
	k = min(k, n)
	q, ql, err := ix.queryVectors(ctx, query)
	if err != nil {
		return nil, err
	}
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	s.size(n)
	ix.scoreAll(q, ql, s.acc, s.cent, s.desc, s.doc)
	var key []float32
	switch mode {
	case habilis.ModeDescription:
		key = s.desc
	case habilis.ModeCentroid:
		key = s.cent
	default:
		rk := ix.hybrid(q, s, k, denied)
		for _, i := range pinned {
			m := ix.hybridMatch(ix.hybridSignals(s, i))
			m.Pinned = true
			rk.pinned = append(rk.pinned, m)
		}
		return rk, nil
	}
	top := topK(key, k, denied)
	rk := &Ranking{Matches: make([]habilis.Match, 0, len(top))}
	for _, i := range top {
		sg := ix.signalsOf(s, key, i)
		rk.Matches = append(rk.Matches, ix.explain(sg))
		if len(rk.Matches) == 1 {
			rk.gate, rk.threshold = sg.gateScore, sg.threshold
		}
	}
	for _, i := range pinned {
		m := ix.explain(ix.signalsOf(s, key, i))
		m.Pinned = true
		rk.pinned = append(rk.pinned, m)
	}
	if len(rk.Matches) > 0 {
		best := rk.Matches[0]
		if mode == habilis.ModeCentroid {
			rk.Confidence = best.Confidence
		} else {
			rk.Confidence = best.Score
		}
	}
	return rk, nil
}

// hybrid ranks by a fusion of z-scores (each signal standardised over the
// catalog, so that no signal dominates by its scale): the Rocchio score
// (examples' centroid with the description as one more example), the
// description, the whole-document lexical score and, when weighted, the
// nearest example, plus any prior learned from labelled traffic. The
// nearest example, the costliest, is scored only for the candidates the
// others put near the top. The gate is on the Rocchio score, the best
// evidence that some tool applies (see hybridSignals).
func (ix *index) hybrid(q habilis.Vector, s *scratch, k int, denied map[int]bool) *Ranking {
	w := ix.cal.Weights
	for i := range s.roc {
		s.roc[i] = ix.rocchio(i, s.cent[i], s.desc[i])
	}
	fused := s.fused
	fuse(w, ix.prior, s.roc, s.desc, s.doc, fused)
	pool := k
	if w.Example != 0 {
		pool = max(2*k, 16)
	}
	top := topK(fused, min(pool, len(fused)), denied)
	sgs := make([]signals, len(top))
	for j, i := range top {
		sgs[j] = ix.hybridSignals(s, i)
	}
	if w.Example != 0 {
		exs := make([]float32, len(sgs))
		for j := range sgs {
			i := sgs[j].tool
			if len(ix.tools[i].tool.Examples) > 0 {
				sgs[j].ex = ix.nearestExample(i, q)
			} else {
				sgs[j].ex = sgs[j].desc
			}
			exs[j] = sgs[j].ex
		}
		em, esd := meanStd(exs)
		for j := range sgs {
			sgs[j].fused += w.Example * z(sgs[j].ex, em, esd)
		}
		slices.SortStableFunc(sgs, func(a, b signals) int { return cmp.Compare(b.fused, a.fused) })
	}
	if len(sgs) > k {
		sgs = sgs[:k]
	}
	rk := &Ranking{Matches: make([]habilis.Match, len(sgs))}
	for j, sg := range sgs {
		rk.Matches[j] = ix.hybridMatch(sg)
	}
	if len(rk.Matches) > 0 {
		rk.Confidence = rk.Matches[0].Confidence
		rk.gate, rk.threshold = sgs[0].gateScore, sgs[0].threshold
	}
	return rk
}

// fuse writes hybrid mode's fused score of every tool into out: the
// weighted sum of each signal's z-score over the catalog (so that no signal
// dominates by its scale) plus the tool's prior, if any.
func fuse(w Weights, prior, roc, desc, doc, out []float32) {
	rm, rsd := meanStd(roc)
	dm, dsd := meanStd(desc)
	lm, lsd := meanStd(doc)
	for i := range out {
		out[i] = w.Centroid*z(roc[i], rm, rsd) + w.Description*z(desc[i], dm, dsd) + w.Document*z(doc[i], lm, lsd)
		if prior != nil {
			out[i] += prior[i]
		}
	}
}

// Scores are one query's raw signals for every tool of the catalog, in the
// order of Tools: what fit tunes hybrid mode on.
type Scores struct {
	Tools []string
	// Centroid, Description, Document and Rocchio are the signals; for a
	// tool without examples Centroid and Rocchio hold its description
	// score.
	Centroid, Description, Document, Rocchio []float32
	// Evidence is hybrid mode's gate score of each tool with examples,
	// compared with Calibration.HybridThreshold.
	Evidence []float32
	// Gate is each tool's centroid-mode gate score minus its radius (0 for
	// tools without one); HasRadius says which tools have one.
	Gate      []float32
	HasRadius []bool
	// HasExamples says which tools have examples.
	HasExamples []bool
}

// Fused returns the hybrid fusion of s under weights w and the per-tool
// prior (by name; missing tools have none), as selection computes it.
func (s *Scores) Fused(w Weights, prior map[string]float32) []float32 {
	var p []float32
	if len(prior) > 0 {
		p = make([]float32, len(s.Tools))
		for i, n := range s.Tools {
			p[i] = prior[n]
		}
	}
	out := make([]float32, len(s.Tools))
	fuse(w, p, s.Rocchio, s.Description, s.Document, out)
	return out
}

// Scores returns the raw signals of query for every tool.
func (r *Router) Scores(ctx context.Context, query string) (*Scores, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	ix := r.cur.Load()
	q, ql, err := ix.queryVectors(ctx, query)
	if err != nil {
		return nil, err
	}
	n := len(ix.tools)
	sc := &Scores{Tools: make([]string, n), Centroid: make([]float32, n), Description: make([]float32, n),
		Document: make([]float32, n), Rocchio: make([]float32, n), Evidence: make([]float32, n), Gate: make([]float32, n),
		HasRadius: make([]bool, n), HasExamples: make([]bool, n)}
	ix.scoreAll(q, ql, make([][4]float32, n), sc.Centroid, sc.Description, sc.Document)
	for i := range ix.tools {
		t := &ix.tools[i]
		sc.Tools[i] = t.tool.Name
		sc.HasExamples[i] = len(t.tool.Examples) > 0
		sc.Rocchio[i] = ix.rocchio(i, sc.Centroid[i], sc.Description[i])
		sc.Evidence[i] = ix.evidence(sc.Rocchio[i], sc.Document[i])
		if t.hasRadius {
			sc.HasRadius[i] = true
			sc.Gate[i] = sc.Centroid[i] - t.radius
		}
	}
	return sc, nil
}

// hybridMatch explains a tool's hybrid signals, with the calibrated
// confidence that it applies.
func (ix *index) hybridMatch(sg signals) habilis.Match {
	m := ix.explain(sg)
	m.Confidence = ix.cal.Confidence.Apply(sg.gateScore - sg.threshold)
	return m
}

// hybridSignals returns tool i's hybrid signals with its hybrid gate: its
// evidence (see index.evidence) against the catalog's hybrid threshold, or,
// for a tool without examples, its description score against the
// description threshold.
func (ix *index) hybridSignals(s *scratch, i int) signals {
	sg := signals{tool: i, cent: s.cent[i], desc: s.desc[i], doc: s.doc[i], roc: s.roc[i], fused: s.fused[i]}
	if len(ix.tools[i].tool.Examples) > 0 {
		sg.gateScore, sg.threshold = ix.evidence(sg.roc, sg.doc), ix.cal.HybridThreshold
	} else {
		sg.gateScore, sg.threshold = sg.desc, ix.cal.DescriptionThreshold
	}
	return sg
}

// explain turns signals into a Match.
func (ix *index) explain(sg signals) habilis.Match {
	t := &ix.tools[sg.tool]
	_, radius, src := ix.gate(sg.tool)
	cent := sg.cent
	if len(t.tool.Examples) == 0 {
		cent = 0
	}
	m := habilis.Match{
		Tool:             t.tool.Name,
		Score:            sg.fused,
		CentroidScore:    cent,
		DescriptionScore: sg.desc,
		ExampleScore:     sg.ex,
		Radius:           radius,
		RadiusSource:     src,
		Margin:           t.margin,
		Passed:           sg.gateScore >= sg.threshold,
		Gate:             sg.threshold,
		GateScore:        sg.gateScore,
		Confidence:       clamp01(0.5 + (sg.gateScore - sg.threshold)),
		CollidesWith:     nonNil(ix.collides[sg.tool]),
	}
	return m
}

func meanStd(xs []float32) (mean, std float32) {
	if len(xs) == 0 {
		return 0, 1
	}
	var s, ss float64
	for _, x := range xs {
		s += float64(x)
		ss += float64(x) * float64(x)
	}
	m := s / float64(len(xs))
	v := ss/float64(len(xs)) - m*m
	if v <= 1e-12 {
		return float32(m), 1
	}
	return float32(m), float32(math.Sqrt(v))
}

func z(x, mean, std float32) float32 { return (x - mean) / std }

// topK returns the indexes of the k largest scores, best first, skipping
// denied ones; ties go to the lower index, so results are deterministic.
func topK(scores []float32, k int, denied map[int]bool) []int {
	if k <= 0 {
		return nil
	}
	h := &minHeap{scores: scores}
	for i, s := range scores {
		if denied[i] {
			continue
		}
		if h.Len() < k {
			heap.Push(h, i)
			continue
		}
		if worst := h.idx[0]; s > scores[worst] || (s == scores[worst] && i < worst) {
			h.idx[0] = i
			heap.Fix(h, 0)
		}
	}
	// Best first, as popping the heap would give them in reverse, without
	// boxing each index.
	slices.SortFunc(h.idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(scores[b], scores[a]), cmp.Compare(a, b))
	})
	return h.idx
}

// minHeap keeps the worst of the current top k at its root.
type minHeap struct {
	idx    []int
	scores []float32
}

func (h *minHeap) Len() int { return len(h.idx) }
func (h *minHeap) Less(a, b int) bool {
	sa, sb := h.scores[h.idx[a]], h.scores[h.idx[b]]
	if sa != sb {
		return sa < sb
	}
	return h.idx[a] > h.idx[b]
}
func (h *minHeap) Swap(a, b int) { h.idx[a], h.idx[b] = h.idx[b], h.idx[a] }
func (h *minHeap) Push(x any)    { h.idx = append(h.idx, x.(int)) }
func (h *minHeap) Pop() any {
	x := h.idx[len(h.idx)-1]
	h.idx = h.idx[:len(h.idx)-1]
	return x
}
