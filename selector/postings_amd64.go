//go:build !purego

package selector

import "unsafe"

// On amd64 the posting loops add a posting's weights to its row's sums
// with one vector multiply and one vector add, instead of a scalar multiply
// and add per weight; each lane rounds as the scalar operation does, so
// the sums are the same to the bit (TestAddPostings).
//
// They index acc by the postings' rows without a bounds check: every row
// of a triSpace is below its number of rows, which accumulate checks acc
// against.

//go:noescape
func addPairsSSE(acc unsafe.Pointer, pairs unsafe.Pointer, n int, w float32)

//go:noescape
func addTriplesSSE(acc unsafe.Pointer, triples unsafe.Pointer, n int, w float32)

func addPairs(acc [][4]float32, pairs []pairPosting, w float32) {
	if len(pairs) > 0 {
		addPairsSSE(unsafe.Pointer(unsafe.SliceData(acc)), unsafe.Pointer(unsafe.SliceData(pairs)), len(pairs), w)
	}
}

func addTriples(acc [][4]float32, triples []triplePosting, w float32) {
	if len(triples) > 0 {
		addTriplesSSE(unsafe.Pointer(unsafe.SliceData(acc)), unsafe.Pointer(unsafe.SliceData(triples)), len(triples), w)
	}
}
