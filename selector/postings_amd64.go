//go:build !purego

package selector

import "unsafe"

// On amd64 the posting loops are in assembly: a posting's weights are
// added to its row's sums with one vector multiply and one vector add,
// instead of a scalar multiply and add per weight, and many runs are added
// in one call. Each lane rounds as the scalar operation does, so the sums
// are the same to the bit (TestAddRuns).
//
// The loops index acc by the postings' rows without a bounds check: every
// row of a triSpace is below its number of rows, which accumulate checks
// acc against, and every run lies within pairs and triples, since
// accumulate takes it from the space's own offsets. They read termRun,
// pairPosting and triplePosting at the offsets TestPostingLayout checks.

//go:noescape
func addRunsSSE(acc, pairs, triples, runs unsafe.Pointer, n int)

// maxCallPostings bounds the postings that one assembly call adds, but for
// a single longer run. The runtime cannot preempt assembly, so a garbage
// collection that must stop every goroutine waits for the call to return;
// 1<<16 postings take a small fraction of a millisecond. A query over
// MetaTool's 199 tools (about 16,000 postings) is one call; one over
// 100,000 tools, about 35.
const maxCallPostings = 1 << 16

// addRuns is addRunsGo in assembly.
func addRuns(acc [][4]float32, pairs []pairPosting, triples []triplePosting, runs []termRun) {
	addRunsBounded(acc, pairs, triples, runs, maxCallPostings)
}

// addRunsBounded is addRuns with at most maxPostings postings a call (more
// only for a single run that has more).
func addRunsBounded(acc [][4]float32, pairs []pairPosting, triples []triplePosting, runs []termRun, maxPostings int) {
	for len(runs) > 0 {
		n, total := 0, 0
		for n < len(runs) {
			r := &runs[n]
			size := int(r.hi.pair-r.lo.pair) + int(r.hi.triple-r.lo.triple)
			if n > 0 && total+size > maxPostings {
				break
			}
			total += size
			n++
		}
		addRunsSSE(unsafe.Pointer(unsafe.SliceData(acc)), unsafe.Pointer(unsafe.SliceData(pairs)),
			unsafe.Pointer(unsafe.SliceData(triples)), unsafe.Pointer(unsafe.SliceData(runs)), n)
		runs = runs[n:]
	}
}
