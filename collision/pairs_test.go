package collision

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortByRank checks sortByRank against slices.Sort on keys whose low
// halves ascend, as suffixes makes them: few distinct ranks (ties), many,
// and lengths on both sides of the comparison sort's cutoff.
func TestSortByRank(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var tmp []uint64
	for _, n := range []int{0, 1, 5, 63, 64, 65, 300, 2000} {
		for _, ranks := range []uint32{1, 3, 200, 1 << 31} {
			ks := make([]uint64, n)
			for m := range ks {
				ks[m] = uint64(rng.Uint32N(ranks))<<32 | uint64(m)
			}
			want := slices.Clone(ks)
			slices.Sort(want)
			tmp = sortByRank(ks, tmp)
			if !slices.Equal(ks, want) {
				t.Errorf("sortByRank of %d keys over %d ranks differs from slices.Sort", n, ranks)
			}
		}
	}
}
