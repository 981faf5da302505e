package layout

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPostingRows checks that packed and wide rows read alike, and that
// a space of more than MaxPacked rows keeps them wide.
func TestPostingRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, space := range []int{1, 300, 70_000, MaxPacked, MaxPacked + 1} {
		rows := make([]int32, 200)
		for j := range rows {
			rows[j] = int32(rng.IntN(space))
		}
		slices.Sort(rows)
		rows = slices.Compact(rows)
		p := PackRows(len(rows), space, func(at func(int, int32)) {
			for j, r := range rows {
				at(j, r)
			}
		})
		if packed := p.Packed != nil; packed != (space <= MaxPacked) {
			t.Errorf("space of %d rows: packed %v, want %v", space, packed, !packed)
		}
		if p.Len() != len(rows) {
			t.Fatalf("space of %d rows: Len() = %d, want %d", space, p.Len(), len(rows))
		}
		for j, r := range rows {
			if got := p.At(j); got != r {
				t.Errorf("space of %d rows: At(%d) = %d, want %d", space, j, got, r)
			}
			if !p.Has(0, len(rows), r) {
				t.Errorf("space of %d rows: Has(%d) = false", space, r)
			}
		}
		if r := rows[len(rows)-1] + 1; int(r) < space && p.Has(0, len(rows), r) {
			t.Errorf("space of %d rows: Has(%d) = true, want false", space, r)
		}
		if !p.In(0, len(rows), space) || (rows[len(rows)-1] > 0 && p.In(0, len(rows), int(rows[len(rows)-1]))) {
			t.Errorf("space of %d rows: In does not bound the rows at %d", space, space)
		}
	}
}
