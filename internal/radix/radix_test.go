package radix

import (
	"slices"
	"testing"
)

// TestSort checks Sort against slices.Sort on either side of the sizes
// where it changes method, with keys that share their high
// bytes (a pass skipped) and keys with every byte in play.
func TestSort(t *testing.T) {
	var tmp []uint32
	for _, n := range []int{0, 1, 5, 63, 64, 65, 300, topMax - 1, topMax, 5000} {
		ids := make([]uint32, n)
		x := uint32(12345)
		for i := range ids {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			ids[i] = x
			if i%7 == 0 {
				ids[i] &= 0xff // shared high digits
			}
		}
		want := slices.Clone(ids)
		slices.Sort(want)
		tmp = Sort(ids, tmp)
		if !slices.Equal(ids, want) {
			t.Errorf("Sort(%d ids) is not sorted ascending", n)
		}
	}
	// Ids that share their top byte, in descending order: insertion alone
	// would be quadratic, and the budget hands over to a comparison sort.
	var crowded []uint32
	for i := range topMax - 1 {
		crowded = append(crowded, 0x42000000|uint32(topMax-i)*977)
	}
	want := slices.Clone(crowded)
	slices.Sort(want)
	if Sort(crowded, nil); !slices.Equal(crowded, want) {
		t.Errorf("Sort of %d ids in one top-byte bucket is not sorted ascending", len(crowded))
	}
	same := []uint32{7, 7, 7}
	for range 70 {
		same = append(same, 7)
	}
	if Sort(same, nil); slices.ContainsFunc(same, func(x uint32) bool { return x != 7 }) {
		t.Errorf("Sort of equal ids changed them")
	}
}
