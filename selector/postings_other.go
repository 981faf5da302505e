//go:build !amd64 || purego

package selector

func addRuns(acc [][4]float32, pairs []pairPosting, triples []triplePosting, runs []termRun) {
	addRunsGo(acc, pairs, triples, runs)
}

// addRunsBounded is addRuns: the portable loops can be preempted anywhere,
// so they need no bound.
func addRunsBounded(acc [][4]float32, pairs []pairPosting, triples []triplePosting, runs []termRun, _ int) {
	addRunsGo(acc, pairs, triples, runs)
}
