//go:build !amd64 || purego

package selector

func addRuns(acc [][4]float32, postings []posting, runs []termRun) {
	addRunsGo(acc, postings, runs)
}

// addRunsBounded is addRuns: the portable loop can be preempted anywhere,
// so it needs no bound.
func addRunsBounded(acc [][4]float32, postings []posting, runs []termRun, _ int) {
	addRunsGo(acc, postings, runs)
}
