package selector

// addRunsGo adds, for each run, w times each of its postings' weights to
// the sums of the posting's row in acc: acc[row][0] += w·cent,
// acc[row][1] += w·desc and acc[row][2] += w·doc. It is the portable form
// of addRuns.
func addRunsGo(acc [][4]float32, postings []posting, runs []termRun) {
	for _, r := range runs {
		w := r.w
		run := postings[r.lo:r.hi]
		for i := range run {
			p := &run[i]
			a := &acc[p.row()]
			a[0] += w * p.cent
			a[1] += w * p.desc
			a[2] += w * p.doc
		}
	}
}
