package collision

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/vec"
)

// randomCatalog returns n dense tools of dimension dim with 0 to 4 examples
// each, about half the coordinates zero (so sparse forms share few terms),
// negative values included, and some gates open to everything.
func randomCatalog(r *rand.Rand, n, dim int) []habilis.Record {
	var recs []habilis.Record
	for i := range n {
		var exs []ex
		for k := range r.IntN(5) {
			v := make([]float64, dim)
			for d := range v {
				if r.Float64() < 0.4 {
					v[d] = r.NormFloat64()
				}
			}
			exs = append(exs, ex{fmt.Sprintf("t%d/%d", i, k), unit(v...)})
		}
		margin := float32(r.Float64() * 0.2)
		if r.IntN(10) == 0 {
			margin = 2
		}
		recs = append(recs, denseTool(fmt.Sprintf("t%02d", i), margin, exs...))
	}
	return recs
}

// refTool is a tool as reference sees it: its record and its gate.
type refTool struct {
	rec  habilis.Record
	gate float32
}

// reference computes Find (or Pairs, without examples) by the definitions,
// one dot product at a time, building every leave-one-out centroid.
func reference(recs []habilis.Record, opts Options, examples bool) []habilis.Collision {
	opts, _ = opts.resolved()
	ts := referenceTools(recs, opts)
	sim := func(i, j int) float32 { return vec.Dot(ts[i].rec.Centroid.Dense, ts[j].rec.Centroid.Dense) }
	ps := make(pairSet)
	for i := range ts {
		for j := i + 1; j < len(ts); j++ {
			if s := sim(i, j); s >= opts.Threshold || s >= ts[i].gate || s >= ts[j].gate {
				ps[key(i, j)] = &pair{i: i, j: j, sim: s, centroids: true}
			}
		}
	}
	if examples {
		for a := range ts {
			for k := range ts[a].rec.ExampleVectors {
				referenceLeaks(ts, a, k, ps, sim)
			}
		}
	}
	c := &catalog{}
	for k, t := range ts {
		c.recs = append(c.recs, t.rec)
		c.tools = append(c.tools, tool{rec: k, name: t.rec.Tool.Name, gate: t.gate, theta: capAngle(t.gate)})
	}
	return c.report(ps, opts)
}

// referenceTools returns the records with a centroid and their gates.
func referenceTools(recs []habilis.Record, opts Options) []refTool {
	var ts []refTool
	for _, r := range recs {
		if r.Centroid.IsZero() {
			continue
		}
		g := opts.CatalogThreshold
		if r.HasRadius {
			g = r.Radius - r.Margin
			if opts.GateFloor > 0 {
				g = max(g, opts.GateFloor)
			}
		}
		ts = append(ts, refTool{r, g})
	}
	return ts
}

// referenceLeaks adds to ps the leaks of example k of tool a, left out of
// its tool, by the definitions.
func referenceLeaks(ts []refTool, a, k int, ps pairSet, sim func(i, j int) float32) {
	evs := ts[a].rec.ExampleVectors
	e := evs[k]
	if len(evs) < 2 || zero(e) {
		return
	}
	var others [][]float32
	for m, o := range evs {
		if m != k {
			others = append(others, o.Dense)
		}
	}
	var own float32
	if c := vec.MeanDense(others); c != nil {
		own = vec.Dot(e.Dense, c)
	}
	best, bestScore := -1, float32(0)
	for b := range ts {
		if s := vec.Dot(e.Dense, ts[b].rec.Centroid.Dense); b != a && s > bestScore {
			best, bestScore = b, s
		}
	}
	for b := range ts {
		if b == a {
			continue
		}
		s := vec.Dot(e.Dense, ts[b].rec.Centroid.Dense)
		gate := s >= ts[b].gate
		first := b == best && s > own
		if !gate && b != best {
			continue
		}
		p := ps[key(a, b)]
		if p == nil {
			p = &pair{i: min(a, b), j: max(a, b), sim: sim(a, b)}
			ps[key(a, b)] = p
		}
		if b == best {
			if a < b {
				p.nearest[0]++
			} else {
				p.nearest[1]++
			}
		}
		if !gate && !first {
			continue
		}
		p.add(habilis.Leak{From: ts[a].rec.Tool.Name, Into: ts[b].rec.Tool.Name,
			Example: ts[a].rec.Tool.Examples[k], Score: s, OwnScore: own,
			RanksFirst: first, PassesGate: gate}, a, 1<<30)
	}
}

// canonical orders collisions and their leaks by names, so two results
// whose sort keys tie within rounding compare equal.
func canonical(cols []habilis.Collision) []habilis.Collision {
	cols = slices.Clone(cols)
	for i := range cols {
		cols[i].Leaks = slices.Clone(cols[i].Leaks)
		slices.SortFunc(cols[i].Leaks, func(a, b habilis.Leak) int {
			return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.Example, b.Example), cmp.Compare(a.Into, b.Into))
		})
	}
	slices.SortFunc(cols, func(a, b habilis.Collision) int {
		return cmp.Or(cmp.Compare(a.A, b.A), cmp.Compare(a.B, b.B))
	})
	return cols
}

func TestMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 12 {
		recs := randomCatalog(r, 20, 10)
		opts := Options{Threshold: 0.5, CatalogThreshold: 0.3, MaxLeaksPerPair: 1000, MinMisroutes: 2}
		if round%2 == 1 {
			opts.GateFloor = 0.2 // as the selector's noise floor raises gates
		}
		for _, f := range []struct {
			name     string
			fn       func([]habilis.Record, Options) ([]habilis.Collision, error)
			examples bool
		}{{"Pairs", Pairs, false}, {"Find", Find, true}} {
			want := canonical(reference(recs, opts, f.examples))
			for _, form := range []struct {
				name string
				recs []habilis.Record
			}{{"dense", recs}, {"sparse", toSparse(recs)}} {
				got, err := f.fn(form.recs, opts)
				if err != nil {
					t.Fatalf("round %d: %s(%s): %v", round, f.name, form.name, err)
				}
				if diff := gocmp.Diff(want, canonical(got), cmpopts.EquateApprox(0, 1e-4), cmpopts.EquateEmpty()); diff != "" {
					t.Fatalf("round %d: %s(%s) mismatch (-want +got):\n%s", round, f.name, form.name, diff)
				}
			}
		}
	}
}

func TestSparseAboveMaxTools(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 30 {
		recs := randomCatalog(r, 40, 12)
		opts := Options{Threshold: 0.3}
		var want []habilis.Collision
		for _, c := range reference(recs, opts, false) {
			if c.CentroidSimilarity >= opts.Threshold {
				want = append(want, c)
			}
		}
		opts.MaxTools = 1
		got, err := Pairs(toSparse(recs), opts)
		if err != nil {
			t.Fatalf("Pairs: %v", err)
		}
		if diff := gocmp.Diff(canonical(want), canonical(got), cmpopts.EquateApprox(0, 1e-4), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round %d: Pairs(above MaxTools) mismatch (-want +got):\n%s", round, diff)
		}
	}
}

// TestPairsWorkers checks that the analyses spread over goroutines give
// the same collisions, to the bit, whatever the number of workers: Pairs
// exact and restricted (above MaxTools), and Find.
func TestPairsWorkers(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	recs := toSparse(randomCatalog(r, 120, 12))
	runs := []struct {
		name string
		fn   func([]habilis.Record, Options) ([]habilis.Collision, error)
		opts Options
	}{
		{"Pairs", Pairs, Options{Threshold: 0.3}},
		{"Pairs restricted", Pairs, Options{Threshold: 0.3, MaxTools: 1}},
		{"Find", Find, Options{Threshold: 0.3}},
	}
	for _, run := range runs {
		var want []habilis.Collision
		for _, procs := range []int{1, 2, 5} {
			old := runtime.GOMAXPROCS(procs)
			got, err := run.fn(recs, run.opts)
			runtime.GOMAXPROCS(old)
			if err != nil {
				t.Fatalf("%s: %v", run.name, err)
			}
			if procs == 1 {
				if len(got) == 0 {
					t.Fatalf("%s: no collisions; the test needs some", run.name)
				}
				want = got
				continue
			}
			if diff := gocmp.Diff(want, got); diff != "" {
				t.Errorf("%s with GOMAXPROCS %d differs from one worker (-want +got):\n%s", run.name, procs, diff)
			}
		}
	}
}

// TestHighOnly checks that HighOnly finds, above MaxTools, exactly the
// pairs of high severity that the pass without it finds, in sparse and
// dense catalogs.
func TestHighOnly(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for round := range 30 {
		recs := randomCatalog(r, 40, 12)
		if round%2 == 1 {
			recs = toSparse(recs)
		}
		opts := Options{Threshold: 0.3, MaxTools: 1}
		all, err := Pairs(recs, opts)
		if err != nil {
			t.Fatalf("Pairs: %v", err)
		}
		var want []habilis.Collision
		for _, c := range all {
			if c.Severity == habilis.SeverityHigh {
				want = append(want, c)
			}
		}
		opts.HighOnly = true
		got, err := Pairs(recs, opts)
		if err != nil {
			t.Fatalf("Pairs: %v", err)
		}
		if len(want) == 0 && round == 0 {
			t.Fatalf("round %d: no high pairs to compare", round)
		}
		if diff := gocmp.Diff(canonical(want), canonical(got), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round %d: Pairs(HighOnly) mismatch (-want +got):\n%s", round, diff)
		}
	}
}

// TestRocchioDescriptionWeight checks the Rocchio scores the analysis
// ranks examples by against q·(S + m·u)/‖S + m·u‖ by hand, S the sum of
// the examples (without the one left out, for its own tool) and m the
// description's weight for that many examples.
func TestRocchioDescriptionWeight(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	randUnit := func() []float32 {
		v := make([]float64, 6)
		for d := range v {
			v[d] = r.NormFloat64()
		}
		return unit(v...)
	}
	weight := func(n int) float32 { return float32(max(1, 6-n)) }
	byHand := func(q []float32, vs [][]float32, u []float32, m float64) float64 {
		x := make([]float64, len(q))
		for k := range x {
			for _, v := range vs {
				x[k] += float64(v[k])
			}
			x[k] += m * float64(u[k])
		}
		var d, n float64
		for k := range x {
			d += float64(q[k]) * x[k]
			n += x[k] * x[k]
		}
		return d / math.Sqrt(n)
	}
	for _, n := range []int{1, 2, 3, 6} {
		var exs []ex
		var vs [][]float32
		for k := range n {
			v := randUnit()
			exs, vs = append(exs, ex{fmt.Sprint(k), v}), append(vs, v)
		}
		rec := denseTool("t", 0, exs...)
		u := randUnit()
		rec.DescriptionVector = habilis.Vector{Dense: u}
		c := &catalog{recs: []habilis.Record{rec}, tools: []tool{{rec: 0}}}
		roc := c.rocchioNorms(Options{DescriptionWeight: weight})[0]
		q := randUnit()
		got := roc.score(vec.Dot(q, rec.Centroid.Dense), vec.Dot(q, u))
		if want := byHand(q, vs, u, float64(weight(n))); math.Abs(float64(got)-want) > 1e-5 {
			t.Errorf("%d examples: Rocchio score %v, by hand %v", n, got, want)
		}
		if n < 2 {
			continue
		}
		// Example 0 at its own tool, left out of it.
		e := vs[0]
		var ss, es, ee float64
		sum := make([]float64, len(e))
		for _, v := range vs {
			for k := range sum {
				sum[k] += float64(v[k])
			}
		}
		for k := range sum {
			ss += sum[k] * sum[k]
			es += float64(e[k]) * sum[k]
			ee += float64(e[k]) * float64(e[k])
		}
		m := float64(weight(n - 1))
		got = ownRocchio(habilis.Vector{Dense: e}, rec.DescriptionVector, 0, ss, es, ee, m, roc)
		if want := byHand(e, vs[1:], u, m); math.Abs(float64(got)-want) > 1e-5 {
			t.Errorf("%d examples: Rocchio score of an example left out %v, by hand %v", n, got, want)
		}
	}
}
