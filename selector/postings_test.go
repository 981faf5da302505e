package selector

import (
	"math/rand/v2"
	"testing"
)

// TestAddPostings checks that the posting loops in use (vector code on
// amd64) give the portable loops' sums to the bit, for runs of every
// length up to a few dozen, rows in any order and weights of either sign.
func TestAddPostings(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const rows = 50
	for n := range 40 {
		pairs := make([]pairPosting, n)
		triples := make([]triplePosting, n)
		for i := range n {
			pairs[i] = pairPosting{row: int32(rng.IntN(rows)), cent: rng.Float32()*2 - 1, doc: rng.Float32()*2 - 1}
			triples[i] = triplePosting{row: int32(rng.IntN(rows)), cent: rng.Float32()*2 - 1, desc: rng.Float32()*2 - 1, doc: rng.Float32()*2 - 1}
		}
		got, want := make([][4]float32, rows), make([][4]float32, rows)
		for r := range rows {
			got[r] = [4]float32{rng.Float32(), rng.Float32(), rng.Float32(), 0}
			want[r] = got[r]
		}
		for _, w := range []float32{0.37, -1.5, 0} {
			addPairs(got, pairs, w)
			addPairsGo(want, pairs, w)
			addTriples(got, triples, w)
			addTriplesGo(want, triples, w)
		}
		for r := range rows {
			if got[r] != want[r] {
				t.Fatalf("%d postings: row %d: sums %v, want %v", n, r, got[r], want[r])
			}
		}
	}
}
