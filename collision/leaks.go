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
	roc := c.rocchioNorms()
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

// toolLeaks finds the leaks of tool a's examples into found.
func (c *catalog) toolLeaks(a int, ix *index, open []int, roc []rocchio, s *leakScratch, found pairSet, opts Options) {
	rec := &c.recs[c.tools[a].rec]
	evs := rec.ExampleVectors
	if len(evs) < 2 {
		return
	}
	// sum is the sum of a's examples, so each leave-one-out centroid is
	// (sum − e) / |sum − e| without building it.
	var sumD []float64
	var sumS map[uint32]float64
	if c.sparse {
		if s.sum == nil {
			s.sum = make(map[uint32]float64)
		}
		sumS = s.sum
		clear(sumS)
		for _, ev := range evs {
			for k, t := range ev.Indices {
				sumS[t] += float64(ev.Values[k])
			}
		}
	} else {
		if s.sumD == nil {
			s.sumD = make([]float64, c.dim)
		}
		sumD = s.sumD
		clear(sumD)
		for _, ev := range evs {
			for k, x := range ev.Dense {
				sumD[k] += float64(x)
			}
		}
	}
	var ss float64
	for _, x := range sumD {
		ss += x * x
	}
	if sumS != nil {
		// In term order, so that the sum does not depend on the map's
		// iteration order.
		s.terms = s.terms[:0]
		for t := range sumS {
			s.terms = append(s.terms, t)
		}
		slices.Sort(s.terms)
		for _, t := range s.terms {
			ss += sumS[t] * sumS[t]
		}
	}

	for k, ev := range evs {
		if zero(ev) {
			continue
		}
		var es, ee float64
		if c.sparse {
			for m, t := range ev.Indices {
				x := float64(ev.Values[m])
				es += x * sumS[t]
				ee += x * x
			}
		} else {
			for m, x := range ev.Dense {
				es += float64(x) * sumD[m]
				ee += float64(x) * float64(x)
			}
		}
		// own is e·(sum − e)/|sum − e|; when the other examples cancel out
		// there is no centroid to be near, so own is 0.
		var own float32
		if den2 := ss - 2*es + ee; den2 > 1e-9*max(ss, 1) {
			own = float32((es - ee) / math.Sqrt(den2))
		}

		// candidates are the tools whose score may matter: every tool for
		// dense vectors; for sparse ones, those sharing a term with the
		// example and those whose gate passes a score of 0.
		var candidates []int32
		scores := s.scores
		if c.sparse {
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
					scores[p.tool] += x * p.w
				}
			}
			candidates = s.touched
		} else {
			c.slab.Scores(ev.Dense, scores)
		}

		// Which tool the example would be routed to is decided as hybrid
		// mode ranks: by the Rocchio score (the centroid with the
		// description as one more example), its own tool's without it.
		ua := rec.DescriptionVector
		eu := vec.DotVectors(ev, ua)
		ownRoc := own
		if !zero(ua) {
			den2 := ss - 2*es + ee + 2*(roc[a].su-float64(eu)) + 1
			ownRoc = float32((es - ee + float64(eu)) / math.Sqrt(max(den2, 1e-12)))
		}
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
		if bestScore <= ownRoc {
			best = -1
		}
		text := exampleText(rec, k)
		report := func(b int) {
			if b == a {
				return
			}
			gate := scores[b] >= c.tools[b].gate
			first := b == best
			if !gate && !first {
				return
			}
			kk := key(a, b)
			p := found[kk]
			if p == nil {
				p = &pair{i: min(a, b), j: max(a, b)}
				found[kk] = p
			}
			p.add(habilis.Leak{
				From:       c.tools[a].name,
				Into:       c.tools[b].name,
				Example:    text,
				Score:      scores[b],
				OwnScore:   own,
				RanksFirst: first,
				PassesGate: gate,
			}, a, opts.MaxLeaksPerPair)
		}
		if c.sparse {
			for _, b := range candidates {
				report(int(b))
			}
			for _, b := range open {
				if !s.seen[b] {
					report(b)
				}
			}
			for _, b := range candidates {
				scores[b] = 0
				s.seen[b] = false
			}
		} else {
			for b := range scores {
				report(b)
			}
		}
	}
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
// description u as one more example, normalised) needs besides a query's
// centroid and description scores: ‖S‖ (sum), S·u (su) and ‖S + u‖
// (norm). A tool without a description vector has norm 0 and scores by its
// centroid alone.
type rocchio struct {
	sum, su, norm float64
}

// score is the Rocchio score of a query with centroid score cent and
// description score desc.
func (r rocchio) score(cent, desc float32) float32 {
	if r.norm == 0 {
		return cent
	}
	return float32((r.sum*float64(cent) + float64(desc)) / r.norm)
}

// rocchioNorms returns every tool's rocchio.
func (c *catalog) rocchioNorms() []rocchio {
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
			r.norm = math.Sqrt(max(r.sum*r.sum+2*r.sum*float64(vec.DotVectors(rec.Centroid, u))+1, 1e-12))
		}
		out[t] = r
	})
	return out
}
