package vec

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
func addRunsRef(acc [][4]float32, postings []Posting, runs []Run) {
	for _, r := range runs {
		for k := int(r.Lo); k < int(r.Hi); k++ {
			p := postings[k]
			row := int(p.At) / 16
			acc[row][0] = acc[row][0] + float32(r.W*p.Cent)
			acc[row][1] = acc[row][1] + float32(r.W*p.Desc)
			acc[row][2] = acc[row][2] + float32(r.W*p.Doc)
		}
	}
}

// TestAddRunsByHand checks the reference loop, and both loops, on sums
// worked out by hand: exact in binary, so any order of addition gives them.
func TestAddRunsByHand(t *testing.T) {
	postings := []Posting{
		{Cent: 1, Desc: 2, Doc: 4, At: 0},     // row 0
		{Cent: 0.5, Desc: 0, Doc: 1, At: 32},  // row 2
		{Cent: 8, Desc: -1, Doc: 0.25, At: 0}, // row 0
		{Cent: 3, Desc: 3, Doc: 3, At: 16},    // row 1
		{Cent: 1, Desc: 1, Doc: 1, At: 32},    // row 2
	}
	runs := []Run{{W: 2, Lo: 0, Hi: 3}, {W: 0.5, Lo: 3, Hi: 5}, {W: 4, Lo: 4, Hi: 4}}
	// Row 0: 2·(1, 2, 4) + 2·(8, −1, 0.25); row 1: 0.5·(3, 3, 3); row 2:
	// 2·(0.5, 0, 1) + 0.5·(1, 1, 1); the last run is empty.
	want := [][4]float32{{18, 2, 8.5, 0}, {1.5, 1.5, 1.5, 0}, {1.5, 0.5, 2.5, 0}}
	for name, loop := range map[string]func([][4]float32, []Posting, []Run){
		"reference": addRunsRef, "portable": addRunsGo, "in use": AddRuns,
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
		postings := make([]Posting, rng.IntN(300))
		for i := range postings {
			postings[i] = Posting{Cent: rng.Float32()*2 - 1, Desc: rng.Float32()*2 - 1, Doc: rng.Float32()*2 - 1, At: RowBytes * int32(rng.IntN(rows))}
			if rng.IntN(3) == 0 {
				postings[i].Desc = 0
			}
		}
		runs := make([]Run, rng.IntN(12))
		for i := range runs {
			r := &runs[i]
			r.Lo = int32(rng.IntN(len(postings) + 1))
			r.Hi = r.Lo + int32(rng.IntN(len(postings)+1-int(r.Lo)))
			r.W = []float32{0.37, -1.5, 0, rng.Float32()}[rng.IntN(4)]
		}
		start := make([][4]float32, rows)
		for r := range rows {
			start[r] = [4]float32{rng.Float32(), rng.Float32(), rng.Float32(), 0}
		}
		want := slices.Clone(start)
		addRunsRef(want, postings, runs)
		inUse, portable := slices.Clone(start), slices.Clone(start)
		if trial%2 == 0 {
			AddRuns(inUse, postings, runs)
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

func TestPostingsIn(t *testing.T) {
	tests := []struct {
		ats  []int32
		rows int
		want bool
	}{
		{nil, 0, true},
		{[]int32{0, 16, 32}, 3, true},
		{[]int32{0, 48}, 3, false}, // row 3 of 3
		{[]int32{-16}, 3, false},
		{[]int32{8}, 3, false}, // not a row's start
	}
	for _, tt := range tests {
		ps := make([]Posting, len(tt.ats))
		for i, at := range tt.ats {
			ps[i].At = at
		}
		if got := PostingsIn(ps, tt.rows); got != tt.want {
			t.Errorf("PostingsIn(at %v, %d) = %v, want %v", tt.ats, tt.rows, got, tt.want)
		}
	}
}

// TestPostingLayout checks the field offsets that the assembly loop reads.
func TestPostingLayout(t *testing.T) {
	var r Run
	var p Posting
	for _, c := range []struct {
		what      string
		got, want uintptr
	}{
		{"Run.W", unsafe.Offsetof(r.W), 4},
		{"Run.Lo", unsafe.Offsetof(r.Lo), 8},
		{"Run.Hi", unsafe.Offsetof(r.Hi), 12},
		{"Run size", unsafe.Sizeof(r), 16},
		{"Posting.Cent", unsafe.Offsetof(p.Cent), 0},
		{"Posting.Desc", unsafe.Offsetof(p.Desc), 4},
		{"Posting.Doc", unsafe.Offsetof(p.Doc), 8},
		{"Posting.At", unsafe.Offsetof(p.At), 12},
		{"Posting size", unsafe.Sizeof(p), 16},
		{"a row's sums (RowBytes)", unsafe.Sizeof([4]float32{}), RowBytes},
	} {
		if c.got != c.want {
			t.Errorf("%s at %d, the assembly reads it at %d", c.what, c.got, c.want)
		}
	}
}
