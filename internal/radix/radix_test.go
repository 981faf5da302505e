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
	same := []uint32{7, 7, 7}
	for range 70 {
		same = append(same, 7)
	}
	if Sort(same, nil); slices.ContainsFunc(same, func(x uint32) bool { return x != 7 }) {
		t.Errorf("Sort of equal ids changed them")
	}
}
