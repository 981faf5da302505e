package selector

import (
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestAddRuns checks that the posting loops in use (assembly on amd64)
// give the portable loops' sums to the bit: runs of every length up to a
// few dozen, empty ones among them, rows in any order, weights of either
// sign or 0, and the runs split into calls of a few postings each or not
// at all.
func TestAddRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const rows = 50
	for trial := range 40 {
		pairs := make([]pairPosting, rng.IntN(200))
		triples := make([]triplePosting, rng.IntN(100))
		for i := range pairs {
			pairs[i] = pairPosting{row: int32(rng.IntN(rows)), cent: rng.Float32()*2 - 1, doc: rng.Float32()*2 - 1}
		}
		for i := range triples {
			triples[i] = triplePosting{row: int32(rng.IntN(rows)), cent: rng.Float32()*2 - 1, desc: rng.Float32()*2 - 1, doc: rng.Float32()*2 - 1}
		}
		runs := make([]termRun, rng.IntN(12))
		for i := range runs {
			r := &runs[i]
			r.lo.pair = int32(rng.IntN(len(pairs) + 1))
			r.hi.pair = r.lo.pair + int32(rng.IntN(len(pairs)+1-int(r.lo.pair)))
			r.lo.triple = int32(rng.IntN(len(triples) + 1))
			r.hi.triple = r.lo.triple + int32(rng.IntN(len(triples)+1-int(r.lo.triple)))
			r.w = []float32{0.37, -1.5, 0, rng.Float32()}[rng.IntN(4)]
		}
		got, want := make([][4]float32, rows), make([][4]float32, rows)
		for r := range rows {
			got[r] = [4]float32{rng.Float32(), rng.Float32(), rng.Float32(), 0}
			want[r] = got[r]
		}
		if trial%2 == 0 {
			addRuns(got, pairs, triples, runs)
		} else {
			addRunsBounded(got, pairs, triples, runs, trial%7)
		}
		addRunsGo(want, pairs, triples, runs)
		for r := range rows {
			if got[r] != want[r] {
				t.Fatalf("trial %d: row %d: sums %v, want %v", trial, r, got[r], want[r])
			}
		}
	}
}

// TestPostingLayout checks the field offsets that the assembly loops read.
func TestPostingLayout(t *testing.T) {
	var r termRun
	var p pairPosting
	var q triplePosting
	for _, c := range []struct {
		what      string
		got, want uintptr
	}{
		{"termRun.w", unsafe.Offsetof(r.w), 4},
		{"termRun.lo", unsafe.Offsetof(r.lo), 8},
		{"termRun.hi", unsafe.Offsetof(r.hi), 16},
		{"termRun size", unsafe.Sizeof(r), 24},
		{"triOffset.triple", unsafe.Offsetof(r.lo.triple), 4},
		{"pairPosting.cent", unsafe.Offsetof(p.cent), 4},
		{"pairPosting.doc", unsafe.Offsetof(p.doc), 8},
		{"pairPosting size", unsafe.Sizeof(p), 12},
		{"triplePosting.cent", unsafe.Offsetof(q.cent), 4},
		{"triplePosting.desc", unsafe.Offsetof(q.desc), 8},
		{"triplePosting.doc", unsafe.Offsetof(q.doc), 12},
		{"triplePosting size", unsafe.Sizeof(q), 16},
	} {
		if c.got != c.want {
			t.Errorf("%s at %d, the assembly reads it at %d", c.what, c.got, c.want)
		}
	}
}
