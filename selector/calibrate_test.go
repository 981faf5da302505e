package selector

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/internal/vec"
)

// lexicalRecords returns n tools of random words with their lexical
// vectors, centroids and radii, and the embedder fitted to them.
func lexicalRecords(t testing.TB, rng *rand.Rand, n int) ([]habilis.Record, habilis.Embedder) {
	t.Helper()
	ctx := context.Background()
	words := make([]string, 300)
	for i := range words {
		words[i] = fmt.Sprintf("w%dq%d", i, rng.IntN(9))
	}
	text := func(m int) string {
		var w []string
		for range m {
			w = append(w, words[rng.IntN(len(words))])
		}
		return strings.Join(w, " ")
	}
	recs := make([]habilis.Record, n)
	var corpus []string
	for i := range recs {
		tool := habilis.Tool{Name: fmt.Sprintf("tool_%03d", i), Description: text(6)}
		for range rng.IntN(6) {
			tool.Examples = append(tool.Examples, text(5))
		}
		recs[i].Tool = tool
		corpus = append(append(corpus, descriptionText(tool)), tool.Examples...)
	}
	fitted, _, err := lexical.New(lexical.Options{}).Fit(ctx, corpus)
	if err != nil {
		t.Fatal(err)
	}
	embed := func(texts ...string) []habilis.Vector {
		vs, err := fitted.Embed(ctx, texts, habilis.Document)
		if err != nil {
			t.Fatal(err)
		}
		return vs
	}
	for i := range recs {
		r := &recs[i]
		desc := descriptionText(r.Tool)
		r.DescriptionVector = embed(desc)[0]
		r.DocumentVector = embed(documentText(desc, r.Tool.Examples))[0]
		r.ExampleVectors = embed(r.Tool.Examples...)
		shape(r)
	}
	return recs, fitted
}

// denseRecords returns n tools with random unit vectors of dimension dim.
func denseRecords(rng *rand.Rand, n, dim int) []habilis.Record {
	unit := func() habilis.Vector {
		x := make([]float32, dim)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		vec.Normalize(x)
		return habilis.Vector{Dense: x}
	}
	recs := make([]habilis.Record, n)
	for i := range recs {
		r := &recs[i]
		r.Tool.Name = fmt.Sprintf("tool_%03d", i)
		r.DescriptionVector = unit()
		for k := range rng.IntN(6) {
			r.Tool.Examples = append(r.Tool.Examples, fmt.Sprint(k))
			r.ExampleVectors = append(r.ExampleVectors, unit())
		}
		shape(r)
	}
	return recs
}

// TestCalibrateWorkers checks that calibration, which scores sampled tools
// on GOMAXPROCS goroutines, gives the same calibration to the bit whatever
// their number: with the merged lexical space and held-out documents, and
// with dense spaces of their own.
func TestCalibrateWorkers(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	lexRecs, lex := lexicalRecords(t, rng, 150)
	denseRecs := denseRecords(rng, 150, 16)
	cases := []struct {
		name string
		recs []habilis.Record
		sh   *shared
		lex  *heldOutLexical
	}{
		{"lexical", lexRecs, newShared(lexRecs, 0, true), &heldOutLexical{weight: 1, docs: func(a int) []habilis.Vector {
			return heldOutDocuments(context.Background(), lex, lexRecs[a].Tool)
		}}},
		{"dense", denseRecs, newShared(denseRecs, 16, false), nil},
	}
	for _, tc := range cases {
		var want Calibration
		for _, procs := range []int{1, 2, 5} {
			old := runtime.GOMAXPROCS(procs)
			got := calibrate(tc.recs, nil, tc.sh, tc.lex)
			runtime.GOMAXPROCS(old)
			if procs == 1 {
				if got.Samples < minSamples {
					t.Fatalf("%s: %d samples; the test needs at least %d", tc.name, got.Samples, minSamples)
				}
				want = got
			} else if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: GOMAXPROCS %d: calibrate = %+v, want %+v as with one", tc.name, procs, got, want)
			}
		}
	}
}

// TestNewShared checks that newShared holds each record's Rocchio norms
// and, when asked, the merged space newTriSpace builds.
func TestNewShared(t *testing.T) {
	recs, _ := lexicalRecords(t, rand.New(rand.NewPCG(9, 10)), 40)
	for _, tri := range []bool{false, true} {
		sh := newShared(recs, 0, tri)
		for i := range recs {
			if sum, roc := rocchioNorms(&recs[i]); sh.sumNorm[i] != sum || sh.rocchioNorm[i] != roc {
				t.Errorf("tri %v: tool %d: norms %v %v, want %v %v", tri, i, sh.sumNorm[i], sh.rocchioNorm[i], sum, roc)
			}
		}
		if !tri && sh.tri != nil {
			t.Errorf("newShared(recs, 0, false) built a merged space")
		}
		if tri && !reflect.DeepEqual(sh.tri, newTriSpace(columns(recs))) {
			t.Errorf("newShared(recs, 0, true) merged space differs from newTriSpace's")
		}
	}
}

// TestShapeSum checks that shapeSum shapes a record as shape does and
// that the norms newSharedSums makes from its sums are newShared's, to the
// bit, for tools without examples, with one, with several, and with
// examples that embed to nothing.
func TestShapeSum(t *testing.T) {
	recs, _ := lexicalRecords(t, rand.New(rand.NewPCG(11, 12)), 60)
	for i := range recs {
		if r := &recs[i]; i%3 == 0 && len(r.ExampleVectors) > 0 {
			r.Tool.Examples = append([]string{"!"}, r.Tool.Examples...)
			r.ExampleVectors = append([]habilis.Vector{{}}, r.ExampleVectors...)
		}
	}
	sums := make([]float32, len(recs))
	for i := range recs {
		want := recs[i]
		shape(&want)
		sums[i] = shapeSum(&recs[i])
		if diff := cmp.Diff(want, recs[i]); diff != "" {
			t.Errorf("tool %d: shapeSum's record differs from shape's (-shape +shapeSum):\n%s", i, diff)
		}
	}
	want, got := newShared(recs, 0, true), newSharedSums(recs, 0, true, sums)
	for i := range recs {
		w := [2]uint32{math.Float32bits(want.sumNorm[i]), math.Float32bits(want.rocchioNorm[i])}
		g := [2]uint32{math.Float32bits(got.sumNorm[i]), math.Float32bits(got.rocchioNorm[i])}
		if w != g {
			t.Errorf("tool %d (%d examples): norms %v %v from the sums, want %v %v", i, len(recs[i].ExampleVectors),
				got.sumNorm[i], got.rocchioNorm[i], want.sumNorm[i], want.rocchioNorm[i])
		}
	}
}

// TestMedianExamples checks the median a load reports: over the tools that
// have examples only, the lower middle of an even count, 0 without any.
func TestMedianExamples(t *testing.T) {
	recs := func(counts ...int) []habilis.Record {
		rs := make([]habilis.Record, len(counts))
		for i, n := range counts {
			rs[i].Tool.Examples = make([]string, n)
		}
		return rs
	}
	for _, tt := range []struct {
		counts []int
		want   int
	}{
		{nil, 0},
		{[]int{0, 0}, 0},
		{[]int{3}, 3},
		{[]int{0, 9, 0, 2, 12}, 9},
		{[]int{10, 4, 6, 8}, 6},
	} {
		if got := medianExamples(recs(tt.counts...)); got != tt.want {
			t.Errorf("medianExamples(%v) = %d, want %d", tt.counts, got, tt.want)
		}
	}
}

// TestLearnGates checks the gates fit learns from labelled requests: each
// cut halfway between the two sides where they separate, the confidence
// nine in ten at the median request for a tool, and nothing changed
// without requests for no tool.
func TestLearnGates(t *testing.T) {
	start := Calibration{HybridThreshold: 0.3, Margin: 0.2, MarginSource: "examples", Confidence: Logistic{Slope: 10}}
	tests := []struct {
		name                     string
		posEv, negEv, posG, negG []float32
		threshold, margin, slope float32
		source                   string
	}{
		{"no requests for no tool", []float32{0.6, 0.7}, nil, []float32{0.1}, nil, 0.3, 0.2, 10, "examples"},
		// Evidence: between 0.6 and 0.2; gates: between 0.1 and -0.2, so a
		// margin of 0.05; the median request for a tool (0.8) sits 0.4 above.
		{"separable", []float32{0.9, 0.6, 0.8, 0.7}, []float32{0.1, 0.2}, []float32{0.1, 0.2, 0.3, 0.2}, []float32{-0.3, -0.2}, 0.4, 0.05, float32(math.Log(9)) / 0.4, "fit"},
		// The median request for a tool too near the threshold leaves the
		// confidence as it was; a margin below zero is clamped.
		{"flat", []float32{0.405, 0.405}, []float32{0.395}, []float32{0.6, 0.5}, []float32{0.2}, 0.4, 0, 10, "fit"},
	}
	for _, tt := range tests {
		c := start
		c.LearnGates(tt.posEv, tt.negEv, tt.posG, tt.negG)
		if !close32(c.HybridThreshold, tt.threshold) || !close32(c.Margin, tt.margin) || !close32(c.Confidence.Slope, tt.slope) || c.MarginSource != tt.source {
			t.Errorf("%s: LearnGates = threshold %v, margin %v (%s), slope %v; want %v, %v (%s), %v",
				tt.name, c.HybridThreshold, c.Margin, c.MarginSource, c.Confidence.Slope, tt.threshold, tt.margin, tt.source, tt.slope)
		}
	}
}

func close32(a, b float32) bool { return math.Abs(float64(a-b)) < 1e-5 }

// TestWeighedMoments checks the evidence's background moments, computed
// from the moments of its two scores, against the moments of the weighed
// scores themselves, and the document weight against the ratio of the
// scores' spreads.
func TestWeighedMoments(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var acc bgScores
	var roc, doc []float32
	for range 500 {
		r := float32(0.3 + 0.1*rng.NormFloat64())
		d := float32(0.05 + 0.02*rng.NormFloat64() + 0.05*float64(r-0.3))
		roc, doc = append(roc, r), append(doc, d)
		acc.m[bgEvidence].add(r)
		acc.doc.add(d)
		acc.rocDoc += float64(r) * float64(d)
	}
	for _, w := range []float32{0, 0.5, 5} {
		var direct moments
		for i := range roc {
			direct.add(weighed(roc[i], doc[i], w))
		}
		wantMean, wantSD := direct.meanStd()
		mean, sd := acc.weighed(w)
		if math.Abs(float64(mean-wantMean)) > 1e-5 || math.Abs(float64(sd-wantSD)) > 1e-5 {
			t.Errorf("weighed(%v) = %v, %v; want %v, %v", w, mean, sd, wantMean, wantSD)
		}
	}
	rs, _ := acc.m[bgEvidence].spread()
	ds, _ := acc.doc.spread()
	two := []bgScores{acc, acc}
	if got, want := documentWeight(two), float32(rs/ds); math.Abs(float64(got-want)) > 1e-4 {
		t.Errorf("documentWeight = %v, want %v", got, want)
	}
	if got := documentWeight([]bgScores{{m: acc.m}}); got != 0 {
		t.Errorf("documentWeight without document scores = %v, want 0", got)
	}
}
