package vec

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/habilis-router/habilis"
)

func near(a, b float32) bool { return math.Abs(float64(a-b)) <= 1e-5 }

func TestDot(t *testing.T) {
	tests := []struct {
		a, b []float32
		want float32
	}{
		{nil, nil, 0},
		{[]float32{1, 2, 3}, []float32{4, 5, 6}, 32},
		// Longer than the unrolled block of four, with a remainder.
		{[]float32{1, 1, 1, 1, 1, 1, 2}, []float32{1, 2, 3, 4, 5, 6, 10}, 41},
	}
	for _, tt := range tests {
		if got := Dot(tt.a, tt.b); !near(got, tt.want) {
			t.Errorf("Dot(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestDotVectors(t *testing.T) {
	dense := func(x ...float32) habilis.Vector { return habilis.Vector{Dense: x} }
	sparse := func(i []uint32, v ...float32) habilis.Vector { return habilis.Vector{Indices: i, Values: v} }
	tests := []struct {
		name string
		a, b habilis.Vector
		want float32
	}{
		{"dense", dense(1, 2, 3), dense(4, 5, 6), 32},
		{"dense of other lengths", dense(1, 2), dense(1, 2, 3), 0},
		{"sparse", sparse([]uint32{1, 4, 9}, 1, 2, 3), sparse([]uint32{4, 9, 12}, 5, 6, 7), 28},
		{"dense with sparse", dense(1, 2), sparse([]uint32{0}, 1), 0},
		{"zero", habilis.Vector{}, dense(1), 0},
	}
	for _, tt := range tests {
		if got := DotVectors(tt.a, tt.b); !near(got, tt.want) {
			t.Errorf("%s: DotVectors = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestSparseDot(t *testing.T) {
	tests := []struct {
		ai   []uint32
		av   []float32
		bi   []uint32
		bv   []float32
		want float32
	}{
		{nil, nil, nil, nil, 0},
		{[]uint32{1, 5, 9}, []float32{1, 2, 3}, []uint32{5, 9, 12}, []float32{10, 100, 1000}, 320},
		{[]uint32{1, 2}, []float32{1, 1}, []uint32{3, 4}, []float32{1, 1}, 0},
	}
	for _, tt := range tests {
		if got := SparseDot(tt.ai, tt.av, tt.bi, tt.bv); !near(got, tt.want) {
			t.Errorf("SparseDot(%v, %v, %v, %v) = %v, want %v", tt.ai, tt.av, tt.bi, tt.bv, got, tt.want)
		}
	}
}

func TestNormalize(t *testing.T) {
	x := []float32{3, 4}
	if !Normalize(x) || !near(x[0], 0.6) || !near(x[1], 0.8) {
		t.Errorf("Normalize([3 4]) = %v, want [0.6 0.8]", x)
	}
	zero := []float32{0, 0}
	if Normalize(zero) || zero[0] != 0 {
		t.Errorf("Normalize(zero) = true or changed it: %v", zero)
	}
	nan := []float32{float32(math.NaN()), 1}
	if Normalize(nan) {
		t.Errorf("Normalize(NaN) = true, want false")
	}
}

func TestMeans(t *testing.T) {
	m := MeanDense([][]float32{{1, 0}, {0, 1}})
	if !near(m[0], float32(math.Sqrt2/2)) || !near(m[1], float32(math.Sqrt2/2)) {
		t.Errorf("MeanDense(e1, e2) = %v, want both coordinates 1/√2", m)
	}
	if MeanDense(nil) != nil || MeanDense([][]float32{{1, 0}, {-1, 0}}) != nil {
		t.Errorf("MeanDense of nothing or of opposite vectors is not nil")
	}
	idx, val := MeanSparse([][]uint32{{2, 7}, {7, 9}}, [][]float32{{1, 1}, {1, 1}})
	// Sum: 2→1, 7→2, 9→1, norm √6.
	want := []float32{1 / float32(math.Sqrt(6)), 2 / float32(math.Sqrt(6)), 1 / float32(math.Sqrt(6))}
	if !slices.Equal(idx, []uint32{2, 7, 9}) || len(val) != 3 || !near(val[0], want[0]) || !near(val[1], want[1]) || !near(val[2], want[2]) {
		t.Errorf("MeanSparse = %v %v, want [2 7 9] %v", idx, val, want)
	}
	if i, v := MeanSparse([][]uint32{{1}, {1}}, [][]float32{{1}, {-1}}); i != nil || v != nil {
		t.Errorf("MeanSparse of cancelling vectors = %v %v, want nils", i, v)
	}
}

func TestMeanVectors(t *testing.T) {
	dense := func(x ...float32) habilis.Vector { return habilis.Vector{Dense: x} }
	sparse := func(i []uint32, v ...float32) habilis.Vector { return habilis.Vector{Indices: i, Values: v} }
	r := float32(math.Sqrt2 / 2)
	tests := []struct {
		name string
		vs   []habilis.Vector
		want habilis.Vector
	}{
		{"none", nil, habilis.Vector{}},
		{"dense", []habilis.Vector{dense(1, 0), dense(0, 1)}, dense(r, r)},
		{"dense with a zero vector", []habilis.Vector{dense(2, 0), {}, dense(0, 2)}, dense(r, r)},
		{"sparse", []habilis.Vector{sparse([]uint32{3}, 1), sparse([]uint32{8}, 1)}, sparse([]uint32{3, 8}, r, r)},
		{"cancelling", []habilis.Vector{dense(1, 0), dense(-1, 0)}, habilis.Vector{}},
	}
	for _, tt := range tests {
		got := MeanVectors(tt.vs)
		if !slices.Equal(got.Indices, tt.want.Indices) || len(got.Dense) != len(tt.want.Dense) || len(got.Values) != len(tt.want.Values) {
			t.Errorf("%s: MeanVectors = %+v, want %+v", tt.name, got, tt.want)
			continue
		}
		for i := range got.Dense {
			if !near(got.Dense[i], tt.want.Dense[i]) {
				t.Errorf("%s: MeanVectors = %+v, want %+v", tt.name, got, tt.want)
			}
		}
		for i := range got.Values {
			if !near(got.Values[i], tt.want.Values[i]) {
				t.Errorf("%s: MeanVectors = %+v, want %+v", tt.name, got, tt.want)
			}
		}
	}
}

// TestSlabScores checks the matrix-vector product against row-by-row
// dot products.
func TestSlabScores(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const dim, rows = 13, 37
	s := NewSlab(dim, rows)
	for range rows {
		x := make([]float32, dim)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		s.Append(x)
	}
	s.Append(nil) // a zero row
	q := make([]float32, dim)
	for i := range q {
		q[i] = float32(rng.NormFloat64())
	}
	out := make([]float32, s.Rows())
	s.Scores(q, out)
	if s.Rows() != rows+1 {
		t.Fatalf("Rows() = %d, want %d", s.Rows(), rows+1)
	}
	for r := range s.Rows() {
		if want := Dot(s.Row(r), q); !near(out[r], want) {
			t.Errorf("Scores row %d = %v, want %v", r, out[r], want)
		}
	}
	if out[rows] != 0 {
		t.Errorf("Scores of the zero row = %v, want 0", out[rows])
	}
}

// meanSparseMap is MeanSparse as a map of sums: the reference its sorted
// merge must match bit for bit.
func meanSparseMap(idx [][]uint32, val [][]float32) ([]uint32, []float32) {
	acc := make(map[uint32]float32)
	for k := range idx {
		for i, t := range idx[k] {
			acc[t] += val[k][i]
		}
	}
	var keys []uint32
	for t, v := range acc {
		if v != 0 {
			keys = append(keys, t)
		}
	}
	slices.Sort(keys)
	vals := make([]float32, len(keys))
	for i, t := range keys {
		vals[i] = acc[t]
	}
	if !Normalize(vals) {
		return nil, nil
	}
	return keys, vals
}

// TestMeanSparseMatchesMap checks MeanSparse against the map of sums on
// random vectors: ascending ones as embedders make them, and unsorted ones
// with repeated indices, whose repeats are summed in order.
func TestMeanSparseMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 500 {
		sorted := trial%2 == 0
		n := rng.IntN(12)
		idx, val := make([][]uint32, n), make([][]float32, n)
		for k := range n {
			m := rng.IntN(40)
			for range m {
				idx[k] = append(idx[k], uint32(rng.IntN(60)))
				// A few exact cancellations, and values of very different
				// sizes, so summation order shows in the last bits.
				v := float32(rng.NormFloat64()) * float32(math.Pow(10, float64(rng.IntN(7)-3)))
				if rng.IntN(10) == 0 {
					v = float32(rng.IntN(3) - 1)
				}
				val[k] = append(val[k], v)
			}
			if sorted {
				slices.Sort(idx[k])
				idx[k] = slices.Compact(idx[k])
				val[k] = val[k][:len(idx[k])]
			}
		}
		wi, wv := meanSparseMap(idx, val)
		gi, gv := MeanSparse(idx, val)
		if !slices.Equal(gi, wi) || !slices.EqualFunc(gv, wv, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
			t.Fatalf("trial %d: MeanSparse = %v %v, want %v %v", trial, gi, gv, wi, wv)
		}
	}
}

func TestMergeAdd(t *testing.T) {
	dk, dv := mergeAdd(nil, nil, []uint32{1, 4, 6}, []float32{1, 2, 3}, []uint32{0, 4, 4, 7}, []float32{10, 20, 30, 40})
	if !slices.Equal(dk, []uint32{0, 1, 4, 6, 7}) || !slices.Equal(dv, []float32{10, 1, 52, 3, 40}) {
		t.Errorf("mergeAdd = %v %v, want [0 1 4 6 7] [10 1 52 3 40]", dk, dv)
	}
}

func BenchmarkMeanSparse(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	idx, val := make([][]uint32, 10), make([][]float32, 10)
	for k := range idx {
		for range 150 {
			idx[k] = append(idx[k], rng.Uint32N(1<<20))
		}
		slices.Sort(idx[k])
		idx[k] = slices.Compact(idx[k])
		for range idx[k] {
			val[k] = append(val[k], rng.Float32())
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		MeanSparse(idx, val)
	}
}
