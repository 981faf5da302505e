package toolmap_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/toolmap"
)

// catalog is a synthetic catalog: tools in clusters whose centroids are
// near each other and far from the other clusters'.
type catalog struct {
	recs    []habilis.Record
	gates   map[string]float32
	cluster map[string]int
}

const dim = 48

func unit(v []float64) []float64 {
	var n float64
	for _, x := range v {
		n += x * x
	}
	n = math.Sqrt(n)
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x / n
	}
	return out
}

// around returns a unit vector at about the given spread from centre.
func around(rng *rand.Rand, centre []float64, spread float64) []float64 {
	v := make([]float64, len(centre))
	for i := range v {
		v[i] = centre[i] + spread*rng.NormFloat64()/math.Sqrt(dim)
	}
	return unit(v)
}

func dense(v []float64) habilis.Vector {
	d := make([]float32, len(v))
	for i, x := range v {
		d[i] = float32(x)
	}
	return habilis.Vector{Dense: d}
}

// sparse is v in sparse form, its zero coordinates left out.
func sparse(v []float64) habilis.Vector {
	var out habilis.Vector
	for i, x := range v {
		if x != 0 {
			out.Indices = append(out.Indices, uint32(i))
			out.Values = append(out.Values, float32(x))
		}
	}
	return out
}

// newCatalog makes clusters of tools, each tool with examples around its
// own direction, which lies around its cluster's centre. Cluster centres
// are random directions, nearly orthogonal in dim dimensions.
func newCatalog(seed uint64, clusters, perCluster, examples int, form func([]float64) habilis.Vector) *catalog {
	rng := rand.New(rand.NewPCG(seed, 1))
	c := &catalog{gates: map[string]float32{}, cluster: map[string]int{}}
	for k := range clusters {
		centre := around(rng, make([]float64, dim), 10)
		for j := range perCluster {
			name := fmt.Sprintf("c%d_t%d", k, j)
			dir := around(rng, centre, 0.5)
			rec := habilis.Record{Tool: habilis.Tool{Name: name, Description: "tool " + name}}
			sum := make([]float64, dim)
			for e := range examples {
				v := around(rng, dir, 0.6)
				rec.Tool.Examples = append(rec.Tool.Examples, fmt.Sprintf("%s example %d", name, e))
				rec.ExampleVectors = append(rec.ExampleVectors, form(v))
				for i := range sum {
					sum[i] += v[i]
				}
			}
			rec.Centroid = form(unit(sum))
			rec.DescriptionVector = form(dir)
			c.recs = append(c.recs, rec)
			c.gates[name] = 0.5
			c.cluster[name] = k
		}
	}
	return c
}

func (c *catalog) input() toolmap.Input {
	return toolmap.Input{Records: c.recs, Gates: c.gates}
}

func dist(ax, ay, bx, by float64) float64 { return math.Hypot(ax-bx, ay-by) }

// TestNeighboursStayNear checks the layout's defining property on
// clustered catalogs: every tool is nearer to each tool of its own cluster
// than to any tool of another, whatever the seed, the sizes and the
// vectors' form. In clusters of two, each tool's most similar tool is its
// partner, so NeighboursKept must be 1.
func TestNeighboursStayNear(t *testing.T) {
	for _, tc := range []struct {
		clusters, per int
		form          func([]float64) habilis.Vector
		name          string
		seeds         uint64
	}{
		{3, 3, dense, "dense 3x3", 6},
		{4, 4, sparse, "sparse 4x4", 6},
		{6, 5, dense, "dense 6x5", 6},
		{10, 6, dense, "dense 10x6", 6},
		{8, 2, dense, "dense 8x2", 6},
		{40, 2, sparse, "sparse 40x2", 3},
		{30, 8, sparse, "sparse 30x8", 1},
	} {
		for seed := range tc.seeds {
			c := newCatalog(seed, tc.clusters, tc.per, 4, tc.form)
			m, err := toolmap.Build(c.input())
			if err != nil {
				t.Fatalf("%s seed %d: Build: %v", tc.name, seed, err)
			}
			for _, a := range m.Tools {
				inner, outer := 0.0, math.Inf(1)
				nearest := ""
				for _, b := range m.Tools {
					if a.Name == b.Name {
						continue
					}
					d := dist(a.X, a.Y, b.X, b.Y)
					if c.cluster[a.Name] == c.cluster[b.Name] {
						inner = max(inner, d)
					} else if d < outer {
						outer, nearest = d, b.Name
					}
				}
				if inner >= outer {
					t.Errorf("%s seed %d: %s is %.2f from the farthest of its cluster but %.2f from %s of another",
						tc.name, seed, a.Name, inner, outer, nearest)
				}
			}
			if tc.per == 2 && m.NeighboursKept != 1 {
				t.Errorf("%s seed %d: NeighboursKept = %.2f, want 1", tc.name, seed, m.NeighboursKept)
			}
		}
	}
}

// TestFormDoesNotMatter checks that the layout depends on similarities
// alone: the same vectors, dense or sparse, give the same map, to the bit.
func TestFormDoesNotMatter(t *testing.T) {
	d, err := toolmap.Build(newCatalog(7, 3, 4, 5, dense).input())
	if err != nil {
		t.Fatal(err)
	}
	s, err := toolmap.Build(newCatalog(7, 3, 4, 5, sparse).input())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(d, s); diff != "" {
		t.Errorf("dense and sparse maps differ (-dense +sparse):\n%s", diff)
	}
}

// TestExamplesAgainstGates checks that an example lies inside its tool's
// circle exactly when it passes the tool's gate, and that an example the
// analysis routes elsewhere sits at that tool.
func TestExamplesAgainstGates(t *testing.T) {
	c := newCatalog(3, 3, 3, 6, dense)
	for name := range c.gates {
		c.gates[name] = 0.8 // some examples inside, some outside
	}
	// One example of c0_t0 is the centroid of c2_t0: it would be routed
	// there, and sits on that tool's point.
	from, into := &c.recs[0], &c.recs[6]
	from.Tool.Examples[0] = "misrouted"
	from.ExampleVectors[0] = into.Centroid
	in := c.input()
	in.Collisions = []habilis.Collision{{A: from.Tool.Name, B: into.Tool.Name, Severity: habilis.SeverityHigh,
		Leaks: []habilis.Leak{{From: from.Tool.Name, Into: into.Tool.Name, Example: "misrouted", RanksFirst: true, PassesGate: true}}}}
	m, err := toolmap.Build(in)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]toolmap.Tool{}
	for _, tl := range m.Tools {
		tools[tl.Name] = tl
	}
	inside, outside := 0, 0
	for _, e := range m.Examples {
		if e.Text == "misrouted" {
			at := tools[into.Tool.Name]
			if e.RoutedTo != into.Tool.Name || dist(e.X, e.Y, at.X, at.Y) > 1e-3 {
				t.Errorf("misrouted example: routed to %q at (%.3f, %.3f), want %q at (%.3f, %.3f)", e.RoutedTo, e.X, e.Y, into.Tool.Name, at.X, at.Y)
			}
			if !slices.Equal(e.Passes, []string{into.Tool.Name}) {
				t.Errorf("misrouted example: Passes = %v, want [%s]", e.Passes, into.Tool.Name)
			}
			continue
		}
		own := tools[e.Tool]
		d := dist(e.X, e.Y, own.X, own.Y)
		if e.InGate != (e.Score >= own.Gate) {
			t.Errorf("%q: InGate %v with score %.3f and gate %.3f", e.Text, e.InGate, e.Score, own.Gate)
		}
		if e.InGate != (d <= own.Radius+1e-9) {
			t.Errorf("%q: InGate %v but %.3f from its tool, whose circle is %.3f", e.Text, e.InGate, d, own.Radius)
		}
		if e.InGate {
			inside++
		} else {
			outside++
		}
	}
	if inside == 0 || outside == 0 {
		t.Errorf("%d examples inside their gate and %d outside: the test needs both", inside, outside)
	}
	if len(m.Links) != 1 || m.Links[0].Severity != habilis.SeverityHigh || len(m.Links[0].Leaks) != 1 {
		t.Errorf("Links = %+v, want the one high collision with its leak", m.Links)
	}
}

// TestHeldOutScore checks an example's score against the centroid of its
// tool's other examples, computed the long way.
func TestHeldOutScore(t *testing.T) {
	c := newCatalog(11, 1, 1, 5, dense)
	m, err := toolmap.Build(c.input())
	if err != nil {
		t.Fatal(err)
	}
	rec := c.recs[0]
	for k, e := range m.Examples {
		sum := make([]float64, dim)
		for j, v := range rec.ExampleVectors {
			if j != k {
				for i, x := range v.Dense {
					sum[i] += float64(x)
				}
			}
		}
		cen := unit(sum)
		var want float64
		for i, x := range rec.ExampleVectors[k].Dense {
			want += float64(x) * cen[i]
		}
		if math.Abs(float64(e.Score)-want) > 1e-5 {
			t.Errorf("example %d: Score = %.6f, want %.6f", k, e.Score, want)
		}
	}
}

func TestQuery(t *testing.T) {
	c := newCatalog(5, 3, 2, 3, dense)
	target := c.recs[2] // c1_t0
	scores := map[string]float32{}
	for _, r := range c.recs {
		var s float64
		for i, x := range r.Centroid.Dense {
			s += float64(x) * float64(target.Centroid.Dense[i])
		}
		scores[r.Tool.Name] = float32(s)
	}
	d := &habilis.Decision{Query: "q", Ambiguous: true, Reason: "two tools", Matches: []habilis.Match{
		{Tool: "c1_t0", Passed: true}, {Tool: "c1_t1", Passed: true}, {Tool: "c0_t0"},
	}}
	in := c.input()
	in.Query = &toolmap.Query{Text: "q", Scores: scores, Decision: d}
	m, err := toolmap.Build(in)
	if err != nil {
		t.Fatal(err)
	}
	q := m.Query
	want := &toolmap.QueryPoint{Text: "q", Near: "c1_t0", Passed: []string{"c1_t0", "c1_t1"}, Ambiguous: true, Reason: "two tools"}
	if diff := cmp.Diff(want, q, cmpopts.IgnoreFields(toolmap.QueryPoint{}, "X", "Y")); diff != "" {
		t.Errorf("Query (-want +got):\n%s", diff)
	}
	// Its score against c1_t0 is 1: it sits on the tool's point.
	for _, tl := range m.Tools {
		if tl.Name == "c1_t0" && dist(q.X, q.Y, tl.X, tl.Y) > 1e-3 {
			t.Errorf("request at (%.3f, %.3f), want on c1_t0 at (%.3f, %.3f)", q.X, q.Y, tl.X, tl.Y)
		}
	}
}

func names(m *toolmap.Map) []string {
	var out []string
	for _, t := range m.Tools {
		out = append(out, t.Name)
	}
	return out
}

// TestChoose checks which tools a map draws: the named ones and their
// collisions, and in a catalog above the limit the request's
// neighbourhood or the colliding tools.
func TestChoose(t *testing.T) {
	c := newCatalog(2, 4, 3, 2, dense) // c0_t0 ... c3_t2
	cols := []habilis.Collision{
		{A: "c0_t0", B: "c0_t1", Severity: habilis.SeverityHigh},
		{A: "c2_t2", B: "c3_t0", Severity: habilis.SeverityMedium},
	}
	scores := map[string]float32{"c3_t1": 0.9, "c3_t2": 0.8, "c1_t0": 0.7, "c2_t0": 0.1}
	query := &toolmap.Query{Text: "q", Scores: scores, Decision: &habilis.Decision{Matches: []habilis.Match{{Tool: "c0_t2", Passed: true}}}}
	tests := []struct {
		name  string
		tools []string
		query *toolmap.Query
		max   int
		want  []string
		shown string
	}{
		{"all", nil, nil, 0, nil, ""},
		{"named and partners", []string{"c2_t2", "c1_t1"}, nil, 0, []string{"c1_t1", "c2_t2", "c3_t0"},
			"3 of 12 tools: the named tools and the tools they collide with"},
		{"colliding above the limit", nil, nil, 4, []string{"c0_t0", "c0_t1", "c2_t2", "c3_t0"},
			"4 of 12 tools: the colliding tools, worst collisions first"},
		{"the request's neighbourhood", nil, query, 3, []string{"c0_t2", "c3_t1", "c3_t2"},
			"3 of 12 tools: the tools nearest the request"},
		{"named with the request", []string{"c1_t1"}, query, 0, []string{"c0_t2", "c1_t1"},
			"2 of 12 tools: the named tools and the tools they collide with"},
	}
	for _, tc := range tests {
		in := c.input()
		in.Collisions, in.Tools, in.Query, in.MaxTools = cols, tc.tools, tc.query, tc.max
		m, err := toolmap.Build(in)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want := tc.want
		if want == nil {
			for _, r := range c.recs {
				want = append(want, r.Tool.Name)
			}
		}
		if diff := cmp.Diff(want, names(m)); diff != "" || m.Shown != tc.shown {
			t.Errorf("%s: tools (-want +got):\n%s\nShown = %q, want %q", tc.name, diff, m.Shown, tc.shown)
		}
	}
}

func TestBuildErrors(t *testing.T) {
	c := newCatalog(1, 2, 2, 2, dense)
	in := c.input()
	in.Tools = []string{"nope"}
	if _, err := toolmap.Build(in); !errors.Is(err, habilis.ErrNotFound) {
		t.Errorf("Build(unknown tool) = %v, want ErrNotFound", err)
	}

	in = c.input()
	in.Gates = map[string]float32{"c0_t0": 0.5}
	if _, err := toolmap.Build(in); !errors.Is(err, habilis.ErrInvalid) {
		t.Errorf("Build(no gates) = %v, want ErrInvalid", err)
	}

	mixed := newCatalog(1, 2, 2, 2, dense)
	mixed.recs[3] = newCatalog(1, 2, 2, 2, sparse).recs[3]
	if _, err := toolmap.Build(mixed.input()); !errors.Is(err, habilis.ErrInvalid) {
		t.Errorf("Build(dense and sparse) = %v, want ErrInvalid", err)
	}

	short := newCatalog(1, 2, 2, 2, dense)
	short.recs[1].ExampleVectors = short.recs[1].ExampleVectors[:1]
	if _, err := toolmap.Build(short.input()); !errors.Is(err, habilis.ErrInvalid) {
		t.Errorf("Build(fewer vectors than examples) = %v, want ErrInvalid", err)
	}
}

// TestSmallCatalogs checks the degenerate sizes: nothing, one tool, two,
// and a tool without examples, placed by its description.
func TestSmallCatalogs(t *testing.T) {
	for n := range 4 {
		c := newCatalog(9, 1, n, 2, dense)
		if n == 3 {
			c.recs[2].Tool.Examples, c.recs[2].ExampleVectors, c.recs[2].Centroid = nil, nil, habilis.Vector{}
		}
		m, err := toolmap.Build(c.input())
		if err != nil {
			t.Fatalf("%d tools: %v", n, err)
		}
		if len(m.Tools) != n {
			t.Fatalf("%d tools: got %d", n, len(m.Tools))
		}
		for _, tl := range m.Tools {
			if math.IsNaN(tl.X) || math.IsNaN(tl.Y) || math.IsNaN(tl.Radius) || tl.Radius <= 0 {
				t.Errorf("%d tools: %s at (%v, %v) radius %v", n, tl.Name, tl.X, tl.Y, tl.Radius)
			}
		}
		if n >= 2 && dist(m.Tools[0].X, m.Tools[0].Y, m.Tools[1].X, m.Tools[1].Y) < 0.5 {
			t.Errorf("%d tools: the first two overlap: %+v", n, m.Tools)
		}
	}
}
