package vec

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
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
