package collision

import (
	"math"
	"slices"

	"github.com/habilis-router/habilis/internal/par"
	"github.com/habilis-router/habilis/internal/vec"
)

// hit is a pair of tools i < j that qualifies, with its centroid similarity.
type hit struct {
	i, j int32
	sim  float32
}

// pairs finds the qualifying centroid pairs: the exact pass up to MaxTools
// tools, the restricted one above.
func (c *catalog) pairs(opts Options) (pairSet, error) {
	var hits []hit
	above := opts.Threshold
	if opts.HighOnly {
		above += highDelta
	}
	switch {
	case opts.MaxTools < 0 || len(c.tools) <= opts.MaxTools:
		if c.sparse {
			hits = c.sparseAll(opts.Threshold)
		} else {
			hits = c.denseAll(opts.Threshold)
		}
	case c.sparse:
		hits = c.sparseAbove(above)
	default:
		hits = c.denseAbove(above, maxProbes)
	}
	ps := make(pairSet, len(hits))
	for _, h := range hits {
		ps[key(int(h.i), int(h.j))] = &pair{i: int(h.i), j: int(h.j), sim: h.sim}
	}
	return ps, nil
}

// qualifies reports whether tools i and j with centroid similarity sim are a
// collision without looking at examples.
func (c *catalog) qualifies(i, j int, sim, threshold float32) bool {
	return sim >= threshold || sim >= c.tools[i].gate || sim >= c.tools[j].gate
}

// denseAll compares every pair of dense centroids by matrix-vector
// products over tiles of rows small enough to stay in cache (about 32 KB),
// so each centroid is read from memory once per tile of rows, not once per
// row.
func (c *catalog) denseAll(threshold float32) []hit {
	n, d := len(c.tools), c.dim
	if n < 2 {
		return nil
	}
	tile := max(8, min(256, 8192/d))
	nw := par.Workers(n)
	outs := make([][]hit, nw)
	bufs := make([][]float32, nw)
	for w := range bufs {
		bufs[w] = make([]float32, tile)
	}
	par.For((n+tile-1)/tile, func(w, bi int) {
		i0, i1 := bi*tile, min(n, (bi+1)*tile)
		for j0 := i0; j0 < n; j0 += tile {
			j1 := min(n, j0+tile)
			for i := i0; i < i1; i++ {
				lo := max(j0, i+1)
				if lo >= j1 {
					continue
				}
				block := vec.Slab{Dim: d, Data: c.slab.Data[lo*d : j1*d]}
				scores := bufs[w][:j1-lo]
				block.Scores(c.slab.Row(i), scores)
				for k, s := range scores {
					if j := lo + k; c.qualifies(i, j, s, threshold) {
						outs[w] = append(outs[w], hit{int32(i), int32(j), s})
					}
				}
			}
		}
	})
	return slices.Concat(outs...)
}

// sparseAll compares every pair of sparse centroids by accumulating, for
// each row, the products over the postings of its terms that come after it,
// so pairs without a common term cost nothing. Tools whose gate is at most 0
// pass even with a similarity of 0, so they are checked against every row.
func (c *catalog) sparseAll(threshold float32) []hit {
	n := len(c.tools)
	ix, open := c.newIndex(), c.openGates()
	accs := newAccumulators(par.Workers(n), n)
	par.For(n, func(w, i int) {
		a := &accs[w]
		for k := ix.start[i]; k < ix.start[i+1]; k++ {
			wi := c.val[i][k-ix.start[i]]
			for _, p := range ix.postings(ix.tids[k])[ix.pos[k]+1:] {
				a.add(p.tool, wi*p.w)
			}
		}
		emit := func(j int) {
			if s := a.sum[j]; c.qualifies(i, j, s, threshold) {
				a.hits = append(a.hits, hit{int32(i), int32(j), s})
			}
		}
		switch {
		case c.tools[i].gate <= 0:
			for j := i + 1; j < n; j++ {
				emit(j)
			}
		default:
			for _, j := range a.touched {
				emit(int(j))
			}
			for _, j := range open {
				if j > i && !a.seen[j] {
					emit(j)
				}
			}
		}
		a.reset()
	})
	return hitsOf(accs)
}

// accumulator is one worker's sums of a row's products with the other
// rows. It remembers the rows it touched, so that clearing it costs only
// those, and collects the worker's hits.
type accumulator struct {
	sum     []float32
	seen    []bool
	touched []int32
	hits    []hit
}

// newAccumulators returns nw accumulators over n rows.
func newAccumulators(nw, n int) []accumulator {
	accs := make([]accumulator, nw)
	for w := range accs {
		accs[w].sum = make([]float32, n)
		accs[w].seen = make([]bool, n)
	}
	return accs
}

// add adds x to row's sum.
func (a *accumulator) add(row int32, x float32) {
	if !a.seen[row] {
		a.seen[row] = true
		a.touched = append(a.touched, row)
	}
	a.sum[row] += x
}

// reset clears the touched rows' sums.
func (a *accumulator) reset() {
	for _, j := range a.touched {
		a.sum[j], a.seen[j] = 0, false
	}
	a.touched = a.touched[:0]
}

// hitsOf returns every accumulator's hits, in worker order.
func hitsOf(accs []accumulator) []hit {
	outs := make([][]hit, len(accs))
	for w := range accs {
		outs[w] = accs[w].hits
	}
	return slices.Concat(outs...)
}

// sparseAbove finds the pairs of sparse centroids with similarity at least
// threshold without comparing every pair (prefix filtering). Each centroid x
// is split into a prefix of its most frequent terms, with norm at most half
// of threshold / max norm, and a suffix of rarer terms. Only suffixes are
// indexed; probing with y accumulates s = suffix(x)·y exactly, and since
// x·y ≤ s + |prefix(x)|·|y|, only pairs where that bound reaches threshold
// are compared in full. Frequent terms, whose postings are long, mostly stay
// out of the index, and pairs sharing only a few rare terms are dropped by
// the bound.
//
// Row j is probed against the suffixes of rows i < j. The suffixes are all
// indexed first, postings in row order, so rows are probed independently,
// spread over GOMAXPROCS goroutines; the hits come in no particular order.
func (c *catalog) sparseAbove(threshold float32) []hit {
	n := len(c.tools)
	ix := c.newIndex()
	var maxNorm float64
	for i := range n {
		maxNorm = max(maxNorm, float64(vec.Norm(c.val[i])))
	}
	if maxNorm == 0 || threshold <= 0 {
		return nil
	}
	suffixes, slack := c.suffixes(ix, float64(threshold)/maxNorm/2, maxNorm)

	// The suffixes' postings, term by term and tools ascending within a
	// term: term t's are indexed[at[t]:at[t+1]].
	at := make([]int32, len(ix.off))
	for j := range n {
		for _, k := range suffixes[j] {
			at[ix.tids[k]+1]++
		}
	}
	for t := 1; t < len(at); t++ {
		at[t] += at[t-1]
	}
	indexed := make([]posting, at[len(at)-1])
	fill := slices.Clone(at[:len(at)-1])
	for j := range n {
		for _, k := range suffixes[j] {
			t := ix.tids[k]
			indexed[fill[t]] = posting{tool: int32(j), w: c.val[j][k-ix.start[j]]}
			fill[t]++
		}
	}
	accs := newAccumulators(par.Workers(n), n)
	par.For(n, func(w, j int) {
		a := &accs[w]
		for k := ix.start[j]; k < ix.start[j+1]; k++ {
			wj := c.val[j][k-ix.start[j]]
			t := ix.tids[k]
			for _, p := range indexed[at[t]:at[t+1]] {
				if int(p.tool) >= j {
					break
				}
				a.add(p.tool, wj*p.w)
			}
		}
		for _, i := range a.touched {
			// The bound allows for rounding in the float32 sums.
			if a.sum[i]+slack[i]+1e-5 >= threshold {
				if s := c.dot(int(i), j); s >= threshold {
					a.hits = append(a.hits, hit{i, int32(j), s})
				}
			}
		}
		a.reset()
	})
	return hitsOf(accs)
}

// suffixes splits every sparse centroid for sparseAbove: its terms ordered
// by document frequency, most frequent first (ties by term), lose a prefix
// whose norm stays within bound. It returns, per row, the positions (into
// ix.tids) of the terms after the prefix, in no particular order, and
// |prefix|·maxNorm.
//
// The prefix is usually a small part of a row, so the terms are not
// sorted: they are heaped and taken off the top until the prefix is full.
func (c *catalog) suffixes(ix *index, bound, maxNorm float64) (suffixes [][]int, slack []float32) {
	n := len(c.tools)
	bound2 := bound * bound
	suffixes = make([][]int, n)
	slack = make([]float32, n)
	heaps := make([]termHeap, par.Workers(n))
	par.For(n, func(w, i int) {
		h := heaps[w][:0]
		for k := ix.start[i]; k < ix.start[i+1]; k++ {
			tid := ix.tids[k]
			h = append(h, rankedTerm{key: uint64(math.MaxUint32-uint32(ix.df(tid)))<<32 | uint64(tid), k: k})
		}
		h.init()
		var s float64
		for len(h) > 0 {
			v := float64(c.val[i][h[0].k-ix.start[i]])
			if s+v*v > bound2 {
				break
			}
			s += v * v
			h = h.pop()
		}
		suffix := make([]int, len(h))
		for p, t := range h {
			suffix[p] = t.k
		}
		suffixes[i] = suffix
		slack[i] = float32(math.Sqrt(s) * maxNorm)
		heaps[w] = h
	})
	return suffixes, slack
}

// rankedTerm is the term at position k of ix.tids, ranked by key: the
// smaller, the earlier it joins a prefix.
type rankedTerm struct {
	key uint64
	k   int
}

// termHeap is a binary min-heap of terms by key.
type termHeap []rankedTerm

// init orders h as a heap.
func (h termHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// pop removes the smallest term, h[0], and returns the shorter heap.
func (h termHeap) pop() termHeap {
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	h.down(0)
	return h
}

// down moves h[i] down to its place.
func (h termHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r].key < h[l].key {
			m = r
		}
		if h[i].key <= h[m].key {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
