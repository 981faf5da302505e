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
		ps[key(int(h.i), int(h.j))] = &pair{i: int(h.i), j: int(h.j), sim: h.sim, centroids: true}
	}
	return ps, nil
}

// keepNearestBare drops from ps the pairs of two tools without examples
// that are not each other's most similar such tool. Their pairs rest on
// the similarity of their descriptions alone, whose scale is the
// embedder's: a semantic model puts most descriptions of one catalog
// above any fixed threshold (205 of the 1,891 pairs of the MCP
// development catalog A with Universal Sentence Encoder lite, at 0.8),
// so that the report would list them all. Mutual nearest descriptions
// are the pairs a request worded for one would most likely reach the
// other by, whatever the scale.
func (c *catalog) keepNearestBare(ps pairSet) {
	best := make(map[int]float32)
	bothBare := func(p *pair) bool { return c.tools[p.i].bare && c.tools[p.j].bare }
	for _, p := range ps {
		if bothBare(p) {
			best[p.i] = max(best[p.i], p.sim)
			best[p.j] = max(best[p.j], p.sim)
		}
	}
	for k, p := range ps {
		if bothBare(p) && (p.sim < best[p.i] || p.sim < best[p.j]) {
			delete(ps, k)
		}
	}
}

// qualifies reports whether tools i and j with centroid similarity sim are a
// collision without looking at examples: similar centroids, or the centroid
// of one, the mean of its examples, passing the other's gate. A tool
// without examples has no such typical request (its description is no
// request, and description gates sit where generic requests score, which
// the descriptions of a catalog's tools all pass), so such a pair needs
// the similarity.
func (c *catalog) qualifies(i, j int, sim, threshold float32) bool {
	ti, tj := &c.tools[i], &c.tools[j]
	return sim >= threshold || !tj.bare && sim >= ti.gate || !ti.bare && sim >= tj.gate
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
// leaves a set of its terms unindexed, P(x), whose part of any product is
// bounded: x·y ≤ s + slack(x), where s is the product over the indexed terms
// and slack(x) the smaller of |P(x)|·max norm and Σ |x_t|·max_t (max_t the
// largest weight any centroid has on term t), at most threshold / 2. Only
// the indexed terms are, so probing with y accumulates s exactly, a pair
// that shares no indexed term stays under threshold, and only pairs where
// the bound reaches it are compared in full. The unindexed terms are
// chosen for the postings they save per share of the bound they take
// (see suffixes), so frequent terms, whose postings are long, mostly stay
// out of the index.
//
// Row j is probed against the indexed terms of rows i < j. They are all
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
	suffixes, slack := c.suffixes(ix, float64(threshold)/2, maxNorm)
	p := probe{c: c, ix: ix, slack: slack, threshold: threshold}
	p.at, p.indexed = c.suffixPostings(ix, suffixes)
	nw := par.Workers(n)
	accs := newAccumulators(nw, n)
	// A probe's centroid spread out by term id, so that verifying a
	// candidate reads one slot per term of it rather than merging two
	// sorted lists, whose branches mispredict.
	spread := make([][]float32, nw)
	par.For(n, func(w, j int) {
		if spread[w] == nil {
			spread[w] = make([]float32, len(ix.off)-1)
		}
		p.row(j, &accs[w], spread[w])
	})
	return hitsOf(accs)
}

// suffixPostings returns the postings of the rows' indexed terms
// (suffixes), term by term and tools ascending within a term: term t's
// are indexed[at[t]:at[t+1]].
func (c *catalog) suffixPostings(ix *index, suffixes [][]int) (at []int32, indexed []posting) {
	at = make([]int32, len(ix.off))
	for j := range suffixes {
		for _, k := range suffixes[j] {
			at[ix.tids[k]+1]++
		}
	}
	for t := 1; t < len(at); t++ {
		at[t] += at[t-1]
	}
	indexed = make([]posting, at[len(at)-1])
	fill := slices.Clone(at[:len(at)-1])
	for j := range suffixes {
		for _, k := range suffixes[j] {
			t := ix.tids[k]
			indexed[fill[t]] = posting{tool: int32(j), w: c.val[j][k-ix.start[j]]}
			fill[t]++
		}
	}
	return at, indexed
}

// probe is sparseAbove's pass over the rows: the catalog, its index, the
// indexed terms' postings (suffixPostings) and each row's bound on its
// unindexed terms (slack).
type probe struct {
	c         *catalog
	ix        *index
	at        []int32
	indexed   []posting
	slack     []float32
	threshold float32
}

// row probes row j against the indexed terms of the rows before it with
// the accumulator a, and verifies in full, with y as the row spread out
// (all zeros between calls), the candidates whose bound reaches the
// threshold.
func (p *probe) row(j int, a *accumulator, y []float32) {
	ix, vals := p.ix, p.c.val[j]
	for k := ix.start[j]; k < ix.start[j+1]; k++ {
		wj := vals[k-ix.start[j]]
		t := ix.tids[k]
		for _, q := range p.indexed[p.at[t]:p.at[t+1]] {
			if int(q.tool) >= j {
				break
			}
			a.add(q.tool, wj*q.w)
		}
	}
	spread := false
	for _, i := range a.touched {
		// The bound allows for rounding in the float32 sums.
		if a.sum[i]+p.slack[i]+1e-5 < p.threshold {
			continue
		}
		if !spread {
			ix.spread(j, vals, y)
			spread = true
		}
		if s := ix.gather(int(i), p.c.val[i], y); s >= p.threshold {
			a.hits = append(a.hits, hit{i, int32(j), s})
		}
	}
	if spread {
		ix.unspread(j, y)
	}
	a.reset()
}

// suffixes splits every sparse centroid for sparseAbove. Its terms are
// taken in order of the share of the bound each takes (|x_t|·max_t) per
// posting it would add (the term's document frequency), cheapest first
// (ties by term), and each joins the unindexed set while the set's bound
// stays within limit: the smaller of its norm times maxNorm and the sum of
// |x_t|·max_t. A term that does not fit is indexed, and the next ones
// tried. It returns, per row, the positions (into ix.tids) of the indexed
// terms, and the bound of the unindexed ones.
//
// Against taking the most frequent terms by norm alone, this indexes half
// the postings' reads at 30,000 synthetic tools for as many full
// comparisons (docs/benchmarks.md).
func (c *catalog) suffixes(ix *index, limit, maxNorm float64) (suffixes [][]int, slack []float32) {
	n := len(c.tools)
	maxAbs := ix.maxAbs(c.val)
	suffixes = make([][]int, n)
	slack = make([]float32, n)
	keys, tmps := make([][]uint64, par.Workers(n)), make([][]uint64, par.Workers(n))
	par.For(n, func(w, i int) {
		row := c.val[i]
		tids := ix.tids[ix.start[i]:ix.start[i+1]]
		// A term's rank, then its place in the row (terms ascend in it).
		ks := keys[w][:0]
		for m, tid := range tids {
			r := float32(math.Abs(float64(row[m])) * maxAbs[tid] / float64(ix.df(tid)))
			ks = append(ks, uint64(math.Float32bits(r))<<32|uint64(m))
		}
		tmps[w] = sortByRank(ks, tmps[w])
		var s2, l1, bound float64
		var suffix []int
		for _, key := range ks {
			m := int(uint32(key))
			v, mx := math.Abs(float64(row[m])), maxAbs[tids[m]]
			b := min(math.Sqrt(s2+v*v)*maxNorm, l1+v*mx)
			if b > limit {
				suffix = append(suffix, ix.start[i]+m)
				continue
			}
			s2, l1, bound = s2+v*v, l1+v*mx, b
		}
		suffixes[i] = suffix
		slack[i] = float32(bound)
		keys[w] = ks
	})
	return suffixes, slack
}

// sortByRank sorts suffixes' keys (a rank's bits above a place that
// ascends in ks) as slices.Sort would, by four byte passes over the rank
// alone, which keep the places of equal ranks in order: a row has
// hundreds of terms, where the passes take a fraction of a comparison
// sort's time. tmp is working memory, grown as needed and returned.
func sortByRank(ks, tmp []uint64) []uint64 {
	if len(ks) < 64 {
		slices.Sort(ks)
		return tmp
	}
	tmp = slices.Grow(tmp[:0], len(ks))[:len(ks)]
	src, dst := ks, tmp
	for shift := 32; shift < 64; shift += 8 {
		var c [256]int
		for _, k := range src {
			c[k>>shift&0xff]++
		}
		if c[src[0]>>shift&0xff] == len(src) {
			continue // every key has the same digit
		}
		sum := 0
		for d, n := range c {
			c[d], sum = sum, sum+n
		}
		for _, k := range src {
			d := k >> shift & 0xff
			dst[c[d]] = k
			c[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &ks[0] {
		copy(ks, src)
	}
	return tmp
}
