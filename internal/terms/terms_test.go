package terms

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestTable(t *testing.T) {
	var empty Table
	if k, ok := empty.Find(7); ok {
		t.Fatalf("empty table: Find(7) = %d, true; want not found", k)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 3, 100, 5000} {
		// Keys at the edges of uint32, clustered ones and random ones.
		terms := []uint32{0, math.MaxUint32}
		seen := map[uint32]bool{0: true, math.MaxUint32: true}
		for i := 0; len(terms) < n+2; i++ {
			x := rng.Uint32()
			if i%3 == 0 {
				x = 1000 + uint32(i/3) // consecutive: their probes meet
			}
			if !seen[x] {
				seen[x] = true
				terms = append(terms, x)
			}
		}
		tab := New(terms)
		for k, term := range terms {
			if got, ok := tab.Find(term); !ok || got != int32(k) {
				t.Fatalf("n=%d: Find(%d) = %d, %v; want %d, true", n, term, got, ok, k)
			}
		}
		for range 1000 {
			x := rng.Uint32()
			if seen[x] {
				continue
			}
			if got, ok := tab.Find(x); ok {
				t.Fatalf("n=%d: Find(%d) = %d, true; want not found", n, x, got)
			}
		}
	}
}
