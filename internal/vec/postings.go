package vec

// Posting is one row's weights for a term in an inverted index that scores
// three row sets at once (centroids, descriptions, documents): the three
// weights and the byte offset of the row's sums in the accumulator
// (RowBytes × the row, which int32 holds for up to 2^27 rows), so that the
// assembly loop uses it as it comes. The assembly reads its fields at the
// offsets TestPostingLayout checks.
type Posting struct {
	Cent, Desc, Doc float32
	At              int32
}

// RowBytes is the size of a row's sums in the accumulator ([4]float32),
// the unit of Posting.At.
const RowBytes = 16

// Row returns the posting's row.
func (p *Posting) Row() int32 { return p.At / RowBytes }

// Run is a query term's weight W and where its postings lie:
// postings[Lo:Hi]. Term is the caller's name for the term; AddRuns does not
// read it.
type Run struct {
	Term   int32
	W      float32
	Lo, Hi int32
}

// PostingsIn reports whether every posting's row is in [0, n), where
// AddRuns adds it.
func PostingsIn(ps []Posting, n int) bool {
	for i := range ps {
		if at := ps[i].At; at < 0 || at%RowBytes != 0 || int(at/RowBytes) >= n {
			return false
		}
	}
	return true
}

// addRunsGo adds, for each run, W times each of its postings' weights to
// the sums of the posting's row in acc: acc[row][0] += W·Cent,
// acc[row][1] += W·Desc and acc[row][2] += W·Doc. It is the portable form
// of AddRuns. Each product is rounded to float32 before it is added (the
// conversions forbid a fused multiply-add), as the assembly loop's lanes
// round, so that every platform gives the same sums to the bit.
func addRunsGo(acc [][4]float32, postings []Posting, runs []Run) {
	for _, r := range runs {
		w := r.W
		run := postings[r.Lo:r.Hi]
		for i := range run {
			p := &run[i]
			a := &acc[p.Row()]
			a[0] += float32(w * p.Cent)
			a[1] += float32(w * p.Desc)
			a[2] += float32(w * p.Doc)
		}
	}
}
