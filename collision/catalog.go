package collision

import (
	"math"

	"fmt"
	"slices"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/par"
	"github.com/habilis-router/habilis/internal/terms"
	"github.com/habilis-router/habilis/internal/vec"
)

// tool is a record with a nonzero centroid, as the analysis sees it.
type tool struct {
	rec   int // index into catalog.recs
	name  string
	gate  float32 // Radius − Margin, or the catalog threshold
	theta float64 // arccos(gate)
	// bare marks a tool without examples standing in by its description
	// vector (Options.Bare).
	bare bool
}

// catalog holds the tools with a centroid and those centroids in one form:
// a dense slab (row k is tools[k]) or sparse rows.
type catalog struct {
	recs   []habilis.Record
	tools  []tool
	sparse bool
	dim    int
	slab   *vec.Slab
	idx    [][]uint32
	val    [][]float32
}

// newCatalog checks the records and gathers their centroids. Every nonzero
// centroid must have the form (and, when dense, the dimension) of the first.
func newCatalog(recs []habilis.Record, opts Options) (*catalog, error) {
	c := &catalog{recs: recs}
	first := true
	for r := range recs {
		rec := &recs[r]
		cv, gate, ok := centroidOf(rec, r, opts)
		if !ok {
			continue
		}
		if first {
			c.sparse = cv.IsSparse()
			c.dim = len(cv.Dense)
			if !c.sparse {
				c.slab = vec.NewSlab(c.dim, len(recs))
			}
			first = false
		}
		if err := c.check(cv); err != nil {
			return nil, fmt.Errorf("collision: tool %d %q: centroid: %w", r, rec.Tool.Name, err)
		}
		if rec.HasRadius && !zero(rec.Centroid) {
			if isBad(rec.Radius) || isBad(rec.Margin) {
				return nil, fmt.Errorf("collision: tool %d %q: radius %v, margin %v: %w",
					r, rec.Tool.Name, rec.Radius, rec.Margin, habilis.ErrInvalid)
			}
			gate = rec.Radius - rec.Margin
			if opts.GateFloor > 0 {
				gate = max(gate, opts.GateFloor)
			}
		}
		c.tools = append(c.tools, tool{rec: r, name: rec.Tool.Name, gate: gate, theta: capAngle(gate), bare: zero(rec.Centroid)})
		if c.sparse {
			c.idx = append(c.idx, cv.Indices)
			c.val = append(c.val, cv.Values)
		} else {
			c.slab.Append(cv.Dense)
		}
	}
	return c, nil
}

// centroidOf returns the vector that stands for record r in the analysis,
// with its gate before any radius (the catalog threshold), or ok false
// when the record has none: its centroid, else with Options.Bare its
// description vector, gated where Bare says.
func centroidOf(rec *habilis.Record, r int, opts Options) (v habilis.Vector, gate float32, ok bool) {
	if !zero(rec.Centroid) {
		return rec.Centroid, opts.CatalogThreshold, true
	}
	if opts.Bare == nil || zero(rec.DescriptionVector) {
		return habilis.Vector{}, 0, false
	}
	gate, ok = opts.Bare(r)
	if !ok || isBad(gate) {
		return habilis.Vector{}, 0, false
	}
	return rec.DescriptionVector, gate, true
}

// check reports whether v, a nonzero vector, can be compared with the
// catalog's centroids: same form and dimension, ascending sparse indices,
// finite values.
func (c *catalog) check(v habilis.Vector) error {
	if v.Dense != nil && v.Indices != nil {
		return fmt.Errorf("both dense and sparse: %w", habilis.ErrInvalid)
	}
	if v.IsSparse() != c.sparse {
		return fmt.Errorf("mixes dense and sparse vectors: %w", habilis.ErrInvalid)
	}
	if !c.sparse {
		if len(v.Dense) != c.dim {
			return fmt.Errorf("dimension %d, want %d: %w", len(v.Dense), c.dim, habilis.ErrInvalid)
		}
		for _, x := range v.Dense {
			if isBad(x) {
				return fmt.Errorf("value %v: %w", x, habilis.ErrInvalid)
			}
		}
		return nil
	}
	if len(v.Indices) != len(v.Values) {
		return fmt.Errorf("%d indices, %d values: %w", len(v.Indices), len(v.Values), habilis.ErrInvalid)
	}
	for k, t := range v.Indices {
		if k > 0 && t <= v.Indices[k-1] {
			return fmt.Errorf("indices not strictly ascending at %d: %w", k, habilis.ErrInvalid)
		}
		if isBad(v.Values[k]) {
			return fmt.Errorf("value %v: %w", v.Values[k], habilis.ErrInvalid)
		}
	}
	return nil
}

// zero reports whether v has no nonzero coordinate, in either form: such a
// vector scores 0 against everything and marks a text with nothing known in
// it, not a direction.
func zero(v habilis.Vector) bool {
	for _, x := range v.Dense {
		if x != 0 {
			return false
		}
	}
	for _, x := range v.Values {
		if x != 0 {
			return false
		}
	}
	return true
}

// openGates returns the tools whose gate is at most 0: they pass even a
// score of 0, so the sparse passes, which only see tools that share a term
// with what they score, must check them against everything.
func (c *catalog) openGates() []int {
	var open []int
	for i, t := range c.tools {
		if t.gate <= 0 {
			open = append(open, i)
		}
	}
	return open
}

// dot returns centroid i · centroid j.
func (c *catalog) dot(i, j int) float32 {
	if c.sparse {
		return vec.SparseDot(c.idx[i], c.val[i], c.idx[j], c.val[j])
	}
	return vec.Dot(c.slab.Row(i), c.slab.Row(j))
}

// posting is one tool's weight for a term of an inverted index.
type posting struct {
	tool int32
	w    float32
}

// index is an inverted index over the sparse centroids. Terms are renumbered
// densely and postings are held in one array, term by term (postings of term
// t are flat[off[t]:off[t+1]], tools ascending). tids[k] and pos[k] give, for
// the k-th nonzero of the centroids in row order (row i's start at
// start[i]), its term and its place within that term's postings.
type index struct {
	flat  []posting
	off   []int32
	tids  []int32
	pos   []int32
	start []int
	terms terms.Table
}

// postings returns the postings of term tid.
func (ix *index) postings(tid int32) []posting { return ix.flat[ix.off[tid]:ix.off[tid+1]] }

// df returns how many centroids hold term tid.
func (ix *index) df(tid int32) int { return int(ix.off[tid+1] - ix.off[tid]) }

func (c *catalog) newIndex() *index {
	nnz := 0
	for i := range c.tools {
		nnz += len(c.idx[i])
	}
	ix := &index{
		start: make([]int, len(c.tools)+1),
		tids:  make([]int32, nnz),
		pos:   make([]int32, nnz),
		flat:  make([]posting, nnz),
	}
	for i := range c.tools {
		ix.start[i+1] = ix.start[i] + len(c.idx[i])
	}
	// Term ids number the distinct terms in ascending order: sets
	// gather them, and a table gives each nonzero its id, on every core
	// (a map on one goroutine did this before, and was most of the
	// index's time).
	order := terms.Gather(len(c.tools), func(set *terms.Set, i int) {
		for _, t := range c.idx[i] {
			set.Add(t)
		}
	})
	ix.terms = terms.New(order)
	par.For(len(c.tools), func(_, i int) {
		for m, t := range c.idx[i] {
			ix.tids[ix.start[i]+m], _ = ix.terms.Find(t)
		}
	})
	ix.off = make([]int32, len(order)+1)
	for _, tid := range ix.tids {
		ix.off[tid+1]++
	}
	for t := range order {
		ix.off[t+1] += ix.off[t]
	}
	// Placing the postings waits on memory, so it is shared out: each
	// worker takes an equal range of term ids, which hash order fills
	// with about an equal share of the postings, and reads every row for
	// them. Within a term, postings still come in row order.
	par.Ranges(len(order), func(first, end int) {
		lo, hi := int32(first), int32(end)
		fill := slices.Clone(ix.off[lo:hi])
		for i := range c.tools {
			for k := ix.start[i]; k < ix.start[i+1]; k++ {
				tid := ix.tids[k]
				if tid < lo || tid >= hi {
					continue
				}
				f := &fill[tid-lo]
				ix.pos[k] = *f - ix.off[tid]
				ix.flat[*f] = posting{tool: int32(i), w: c.val[i][k-ix.start[i]]}
				*f++
			}
		}
	})
	return ix
}

// spread writes row i's values (vals, its centroid's) into y at their
// term ids; unspread clears them again.
func (ix *index) spread(i int, vals, y []float32) {
	for m, tid := range ix.tids[ix.start[i]:ix.start[i+1]] {
		y[tid] = vals[m]
	}
}

func (ix *index) unspread(i int, y []float32) {
	for _, tid := range ix.tids[ix.start[i]:ix.start[i+1]] {
		y[tid] = 0
	}
}

// gather returns row i's centroid (values vals) · y, a row spread out by
// spread. It adds the products in ascending term order, as vec.SparseDot
// does, the products of terms y lacks being zeros, so the two agree to
// the bit.
func (ix *index) gather(i int, vals, y []float32) float32 {
	var s float32
	for m, tid := range ix.tids[ix.start[i]:ix.start[i+1]] {
		s += vals[m] * y[tid]
	}
	return s
}

// maxAbs returns, by term id, the largest absolute value a row of vals
// (the centroids' values, row by row as the index holds them) has there.
func (ix *index) maxAbs(vals [][]float32) []float64 {
	m := make([]float64, len(ix.off)-1)
	for i, row := range vals {
		for k, v := range row {
			tid := ix.tids[ix.start[i]+k]
			m[tid] = max(m[tid], math.Abs(float64(v)))
		}
	}
	return m
}
