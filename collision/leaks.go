package collision

import (
	"fmt"
	"math"
	"slices"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/par"
	"github.com/habilis-router/habilis/internal/vec"
)

// leaks adds to ps every example leak, leave-one-out: an example is scored
// against its own tool's centroid computed without it, because with it the
// example pulls the centroid its way and looks safer than a new request like
// it would be. An example leaks into another tool b when it passes b's gate
// (PassesGate), or when b scores highest of all other tools, above the
// example's own score and above 0 (RanksFirst: the example would be routed
// to b).
func (c *catalog) leaks(ps pairSet, opts Options) error {
	for _, t := range c.tools {
		rec := &c.recs[t.rec]
		for k, ev := range rec.ExampleVectors {
			if zero(ev) {
				continue
			}
			if err := c.check(ev); err != nil {
				return fmt.Errorf("collision: tool %d %q: example %d: %w", t.rec, rec.Tool.Name, k, err)
			}
		}
	}
	n := len(c.tools)
	var ix *index
	var open []int
	if c.sparse {
		ix, open = c.newIndex(), c.openGates()
	}
	roc := c.rocchioNorms(opts)
	nw := par.Workers(n)
	found := make([]pairSet, nw)
	scratch := make([]*leakScratch, nw)
	for w := range nw {
		found[w] = make(pairSet)
		scratch[w] = &leakScratch{scores: make([]float32, n), seen: make([]bool, n)}
	}
	par.For(n, func(w, a int) {
		c.toolLeaks(a, ix, open, roc, scratch[w], found[w], opts)
	})
	for _, f := range found {
		for k, q := range f {
			p, ok := ps[k]
			if !ok {
				p = &pair{i: q.i, j: q.j, sim: c.dot(q.i, q.j)}
				ps[k] = p
			}
			p.merge(q, opts.MaxLeaksPerPair)
		}
	}
	return nil
}

// leakScratch is one worker's reusable buffers: scores against every
// centroid, the sum of the current tool's examples (sumD for dense
// catalogs, sum for sparse ones) and, for sparse catalogs, which tools
// share a term with the example.
type leakScratch struct {
	scores  []float32
	seen    []bool
	touched []int32
	sum     map[uint32]float64
	terms   []uint32 // sum's keys, sorted
	sumD    []float64
}

// toolLeaks finds the leaks of tool a's examples into found: each example,
// left out of a, scored against every tool (exampleScores), routed as
// hybrid mode ranks (routeOf) and reported where it leaks (reportLeak).
func (c *catalog) toolLeaks(a int, ix *index, open []int, roc []rocchio, s *leakScratch, found pairSet, opts Options) {
	rec := &c.recs[c.tools[a].rec]
	if len(rec.ExampleVectors) < 2 {
		return
	}
	ss := c.sumExamples(rec, s)
	// The description's weight in a's Rocchio vector once an example is
	// left out of it.
	m := opts.descriptionWeight(nonzero(rec.ExampleVectors) - 1)
	for k, ev := range rec.ExampleVectors {
		if zero(ev) {
			continue
		}
		es, ee := c.againstSum(ev, s)
		// own is e·(sum − e)/|sum − e|; when the other examples cancel out
		// there is no centroid to be near, so own is 0.
		var own float32
		if den2 := ss - 2*es + ee; den2 > 1e-9*max(ss, 1) {
			own = float32((es - ee) / math.Sqrt(den2))
		}
		ownRoc := ownRocchio(ev, rec.DescriptionVector, own, ss, es, ee, m, roc[a])
		candidates := c.exampleScores(ev, ix, s)
		r := c.routeOf(a, ev, candidates, s.scores, roc, ownRoc)
		leak := habilis.Leak{From: c.tools[a].name, Example: exampleText(rec, k), OwnScore: own}
		if c.sparse {
			for _, b := range candidates {
				c.reportLeak(a, int(b), r, s.scores[b], leak, found, opts)
			}
			for _, b := range open {
				if !s.seen[b] {
					c.reportLeak(a, b, r, s.scores[b], leak, found, opts)
				}
			}
			for _, b := range candidates {
				s.scores[b] = 0
				s.seen[b] = false
			}
			continue
		}
		for b := range s.scores {
			c.reportLeak(a, b, r, s.scores[b], leak, found, opts)
		}
	}
}

// sumExamples puts the sum of rec's examples in s (s.sumD for dense
// catalogs, s.sum for sparse ones), so that each leave-one-out centroid is
// (sum − e) / |sum − e| without building it, and returns |sum|².
func (c *catalog) sumExamples(rec *habilis.Record, s *leakScratch) float64 {
	var ss float64
	if !c.sparse {
		if s.sumD == nil {
			s.sumD = make([]float64, c.dim)
		}
		clear(s.sumD)
		for _, ev := range rec.ExampleVectors {
			for k, x := range ev.Dense {
				s.sumD[k] += float64(x)
			}
		}
		for _, x := range s.sumD {
			ss += x * x
		}
		return ss
	}
	if s.sum == nil {
		s.sum = make(map[uint32]float64)
	}
	clear(s.sum)
	for _, ev := range rec.ExampleVectors {
		for k, t := range ev.Indices {
			s.sum[t] += float64(ev.Values[k])
		}
	}
	// In term order, so that the sum does not depend on the map's
	// iteration order.
	s.terms = s.terms[:0]
	for t := range s.sum {
		s.terms = append(s.terms, t)
	}
	slices.Sort(s.terms)
	for _, t := range s.terms {
		ss += s.sum[t] * s.sum[t]
	}
	return ss
}

// againstSum returns e·sum and e·e for the example e and the sum in s.
func (c *catalog) againstSum(ev habilis.Vector, s *leakScratch) (es, ee float64) {
	if c.sparse {
		for m, t := range ev.Indices {
			x := float64(ev.Values[m])
			es += x * s.sum[t]
			ee += x * x
		}
		return es, ee
	}
	for m, x := range ev.Dense {
		es += float64(x) * s.sumD[m]
		ee += float64(x) * float64(x)
	}
	return es, ee
}

// ownRocchio is the Rocchio score of example e at its own tool left out of
// it (the other examples' sum with the description u weighed m), from own,
// its score at the leave-one-out centroid, and the sums sumExamples and
// againstSum computed: own itself without a description.
func ownRocchio(ev, u habilis.Vector, own float32, ss, es, ee, m float64, r rocchio) float32 {
	if zero(u) {
		return own
	}
	eu := float64(vec.DotVectors(ev, u))
	den2 := ss - 2*es + ee + 2*m*(r.su-eu) + m*m
	return float32((es - ee + m*eu) / math.Sqrt(max(den2, 1e-12)))
}

// nonzero counts the vectors of vs that are not zero.
func nonzero(vs []habilis.Vector) int {
	n := 0
	for _, v := range vs {
		if !zero(v) {
			n++
		}
	}
	return n
}

// exampleScores puts the example's score at every tool's centroid that
// matters in s.scores and returns the tools scored: every tool for dense
// vectors (nil is returned; s.scores holds them all); for sparse ones,
// those sharing a term with the example, marked in s.seen, whose scores
// the caller clears.
func (c *catalog) exampleScores(ev habilis.Vector, ix *index, s *leakScratch) []int32 {
	if !c.sparse {
		c.slab.Scores(ev.Dense, s.scores)
		return nil
	}
	s.touched = s.touched[:0]
	for m, t := range ev.Indices {
		tid, ok := ix.terms.Find(t)
		if !ok {
			continue
		}
		x := ev.Values[m]
		for _, p := range ix.postings(tid) {
			if !s.seen[p.tool] {
				s.seen[p.tool] = true
				s.touched = append(s.touched, p.tool)
			}
			s.scores[p.tool] += x * p.w
		}
	}
	return s.touched
}

// route is where an example goes as hybrid mode ranks: nearest, the tool
// other than its own that ranks first (-1 when none scores above 0), and
// whether it outranks the example's own tool, so that the example is
// routed there.
type route struct {
	nearest  int
	outranks bool
}

// routeOf returns the route of example e of tool a, ranked by the Rocchio
// score (the centroid with the description as one more example) against
// ownRoc, a's own without e. It looks at candidates with sparse vectors,
// at every tool with dense ones.
func (c *catalog) routeOf(a int, ev habilis.Vector, candidates []int32, scores []float32, roc []rocchio, ownRoc float32) route {
	best, bestScore := -1, float32(0)
	visit := func(b int) {
		if b == a {
			return
		}
		if r := roc[b].score(scores[b], vec.DotVectors(ev, c.recs[c.tools[b].rec].DescriptionVector)); r > bestScore {
			best, bestScore = b, r
		}
	}
	if c.sparse {
		for _, b := range candidates {
			visit(int(b))
		}
	} else {
		for b := range scores {
			visit(b)
		}
	}
	return route{nearest: best, outranks: best >= 0 && bestScore > ownRoc}
}

// reportLeak adds to found what a's example (leak, with its From, Example
// and OwnScore), scoring score at b, tells of the pair a, b: that b is its
// nearest other tool (r.nearest), and its leak into b when it passes b's
// gate or is routed to b.
func (c *catalog) reportLeak(a, b int, r route, score float32, leak habilis.Leak, found pairSet, opts Options) {
	if b == a {
		return
	}
	nearest := b == r.nearest
	gate := score >= c.tools[b].gate
	first := nearest && r.outranks
	if !gate && !nearest {
		return
	}
	kk := key(a, b)
	p := found[kk]
	if p == nil {
		p = &pair{i: min(a, b), j: max(a, b)}
		found[kk] = p
	}
	if nearest {
		p.nearest[p.side(a)]++
	}
	if !gate && !first {
		return
	}
	leak.Into, leak.Score, leak.RanksFirst, leak.PassesGate = c.tools[b].name, score, first, gate
	p.add(leak, a, opts.MaxLeaksPerPair)
}

// exampleText is the text of example k, or its position when the record
// lacks it.
func exampleText(rec *habilis.Record, k int) string {
	if k < len(rec.Tool.Examples) {
		return rec.Tool.Examples[k]
	}
	return fmt.Sprintf("example %d", k)
}

// rocchio holds what a tool's Rocchio score (its examples' sum S with its
// description u weighed m, normalised) needs besides a query's centroid
// and description scores: ‖S‖ (sum), S·u (su), m and ‖S + m·u‖ (norm). A
// tool without a description vector has norm 0 and scores by its centroid
// alone.
type rocchio struct {
	sum, su, m, norm float64
}

// score is the Rocchio score of a query with centroid score cent and
// description score desc.
func (r rocchio) score(cent, desc float32) float32 {
	if r.norm == 0 {
		return cent
	}
	return float32((r.sum*float64(cent) + r.m*float64(desc)) / r.norm)
}

// rocchioNorms returns every tool's rocchio under opts.
func (c *catalog) rocchioNorms(opts Options) []rocchio {
	out := make([]rocchio, len(c.tools))
	par.For(len(c.tools), func(_, t int) {
		rec := &c.recs[c.tools[t].rec]
		u := rec.DescriptionVector
		var r rocchio
		for _, v := range rec.ExampleVectors {
			r.sum += float64(vec.DotVectors(v, rec.Centroid))
			r.su += float64(vec.DotVectors(v, u))
		}
		if !zero(u) {
			r.m = opts.descriptionWeight(nonzero(rec.ExampleVectors))
			r.norm = math.Sqrt(max(r.sum*r.sum+2*r.m*r.sum*float64(vec.DotVectors(rec.Centroid, u))+r.m*r.m, 1e-12))
		}
		out[t] = r
	})
	return out
}
