package selector

import (
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

// addRunsRef is the posting loop written as plainly as it can be, for the
// loops in use to be checked against: for each run, for each of its
// postings in order, the product of the run's weight and each of the
// posting's weights, rounded, added to the sums of the row the posting's
// byte offset names (a row's sums are 16 bytes).
func addRunsRef(acc [][4]float32, postings []posting, runs []termRun) {
	for _, r := range runs {
		for k := int(r.lo); k < int(r.hi); k++ {
			p := postings[k]
			row := int(p.at) / 16
			acc[row][0] = acc[row][0] + float32(r.w*p.cent)
			acc[row][1] = acc[row][1] + float32(r.w*p.desc)
			acc[row][2] = acc[row][2] + float32(r.w*p.doc)
		}
	}
}

// TestAddRunsByHand checks the reference loop, and both loops, on sums
// worked out by hand: exact in binary, so any order of addition gives them.
func TestAddRunsByHand(t *testing.T) {
	postings := []posting{
		{cent: 1, desc: 2, doc: 4, at: 0},     // row 0
		{cent: 0.5, desc: 0, doc: 1, at: 32},  // row 2
		{cent: 8, desc: -1, doc: 0.25, at: 0}, // row 0
		{cent: 3, desc: 3, doc: 3, at: 16},    // row 1
		{cent: 1, desc: 1, doc: 1, at: 32},    // row 2
	}
	runs := []termRun{{w: 2, lo: 0, hi: 3}, {w: 0.5, lo: 3, hi: 5}, {w: 4, lo: 4, hi: 4}}
	// Row 0: 2·(1, 2, 4) + 2·(8, −1, 0.25); row 1: 0.5·(3, 3, 3); row 2:
	// 2·(0.5, 0, 1) + 0.5·(1, 1, 1); the last run is empty.
	want := [][4]float32{{18, 2, 8.5, 0}, {1.5, 1.5, 1.5, 0}, {1.5, 0.5, 2.5, 0}}
	for name, loop := range map[string]func([][4]float32, []posting, []termRun){
		"reference": addRunsRef, "portable": addRunsGo, "in use": addRuns,
	} {
		got := make([][4]float32, 3)
		loop(got, postings, runs)
		for r := range want {
			if got[r] != want[r] {
				t.Errorf("%s loop: row %d: sums %v, want %v", name, r, got[r], want[r])
			}
		}
	}
}

// TestAddRuns checks that the posting loop in use (assembly on amd64 with
// AVX) and the portable loop give the reference loop's sums to the bit:
// runs of every length up to a
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
		start := make([][4]float32, rows)
		for r := range rows {
			start[r] = [4]float32{rng.Float32(), rng.Float32(), rng.Float32(), 0}
		}
		want := slices.Clone(start)
		addRunsRef(want, postings, runs)
		inUse, portable := slices.Clone(start), slices.Clone(start)
		if trial%2 == 0 {
			addRuns(inUse, postings, runs)
		} else {
			addRunsBounded(inUse, postings, runs, trial%7)
		}
		addRunsGo(portable, postings, runs)
		for r := range rows {
			if inUse[r] != want[r] {
				t.Fatalf("trial %d: row %d: the loop in use gives %v, the reference %v", trial, r, inUse[r], want[r])
			}
			if portable[r] != want[r] {
				t.Fatalf("trial %d: row %d: the portable loop gives %v, the reference %v", trial, r, portable[r], want[r])
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
