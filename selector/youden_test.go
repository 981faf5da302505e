package selector

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/habilis-router/habilis"
)

// TestQuantile checks quantile on values worked out by hand: linear
// interpolation between the two order statistics around q·(n−1).
func TestQuantile(t *testing.T) {
	tests := []struct {
		xs   []float32
		q    float64
		want float32
	}{
		{nil, 0.5, 0},
		{[]float32{7}, 0.9, 7},
		{[]float32{3, 1, 2}, 0, 1},
		{[]float32{3, 1, 2}, 0.5, 2},
		{[]float32{3, 1, 2}, 1, 3},
		// q·(n−1) = 0.75: a quarter of the way from 1 to 2.
		{[]float32{4, 2, 1, 3}, 0.25, 1.75},
		// 0.9·4 = 3.6: from 0.4 to 0.5, six tenths of the way.
		{[]float32{0.5, 0.1, 0.4, 0.2, 0.3}, 0.9, 0.46},
		// 0.15·3 = 0.45: from 0.3 to 0.4.
		{[]float32{0.9, 0.5, 0.4, 0.3}, 0.15, 0.345},
	}
	for _, tt := range tests {
		xs := slices.Clone(tt.xs)
		if got := quantile(xs, tt.q); !close32(got, tt.want) {
			t.Errorf("quantile(%v, %v) = %v, want %v", tt.xs, tt.q, got, tt.want)
		}
		if !slices.IsSorted(xs) {
			t.Errorf("quantile(%v, %v) left %v unsorted; it sorts in place", tt.xs, tt.q, xs)
		}
	}
	// Between two equal order statistics the quantile is their value, not
	// one rounding above it, where a gate set there would refuse both.
	for _, x := range []float32{-0.375, 0.1, 0.3, 0.7} {
		for k := range 101 {
			q := float64(k) / 100
			if got := quantile([]float32{x, x, x, x, x, x, x, x}, q); got != x {
				t.Errorf("quantile(eight times %v, %v) = %v, want %v", x, q, got, x)
			}
		}
	}
}

// TestYoudenCut checks the cut on inputs worked out by hand: the threshold
// of the largest share of pos minus share of neg at or above it, halfway
// to the next value down, but never above the (1 − minPass)-quantile of
// pos.
func TestYoudenCut(t *testing.T) {
	tests := []struct {
		name      string
		pos, neg  []float32
		minPass   float64
		want      float32
		wantShare float64 // of pos at or above the cut
	}{
		{"no positives", nil, []float32{0.3}, 0.85, 0, 0},
		// Without negatives the cut is the floor: the median of 0.2, 0.4, 0.6.
		{"no negatives", []float32{0.6, 0.2, 0.4}, nil, 0.5, 0.4, 2.0 / 3},
		// Descending 0.9 0.8 0.7 0.6 | 0.5 0.1: J rises to 1 below 0.6, so
		// the cut is halfway between 0.6 and 0.5; the floor (0.75) is higher.
		{"separable", []float32{0.9, 0.8, 0.7, 0.6}, []float32{0.5, 0.1}, 0.5, 0.55, 1},
		// Descending 0.9p 0.5p 0.4p 0.35n 0.3p 0.2n: J is 0.25, 0.5, 0.75,
		// 0.25, 0.5, 0, best at 0.375; but 85 % of pos must pass, and the
		// floor, the 0.15-quantile of pos, is lower: 0.345. Of four scores
		// it lets three through: the share is MinPass only up to one
		// order statistic.
		{"floor binds", []float32{0.9, 0.5, 0.4, 0.3}, []float32{0.35, 0.2}, 0.85, 0.345, 0.75},
		// With the floor out of the way (minPass 0.5, floor 0.45) the best
		// separation wins: three of four positives pass.
		{"overlap", []float32{0.9, 0.5, 0.4, 0.3}, []float32{0.35, 0.2}, 0.5, 0.375, 0.75},
		// Negatives above positives: J is best (0) only at the lowest value,
		// where everything passes; no value below it to cut halfway to.
		{"inverted", []float32{0.1, 0.2}, []float32{0.8, 0.9}, 0.85, 0.1, 1},
		// One value everywhere: the cut sits on it.
		{"ties", []float32{0.5, 0.5}, []float32{0.5}, 0.85, 0.5, 1},
	}
	for _, tt := range tests {
		got := youdenCut(slices.Clone(tt.pos), slices.Clone(tt.neg), tt.minPass)
		if !close32(got, tt.want) {
			t.Errorf("%s: youdenCut(%v, %v, %v) = %v, want %v", tt.name, tt.pos, tt.neg, tt.minPass, got, tt.want)
		}
		if share := shareAtOrAbove(tt.pos, got); len(tt.pos) > 0 && math.Abs(share-tt.wantShare) > 1e-9 {
			t.Errorf("%s: youdenCut lets %v of pos through, want %v", tt.name, share, tt.wantShare)
		}
	}
	// youden is the cut at MinPass.
	pos, neg := []float32{0.9, 0.5, 0.4, 0.3}, []float32{0.35, 0.2}
	if got, want := youden(pos, neg), youdenCut(pos, neg, MinPass); got != want || !close32(got, 0.345) {
		t.Errorf("youden(%v, %v) = %v, want youdenCut at MinPass %v = %v = 0.345", pos, neg, got, MinPass, want)
	}
}

// TestYoudenCutMatchesReference compares youdenCut with a plain reference
// (try every value as the threshold, count both sides) on random inputs
// with ties, and checks the share it promises: at least minPass of pos
// pass, less what one order statistic of interpolation can cost.
func TestYoudenCutMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for trial := range 2000 {
		pos := randomScores(rng, 1+rng.IntN(12))
		neg := randomScores(rng, rng.IntN(12))
		minPass := []float64{0.5, hybridMinPass, MinPass}[trial%3]
		got := youdenCut(slices.Clone(pos), slices.Clone(neg), minPass)
		want := referenceYoudenCuts(pos, neg, minPass)
		if !slices.ContainsFunc(want, func(w float32) bool { return math.Abs(float64(got-w)) <= 1e-5 }) {
			t.Fatalf("youdenCut(%v, %v, %v) = %v, reference %v", pos, neg, minPass, got, want)
		}
		n := float64(len(pos))
		if share := shareAtOrAbove(pos, got); share < minPass-1/n {
			t.Fatalf("youdenCut(%v, %v, %v) = %v lets %v of pos through, want at least %v", pos, neg, minPass, got, share, minPass-1/n)
		}
	}
}

// randomScores returns n scores on a grid of eighths in [-1, 1], so that
// ties are common.
func randomScores(rng *rand.Rand, n int) []float32 {
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(rng.IntN(17)-8) / 8
	}
	return xs
}

// referenceYoudenCuts is youdenCut written plainly: every distinct value
// is tried as the threshold t (a score passes when ≥ t), J = share of pos
// passing − share of neg passing is counted exactly, and each t of the
// largest J gives a cut halfway to the next value below it, lowered to the
// (1 − minPass) interpolated quantile of pos when that is lower. It returns
// every such cut: which of equal J youdenCut picks depends on rounding.
func referenceYoudenCuts(pos, neg []float32, minPass float64) []float32 {
	if len(pos) == 0 {
		return []float32{0}
	}
	sorted := slices.Sorted(slices.Values(pos))
	at := (1 - minPass) * float64(len(sorted)-1)
	lo, hi := int(math.Floor(at)), int(math.Ceil(at))
	floor := float64(sorted[lo]) + (at-float64(lo))*float64(sorted[hi]-sorted[lo])
	if len(neg) == 0 {
		return []float32{float32(floor)}
	}
	values := slices.Sorted(slices.Values(append(slices.Clone(pos), neg...)))
	values = slices.Compact(values)
	slices.Reverse(values)
	count := func(xs []float32, t float32) int {
		n := 0
		for _, x := range xs {
			if x >= t {
				n++
			}
		}
		return n
	}
	// J scaled by len(pos)·len(neg), an integer.
	bestJ := math.MinInt
	var cuts []float32
	for i, v := range values {
		j := count(pos, v)*len(neg) - count(neg, v)*len(pos)
		cut := float64(v)
		if i+1 < len(values) {
			cut = (float64(v) + float64(values[i+1])) / 2
		}
		switch {
		case j > bestJ:
			bestJ, cuts = j, []float32{float32(math.Min(cut, floor))}
		case j == bestJ:
			cuts = append(cuts, float32(math.Min(cut, floor)))
		}
	}
	return cuts
}

// shareAtOrAbove returns the share of xs at or above t.
func shareAtOrAbove(xs []float32, t float32) float64 {
	if len(xs) == 0 {
		return 0
	}
	n := 0
	for _, x := range xs {
		if x >= t {
			n++
		}
	}
	return float64(n) / float64(len(xs))
}

// TestLeaveOneOut compares leaveOneOut's Gram-matrix identities with the
// plain computation: example i against the normalised sum of the others,
// and against that sum with the description added at its weight for the
// examples left (descriptionWeight), for few examples and for many.
func TestLeaveOneOut(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, n := range []int{2, 3, 4, 6, 9} {
		u := denseRecords(rng, 1, 8)[0].DescriptionVector.Dense
		var vs []habilis.Vector
		for range n {
			vs = append(vs, denseRecords(rng, 1, 8)[0].DescriptionVector)
		}
		held, roc := leaveOneOut(vs, habilis.Vector{Dense: u})
		if len(held) != len(vs) || len(roc) != len(vs) {
			t.Fatalf("leaveOneOut of %d examples = %d and %d scores", len(vs), len(held), len(roc))
		}
		m := float64(descriptionWeight(n - 1))
		for i, v := range vs {
			others := make([]float64, len(u))
			for j, o := range vs {
				for k := range others {
					if j != i {
						others[k] += float64(o.Dense[k])
					}
				}
			}
			withDesc := make([]float64, len(u))
			for k := range withDesc {
				withDesc[k] = others[k] + m*float64(u[k])
			}
			if want := cosine(v.Dense, others); math.Abs(float64(held[i])-want) > 1e-5 {
				t.Errorf("%d examples: example %d against the others' centroid: %v, by hand %v", n, i, held[i], want)
			}
			if want := cosine(v.Dense, withDesc); math.Abs(float64(roc[i])-want) > 1e-5 {
				t.Errorf("%d examples: example %d's Rocchio score without it: %v, by hand %v", n, i, roc[i], want)
			}
		}
	}
}

// TestRocchioScore checks the Rocchio score the index computes from a
// tool's centroid and description scores against q·(Σv + m·u)/‖Σv + m·u‖
// by hand, m being the description's weight: two for one example, one
// from two examples on.
func TestRocchioScore(t *testing.T) {
	if got := []float32{descriptionWeight(0), descriptionWeight(1), descriptionWeight(2), descriptionWeight(40)}; !slices.Equal(got, []float32{3, 2, 1, 1}) {
		t.Fatalf("description weights for 0, 1, 2 and 40 examples = %v, want [3 2 1 1]", got)
	}
	rng := rand.New(rand.NewPCG(15, 16))
	for _, n := range []int{1, 2, 3, 5, 8} {
		rec := denseRecords(rng, 1, 8)[0]
		rec.Tool.Examples, rec.ExampleVectors = nil, nil
		for k := range n {
			rec.Tool.Examples = append(rec.Tool.Examples, fmt.Sprint(k))
			rec.ExampleVectors = append(rec.ExampleVectors, denseRecords(rng, 1, 8)[0].DescriptionVector)
		}
		shape(&rec)
		q := denseRecords(rng, 1, 8)[0].DescriptionVector
		sum, norm := rocchioNorms(&rec)
		got := rocchioScore(sum, norm, dot(q, rec.Centroid), dot(q, rec.DescriptionVector))
		m := float64(descriptionWeight(n))
		x := make([]float64, len(q.Dense))
		for k := range x {
			for _, v := range rec.ExampleVectors {
				x[k] += float64(v.Dense[k])
			}
			x[k] += m * float64(rec.DescriptionVector.Dense[k])
		}
		if want := cosine(q.Dense, x); math.Abs(float64(got)-want) > 1e-5 {
			t.Errorf("%d examples: Rocchio score %v, by hand %v", n, got, want)
		}
	}
}

// cosine returns the cosine of unit vector v with x.
func cosine(v []float32, x []float64) float64 {
	var d, n float64
	for k := range x {
		d += float64(v[k]) * x[k]
		n += x[k] * x[k]
	}
	return d / math.Sqrt(n)
}
