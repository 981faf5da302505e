package terms

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

func TestTable(t *testing.T) {
	var empty Table
	if k, ok := empty.Find(7); ok {
		t.Fatalf("empty table: Find(7) = %d, true; want not found", k)
	}
	if got := empty.Touch([]uint32{7}); got != 0 {
		t.Fatalf("empty table: Touch(7) = %d, want 0", got)
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
		// Touch reads terms present and absent, and changes nothing.
		tab.Touch(append(terms, rng.Uint32(), math.MaxUint32-1))
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

// TestSet checks Set against a map: terms at the edges of uint32 (0 is
// kept apart from the empty mark), many repeats, and enough distinct
// terms to grow the set several times.
func TestSet(t *testing.T) {
	var empty Set
	if got := empty.Sorted(); len(got) != 0 {
		t.Fatalf("empty set: Sorted() = %v, want none", got)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 10, 1000, 50000} {
		var s Set
		want := map[uint32]bool{}
		add := func(x uint32) {
			s.Add(x)
			want[x] = true
		}
		add(0)
		add(math.MaxUint32)
		for i := range n {
			x := rng.Uint32() % uint32(2*n) // repeats
			if i%5 == 0 {
				x = rng.Uint32()
			}
			add(x)
		}
		got := s.Sorted()
		if len(got) != len(want) {
			t.Fatalf("n=%d: %d distinct terms, want %d", n, len(got), len(want))
		}
		for i, x := range got {
			if !want[x] || (i > 0 && got[i-1] >= x) {
				t.Fatalf("n=%d: Sorted()[%d] = %d: not a distinct term in ascending order", n, i, x)
			}
		}
	}
}

// TestGather checks that Gather gives the terms of every row, distinct
// and ascending, as one set gathering them all does, on any number of
// cores and for any number of rows, none included.
func TestGather(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 3, 100, 2000} {
		rows := make([][]uint32, n)
		var one Set
		for r := range rows {
			for range rng.IntN(40) {
				x := rng.Uint32() % 3000 // repeats within and across rows
				switch rng.IntN(20) {
				case 0:
					x = 0
				case 1:
					x = math.MaxUint32
				case 2:
					x = rng.Uint32()
				}
				rows[r] = append(rows[r], x)
				one.Add(x)
			}
		}
		want := one.Sorted()
		for _, procs := range []int{1, 2, 3, 8} {
			old := runtime.GOMAXPROCS(procs)
			got := Gather(n, func(s *Set, r int) {
				for _, x := range rows[r] {
					s.Add(x)
				}
			})
			runtime.GOMAXPROCS(old)
			if !slices.Equal(got, want) {
				t.Errorf("%d rows, GOMAXPROCS %d: Gather = %d terms, want the %d one set sorts", n, procs, len(got), len(want))
			}
		}
	}
}

// TestTerms checks that Terms gives back the terms New was given, in slot
// order, and refuses a table of another number of slots.
func TestTerms(t *testing.T) {
	for _, want := range [][]uint32{{}, {0}, {3, 9, 1 << 31, math.MaxUint32}} {
		tab := New(want)
		got, err := tab.Terms(len(want))
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("New(%v).Terms = %v, %v; want the terms", want, got, err)
		}
		if len(want) > 0 {
			if _, err := tab.Terms(len(want) + 1); err == nil {
				t.Errorf("New(%v).Terms(%d) succeeded, want an error", want, len(want)+1)
			}
		}
	}
	unordered := New([]uint32{9, 3})
	if _, err := unordered.Terms(2); err == nil {
		t.Error("Terms of a table whose slots do not ascend succeeded, want an error")
	}
}
