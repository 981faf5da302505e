//go:build !amd64 || purego

package selector

func addPairs(acc [][4]float32, pairs []pairPosting, w float32) { addPairsGo(acc, pairs, w) }

func addTriples(acc [][4]float32, triples []triplePosting, w float32) {
	addTriplesGo(acc, triples, w)
}
