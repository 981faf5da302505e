package selector

import (
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestAddRuns checks that the posting loop in use (assembly on amd64)
// gives the portable loop's sums to the bit: runs of every length up to a
// few hundred, so that every remainder of the loop that takes four
// postings at a time is met, empty ones among them, rows in any order and
// repeated within a run, weights of either sign or 0, and the runs split
// into calls of a few postings each or not at all, so that a call
// prefetches runs that it does not add.
func TestAddRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const rows = 50
	for trial := range 40 {
		postings := make([]posting, rng.IntN(300))
		for i := range postings {
			postings[i] = posting{cent: rng.Float32()*2 - 1, desc: rng.Float32()*2 - 1, doc: rng.Float32()*2 - 1, at: rowBytes * int32(rng.IntN(rows))}
			if rng.IntN(3) == 0 {
				postings[i].desc = 0
			}
		}
		runs := make([]termRun, rng.IntN(12))
		for i := range runs {
			r := &runs[i]
			r.lo = int32(rng.IntN(len(postings) + 1))
			r.hi = r.lo + int32(rng.IntN(len(postings)+1-int(r.lo)))
			r.w = []float32{0.37, -1.5, 0, rng.Float32()}[rng.IntN(4)]
		}
		got, want := make([][4]float32, rows), make([][4]float32, rows)
		for r := range rows {
			got[r] = [4]float32{rng.Float32(), rng.Float32(), rng.Float32(), 0}
			want[r] = got[r]
		}
		if trial%2 == 0 {
			addRuns(got, postings, runs)
		} else {
			addRunsBounded(got, postings, runs, trial%7)
		}
		addRunsGo(want, postings, runs)
		for r := range rows {
			if got[r] != want[r] {
				t.Fatalf("trial %d: row %d: sums %v, want %v", trial, r, got[r], want[r])
			}
		}
	}
}

// TestPostingLayout checks the field offsets that the assembly loop reads.
func TestPostingLayout(t *testing.T) {
	var r termRun
	var p posting
	for _, c := range []struct {
		what      string
		got, want uintptr
	}{
		{"termRun.w", unsafe.Offsetof(r.w), 4},
		{"termRun.lo", unsafe.Offsetof(r.lo), 8},
		{"termRun.hi", unsafe.Offsetof(r.hi), 12},
		{"termRun size", unsafe.Sizeof(r), 16},
		{"posting.cent", unsafe.Offsetof(p.cent), 0},
		{"posting.desc", unsafe.Offsetof(p.desc), 4},
		{"posting.doc", unsafe.Offsetof(p.doc), 8},
		{"posting.at", unsafe.Offsetof(p.at), 12},
		{"posting size", unsafe.Sizeof(p), 16},
	} {
		if c.got != c.want {
			t.Errorf("%s at %d, the assembly reads it at %d", c.what, c.got, c.want)
		}
	}
}
