package par

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// TestFor checks that every piece runs once, by the worker the stride
// assigns it to, for several worker counts.
func TestFor(t *testing.T) {
	for _, procs := range []int{1, 2, 3, 8} {
		old := runtime.GOMAXPROCS(procs)
		for _, n := range []int{0, 1, 2, 7, 100} {
			ran := make([]int32, n)
			by := make([]int, n)
			nw := For(n, func(w, i int) {
				atomic.AddInt32(&ran[i], 1)
				by[i] = w
			})
			if want := max(1, min(procs, n)); nw != want || Workers(n) != want {
				t.Errorf("GOMAXPROCS %d, n %d: %d workers (Workers %d), want %d", procs, n, nw, Workers(n), want)
			}
			if slices.ContainsFunc(ran, func(c int32) bool { return c != 1 }) {
				t.Errorf("GOMAXPROCS %d, n %d: runs per piece %v, want all 1", procs, n, ran)
			}
			for i, w := range by {
				if w != i%nw {
					t.Errorf("GOMAXPROCS %d, n %d: piece %d ran on worker %d, want %d", procs, n, i, w, i%nw)
				}
			}
		}
		runtime.GOMAXPROCS(old)
	}
}

// TestForWorkerOrder checks that one worker takes its pieces in order and
// never runs two at once, so per-worker state needs no lock.
func TestForWorkerOrder(t *testing.T) {
	const n = 1000
	busy := make([]atomic.Bool, Workers(n))
	last := make([]int, Workers(n))
	for w := range last {
		last[w] = -1
	}
	For(n, func(w, i int) {
		if busy[w].Swap(true) {
			t.Errorf("worker %d runs two pieces at once", w)
		}
		if i <= last[w] {
			t.Errorf("worker %d took piece %d after %d", w, i, last[w])
		}
		last[w] = i
		busy[w].Store(false)
	})
}

// TestRanges checks that the ranges cover [0, n) once, in order and
// without gaps, one per worker, with sizes that differ by at most one.
func TestRanges(t *testing.T) {
	for _, procs := range []int{1, 2, 3, 8} {
		old := runtime.GOMAXPROCS(procs)
		for _, n := range []int{0, 1, 2, 7, 100} {
			var mu sync.Mutex
			var got [][2]int
			nr := Ranges(n, func(lo, hi int) {
				mu.Lock()
				got = append(got, [2]int{lo, hi})
				mu.Unlock()
			})
			slices.SortFunc(got, func(a, b [2]int) int { return a[0] - b[0] })
			if want := Workers(n); nr != want || len(got) != want {
				t.Errorf("GOMAXPROCS %d, n %d: %d ranges (%d run), want %d", procs, n, nr, len(got), want)
			}
			next, least, most := 0, n, 0
			for _, r := range got {
				if r[0] != next || r[1] < r[0] {
					t.Errorf("GOMAXPROCS %d, n %d: ranges %v do not tile [0, %d)", procs, n, got, n)
					break
				}
				next = r[1]
				least, most = min(least, r[1]-r[0]), max(most, r[1]-r[0])
			}
			if next != n || most-least > 1 {
				t.Errorf("GOMAXPROCS %d, n %d: ranges %v, want [0, %d) in sizes within one", procs, n, got, n)
			}
		}
		runtime.GOMAXPROCS(old)
	}
}
