package selector

// addRunsGo adds, for each run, w times each of its postings' weights to
// the posting's row's sums in acc: acc[row][0] += w·cent, acc[row][1] +=
// w·desc (triples only) and acc[row][2] += w·doc. It is the portable form
// of addRuns.
func addRunsGo(acc [][4]float32, pairs []pairPosting, triples []triplePosting, runs []termRun) {
	for _, r := range runs {
		w := r.w
		for _, p := range pairs[r.lo.pair:r.hi.pair] {
			a := &acc[p.row]
			a[0] += w * p.cent
			a[2] += w * p.doc
		}
		for _, p := range triples[r.lo.triple:r.hi.triple] {
			a := &acc[p.row]
			a[0] += w * p.cent
			a[1] += w * p.desc
			a[2] += w * p.doc
		}
	}
}
