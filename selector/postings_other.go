//go:build !amd64 || purego

package selector

func addRuns(acc [][4]float32, pairs []pairPosting, triples []triplePosting, runs []termRun) {
	addRunsGo(acc, pairs, triples, runs)
}
