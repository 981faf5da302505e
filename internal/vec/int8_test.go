package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRound8 checks that a vector Round8 makes is found again exactly by
// Quantize8, keeps its length, stays where it is when rounded again, and
// is within the grid's error of the vector it rounds.
func TestRound8(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	worst := 1.0
	for _, dim := range []int{1, 2, 3, 16, 384, 768, 1536} {
		for trial := range 300 {
			v := make([]float32, dim)
			for i := range v {
				v[i] = float32(rng.NormFloat64())
				if trial%3 == 1 {
					v[i] *= float32(math.Pow(10, float64(rng.IntN(60)-30))) // magnitudes far apart
				}
				if trial%5 == 2 && rng.IntN(4) == 0 {
					v[i] = 0
				}
			}
			if !Normalize(v) {
				continue // zero: no grid, TestRound8Off
			}
			r := Round8(v)
			q := make([]int8, dim)
			s, ok := Quantize8(q, r)
			if !ok {
				t.Fatalf("dim %d trial %d: Quantize8(Round8(v)) not on the grid", dim, trial)
			}
			back := make([]float32, dim)
			Dequantize8(back, q, s)
			for i := range r {
				if math.Float32bits(back[i]) != math.Float32bits(r[i]) {
					t.Fatalf("dim %d trial %d: coordinate %d = %v after the round trip, want %v", dim, trial, i, back[i], r[i])
				}
			}
			if n := Norm(r); math.Abs(float64(n)-1) > 1e-5 {
				t.Errorf("dim %d trial %d: |Round8(v)| = %v, want 1", dim, trial, n)
			}
			again := Round8(r)
			if &again[0] != &r[0] {
				t.Errorf("dim %d trial %d: Round8 of a vector on the grid made a new one", dim, trial)
			}
			cos := float64(Dot(v, r)) / float64(Norm(r))
			worst = min(worst, cos)
		}
	}
	// Half a step a coordinate at most: for 384 dimensions the cosine
	// stays above 0.999 (measured worst 0.99993, see docs/benchmarks.md).
	if worst < 0.999 {
		t.Errorf("worst cosine of a vector and its rounding = %v, want >= 0.999", worst)
	}
	t.Logf("worst cosine of a vector and its rounding: %.6f", worst)
}

// TestRound8Off checks the vectors Round8 leaves alone and Quantize8
// refuses: zero, empty, not finite, and off the grid.
func TestRound8Off(t *testing.T) {
	for _, v := range [][]float32{
		{},
		{0, 0, 0},
		{1, float32(math.NaN())},
		{float32(math.Inf(1)), 0},
	} {
		if r := Round8(v); len(r) != len(v) || (len(v) > 0 && &r[0] != &v[0]) {
			t.Errorf("Round8(%v) = %v, want it unchanged", v, r)
		}
		if _, ok := Quantize8(make([]int8, len(v)), v); ok {
			t.Errorf("Quantize8(%v) ok, want not on the grid", v)
		}
	}
	off := []float32{0.6, 0.8, 0.0001, float32(math.Copysign(0, -1))}
	if _, ok := Quantize8(make([]int8, len(off)), off); ok {
		t.Errorf("Quantize8(%v) ok, want not on the grid", off)
	}
}
