// Package vec holds the numeric kernels of habilis: dot products, norms,
// means and scans over contiguous float32 slabs, for dense and sparse
// vectors. It is the one home of gonum.
package vec

import (
	"math"
	"sort"

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

// MeanSparse returns the normalised mean of sparse vectors as ascending
// indices and values, or nils when the mean is zero or there are none.
func MeanSparse(idx [][]uint32, val [][]float32) ([]uint32, []float32) {
	acc := make(map[uint32]float32)
	for k := range idx {
		for i, t := range idx[k] {
			acc[t] += val[k][i]
		}
	}
	if len(acc) == 0 {
		return nil, nil
	}
	keys := make([]uint32, 0, len(acc))
	for t, v := range acc {
		if v != 0 {
			keys = append(keys, t)
		}
	}
	sort.Slice(keys, func(a, b int) bool { return keys[a] < keys[b] })
	vals := make([]float32, len(keys))
	for i, t := range keys {
		vals[i] = acc[t]
	}
	if !Normalize(vals) {
		return nil, nil
	}
	return keys, vals
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
