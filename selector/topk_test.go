package selector

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTopK checks the bounded heap against sorting every score: best
// first, ties to the lower index, for every k including 0 and more than
// there are scores.
func TestTopK(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for trial := range 200 {
		n := rng.IntN(60)
		scores := make([]float32, n)
		for i := range scores {
			scores[i] = float32(rng.IntN(8)) // many ties
		}
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		slices.SortStableFunc(all, func(a, b int) int { return cmp.Compare(scores[b], scores[a]) })
		for _, k := range []int{0, 1, 3, n, n + 2} {
			top := newTopK(k, nil)
			for i, s := range scores {
				top.offer(i, s)
			}
			got, want := top.indexes(), all[:min(k, n)]
			if !slices.Equal(got, want) {
				t.Fatalf("trial %d, k %d, scores %v: got %v, want %v", trial, k, scores, got, want)
			}
		}
	}
}
