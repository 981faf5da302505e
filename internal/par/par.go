// Package par runs independent pieces of work on up to GOMAXPROCS
// goroutines. Which worker runs which piece depends only on the number of
// pieces and workers, never on scheduling, so callers that keep results
// per piece, or per worker and then merge them in worker order, stay
// deterministic.
package par

import (
	"runtime"
	"sync"
)

// Workers returns how many goroutines For uses for n pieces: GOMAXPROCS,
// but no more than n and at least one.
func Workers(n int) int { return max(1, min(runtime.GOMAXPROCS(0), n)) }

// For runs fn(w, i) for every i in [0, n) on Workers(n) goroutines and
// returns that number. Worker w takes pieces w, w+W, w+2W, ... in order, so
// the long first rows of a triangular pass are shared out evenly, and one
// worker's calls never overlap: scratch space indexed by w needs no lock.
// With one worker, fn runs on the calling goroutine.
func For(n int, fn func(w, i int)) int {
	nw := Workers(n)
	if nw == 1 {
		for i := range n {
			fn(0, i)
		}
		return nw
	}
	var wg sync.WaitGroup
	for w := range nw {
		wg.Go(func() {
			for i := w; i < n; i += nw {
				fn(w, i)
			}
		})
	}
	wg.Wait()
	return nw
}

// Ranges splits [0, n) into Workers(n) contiguous ranges, of equal size
// to within one, and runs fn(lo, hi) for each on a goroutine of its own
// (the calling one, if there is one range); it returns the number of
// ranges. It suits work where each worker must own a block of ids, such
// as the slots of an array that it fills, rather than interleaved pieces.
func Ranges(n int, fn func(lo, hi int)) int {
	nw := Workers(n)
	For(nw, func(_, w int) { fn(w*n/nw, (w+1)*n/nw) })
	return nw
}
