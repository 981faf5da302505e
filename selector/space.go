package selector

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/layout"
	"github.com/habilis-router/habilis/internal/par"
	"github.com/habilis-router/habilis/internal/terms"
	"github.com/habilis-router/habilis/internal/vec"
)

// space scores a query against a fixed set of rows (one per tool): a dense
// slab scanned with one matrix-vector product, or a sparse inverted index
// whose postings are accumulated into the output. Rows are never copied
// again after building, and scoring allocates nothing.
type space struct {
	rows  int
	dense *vec.Slab
	// Sparse inverted index in compressed form: term → postings
	// [offsets[k], offsets[k+1]) of (row, weight), the rows packed in
	// three bytes where they fit (layout.PostingRows).
	terms   terms.Table
	offsets []int32
	prow    layout.PostingRows
	pval    []float32
	// check, for a stored index, checks each run's rows on first use.
	check *runCheck
}

// newSpace builds a space over vs; all non-zero vectors must share a form
// (the embedder's). Zero vectors score 0 against everything.
func newSpace(vs []habilis.Vector, dim int) *space {
	s := &space{rows: len(vs)}
	if dim > 0 {
		s.dense = vec.NewSlab(dim, len(vs))
		for _, v := range vs {
			if len(v.Dense) == dim {
				s.dense.Append(v.Dense)
			} else {
				s.dense.Append(nil)
			}
		}
		return s
	}
	// The distinct terms in ascending order are the slots, as in a
	// triSpace; within a slot, postings come in row order.
	order := terms.Gather(len(vs), func(set *terms.Set, r int) {
		for _, t := range vs[r].Indices {
			set.Add(t)
		}
	})
	total := 0
	for _, v := range vs {
		total += len(v.Indices)
	}
	s.terms = terms.New(order)
	// Each nonzero's slot, looked up once for both passes below.
	slots := make([]int32, 0, total)
	s.offsets = make([]int32, len(order)+1)
	for _, v := range vs {
		for _, t := range v.Indices {
			k, _ := s.terms.Find(t)
			slots = append(slots, k)
			s.offsets[k+1]++
		}
	}
	for k := range order {
		s.offsets[k+1] += s.offsets[k]
	}
	s.pval = make([]float32, total)
	fill := slices.Clone(s.offsets[:len(order)])
	s.prow = layout.PackRows(total, len(vs), func(at func(j int, row int32)) {
		for r, v := range vs {
			for i := range v.Indices {
				k := slots[0]
				slots = slots[1:]
				at(int(fill[k]), int32(r))
				s.pval[fill[k]] = v.Values[i]
				fill[k]++
			}
		}
	})
	return s
}

// scoreAll writes the query's score against every row into out, which must
// have length s.rows. It returns false, scoring nothing, when a stored
// index's postings are damaged.
func (s *space) scoreAll(q habilis.Vector, out []float32) bool {
	clear(out)
	if s.dense != nil {
		if len(q.Dense) == s.dense.Dim && s.rows > 0 {
			s.dense.Scores(q.Dense, out)
		}
		return true
	}
	for i, t := range q.Indices {
		k, ok := s.terms.Find(t)
		if !ok {
			continue
		}
		lo, hi := int(s.offsets[k]), int(s.offsets[k+1])
		vals := s.pval[lo:hi]
		if s.check != nil && !s.check.ok(k, func() bool { return s.prow.In(lo, hi, s.rows) }, s.prow.Bytes(lo, hi), vec.Bytes(vals)) {
			clear(out)
			return false
		}
		addRun(out, s.prow, lo, hi, q.Values[i], vals)
	}
	return true
}

// addRun adds w times each of the postings [lo, hi) of rows, whose
// weights are vals, to out.
func addRun(out []float32, rows layout.PostingRows, lo, hi int, w float32, vals []float32) {
	if rows.Packed == nil {
		for j, r := range rows.Wide[lo:hi] {
			out[r] += w * vals[j]
		}
		return
	}
	// Each row is the low three bytes of the word at its place, which
	// the byte after the last row lets the last one read too. Four rows
	// are read from two words at a time: one row a word took 1.5 times
	// the int32 rows' time, four take the same (0.87-1.03 ×, scoring a
	// query of 40 terms against 18 million postings; docs/benchmarks.md).
	b := rows.Packed[3*lo : 3*hi+1]
	for len(vals) >= 4 && len(b) >= 16 {
		x := binary.LittleEndian.Uint64(b)
		y := binary.LittleEndian.Uint64(b[8:])
		out[x&0xffffff] += w * vals[0]
		out[x>>24&0xffffff] += w * vals[1]
		out[(x>>48|y<<16)&0xffffff] += w * vals[2]
		out[y>>8&0xffffff] += w * vals[3]
		b, vals = b[12:], vals[4:]
	}
	for j, v := range vals {
		r := binary.LittleEndian.Uint32(b[3*j:]) & (layout.MaxPacked - 1)
		out[r] += w * v
	}
}

// scoreRow returns the query's score against dense row r, as scoreAll
// writes it; 0 for a sparse space or a query of another dimension.
func (s *space) scoreRow(q habilis.Vector, r int) float32 {
	if s.dense == nil || len(q.Dense) != s.dense.Dim {
		return 0
	}
	return s.dense.Score(q.Dense, r)
}

// scoreColumn writes the query's score against every row r into
// out[r][j]; col is scratch space of length s.rows. It returns false
// when a stored index's postings are damaged.
func (s *space) scoreColumn(q habilis.Vector, col []float32, out [][4]float32, j int) bool {
	ok := s.scoreAll(q, col)
	for r, x := range col {
		out[r][j] = x
	}
	return ok
}

// dot is vec.DotVectors, the name selector's scoring code uses.
func dot(a, b habilis.Vector) float32 { return vec.DotVectors(a, b) }

// mean is vec.MeanVectors: the normalised mean of vs (all of one form), or
// a zero Vector when there is none or it is zero.
func mean(vs []habilis.Vector) habilis.Vector { return vec.MeanVectors(vs) }

// triSpace merges three sparse row sets of one embedder (centroids,
// descriptions, documents) into one inverted index whose postings carry
// the three weights, so that one pass over a query's terms scores all
// three: one table lookup per term instead of three, and postings read in
// order.
//
// A term's postings are one run in row order. A row whose description
// lacks the term stores a description weight of 0, which adds 0 to its
// sum: 4 bytes more than leaving it out, but one run a term rather than
// two, so a query starts about half as many runs, and every posting is
// added by the same loop (docs/benchmarks.md).
type triSpace struct {
	rows  int
	terms terms.Table
	// Term k's postings are postings[offsets[k]:offsets[k+1]].
	offsets  []int32
	postings []vec.Posting
	// check, for a stored index, checks each run's postings on first use.
	check *runCheck
}

// columns returns recs' centroids, descriptions and documents, in the
// order of recs: the rows of the spaces a query is scored in.
func columns(recs []habilis.Record) (cents, descs, docs []habilis.Vector) {
	cents = make([]habilis.Vector, len(recs))
	descs = make([]habilis.Vector, len(recs))
	docs = make([]habilis.Vector, len(recs))
	for i := range recs {
		cents[i], descs[i], docs[i] = recs[i].Centroid, recs[i].DescriptionVector, recs[i].DocumentVector
	}
	return cents, descs, docs
}

// triEntry is one term of a row's three vectors: the term, then its slot
// once slots are assigned, and its three weights.
type triEntry struct {
	term uint32
	w    [3]float32
}

// mergeRow merges three vectors by term (their indices ascend), so that
// postings come out in row order and no per-row map is needed. Each
// vector's next term is widened to 64 bits, an exhausted vector's being
// past every term, so that one comparison a vector finds the smallest.
func mergeRow(vs [3]habilis.Vector) []triEntry {
	a, b, c := vs[0], vs[1], vs[2]
	row := make([]triEntry, 0, max(len(a.Indices), len(b.Indices), len(c.Indices)))
	var i, j, k int
	for {
		ta, tb, tc := head(a, i), head(b, j), head(c, k)
		t := min(ta, tb, tc)
		if t == exhausted {
			return row
		}
		e := triEntry{term: uint32(t)}
		if ta == t {
			e.w[0] = a.Values[i]
			i++
		}
		if tb == t {
			e.w[1] = b.Values[j]
			j++
		}
		if tc == t {
			e.w[2] = c.Values[k]
			k++
		}
		row = append(row, e)
	}
}

// exhausted is head's term for a vector with no term left.
const exhausted = math.MaxUint64

// head returns v's term at p, or exhausted past its last.
func head(v habilis.Vector, p int) uint64 {
	if p < len(v.Indices) {
		return uint64(v.Indices[p])
	}
	return exhausted
}

func newTriSpace(a, b, c []habilis.Vector) *triSpace {
	s := &triSpace{rows: len(a)}
	// Each row's three vectors merged by term, on every core; rows are
	// later given their slots on every core too.
	merged := make([][]triEntry, len(a))
	par.For(len(a), func(_, r int) { merged[r] = mergeRow([3]habilis.Vector{a[r], b[r], c[r]}) })
	// The distinct terms in ascending order, which is their slots' order
	// and makes the layout deterministic.
	order := terms.Gather(len(merged), func(set *terms.Set, r int) {
		for _, e := range merged[r] {
			set.Add(e.term)
		}
	})
	s.terms = terms.New(order)
	par.For(len(merged), func(_, r int) {
		row := merged[r]
		for i := range row {
			k, _ := s.terms.Find(row[i].term)
			row[i].term = uint32(k)
		}
	})
	// Count each slot's postings (offsets[k+1] for now).
	s.offsets = make([]int32, len(order)+1)
	for _, row := range merged {
		for _, e := range row {
			s.offsets[e.term+1]++
		}
	}
	for k := range order {
		s.offsets[k+1] += s.offsets[k]
	}
	s.postings = make([]vec.Posting, s.offsets[len(order)])
	// Placing the postings waits on memory, so it is shared out: each
	// worker takes an equal range of slots, which term order fills with
	// about an equal share of the postings (terms being hashes), and reads
	// every row for them. Within a slot, postings still come in row order.
	par.Ranges(len(order), func(first, end int) {
		lo, hi := uint32(first), uint32(end)
		fill := slices.Clone(s.offsets[lo:hi])
		for r, row := range merged {
			for _, e := range row {
				if e.term < lo || e.term >= hi {
					continue
				}
				f := &fill[e.term-lo]
				s.postings[*f] = vec.Posting{Cent: e.w[0], Desc: e.w[1], Doc: e.w[2], At: int32(r) * vec.RowBytes}
				*f++
			}
		}
	})
	return s
}

// accumulate writes the query's scores against row r into acc[r][0],
// acc[r][1] and acc[r][2] (centroid, description, document) for every
// row, and 0 into acc[r][3]; acc must have length s.rows. The three sums
// of a row lie side by side, so that each posting touches one cache line
// rather than three. runs is working space, returned grown for the next
// call.
//
// Every query term is looked up, and where its postings lie read, before
// any term's postings are added: each term's table entry and offsets lie
// far from the others', and with nothing else between them the processor
// waits for those reads side by side rather than one term after another.
// The table entries are touched first in a pass of their own
// (terms.Table.Touch), whose reads do not wait on the lookups' branches
// (docs/benchmarks.md).
//
// It returns false, adding nothing, when a stored index's postings are
// damaged.
func (s *triSpace) accumulate(q habilis.Vector, acc [][4]float32, runs []vec.Run) ([]vec.Run, bool) {
	if len(acc) != s.rows {
		panic("selector: accumulate into a number of sums other than the rows")
	}
	clear(acc)
	runs = runs[:0]
	s.terms.Touch(q.Indices)
	for i, t := range q.Indices {
		if k, ok := s.terms.Find(t); ok {
			runs = append(runs, vec.Run{Term: k, W: q.Values[i]})
		}
	}
	for j := range runs {
		r := &runs[j]
		r.Lo, r.Hi = s.offsets[r.Term], s.offsets[r.Term+1]
	}
	if s.check != nil {
		for j := range runs {
			r := &runs[j]
			ps := s.postings[r.Lo:r.Hi]
			if !s.check.ok(r.Term, func() bool { return vec.PostingsIn(ps, s.rows) }, vec.Bytes(ps)) {
				return runs[:0], false
			}
		}
	}
	vec.AddRuns(acc, s.postings, runs)
	return runs, true
}
