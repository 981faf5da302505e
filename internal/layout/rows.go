package layout

import (
	"fmt"
	"math"
	"slices"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/par"
	"github.com/habilis-router/habilis/internal/vec"
)

// A row's vectors, in the order Rows and Digests give them.
const (
	Cent = iota
	Desc
	Doc
	signals
)

// Rows are the vectors a stored index holds, a row a tool in name order:
// each tool's centroid, description and document as the records the index
// was built from carry them, except that a sparse vector's coordinates of
// value 0 are not held (a store keeps such a vector itself). Every slice
// is a copy of its own, not the index's memory.
type Rows struct {
	dim int
	sig [signals]rowVectors
}

// rowVectors are one signal's vectors: dense rows of dim values, or
// sparse ones, row r's coordinates at [start[r], start[r+1]).
type rowVectors struct {
	dense []float32
	start []int
	idx   []uint32
	val   []float32
}

// Vector returns the vector of signal sig in row r.
func (rs *Rows) Vector(r, sig int) habilis.Vector {
	s := &rs.sig[sig]
	if s.dense != nil {
		return habilis.Vector{Dense: s.dense[r*rs.dim : (r+1)*rs.dim : (r+1)*rs.dim]}
	}
	lo, hi := s.start[r], s.start[r+1]
	if lo == hi {
		return habilis.Vector{}
	}
	return habilis.Vector{Indices: s.idx[lo:hi:hi], Values: s.val[lo:hi:hi]}
}

// ReadRows returns the vectors l holds. The postings and sparse values,
// which Parse leaves unchecked, are checked against their CRCs whole.
func ReadRows(l *Layout) (*Rows, error) {
	rs, fill, err := allocRows(l)
	if err != nil {
		return nil, err
	}
	if l.Merged {
		err = fillTri(l, rs, fill)
	}
	for sig := range signals {
		if err == nil && !l.Merged && rs.sig[sig].start != nil {
			err = fillSpace(l, SecCent+8*uint32(sig), &rs.sig[sig], sig, fill)
		}
	}
	if err != nil {
		return nil, err
	}
	// A term's postings out of row order would leave rows short.
	for r := range fill {
		for sig := range signals {
			if s := &rs.sig[sig]; s.start != nil && fill[r][sig] != s.start[r+1] {
				return nil, fmt.Errorf("%w: postings out of row order", ErrLayout)
			}
		}
	}
	return rs, nil
}

// allocRows counts each row's coordinates and returns rows of that room
// (the dense ones copied already), with where each row's fill starts.
func allocRows(l *Layout) (*Rows, [][signals]int, error) {
	rs := &Rows{dim: l.Dim}
	counts, err := countRows(l)
	if err != nil {
		return nil, nil, err
	}
	for sig := range signals {
		s := &rs.sig[sig]
		if l.Dim > 0 && sig != Doc {
			d, err := View[float32](l, SecCent+8*uint32(sig)+SpDense, l.Tools*l.Dim)
			if err != nil {
				return nil, nil, err
			}
			s.dense = append(make([]float32, 0, len(d)), d...)
			continue
		}
		s.start = make([]int, l.Tools+1)
		for r := range l.Tools {
			s.start[r+1] = s.start[r] + counts[r][sig]
		}
		s.idx, s.val = make([]uint32, s.start[l.Tools]), make([]float32, s.start[l.Tools])
	}
	fill := counts // reused: each row's fill starts where its room does
	for r := range fill {
		for sig := range signals {
			fill[r][sig] = 0
			if rs.sig[sig].start != nil {
				fill[r][sig] = rs.sig[sig].start[r]
			}
		}
	}
	return rs, fill, nil
}

// countRows counts each row's coordinates of each sparse signal, and
// checks the postings (walk). A merged space's are counted in a loop of
// their own: a call a coordinate made ReadRows at 100,000 lexical tools
// take 1.4-1.8 s against 1.1-1.9 s (three runs each, in turn).
func countRows(l *Layout) ([][signals]int, error) {
	counts := make([][signals]int, l.Tools)
	if !l.Merged {
		err := walk(l, func(sig, row int, _ uint32, _ float32) { counts[row][sig]++ }, nil)
		return counts, err
	}
	if err := l.Check(SecTriPostings); err != nil {
		return nil, err
	}
	ps, err := View[vec.Posting](l, SecTriPostings, -1)
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		row := int(p.At / vec.RowBytes)
		if p.At < 0 || p.At%vec.RowBytes != 0 || row >= l.Tools {
			return nil, fmt.Errorf("%w: a posting of row %d of %d", ErrLayout, row, l.Tools)
		}
		c := &counts[row]
		c[Cent] += nonzero(p.Cent)
		c[Desc] += nonzero(p.Desc)
		c[Doc] += nonzero(p.Doc)
	}
	return counts, nil
}

func nonzero(w float32) int {
	if w != 0 {
		return 1
	}
	return 0
}

// fillBlock is how many rows ReadRows fills at a time. Postings come by
// term, each term's in row order, so filling every row at once writes
// all over the rows' arrays, a cache miss a coordinate (1.9 s at 30,000
// lexical tools); a block of rows at a time, each term's postings taken
// up to the block's end, writes into a few megabytes.
const fillBlock = 1024

// fillTri fills the rows from a merged space's postings, which walk has
// checked.
func fillTri(l *Layout, rs *Rows, fill [][signals]int) error {
	ps, ts, offsets, err := triSpace(l)
	if err != nil {
		return err
	}
	cur := slices.Clone(offsets[:len(ts)])
	for r0 := 0; r0 < l.Tools; r0 += fillBlock {
		end := int32(min(r0+fillBlock, l.Tools)) * vec.RowBytes
		for k, t := range ts {
			j, hi := cur[k], offsets[k+1]
			for ; j < hi && ps[j].At < end; j++ {
				p := &ps[j]
				f := &fill[p.At/vec.RowBytes]
				for sig, w := range [signals]float32{p.Cent, p.Desc, p.Doc} {
					if w != 0 {
						s := &rs.sig[sig]
						s.idx[f[sig]], s.val[f[sig]] = t, w
						f[sig]++
					}
				}
			}
			cur[k] = j
		}
	}
	return nil
}

// fillSpace fills signal sig's rows from a sparse space's postings,
// which walk has checked.
func fillSpace(l *Layout, base uint32, s *rowVectors, sig int, fill [][signals]int) error {
	rows, vals, ts, offsets, err := sparseSpace(l, base)
	if err != nil {
		return err
	}
	cur := slices.Clone(offsets[:len(ts)])
	for r0 := 0; r0 < l.Tools; r0 += fillBlock {
		end := int32(min(r0+fillBlock, l.Tools))
		for k, t := range ts {
			j, hi := cur[k], offsets[k+1]
			for ; j < hi && rows.At(int(j)) < end; j++ {
				if w := vals[j]; w != 0 {
					f := &fill[rows.At(int(j))][sig]
					s.idx[*f], s.val[*f] = t, w
					*f++
				}
			}
			cur[k] = j
		}
	}
	return nil
}

// Digests returns a digest of each row's three vectors, as Digest gives
// it for a vector, without copying them: what a store compares a record's
// vectors with before it leaves them to the index.
//
// The coordinates are walked on every core, each worker a share of each
// space's terms and of the dense rows into digests of its own, which are
// then added up: a digest is a sum, so the shares give the same digests
// as one walk. A store's write takes them before its first chunk, which
// kept the other core idle (docs/benchmarks.md).
func Digests(l *Layout) ([][signals]uint64, error) {
	if err := checkWalked(l); err != nil {
		return nil, err
	}
	n := par.Workers(l.Tools)
	parts := make([][][signals]uint64, n)
	errs := make([]error, n)
	par.For(n, func(_, i int) {
		d := make([][signals]uint64, l.Tools)
		errs[i] = walkShare(l, i, n, func(sig, row int, term uint32, w float32) { d[row][sig] += mix(term, w) },
			func(sig, row int, v []float32) { d[row][sig] = denseDigest(v) })
		parts[i] = d
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	d := parts[0]
	for _, p := range parts[1:] {
		for r := range d {
			for sig := range signals {
				d[r][sig] += p[r][sig]
			}
		}
	}
	return d, nil
}

// Digest is a digest of v's nonzero coordinates (index and value bits),
// which Digests gives for a row that holds v.
func Digest(v habilis.Vector) uint64 {
	if v.Dense != nil {
		return denseDigest(v.Dense)
	}
	var d uint64
	for i, t := range v.Indices {
		if i < len(v.Values) && v.Values[i] != 0 {
			d += mix(t, v.Values[i])
		}
	}
	return d
}

func denseDigest(v []float32) uint64 {
	var d uint64
	for i, x := range v {
		if x != 0 {
			d += mix(uint32(i), x)
		}
	}
	return d
}

// mix is splitmix64's finaliser of a coordinate: digests add them up, so
// that the order coordinates are visited in does not matter.
func mix(term uint32, w float32) uint64 {
	z := uint64(term)<<32 | uint64(math.Float32bits(w))
	z += 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// walk calls sparse with every nonzero coordinate of the sparse vectors
// l holds, in ascending term order, and dense (when not nil) with every
// dense row.
func walk(l *Layout, sparse func(sig, row int, term uint32, w float32), dense func(sig, row int, v []float32)) error {
	if err := checkWalked(l); err != nil {
		return err
	}
	return walkShare(l, 0, 1, sparse, dense)
}

// checkWalked checks the sections walk reads that Parse does not check.
func checkWalked(l *Layout) error {
	if l.Merged {
		return l.Check(SecTriPostings)
	}
	for sig := range signals {
		base := SecCent + 8*uint32(sig)
		if l.Dim != 0 && sig != Doc {
			continue
		}
		for _, id := range []uint32{base + SpRows, base + SpRows24, base + SpVals} {
			if _, ok := l.Secs[id]; !ok && id != base+SpVals {
				continue // the rows' other form
			}
			if err := l.Check(id); err != nil {
				return err
			}
		}
	}
	return nil
}

// walkShare is walk, its sections checked, over share i of n: the i-th of
// n equal ranges of each sparse space's terms (still in ascending order)
// and of the dense rows.
func walkShare(l *Layout, i, n int, sparse func(sig, row int, term uint32, w float32), dense func(sig, row int, v []float32)) error {
	if l.Merged {
		return walkTri(l, i, n, sparse)
	}
	for sig := range signals {
		base := SecCent + 8*uint32(sig)
		if l.Dim == 0 || sig == Doc {
			if err := walkSpace(l, base, sig, i, n, sparse); err != nil {
				return err
			}
			continue
		}
		if dense == nil {
			continue
		}
		d, err := View[float32](l, base+SpDense, l.Tools*l.Dim)
		if err != nil {
			return err
		}
		for r := i * l.Tools / n; r < (i+1)*l.Tools/n; r++ {
			dense(sig, r, d[r*l.Dim:(r+1)*l.Dim])
		}
	}
	return nil
}

// slotTerms returns a space's terms in slot order and its offsets, for
// total postings.
func slotTerms(l *Layout, termsID, offsetsID uint32, total int) ([]uint32, []int32, error) {
	offsets, err := View[int32](l, offsetsID, -1)
	if err != nil {
		return nil, nil, err
	}
	if len(offsets) == 0 || offsets[0] != 0 || int(offsets[len(offsets)-1]) != total {
		return nil, nil, fmt.Errorf("%w: damaged posting offsets", ErrLayout)
	}
	for k := 1; k < len(offsets); k++ {
		if offsets[k] < offsets[k-1] {
			return nil, nil, fmt.Errorf("%w: damaged posting offsets", ErrLayout)
		}
	}
	raw, err := View[uint32](l, termsID, -1)
	if err != nil {
		return nil, nil, err
	}
	t, err := termTable(raw, len(offsets)-1)
	if err != nil {
		return nil, nil, err
	}
	return t, offsets, nil
}

// triSpace returns the sections of the merged space: its postings, its
// terms in slot order and their offsets.
func triSpace(l *Layout) (ps []vec.Posting, ts []uint32, offsets []int32, err error) {
	if ps, err = View[vec.Posting](l, SecTriPostings, -1); err != nil {
		return nil, nil, nil, err
	}
	if ts, offsets, err = slotTerms(l, SecTriTerms, SecTriOffsets, len(ps)); err != nil {
		return nil, nil, nil, err
	}
	return ps, ts, offsets, nil
}

// walkTri calls fn for each weight of the merged space's postings of
// share i of n of its terms, checking that each posting names a row.
func walkTri(l *Layout, i, n int, fn func(sig, row int, term uint32, w float32)) error {
	ps, ts, offsets, err := triSpace(l)
	if err != nil {
		return err
	}
	for k := i * len(ts) / n; k < (i+1)*len(ts)/n; k++ {
		t := ts[k]
		for _, p := range ps[offsets[k]:offsets[k+1]] {
			row := int(p.At / vec.RowBytes)
			if p.At < 0 || p.At%vec.RowBytes != 0 || row >= l.Tools {
				return fmt.Errorf("%w: a posting of row %d of %d", ErrLayout, row, l.Tools)
			}
			for sig, w := range [signals]float32{p.Cent, p.Desc, p.Doc} {
				if w != 0 {
					fn(sig, row, t, w)
				}
			}
		}
	}
	return nil
}

func walkSpace(l *Layout, base uint32, sig, i, n int, fn func(sig, row int, term uint32, w float32)) error {
	rows, vals, ts, offsets, err := sparseSpace(l, base)
	if err != nil {
		return err
	}
	for k := i * len(ts) / n; k < (i+1)*len(ts)/n; k++ {
		t := ts[k]
		for j := offsets[k]; j < offsets[k+1]; j++ {
			r := rows.At(int(j))
			if r < 0 || int(r) >= l.Tools {
				return fmt.Errorf("%w: a posting of row %d of %d", ErrLayout, r, l.Tools)
			}
			if vals[j] != 0 {
				fn(sig, int(r), t, vals[j])
			}
		}
	}
	return nil
}

// sparseSpace returns the sections of the sparse space at base: its
// postings' rows and values, its terms and each term's offset in them.
func sparseSpace(l *Layout, base uint32) (rows PostingRows, vals []float32, ts []uint32, offsets []int32, err error) {
	if rows, err = ViewRows(l, base); err != nil {
		return PostingRows{}, nil, nil, nil, err
	}
	if vals, err = View[float32](l, base+SpVals, rows.Len()); err != nil {
		return PostingRows{}, nil, nil, nil, err
	}
	if ts, offsets, err = slotTerms(l, base+SpTerms, base+SpOffsets, rows.Len()); err != nil {
		return PostingRows{}, nil, nil, nil, err
	}
	return rows, vals, ts, offsets, nil
}
