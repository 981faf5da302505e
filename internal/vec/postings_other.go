//go:build !amd64 || purego

package vec

// AddRuns adds, for each run in order, W times each of its postings'
// weights to the sums of the posting's row in acc (acc[row][0] += W·Cent,
// acc[row][1] += W·Desc, acc[row][2] += W·Doc), each product rounded to
// float32 before it is added. Every posting's row must lie in acc
// (PostingsIn) and every run in postings. Here it is the portable loop.
func AddRuns(acc [][4]float32, postings []Posting, runs []Run) {
	addRunsGo(acc, postings, runs)
}

// addRunsBounded is AddRuns: the portable loop can be preempted anywhere,
// so it needs no bound.
func addRunsBounded(acc [][4]float32, postings []Posting, runs []Run, _ int) {
	addRunsGo(acc, postings, runs)
}
