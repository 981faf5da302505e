package selector

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/vec"
)

// randSparse returns a random sparse vector over terms [0, vocab) with
// about density·vocab entries (possibly none), indices ascending.
func randSparse(rng *rand.Rand, vocab int, density float64) habilis.Vector {
	var v habilis.Vector
	for t := range vocab {
		if rng.Float64() < density {
			v.Indices = append(v.Indices, uint32(t))
			v.Values = append(v.Values, rng.Float32()*2-1)
		}
	}
	return v
}

// naiveDot is q·v summed in q's term order, as the index sums it: the
// reference the index must match exactly.
func naiveDot(q, v habilis.Vector) float32 {
	w := make(map[uint32]float32, len(v.Indices))
	for i, t := range v.Indices {
		w[t] = v.Values[i]
	}
	var s float32
	for i, t := range q.Indices {
		if x, ok := w[t]; ok {
			s += q.Values[i] * x
		}
	}
	return s
}

// randomTriRows returns rows random centroids, descriptions and
// documents over vocab terms: descriptions are short, every fifth row has
// no centroid (a tool without examples), some have no document, and one
// description stores a zero weight.
func randomTriRows(rng *rand.Rand, rows, vocab int) (cents, descs, docs []habilis.Vector) {
	cents = make([]habilis.Vector, rows)
	descs = make([]habilis.Vector, rows)
	docs = make([]habilis.Vector, rows)
	for r := range rows {
		if r%5 != 0 {
			cents[r] = randSparse(rng, vocab, 0.1)
		}
		descs[r] = randSparse(rng, vocab, 0.02)
		if r%7 != 3 {
			docs[r] = randSparse(rng, vocab, 0.15)
		}
	}
	if rows > 1 {
		// A stored zero weight scores like an absent one.
		descs[1] = habilis.Vector{Indices: []uint32{4, 9}, Values: []float32{0, 0.5}}
	}
	return cents, descs, docs
}

// TestTriSpaceExact checks that the merged index scores every row of each
// set exactly as a naive dot product does, on random sparse rows where
// descriptions are short, some rows are empty and the query has terms no
// row has.
func TestTriSpaceExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	const vocab = 300
	for _, rows := range []int{0, 1, 37, 500} {
		cents, descs, docs := randomTriRows(rng, rows, vocab)
		s := newTriSpace(cents, descs, docs)
		acc := make([][4]float32, rows)
		for range 20 {
			q := randSparse(rng, vocab+50, 0.2)
			s.accumulate(q, acc, nil)
			for k, set := range [3][]habilis.Vector{cents, descs, docs} {
				for r := range rows {
					if want := naiveDot(q, set[r]); acc[r][k] != want {
						t.Fatalf("rows %d: set %d row %d: score %v, want %v", rows, k, r, acc[r][k], want)
					}
				}
			}
		}
		// Each (row, term) of the three sets is one posting, in row order
		// within its run, at 16 bytes a row.
		want := 0
		for r := range rows {
			terms := map[uint32]bool{}
			for _, v := range []habilis.Vector{cents[r], descs[r], docs[r]} {
				for _, t := range v.Indices {
					terms[t] = true
				}
			}
			want += len(terms)
		}
		if n := len(s.postings); n != want {
			t.Fatalf("rows %d: %d postings, want %d", rows, n, want)
		}
		for k := range len(s.offsets) - 1 {
			run := s.postings[s.offsets[k]:s.offsets[k+1]]
			if !slices.IsSortedFunc(run, func(a, b vec.Posting) int { return int(a.At - b.At) }) {
				t.Fatalf("rows %d: term slot %d: postings out of row order", rows, k)
			}
			for _, p := range run {
				if p.At%vec.RowBytes != 0 || p.Row() < 0 || int(p.Row()) >= rows {
					t.Fatalf("rows %d: term slot %d: posting at byte %d, outside the %d rows", rows, k, p.At, rows)
				}
			}
		}
	}
}

// TestSpaceExact checks that a single-signal sparse space (the document
// signal beside a model embedder's dense ones) scores every row exactly as
// a naive dot product does, with empty rows and query terms no row has.
func TestSpaceExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 17))
	const vocab = 300
	for _, rows := range []int{0, 1, 37, 500} {
		vs := make([]habilis.Vector, rows)
		for r := range rows {
			if r%6 != 2 {
				vs[r] = randSparse(rng, vocab, 0.1)
			}
		}
		s := newSpace(vs, 0)
		out := make([]float32, rows)
		for range 20 {
			q := randSparse(rng, vocab+50, 0.2)
			s.scoreAll(q, out)
			for r := range rows {
				if want := naiveDot(q, vs[r]); out[r] != want {
					t.Fatalf("rows %d: row %d: score %v, want %v", rows, r, out[r], want)
				}
			}
		}
	}
}
