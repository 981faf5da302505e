//go:build !purego

package selector

import "unsafe"

// On amd64 the posting loops are in assembly: a posting's weights are
// added to its row's sums with one vector multiply and one vector add,
// instead of a scalar multiply and add per weight, and all of a query's
// runs are added in one call. Each lane rounds as the scalar operation
// does, so the sums are the same to the bit (TestAddRuns).
//
// The loops index acc by the postings' rows without a bounds check: every
// row of a triSpace is below its number of rows, which accumulate checks
// acc against, and every run lies within pairs and triples, since
// accumulate takes it from the space's own offsets. They read termRun,
// pairPosting and triplePosting at the offsets TestPostingLayout checks.

//go:noescape
func addRunsSSE(acc, pairs, triples, runs unsafe.Pointer, n int)

// addRuns is addRunsGo in assembly.
func addRuns(acc [][4]float32, pairs []pairPosting, triples []triplePosting, runs []termRun) {
	if len(runs) > 0 {
		addRunsSSE(unsafe.Pointer(unsafe.SliceData(acc)), unsafe.Pointer(unsafe.SliceData(pairs)),
			unsafe.Pointer(unsafe.SliceData(triples)), unsafe.Pointer(unsafe.SliceData(runs)), len(runs))
	}
}
