package collision

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/vec"
)

// approx compares the float fields of collisions computed in float32 with
// values computed by hand in float64.
var approx = []cmp.Option{cmpopts.EquateApprox(0, 1e-5), cmpopts.EquateEmpty()}

// unit returns xs normalised, as float32.
func unit(xs ...float64) []float32 {
	v := make([]float32, len(xs))
	for i, x := range xs {
		v[i] = float32(x)
	}
	vec.Normalize(v)
	return v
}

// ex is one example of a hand-built tool.
type ex struct {
	text string
	v    []float32
}

// denseTool builds a record the way the selector does: centroid the
// normalised mean of the examples, radius the least similarity to it.
func denseTool(name string, margin float32, exs ...ex) habilis.Record {
	rec := habilis.Record{Tool: habilis.Tool{Name: name}, Margin: margin}
	var vs [][]float32
	for _, e := range exs {
		rec.Tool.Examples = append(rec.Tool.Examples, e.text)
		rec.ExampleVectors = append(rec.ExampleVectors, habilis.Vector{Dense: e.v})
		vs = append(vs, e.v)
	}
	c := vec.MeanDense(vs)
	rec.Centroid = habilis.Vector{Dense: c}
	if len(exs) >= 2 && c != nil {
		rec.HasRadius = true
		rec.Radius = 2
		for _, e := range exs {
			if s := vec.Dot(e.v, c); s < rec.Radius {
				rec.Radius, rec.RadiusExample = s, e.text
			}
		}
	}
	return rec
}

// centroidTool is a record with a centroid and a gate but no examples, for
// Pairs.
func centroidTool(name string, radius float32, c []float32) habilis.Record {
	return habilis.Record{
		Tool:      habilis.Tool{Name: name},
		Centroid:  habilis.Vector{Dense: c},
		Radius:    radius,
		HasRadius: true,
	}
}

// toSparse returns recs with every vector in sparse form.
func toSparse(recs []habilis.Record) []habilis.Record {
	conv := func(v habilis.Vector) habilis.Vector {
		var s habilis.Vector
		for i, x := range v.Dense {
			if x != 0 {
				s.Indices = append(s.Indices, uint32(i))
				s.Values = append(s.Values, x)
			}
		}
		return s
	}
	out := make([]habilis.Record, len(recs))
	for i, r := range recs {
		r.Centroid = conv(r.Centroid)
		if r.DescriptionVector.Dense != nil {
			r.DescriptionVector = conv(r.DescriptionVector)
		}
		evs := make([]habilis.Vector, len(r.ExampleVectors))
		for k, v := range r.ExampleVectors {
			evs[k] = conv(v)
		}
		r.ExampleVectors = evs
		out[i] = r
	}
	return out
}

func rad(deg float64) float64 { return deg * math.Pi / 180 }

func TestFindNearIdentical(t *testing.T) {
	recs := []habilis.Record{
		denseTool("a", 0.05, ex{"a1", unit(1, 0.1, 0, 0)}, ex{"a2", unit(1, -0.1, 0, 0)}),
		denseTool("b", 0.05, ex{"b1", unit(1, 0, 0.1, 0)}, ex{"b2", unit(1, 0, -0.1, 0)}),
	}
	// Both centroids are e1 exactly. Each example scores 1/√1.01 against the
	// other tool and (1 − 0.01)/1.01 against its sibling, its own centroid
	// without it: every example passes the other gate and is misrouted.
	score := 1 / math.Sqrt(1.01)
	own := 0.99 / 1.01
	gate := score - 0.05
	leak := func(from, into, text string) habilis.Leak {
		return habilis.Leak{From: from, Into: into, Example: text, Score: float32(score),
			OwnScore: float32(own), RanksFirst: true, PassesGate: true}
	}
	want := []habilis.Collision{{
		A: "a", B: "b",
		CentroidSimilarity: 1,
		Overlap:            float32(2 * math.Acos(gate)),
		Leaks:              []habilis.Leak{leak("a", "b", "a1"), leak("a", "b", "a2"), leak("b", "a", "b1"), leak("b", "a", "b2")},
		MisroutesAB:        2,
		MisroutesBA:        2,
		MisrouteRate:       1,
		Severity:           habilis.SeverityHigh,
		NearestAB:          2,
		NearestBA:          2,
	}}
	for _, form := range []struct {
		name string
		recs []habilis.Record
	}{{"dense", recs}, {"sparse", toSparse(recs)}} {
		t.Run(form.name, func(t *testing.T) {
			got, err := Find(form.recs, Options{})
			if err != nil {
				t.Fatalf("Find: %v", err)
			}
			if diff := cmp.Diff(want, got, approx...); diff != "" {
				t.Errorf("Find mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFindMaxLeaksPerPair(t *testing.T) {
	recs := []habilis.Record{
		denseTool("a", 0.05, ex{"a1", unit(1, 0.1, 0, 0)}, ex{"a2", unit(1, -0.1, 0, 0)}),
		denseTool("b", 0.05, ex{"b1", unit(1, 0, 0.1, 0)}, ex{"b2", unit(1, 0, -0.3, 0)}),
	}
	got, err := Find(recs, Options{MaxLeaksPerPair: 1})
	if err != nil {
		t.Fatalf("Find: %v", err)
	}
	if len(got) != 1 || len(got[0].Leaks) != 1 {
		t.Fatalf("Find(MaxLeaksPerPair 1) = %v, want one collision with one leak", got)
	}
	// b1 and b2 both score 0.924 against each other, their own centroids
	// left out; b1 scores 0.995 against a's centroid, b2 only 0.958, so b1
	// leads by most.
	if l := got[0].Leaks[0]; l.From != "b" || l.Example != "b1" {
		t.Errorf("Find(MaxLeaksPerPair 1) kept leak %v, want b1 into a", l)
	}
}

func TestFindOrthogonal(t *testing.T) {
	recs := []habilis.Record{
		denseTool("a", 0.05, ex{"a1", unit(1, 0.1, 0, 0)}, ex{"a2", unit(1, -0.1, 0, 0)}),
		denseTool("b", 0.05, ex{"b1", unit(0, 0, 1, 0.1)}, ex{"b2", unit(0, 0, 1, -0.1)}),
	}
	for _, rs := range [][]habilis.Record{recs, toSparse(recs)} {
		got, err := Find(rs, Options{})
		if err != nil {
			t.Fatalf("Find: %v", err)
		}
		if len(got) != 0 {
			t.Errorf("Find(orthogonal) = %v, want none", got)
		}
	}
}

func TestPairsCapOverlap(t *testing.T) {
	// Centroids 60° apart (similarity 0.5); each cap has angular radius θ.
	// Caps intersect when 2θ > 60°, by 2θ − 60°.
	tests := []struct {
		theta    float64
		overlap  float64
		severity habilis.Severity
	}{
		{theta: 20, overlap: rad(-20), severity: habilis.SeverityLow},
		{theta: 40, overlap: rad(20), severity: habilis.SeverityLow},
		// A cap of 70° contains the other centroid: the typical request of
		// one tool passes the other's gate, but it still goes to its own
		// tool, so nothing says a request would be misrouted.
		{theta: 70, overlap: rad(80), severity: habilis.SeverityLow},
	}
	for _, tt := range tests {
		r := float32(math.Cos(rad(tt.theta)))
		recs := []habilis.Record{
			centroidTool("a", r, unit(1, 0)),
			centroidTool("b", r, unit(math.Cos(rad(60)), math.Sin(rad(60)))),
		}
		got, err := Pairs(recs, Options{Threshold: 0.45})
		if err != nil {
			t.Fatalf("Pairs: %v", err)
		}
		want := []habilis.Collision{{A: "a", B: "b", CentroidSimilarity: 0.5, Overlap: float32(tt.overlap), Severity: tt.severity}}
		if diff := cmp.Diff(want, got, approx...); diff != "" {
			t.Errorf("Pairs(θ = %v°) mismatch (-want +got):\n%s", tt.theta, diff)
		}
	}
}

func TestWithoutExamplesIgnored(t *testing.T) {
	empty := habilis.Record{Tool: habilis.Tool{Name: "empty"}}
	pair := []habilis.Record{
		denseTool("a", 0.05, ex{"a1", unit(1, 0.1, 0, 0)}, ex{"a2", unit(1, -0.1, 0, 0)}),
		empty,
		denseTool("b", 0.05, ex{"b1", unit(1, 0, 0.1, 0)}, ex{"b2", unit(1, 0, -0.1, 0)}),
	}
	tests := []struct {
		name string
		recs []habilis.Record
		want [][2]string
	}{
		{"only empty", []habilis.Record{empty, empty}, nil},
		{"empty among colliding", pair, [][2]string{{"a", "b"}}},
		{"empty among colliding, sparse", toSparse(pair), [][2]string{{"a", "b"}}},
	}
	for _, tt := range tests {
		for _, f := range []func([]habilis.Record, Options) ([]habilis.Collision, error){Pairs, Find} {
			got, err := f(tt.recs, Options{})
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			if diff := cmp.Diff(tt.want, names(got), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s: collisions mismatch (-want +got):\n%s", tt.name, diff)
			}
		}
	}
}

func names(cols []habilis.Collision) [][2]string {
	var out [][2]string
	for _, c := range cols {
		out = append(out, [2]string{c.A, c.B})
	}
	return out
}

func TestOneExampleUsesCatalogThreshold(t *testing.T) {
	// c_a = (3, 1)/√10, radius 3/√10 for both examples. solo's gate is the
	// catalog threshold; a2 scores 0.6 against it, and 0.8 against its own
	// sibling, so it passes solo's gate without being misrouted.
	recs := []habilis.Record{
		denseTool("a", 0, ex{"a1", unit(1, 0, 0)}, ex{"a2", unit(0.8, 0.6, 0)}),
		denseTool("solo", 0, ex{"s1", unit(0, 1, 0)}),
	}
	sim := 1 / math.Sqrt(10)
	thetaA := math.Acos(3 / math.Sqrt(10))
	a2 := habilis.Leak{From: "a", Into: "solo", Example: "a2", Score: 0.6, OwnScore: 0.8, PassesGate: true}
	tests := []struct {
		catalog float32
		want    []habilis.Collision
	}{
		{catalog: 0.7, want: nil},
		{catalog: 0.5, want: []habilis.Collision{{
			A: "a", B: "solo", CentroidSimilarity: float32(sim),
			Overlap: float32(thetaA + math.Acos(0.5) - math.Acos(sim)),
			Leaks:   []habilis.Leak{a2}, Severity: habilis.SeverityLow, NearestAB: 1,
		}}},
		// Below c_a·c_solo, a's centroid itself passes solo's gate.
		{catalog: 0.3, want: []habilis.Collision{{
			A: "a", B: "solo", CentroidSimilarity: float32(sim),
			Overlap: float32(thetaA + math.Acos(0.3) - math.Acos(sim)),
			Leaks:   []habilis.Leak{a2}, Severity: habilis.SeverityLow, NearestAB: 1,
		}}},
	}
	for _, tt := range tests {
		got, err := Find(recs, Options{CatalogThreshold: tt.catalog})
		if err != nil {
			t.Fatalf("Find: %v", err)
		}
		if diff := cmp.Diff(tt.want, got, approx...); diff != "" {
			t.Errorf("Find(CatalogThreshold %v) mismatch (-want +got):\n%s", tt.catalog, diff)
		}
	}
}

func TestFindLeaveOneOut(t *testing.T) {
	// x2 scores 0.894 against a's full centroid and 0.8 against b's, so
	// with itself in the centroid it looks safely a's. Left out, its own
	// score is x1·x2 = 0.6 and b ranks first.
	recs := []habilis.Record{
		denseTool("a", 0, ex{"x1", unit(1, 0, 0)}, ex{"x2", unit(0.6, 0.8, 0)}),
		denseTool("b", 0, ex{"y1", unit(0, 1, 0)}),
	}
	if full := vec.Dot(recs[0].ExampleVectors[1].Dense, recs[0].Centroid.Dense); full <= 0.8 {
		t.Fatalf("x2·c_a = %v, want above 0.8 for this test to mean anything", full)
	}
	sim := 0.8 / math.Sqrt(1.6*1.6+0.8*0.8) // c_a = (1.6, 0.8, 0)/|·|, c_b = e2
	want := []habilis.Collision{{
		A: "a", B: "b", CentroidSimilarity: float32(sim),
		Overlap: float32(math.Acos(1.6/math.Sqrt(1.6*1.6+0.8*0.8)) + math.Acos(0.99) - math.Acos(sim)),
		Leaks: []habilis.Leak{{From: "a", Into: "b", Example: "x2", Score: 0.8, OwnScore: 0.6,
			RanksFirst: true}},
		// Ranked first but refused by b's gate: not a misroute.
		Severity:  habilis.SeverityLow,
		NearestAB: 1,
	}}
	for _, rs := range [][]habilis.Record{recs, toSparse(recs)} {
		got, err := Find(rs, Options{CatalogThreshold: 0.99})
		if err != nil {
			t.Fatalf("Find: %v", err)
		}
		if diff := cmp.Diff(want, got, approx...); diff != "" {
			t.Errorf("Find mismatch (-want +got):\n%s", diff)
		}
		// With b's gate at 0.7 the example is routed to b and accepted
		// there: a request like it would be misrouted.
		got, err = Find(rs, Options{CatalogThreshold: 0.7})
		if err != nil {
			t.Fatalf("Find: %v", err)
		}
		if len(got) != 1 || got[0].Severity != habilis.SeverityMedium || len(got[0].Leaks) != 1 || !got[0].Leaks[0].PassesGate || !got[0].Leaks[0].RanksFirst {
			t.Errorf("Find(gate 0.7) = %+v, want one medium collision with x2 misrouted into b", got)
		}
	}
}

// planted returns tools in pairs, each pair in its own plane of an 8-D space
// so pairs do not touch: name, partner, angle between them and radius.
func planted(t *testing.T) []habilis.Record {
	t.Helper()
	specs := []struct {
		a, b   string
		sim    float64
		radius float32
	}{
		{"e", "f", 0.85, 0.99}, // low: similar centroids only
		{"x", "y", 0.95, 0.99}, // high: very similar
		{"g", "h", 0.5, 0.4},   // low: each centroid in the other's gate
		{"c", "d", 0.5, 0.4},   // low, same strength as g-h: names decide
		{"q", "p", 0.99, 0.99}, // high, stronger than x-y
	}
	var recs []habilis.Record
	for k, s := range specs {
		u := make([]float64, 10)
		v := make([]float64, 10)
		u[2*k] = 1
		v[2*k], v[2*k+1] = s.sim, math.Sqrt(1-s.sim*s.sim)
		recs = append(recs, centroidTool(s.a, s.radius, unit(u...)), centroidTool(s.b, s.radius, unit(v...)))
	}
	return recs
}

func TestPairsSorted(t *testing.T) {
	got, err := Pairs(planted(t), Options{Threshold: 0.8})
	if err != nil {
		t.Fatalf("Pairs: %v", err)
	}
	type row struct {
		A, B string
		S    habilis.Severity
	}
	var rows []row
	for _, c := range got {
		rows = append(rows, row{c.A, c.B, c.Severity})
	}
	want := []row{
		{"p", "q", habilis.SeverityHigh},
		{"x", "y", habilis.SeverityHigh},
		{"e", "f", habilis.SeverityLow},
		{"c", "d", habilis.SeverityLow},
		{"g", "h", habilis.SeverityLow},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("Pairs order mismatch (-want +got):\n%s", diff)
	}
}

func TestForTool(t *testing.T) {
	tests := []struct {
		name string
		cols []habilis.Collision
		want map[string][]string
	}{
		{"none", nil, map[string][]string{}},
		{
			"both directions, sorted, no duplicates",
			[]habilis.Collision{{A: "b", B: "a"}, {A: "c", B: "a"}, {A: "a", B: "b"}},
			map[string][]string{"a": {"b", "c"}, "b": {"a"}, "c": {"a"}},
		},
	}
	for _, tt := range tests {
		got := ForTool(tt.cols)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ForTool(%s) mismatch (-want +got):\n%s", tt.name, diff)
		}
		for a, bs := range got {
			for _, b := range bs {
				if !slices.Contains(got[b], a) {
					t.Errorf("ForTool(%s)[%q] lacks %q, which %q lists", tt.name, b, a, a)
				}
			}
		}
	}
	cols, err := Pairs(planted(t), Options{})
	if err != nil {
		t.Fatalf("Pairs: %v", err)
	}
	want := map[string][]string{"x": {"y"}, "y": {"x"}, "p": {"q"}, "q": {"p"}, "c": {"d"}, "d": {"c"},
		"g": {"h"}, "h": {"g"}, "e": {"f"}, "f": {"e"}}
	if diff := cmp.Diff(want, ForTool(cols)); diff != "" {
		t.Errorf("ForTool(Pairs(planted)) mismatch (-want +got):\n%s", diff)
	}
}

func TestAtLeast(t *testing.T) {
	medium := []habilis.Collision{{A: "a", B: "b", Severity: habilis.SeverityLow}, {A: "c", B: "d", Severity: habilis.SeverityMedium}}
	tests := []struct {
		cols []habilis.Collision
		s    habilis.Severity
		want bool
	}{
		{nil, habilis.SeverityLow, false},
		{medium, habilis.SeverityLow, true},
		{medium, habilis.SeverityMedium, true},
		{medium, habilis.SeverityHigh, false},
		{medium, "bogus", false},
		{[]habilis.Collision{{Severity: habilis.SeverityHigh}}, habilis.SeverityHigh, true},
	}
	for _, tt := range tests {
		if got := AtLeast(tt.cols, tt.s); got != tt.want {
			t.Errorf("AtLeast(%v, %q) = %v, want %v", tt.cols, tt.s, got, tt.want)
		}
	}
}

func TestErrors(t *testing.T) {
	a := denseTool("a", 0, ex{"a1", unit(1, 0)}, ex{"a2", unit(0, 1)})
	b := denseTool("b", 0, ex{"b1", unit(1, 1)}, ex{"b2", unit(1, 2)})
	sb := toSparse([]habilis.Record{b})[0]
	wide := denseTool("w", 0, ex{"w1", unit(1, 0, 0)}, ex{"w2", unit(0, 1, 0)})
	unsorted := sb
	unsorted.Centroid = habilis.Vector{Indices: []uint32{1, 0}, Values: []float32{0.6, 0.8}}
	repeated := sb
	repeated.Centroid = habilis.Vector{Indices: []uint32{0, 0}, Values: []float32{0.6, 0.8}}
	nan := b
	nan.Centroid = habilis.Vector{Dense: []float32{float32(math.NaN()), 0}}
	badExample := b
	badExample.ExampleVectors = []habilis.Vector{{Dense: []float32{1, 0, 0}}, {Dense: []float32{0, 1}}}
	tests := []struct {
		name     string
		recs     []habilis.Record
		opts     Options
		findOnly bool
	}{
		{name: "mixed dense and sparse", recs: []habilis.Record{a, sb}},
		{name: "dimensions differ", recs: []habilis.Record{a, wide}},
		{name: "unsorted indices", recs: []habilis.Record{sb, unsorted}},
		{name: "repeated index", recs: []habilis.Record{sb, repeated}},
		{name: "NaN centroid", recs: []habilis.Record{a, nan}},
		{name: "negative threshold", recs: []habilis.Record{a, b}, opts: Options{Threshold: -0.1}},
		{name: "negative max leaks", recs: []habilis.Record{a, b}, opts: Options{MaxLeaksPerPair: -1}},
		{name: "dense above MaxTools", recs: []habilis.Record{a, b}, opts: Options{MaxTools: 1}, findOnly: true},
		{name: "example of another dimension", recs: []habilis.Record{a, badExample}, findOnly: true},
		{name: "sparse above MaxTools", recs: toSparse([]habilis.Record{a, b}), opts: Options{MaxTools: 1}, findOnly: true},
	}
	for _, tt := range tests {
		if !tt.findOnly {
			if _, err := Pairs(tt.recs, tt.opts); !errors.Is(err, habilis.ErrInvalid) {
				t.Errorf("Pairs(%s) error = %v, want ErrInvalid", tt.name, err)
			}
		}
		if _, err := Find(tt.recs, tt.opts); !errors.Is(err, habilis.ErrInvalid) {
			t.Errorf("Find(%s) error = %v, want ErrInvalid", tt.name, err)
		}
	}
}

func TestOddInputsDoNotPanic(t *testing.T) {
	one := denseTool("one", 0.1, ex{"o1", unit(1, 0)}, ex{"o2", unit(0, 1)})
	zeroExample := one
	zeroExample.ExampleVectors = []habilis.Vector{{}, {Dense: unit(1, 0)}, {Dense: []float32{0, 0}}}
	cancel := denseTool("cancel", 0, ex{"c1", unit(1, 0)}, ex{"c2", unit(-1, 0)}, ex{"c3", unit(0, 1)})
	radiusOneExample := denseTool("r", 0, ex{"r1", unit(1, 1)})
	radiusOneExample.HasRadius, radiusOneExample.Radius = true, 1
	openGate := denseTool("open", 2, ex{"p1", unit(1, 0)}, ex{"p2", unit(0.9, 0.1)})
	textless := one
	textless.Tool.Name, textless.Tool.Examples = "textless", nil
	tests := []struct {
		name string
		recs []habilis.Record
	}{
		{"nil", nil},
		{"one tool", []habilis.Record{one}},
		{"zero example vectors", []habilis.Record{zeroExample, openGate}},
		{"examples cancelling out", []habilis.Record{cancel, one}},
		{"radius with one example", []habilis.Record{radiusOneExample, one}},
		{"gate open to everything", []habilis.Record{openGate, one, cancel}},
		{"examples without texts", []habilis.Record{textless, openGate}},
		{"duplicate names", []habilis.Record{one, one}},
	}
	for _, tt := range tests {
		for _, rs := range [][]habilis.Record{tt.recs, toSparse(tt.recs)} {
			if _, err := Pairs(rs, Options{}); err != nil {
				t.Errorf("Pairs(%s) error = %v, want none", tt.name, err)
			}
			if _, err := Find(rs, Options{}); err != nil {
				t.Errorf("Find(%s) error = %v, want none", tt.name, err)
			}
		}
	}
}

// TestGather checks that a product through a spread row is SparseDot's
// to the bit, whatever the two rows share, so that sparseAbove reports
// the similarities the other passes do.
func TestGather(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	recs := make([]habilis.Record, 60)
	for i := range recs {
		var v habilis.Vector
		for term := range uint32(80) {
			if r.IntN(3) == 0 {
				v.Indices = append(v.Indices, term*7)
				v.Values = append(v.Values, float32(r.NormFloat64()))
			}
		}
		v.Indices, v.Values = append(v.Indices, 1000), append(v.Values, 0.5) // never a zero row
		recs[i] = habilis.Record{Tool: habilis.Tool{Name: string(rune(0x4e00 + i))}, Centroid: v}
	}
	c, err := newCatalog(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ix := c.newIndex()
	y := make([]float32, len(ix.off)-1)
	for j := range c.tools {
		ix.spread(j, c.val[j], y)
		for i := range c.tools {
			got, want := ix.gather(i, c.val[i], y), vec.SparseDot(c.idx[i], c.val[i], c.idx[j], c.val[j])
			if math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("rows %d, %d: gather %v, SparseDot %v", i, j, got, want)
			}
		}
		ix.unspread(j, y)
		if i := slices.IndexFunc(y, func(x float32) bool { return x != 0 }); i >= 0 {
			t.Fatalf("row %d: unspread left %v at %d", j, y[i], i)
		}
	}
}

// TestFindRepeatable checks that leak scores do not depend on the order
// in which a map is walked: the same sparse catalog, analysed again and
// again, reports bit-identical collisions. Two examples of tool a nearly
// cancel, so a leave-one-out centroid without the third is a difference
// of sums near 1, and the last bit of those sums shows in OwnScore.
func TestFindRepeatable(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	const dim = 400
	vary := func(signed bool) []float64 {
		v := make([]float64, dim)
		for i := range v {
			v[i] = math.Pow(10, -3+3*rng.Float64())
			if signed && rng.IntN(2) == 0 {
				v[i] = -v[i]
			}
		}
		return v
	}
	raw := func(xs []float64) []float32 {
		v := make([]float32, len(xs))
		for i, x := range xs {
			v[i] = float32(x)
		}
		return v
	}
	e1 := unit(vary(false)...)
	v := unit(vary(true)...)
	w := make([]float64, dim) // −v plus a difference of norm about 7e-5
	for i := range w {
		w[i] = -float64(v[i]) + 6e-6*(2*rng.Float64()-1)
	}
	near := func() []float32 {
		x := make([]float64, dim)
		for i := range x {
			x[i] = float64(e1[i]) * (1 + 0.01*rng.Float64())
		}
		return unit(x...)
	}
	recs := toSparse([]habilis.Record{
		denseTool("a", 0, ex{"a1", e1}, ex{"a2", v}, ex{"a3", raw(w)}),
		denseTool("b", 0, ex{"b1", near()}, ex{"b2", near()}),
	})
	first, err := Find(recs, Options{CatalogThreshold: 0.01})
	if err != nil {
		t.Fatalf("Find: %v", err)
	}
	if len(first) == 0 || len(first[0].Leaks) == 0 {
		t.Fatalf("Find = %+v, want a collision with leaks for this test to mean anything", first)
	}
	for range 100 {
		got, err := Find(recs, Options{CatalogThreshold: 0.01})
		if err != nil {
			t.Fatalf("Find: %v", err)
		}
		if diff := cmp.Diff(first, got); diff != "" {
			t.Fatalf("Find differs between runs (-first +again):\n%s", diff)
		}
	}
}

func TestFindRoutesByRocchio(t *testing.T) {
	// x2 left out of a scores 0.5 at a's centroid (x1) and 0.866 at b's:
	// by centroids, b would take it, and would by b's Rocchio score too
	// (0.866/√2 ≈ 0.61, its description being orthogonal). With the
	// descriptions as one more example each, as hybrid mode ranks, a's
	// description (along e2) takes x2 back: (0.5 + 0.866)/√2 ≈ 0.97.
	recs := []habilis.Record{
		denseTool("a", 0, ex{"x1", unit(1, 0, 0)}, ex{"x2", unit(0.5, 0.866, 0)}),
		denseTool("b", 0, ex{"y1", unit(0, 1, 0)}),
	}
	recs[0].DescriptionVector = habilis.Vector{Dense: unit(0, 1, 0)}
	recs[1].DescriptionVector = habilis.Vector{Dense: unit(0, 0, 1)}
	for _, rs := range [][]habilis.Record{recs, toSparse(recs)} {
		got, err := Find(rs, Options{CatalogThreshold: 0.7})
		if err != nil {
			t.Fatalf("Find: %v", err)
		}
		// x2 still passes b's gate (0.8 against the catalog's 0.7), so
		// the pair is reported, low: the gates overlap, nothing is
		// misrouted.
		if len(got) != 1 || got[0].A != "a" || got[0].B != "b" || len(got[0].Leaks) != 1 {
			t.Fatalf("Find: %+v, want the pair a-b with x2's leak alone", got)
		}
		c := got[0]
		if l := c.Leaks[0]; l.Example != "x2" || l.RanksFirst || !l.PassesGate {
			t.Errorf("Find: leak %+v, want x2 passing b's gate without ranking it first (a's description keeps it at a)", l)
		}
		if c.Severity != habilis.SeverityLow || c.MisroutesAB+c.MisroutesBA != 0 {
			t.Errorf("Find: %s-%s %s with %d+%d misroutes, want low without one", c.A, c.B, c.Severity, c.MisroutesAB, c.MisroutesBA)
		}
	}
}

// TestMisroutesBetweenNeighbours checks that a misroute makes a pair
// medium only when its tools are each other's nearest for a share of
// their examples: web and news share a topic (7 of their 8 examples rank
// the other first of the others) and one news example is misrouted to
// web; web's odd example shares a single word with music and is misrouted
// there, but no other example of either ranks the other first.
func TestMisroutesBetweenNeighbours(t *testing.T) {
	// Axes: web's topic, news's topic, searching, music's topic, the word
	// web's odd example shares with music, and playlists.
	search := func(web, news, search float64) []float32 { return unit(web, news, search, 0, 0, 0) }
	recs := []habilis.Record{
		denseTool("web", 0.9, ex{"w1", search(1, 0, 0.5)}, ex{"w2", search(1, 0, 0.5)}, ex{"w3", search(1, 0, 0.5)},
			ex{"w-odd", unit(0.2, 0, 0, 0, 1, 0)}),
		denseTool("news", 0.9, ex{"n1", search(0, 1, 0.5)}, ex{"n2", search(0, 1, 0.5)}, ex{"n3", search(0, 1, 0.5)},
			ex{"n-odd", search(0.4, 0.1, 1)}),
		denseTool("music", 0.9, ex{"m1", unit(0, 0, 0, 1, 0.3, 0)}, ex{"m2", unit(0, 0, 0, 1, 0.3, 0)}, ex{"m3", unit(0, 0, 0, 1, 0.3, 0)}),
		denseTool("playlists", 0.9, ex{"p1", unit(0, 0, 0, 0.5, 0, 1)}, ex{"p2", unit(0, 0, 0, 0.5, 0, 1)}, ex{"p3", unit(0, 0, 0, 0.5, 0, 1)}),
	}
	want := map[[2]string]evidence{
		{"news", "web"}:  {1, 7, habilis.SeverityMedium},
		{"music", "web"}: {1, 1, habilis.SeverityLow},
	}
	for _, form := range []struct {
		name string
		recs []habilis.Record
	}{{"dense", recs}, {"sparse", toSparse(recs)}} {
		got := evidenceOf(t, form.recs, Options{})
		for pair := range got {
			if _, ok := want[pair]; !ok {
				delete(got, pair)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: collisions (-want +got):\n%s", form.name, diff)
		}
	}
}

// evidence is what a collision's severity rests on, both directions
// together.
type evidence struct {
	Misroutes, Nearest int
	Severity           habilis.Severity
}

// evidenceOf returns Find's collisions of recs under opts by pair.
func evidenceOf(t *testing.T, recs []habilis.Record, opts Options) map[[2]string]evidence {
	t.Helper()
	cols, err := Find(recs, opts)
	if err != nil {
		t.Fatalf("Find: %v", err)
	}
	out := make(map[[2]string]evidence, len(cols))
	for _, c := range cols {
		out[[2]string{c.A, c.B}] = evidence{c.MisroutesAB + c.MisroutesBA, c.NearestAB + c.NearestBA, c.Severity}
	}
	return out
}

// TestBareTools checks that, with Options.Bare, tools without examples
// take part by their description vectors: another tool's example routed to
// one and passing its gate is a misroute, and two of them pair by
// similarity alone, not by one's description passing the other's gate
// (their gates sit where generic requests score), when each is the
// other's most similar, and at low severity. Without Bare they are left
// out.
func TestBareTools(t *testing.T) {
	bare := func(name string, v []float32) habilis.Record {
		return habilis.Record{Tool: habilis.Tool{Name: name}, DescriptionVector: habilis.Vector{Dense: v}}
	}
	recs := []habilis.Record{
		denseTool("web", 0.9, ex{"w1", unit(1, 0, 0, 0, 0)}, ex{"w2", unit(1, 0, 0, 0, 0)}, ex{"w3", unit(0.3, 1, 0, 0, 0)}),
		bare("news", unit(0, 1, 0, 0, 0.1)),
		// news·music ≈ 0.01 passes music's gate of 0.005. lyrics reaches
		// the threshold with music (0.85) and with songs (0.86), but is
		// neither one's most similar description: songs·music ≈ 0.999,
		// low all the same, as two descriptions show no misroute.
		bare("music", unit(0, 0, 1, 0, 0.1)),
		bare("lyrics", unit(0, 0, 1, 0.6, 0)),
		bare("songs", unit(0, 0, 1, 0, 0.05)),
	}
	gates := map[int]float32{1: 0.2, 2: 0.005, 3: 0.2, 4: 0.2}
	opts := Options{Threshold: 0.8, Bare: func(rec int) (float32, bool) { g, ok := gates[rec]; return g, ok }}
	want := map[[2]string]evidence{
		{"news", "web"}:    {1, 1, habilis.SeverityMedium},
		{"music", "songs"}: {0, 0, habilis.SeverityLow},
	}
	for _, form := range []struct {
		name string
		recs []habilis.Record
	}{{"dense", recs}, {"sparse", toSparse(recs)}} {
		if diff := cmp.Diff(want, evidenceOf(t, form.recs, opts)); diff != "" {
			t.Errorf("%s: collisions with Bare (-want +got):\n%s", form.name, diff)
		}
		without := opts
		without.Bare = nil
		if cols, err := Find(form.recs, without); err != nil || len(cols) != 0 {
			t.Errorf("%s: without Bare: %v, %v; want no collisions (one tool with examples)", form.name, cols, err)
		}
	}
}

// TestSeverityRule checks the rule of the package documentation at its
// boundaries: centroids Threshold+0.1 alike are high; below, misroutes
// between neighbours (a quarter of the held-out examples nearest the other
// tool) are high from MinMisroutes, both directions counted, medium under
// it; without neighbours or a misroute, low; two bare tools, low.
func TestSeverityRule(t *testing.T) {
	opts, err := Options{}.resolved()
	if err != nil {
		t.Fatal(err)
	}
	high, below := opts.Threshold+highDelta, opts.Threshold+highDelta/2
	tests := []struct {
		name    string
		p       pair
		heldOut int
		want    habilis.Severity
	}{
		{"alike enough", pair{sim: high}, 8, habilis.SeverityHigh},
		{"two bare tools", pair{sim: 1, bare: true, misroutes: [2]int{2, 2}, nearest: [2]int{4, 4}}, 8, habilis.SeverityLow},
		{"no misroute", pair{sim: below, nearest: [2]int{4, 4}}, 8, habilis.SeverityLow},
		{"one misroute each way", pair{sim: below, misroutes: [2]int{1, 1}, nearest: [2]int{1, 1}}, 8, habilis.SeverityHigh},
		{"two one way", pair{sim: below, misroutes: [2]int{0, 2}, nearest: [2]int{0, 2}}, 8, habilis.SeverityHigh},
		{"one misroute", pair{sim: below, misroutes: [2]int{1, 0}, nearest: [2]int{1, 1}}, 8, habilis.SeverityMedium},
		{"not neighbours", pair{sim: below, misroutes: [2]int{1, 1}, nearest: [2]int{1, 0}}, 8, habilis.SeverityLow},
	}
	for _, tt := range tests {
		if got := tt.p.severity(opts, tt.heldOut); got != tt.want {
			t.Errorf("%s: severity = %s, want %s", tt.name, got, tt.want)
		}
	}
}

// TestMaxToolsAtLimit: a catalog of exactly MaxTools tools is analysed,
// leaks included.
func TestMaxToolsAtLimit(t *testing.T) {
	recs := []habilis.Record{
		denseTool("a", 0.05, ex{"a1", unit(1, 0.1, 0, 0)}, ex{"a2", unit(1, -0.1, 0, 0)}),
		denseTool("b", 0.05, ex{"b1", unit(1, 0, 0.1, 0)}, ex{"b2", unit(1, 0, -0.1, 0)}),
	}
	for _, rs := range [][]habilis.Record{recs, toSparse(recs)} {
		cols, err := Find(rs, Options{MaxTools: len(rs)})
		if err != nil || len(cols) != 1 || len(cols[0].Leaks) != 4 {
			t.Errorf("Find(MaxTools %d) = %v, %v; want one collision with 4 leaks", len(rs), cols, err)
		}
	}
}

// TestLeakOrderTies: leaks that lead by as much are ordered by the tool
// they come from, then by their text.
func TestLeakOrderTies(t *testing.T) {
	recs := []habilis.Record{
		denseTool("a", 0.05, ex{"y2", unit(1, 0.1, 0, 0)}, ex{"y1", unit(1, -0.1, 0, 0)}),
		denseTool("b", 0.05, ex{"x2", unit(1, 0, 0.1, 0)}, ex{"x1", unit(1, 0, -0.1, 0)}),
	}
	cols, err := Find(recs, Options{})
	if err != nil || len(cols) != 1 {
		t.Fatalf("Find = %v, %v; want one collision", cols, err)
	}
	var got []string
	for _, l := range cols[0].Leaks {
		got = append(got, l.From+":"+l.Example)
	}
	if want := []string{"a:y1", "a:y2", "b:x1", "b:x2"}; !cmp.Equal(got, want) {
		t.Errorf("leaks %q, want %q", got, want)
	}
}

// TestReportOrderTies: collisions as severe and as strong are ordered by
// their first tool's name, then the second's.
func TestReportOrderTies(t *testing.T) {
	recs := []habilis.Record{
		centroidTool("z", 0.9, unit(1, -0.1, 0, 0)),
		centroidTool("c", 0.9, unit(0, 0, 1, -0.1)),
		centroidTool("b", 0.9, unit(0, 0, 1, 0.1)),
		centroidTool("a", 0.9, unit(1, 0.1, 0, 0)),
	}
	cols, err := Pairs(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cols {
		got = append(got, c.A+"-"+c.B)
	}
	if want := []string{"a-z", "b-c"}; !cmp.Equal(got, want) || cols[0].CentroidSimilarity != cols[1].CentroidSimilarity {
		t.Errorf("Pairs = %q (similarities %v), want %q, as similar", got, cols, want)
	}
}

// TestPairsAtThresholdAndGate: centroids exactly Threshold alike pair, and
// so does a centroid scoring exactly another tool's gate, either way round.
func TestPairsAtThresholdAndGate(t *testing.T) {
	a, b := unit(1, 0.5, 0), unit(1, -0.5, 0.2)
	probe := []habilis.Record{centroidTool("a", 1, a), centroidTool("b", 1, b)}
	cols, err := Pairs(probe, Options{Threshold: 0.01})
	if err != nil || len(cols) != 1 {
		t.Fatalf("Pairs = %v, %v; want one pair", cols, err)
	}
	s := cols[0].CentroidSimilarity
	for _, tc := range []struct {
		name      string
		recs      []habilis.Record
		threshold float32
	}{
		{"threshold", probe, s},
		{"a's gate", []habilis.Record{centroidTool("a", s, a), centroidTool("b", 1, b)}, 0.99},
		{"b's gate", []habilis.Record{centroidTool("a", 1, a), centroidTool("b", s, b)}, 0.99},
	} {
		for _, rs := range [][]habilis.Record{tc.recs, toSparse(tc.recs)} {
			cols, err := Pairs(rs, Options{Threshold: tc.threshold})
			if err != nil || len(cols) != 1 || cols[0].CentroidSimilarity != s {
				t.Errorf("%s %v: Pairs = %v, %v; want the pair, similarity %v", tc.name, tc.threshold, cols, err, s)
			}
		}
	}
}

// TestGateAtZero: a tool whose gate is exactly 0 passes every score, so
// another tool pairs with it even sharing no term, in sparse form too,
// where a tool is compared only with those sharing a term and those whose
// gate is open.
func TestGateAtZero(t *testing.T) {
	open := centroidTool("open", 0.3, unit(1, 0, 0))
	open.Margin = 0.3
	for _, recs := range [][]habilis.Record{
		{open, centroidTool("other", 0.9, unit(0, 1, 0))},
		{centroidTool("other", 0.9, unit(0, 1, 0)), open},
	} {
		for _, rs := range [][]habilis.Record{recs, toSparse(recs)} {
			cols, err := Pairs(rs, Options{})
			if err != nil || len(cols) != 1 || cols[0].A != "open" || cols[0].B != "other" {
				t.Errorf("Pairs(%s first, sparse %v) = %v, %v; want open and other", rs[0].Tool.Name, rs[0].Centroid.IsSparse(), cols, err)
			}
		}
	}
}
