// Package vec holds the numeric kernels of habilis: dot products, norms,
// means and scans over contiguous float32 slabs, for dense and sparse
// vectors, and the posting loop that scores a query against an inverted
// index (in assembly on amd64). It is the home of gonum's numeric packages
// for routing (the only other is toolmap, whose projection needs an
// eigendecomposition), and the only package of the module that uses
// unsafe (the loop's arguments; Bytes and View, which let a stored index
// be read where it lies) or golang.org/x/sys/cpu (whether the processor
// has AVX), the generated protobuf code aside; layering_test.go keeps it
// so.
package vec

import (
	"cmp"
	"math"
	"slices"
	"sync"

	"github.com/habilis-router/habilis"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// Dot returns a·b for dense vectors of equal length.
func Dot(a, b []float32) float32 {
	if len(a) != len(b) {
		panic("vec: Dot of unequal lengths")
	}
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

// DotVectors returns a·b for two habilis vectors of the same form (both
// dense of one length, or both sparse), or 0 when their forms differ or
// either is zero.
func DotVectors(a, b habilis.Vector) float32 {
	switch {
	case a.Dense != nil && b.Dense != nil:
		if len(a.Dense) != len(b.Dense) {
			return 0
		}
		return Dot(a.Dense, b.Dense)
	case a.Indices != nil && b.Indices != nil:
		return SparseDot(a.Indices, a.Values, b.Indices, b.Values)
	}
	return 0
}

// SparseDot returns the dot product of two sparse vectors whose indices are
// strictly ascending.
func SparseDot(ai []uint32, av []float32, bi []uint32, bv []float32) float32 {
	var s float32
	i, j := 0, 0
	for i < len(ai) && j < len(bi) {
		switch {
		case ai[i] == bi[j]:
			s += av[i] * bv[j]
			i++
			j++
		case ai[i] < bi[j]:
			i++
		default:
			j++
		}
	}
	return s
}

// Norm returns the Euclidean norm of x.
func Norm(x []float32) float32 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return float32(math.Sqrt(s))
}

// Normalize scales x to unit length in place and reports whether it could
// (a zero vector stays zero and returns false).
func Normalize(x []float32) bool {
	n := Norm(x)
	if n == 0 || math.IsNaN(float64(n)) || math.IsInf(float64(n), 0) {
		return false
	}
	inv := 1 / n
	for i := range x {
		x[i] *= inv
	}
	return true
}

// MeanDense returns the normalised mean of equal-length dense vectors, or
// nil when the mean is zero or there are none.
func MeanDense(xs [][]float32) []float32 {
	if len(xs) == 0 {
		return nil
	}
	m := make([]float32, len(xs[0]))
	for _, x := range xs {
		for i, v := range x {
			m[i] += v
		}
	}
	if !Normalize(m) {
		return nil
	}
	return m
}

// MeanVectors returns the normalised mean of habilis vectors of one form
// (MeanDense or MeanSparse; dense zero vectors are left out), or a zero
// Vector when there is none or it is zero.
func MeanVectors(vs []habilis.Vector) habilis.Vector {
	if len(vs) == 0 {
		return habilis.Vector{}
	}
	if vs[0].Dense != nil {
		xs := make([][]float32, 0, len(vs))
		for _, v := range vs {
			if v.Dense != nil {
				xs = append(xs, v.Dense)
			}
		}
		return habilis.Vector{Dense: MeanDense(xs)}
	}
	idx := make([][]uint32, len(vs))
	val := make([][]float32, len(vs))
	for i, v := range vs {
		idx[i], val[i] = v.Indices, v.Values
	}
	ii, vv := MeanSparse(idx, val)
	return habilis.Vector{Indices: ii, Values: vv}
}

// MeanSparse returns the normalised mean of sparse vectors as ascending
// indices and values, or nils when the mean is zero or there are none.
//
// Each coordinate is summed in input order (vector by vector, and within a
// vector by position), so the result does not depend on how the sum is
// organised. Vectors with ascending indices are merged into the running sum
// directly; others are sorted first (stably, so repeated indices keep their
// order).
func MeanSparse(idx [][]uint32, val [][]float32) ([]uint32, []float32) {
	total := 0
	for k := range idx {
		total += len(idx[k])
	}
	if total == 0 {
		return nil, nil
	}
	s := sumsPool.Get().(*sparseSums)
	defer sumsPool.Put(s)
	// The running sum and the next one, swapped after every merge.
	keys, vals, nextK, nextV := s.keys[:0], s.vals[:0], s.nextK[:0], s.nextV[:0]
	for k := range idx {
		ii, vv := ascending(idx[k], val[k])
		nextK, nextV = mergeAdd(nextK[:0], nextV[:0], keys, vals, ii, vv)
		keys, vals, nextK, nextV = nextK, nextV, keys, vals
	}
	s.keys, s.vals, s.nextK, s.nextV = keys, vals, nextK, nextV
	n := 0
	for _, v := range vals {
		if v != 0 {
			n++
		}
	}
	outK, outV := make([]uint32, 0, n), make([]float32, 0, n)
	for i, v := range vals {
		if v != 0 {
			outK, outV = append(outK, keys[i]), append(outV, v)
		}
	}
	if !Normalize(outV) {
		return nil, nil
	}
	return outK, outV
}

// sparseSums is MeanSparse's working memory: a catalog's centroids, made
// one after another, each allocate only their own size rather than four
// times the sum of their vectors' lengths (a 30,000-tool load held twice
// its centroids' size in their backing arrays, and made ten times that in
// garbage).
type sparseSums struct {
	keys, nextK []uint32
	vals, nextV []float32
}

var sumsPool = sync.Pool{New: func() any { return new(sparseSums) }}

// ascending returns ii and vv, or copies sorted by index when ii does not
// ascend; entries with equal indices keep their order.
func ascending(ii []uint32, vv []float32) ([]uint32, []float32) {
	if slices.IsSorted(ii) {
		return ii, vv
	}
	type entry struct {
		i uint32
		v float32
	}
	es := make([]entry, len(ii))
	for k := range ii {
		es[k] = entry{ii[k], vv[k]}
	}
	slices.SortStableFunc(es, func(a, b entry) int { return cmp.Compare(a.i, b.i) })
	si, sv := make([]uint32, len(es)), make([]float32, len(es))
	for k, e := range es {
		si[k], sv[k] = e.i, e.v
	}
	return si, sv
}

// mergeAdd appends to dk, dv the sum of the sparse vectors (ak, av), whose
// indices strictly ascend, and (bk, bv), whose indices ascend (repeats
// allowed): one entry per index, summed as a's value plus b's values in
// order.
func mergeAdd(dk []uint32, dv []float32, ak []uint32, av []float32, bk []uint32, bv []float32) ([]uint32, []float32) {
	i, j := 0, 0
	for i < len(ak) || j < len(bk) {
		switch {
		case j == len(bk) || (i < len(ak) && ak[i] <= bk[j]):
			dk, dv = append(dk, ak[i]), append(dv, av[i])
			i++
		case len(dk) > 0 && dk[len(dk)-1] == bk[j]:
			// b repeats an index, or matches the one a just gave.
			dv[len(dv)-1] += bv[j]
			j++
		default:
			dk, dv = append(dk, bk[j]), append(dv, bv[j])
			j++
		}
	}
	return dk, dv
}

// Slab is a row-major matrix of dense vectors held in one contiguous
// allocation, so a scan touches memory in order and allocates nothing.
type Slab struct {
	Dim  int
	Data []float32 // len = rows * Dim
}

// NewSlab returns an empty slab for vectors of dimension dim, with room for
// capRows rows.
func NewSlab(dim, capRows int) *Slab {
	return &Slab{Dim: dim, Data: make([]float32, 0, dim*capRows)}
}

// Rows returns the number of vectors in s.
func (s *Slab) Rows() int {
	if s == nil || s.Dim == 0 {
		return 0
	}
	return len(s.Data) / s.Dim
}

// Append adds x as a new row and returns its index. x must have length Dim
// (a nil x appends a zero row).
func (s *Slab) Append(x []float32) int {
	if x == nil {
		x = make([]float32, s.Dim)
	}
	if len(x) != s.Dim {
		panic("vec: Append of wrong dimension")
	}
	s.Data = append(s.Data, x...)
	return s.Rows() - 1
}

// Row returns row i, sharing s's memory.
func (s *Slab) Row(i int) []float32 { return s.Data[i*s.Dim : (i+1)*s.Dim] }

// Score returns row i·q, equal to the bit to Scores' out[i]: Gemv takes
// each row's dot product with the same kernel.
func (s *Slab) Score(q []float32, i int) float32 {
	if len(q) != s.Dim {
		panic("vec: Score of wrong dimension")
	}
	return blas32.Dot(blas32.Vector{N: s.Dim, Data: s.Row(i), Inc: 1}, blas32.Vector{N: s.Dim, Data: q, Inc: 1})
}

// Scores writes s·q for every row into out (len Rows) with one matrix-vector
// product.
func (s *Slab) Scores(q []float32, out []float32) {
	rows := s.Rows()
	if rows == 0 {
		return
	}
	if len(q) != s.Dim || len(out) != rows {
		panic("vec: Scores of wrong dimension")
	}
	a := blas32.General{Rows: rows, Cols: s.Dim, Stride: s.Dim, Data: s.Data}
	blas32.Gemv(blas.NoTrans, 1, a, blas32.Vector{N: s.Dim, Data: q, Inc: 1}, 0, blas32.Vector{N: rows, Data: out, Inc: 1})
}
