package selector

// addPairsGo adds w times each pair's centroid and document weights to its
// row's sums in acc: acc[p.row][0] += w·p.cent, acc[p.row][2] += w·p.doc.
// It is the portable form of addPairs.
func addPairsGo(acc [][4]float32, pairs []pairPosting, w float32) {
	for _, p := range pairs {
		a := &acc[p.row]
		a[0] += w * p.cent
		a[2] += w * p.doc
	}
}

// addTriplesGo adds w times each triple's three weights to its row's sums
// in acc. It is the portable form of addTriples.
func addTriplesGo(acc [][4]float32, triples []triplePosting, w float32) {
	for _, p := range triples {
		a := &acc[p.row]
		a[0] += w * p.cent
		a[1] += w * p.desc
		a[2] += w * p.doc
	}
}
