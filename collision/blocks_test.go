package collision

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/vec"
)

// clusteredDense returns n tools of dimension dim in groups of size
// around random directions, with noise that puts most pairs of a group
// between 0.7 and 0.95: many pairs on either side of the default
// threshold, and none across groups.
func clusteredDense(n, size, dim int, seed uint64) []habilis.Record {
	r := rand.New(rand.NewPCG(seed, 1))
	recs := make([]habilis.Record, 0, n)
	for g := 0; len(recs) < n; g++ {
		base := make([]float64, dim)
		for x := range base {
			base[x] = r.NormFloat64()
		}
		// Two members of a group are about 1 / (1 + noise²) alike.
		noise := 0.3 + 0.4*r.Float64()
		for m := 0; m < size && len(recs) < n; m++ {
			v := make([]float64, dim)
			for x := range v {
				v[x] = base[x] + noise*r.NormFloat64()
			}
			recs = append(recs, centroidTool(fmt.Sprintf("g%04d_t%02d", g, m), 0.9, unit(v...)))
		}
	}
	return recs
}

// TestDenseAbove checks the blocked pass against every pair compared:
// each pair it reports is one (similarity at least the threshold, the
// same similarity); it finds all of them when every block within reach is
// searched, and at least 98 % with the blocks searched capped, as Pairs
// runs it.
func TestDenseAbove(t *testing.T) {
	for _, tc := range []struct{ n, size, dim int }{{600, 6, 24}, {3000, 8, 48}, {5000, 3, 16}} {
		t.Run(fmt.Sprintf("%d/%d/%d", tc.n, tc.size, tc.dim), func(t *testing.T) {
			recs := clusteredDense(tc.n, tc.size, tc.dim, uint64(tc.n))
			opts, err := Options{}.resolved()
			if err != nil {
				t.Fatal(err)
			}
			c, err := newCatalog(recs, opts)
			if err != nil {
				t.Fatal(err)
			}
			want := map[[2]int32]float32{}
			for i := range c.tools {
				for j := i + 1; j < len(c.tools); j++ {
					if s := vec.Dot(c.slab.Row(i), c.slab.Row(j)); s >= opts.Threshold {
						want[[2]int32{int32(i), int32(j)}] = s
					}
				}
			}
			if len(want) < tc.n/10 {
				t.Fatalf("%d pairs above the threshold: the test checks too few", len(want))
			}
			for _, probes := range []int{len(c.tools), maxProbes} {
				got := map[[2]int32]bool{}
				for _, h := range c.denseAbove(opts.Threshold, probes) {
					k := [2]int32{h.i, h.j}
					s, ok := want[k]
					switch {
					case got[k]:
						t.Errorf("probes %d: pair %v reported twice", probes, k)
					case !ok || math.Abs(float64(s-h.sim)) > 1e-5:
						t.Errorf("probes %d: pair %v with similarity %v reported; every pair compared gives %v, %v", probes, k, h.sim, s, ok)
					}
					got[k] = true
				}
				if probes == maxProbes && len(got) < len(want)*98/100 || probes > maxProbes && len(got) != len(want) {
					t.Errorf("probes %d: found %d of the %d pairs above the threshold", probes, len(got), len(want))
				}
			}
		})
	}
}

// TestDenseAboveFew: two or three tools, the least the blocked pass gets,
// and a pair exactly at the threshold, which counts.
func TestDenseAboveFew(t *testing.T) {
	recs := []habilis.Record{
		centroidTool("a", 0.9, unit(1, 0.1, 0)),
		centroidTool("b", 0.9, unit(1, 0.3, 0)),
		centroidTool("c", 0.9, unit(0, 0, 1)),
	}
	for n := 2; n <= len(recs); n++ {
		opts, err := Options{}.resolved()
		if err != nil {
			t.Fatal(err)
		}
		c, err := newCatalog(recs[:n], opts)
		if err != nil {
			t.Fatal(err)
		}
		at := vec.Dot(c.slab.Row(0), c.slab.Row(1))
		got := c.denseAbove(at, maxProbes)
		if want := []hit{{0, 1, at}}; len(got) != 1 || got[0] != want[0] {
			t.Errorf("%d tools: denseAbove(%v) = %v, want %v", n, at, got, want)
		}
	}
}
