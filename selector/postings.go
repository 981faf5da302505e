package selector

// addRunsGo adds, for each run, w times each of its postings' weights to
// the sums of the posting's row in acc: acc[row][0] += w·cent,
// acc[row][1] += w·desc and acc[row][2] += w·doc. It is the portable form
// of addRuns. Each product is rounded to float32 before it is added (the
// conversions forbid a fused multiply-add), as the assembly loop's lanes
// round, so that every platform gives the same sums to the bit.
func addRunsGo(acc [][4]float32, postings []posting, runs []termRun) {
	for _, r := range runs {
		w := r.w
		run := postings[r.lo:r.hi]
		for i := range run {
			p := &run[i]
			a := &acc[p.row()]
			a[0] += float32(w * p.cent)
			a[1] += float32(w * p.desc)
			a[2] += float32(w * p.doc)
		}
	}
}
