package par

import (
	"runtime"
	"slices"
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
