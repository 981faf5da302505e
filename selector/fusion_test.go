package selector_test

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/selector"
)

// plainVec is a vector as coordinate → value in float64, for the sums of
// these tests, written without the selector's kernels.
type plainVec map[uint32]float64

func plain(v habilis.Vector) plainVec {
	p := plainVec{}
	for i, x := range v.Dense {
		p[uint32(i)] += float64(x)
	}
	for k, i := range v.Indices {
		p[i] += float64(v.Values[k])
	}
	return p
}

func (p plainVec) dot(o plainVec) float64 {
	var s float64
	for i, x := range p {
		s += x * o[i]
	}
	return s
}

// plus returns p + o.
func (p plainVec) plus(o plainVec) plainVec {
	s := plainVec{}
	for i, x := range p {
		s[i] += x
	}
	for i, x := range o {
		s[i] += x
	}
	return s
}

func (p plainVec) norm() float64 { return math.Sqrt(p.dot(p)) }

// handSignals are one tool's signals for one query, computed from the
// stored vectors with the formulas of the README: the centroid is the
// normalised sum of the examples, the Rocchio score the query's cosine with
// the sum of the examples and the description (the description score for
// a tool without examples), the evidence the mean of the Rocchio and
// document scores.
type handSignals struct {
	cent, desc, doc, roc, evidence float64
	examples                       bool
}

func signalsByHand(rec habilis.Record, q plainVec) handSignals {
	u := plain(rec.DescriptionVector)
	s := handSignals{desc: q.dot(u), doc: q.dot(plain(rec.DocumentVector))}
	sum := plainVec{}
	for _, v := range rec.ExampleVectors {
		sum = sum.plus(plain(v))
	}
	if len(sum) == 0 {
		s.cent, s.roc = s.desc, s.desc
		return s
	}
	s.examples = true
	s.cent = q.dot(sum) / sum.norm()
	withDesc := sum.plus(u)
	s.roc = q.dot(withDesc) / withDesc.norm()
	s.evidence = (s.roc + s.doc) / 2
	return s
}

// fusedByHand returns hybrid mode's fused score of each tool: the weighted
// sum of the z-scores (mean and population deviation over the catalog) of
// the Rocchio, description and document scores, plus the tool's prior.
func fusedByHand(names []string, sigs []handSignals, w selector.Weights, prior map[string]float32) []float64 {
	zs := func(get func(handSignals) float64) []float64 {
		var mean, sd float64
		for _, s := range sigs {
			mean += get(s)
		}
		mean /= float64(len(sigs))
		for _, s := range sigs {
			sd += (get(s) - mean) * (get(s) - mean)
		}
		sd = math.Sqrt(sd / float64(len(sigs)))
		out := make([]float64, len(sigs))
		for i, s := range sigs {
			out[i] = (get(s) - mean) / sd
		}
		return out
	}
	roc := zs(func(s handSignals) float64 { return s.roc })
	desc := zs(func(s handSignals) float64 { return s.desc })
	doc := zs(func(s handSignals) float64 { return s.doc })
	fused := make([]float64, len(sigs))
	for i := range sigs {
		fused[i] = float64(w.Centroid)*roc[i] + float64(w.Description)*desc[i] + float64(w.Document)*doc[i] + float64(prior[names[i]])
	}
	return fused
}

func near(a float32, b float64) bool { return math.Abs(float64(a)-b) <= 2e-4 }

// nameBonusByHand returns what selection adds to each tool's fused score
// for the words of its name (the tools here are at most ten, so every one
// is a candidate): the share of the name's snake_case words whose word or
// concept feature (the families of the top two bits 0 and 3) the query's
// vector holds, each word embedded alone.
func nameBonusByHand(t *testing.T, r *selector.Router, names []string, query string) []float64 {
	t.Helper()
	if len(names) > 10 {
		t.Fatalf("%d tools: the name bonus by hand assumes every tool is a candidate", len(names))
	}
	ctx := context.Background()
	embed := func(text string) habilis.Vector {
		vs, err := r.Embedder().Embed(ctx, []string{text}, habilis.Query)
		if err != nil {
			t.Fatal(err)
		}
		return vs[0]
	}
	q := plain(embed(query))
	out := make([]float64, len(names))
	for i, name := range names {
		words := strings.Split(name, "_")
		said := 0
		for _, w := range words {
			for _, f := range embed(w).Indices {
				if fam := f >> 30; (fam == 0 || fam == 3) && q[f] != 0 {
					said++
					break
				}
			}
		}
		out[i] = float64(said) / float64(len(words))
	}
	return out
}

// mismatchByHand is what selection takes from a tool's fused score when
// its name goes the other way than the query, read by hand for the test
// catalog's names and TestHybridFusionByHand's queries: a question that
// names no change against a name that only writes (send_email), a request
// that names a change and asks nothing against a name that only reads
// (get_weather, lookup_word).
func mismatchByHand(name, query string) float64 {
	nameReads := name == "get_weather" || name == "lookup_word"
	nameWrites := name == "send_email"
	switch query {
	case "what does serendipity mean": // asks, names no change
		if nameWrites && !nameReads {
			return 1
		}
	case "send an email to dave about the weather in Lisbon": // a change, no question
		if nameReads && !nameWrites {
			return 1
		}
	}
	return 0
}

// TestHybridFusionByHand recomputes hybrid mode from the stored vectors
// with plain formulas (signalsByHand, fusedByHand) and checks that the
// raw signals of Scores, the fusion of Scores.Fused that fit tunes on,
// and the ranking and scores that selection returns all agree with it:
// under the default calibration, and under weights and a prior such as
// fit stores.
func TestHybridFusionByHand(t *testing.T) {
	r, _ := loaded(t)
	ctx := context.Background()
	recs, err := r.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fitted := r.Calibration()
	fitted.Fitted, fitted.MarginSource = true, "fit"
	fitted.Weights = selector.Weights{Centroid: 0.7, Description: 0.3, Document: 0.9}
	fitted.Prior = map[string]float32{"send_email": 0.4, "lookup_word": -0.2}
	queries := []string{
		"will it rain in Lisbon tomorrow",
		"send an email to dave about the weather in Lisbon",
		"what does serendipity mean",
		"compose a sonnet about autumn leaves",
	}
	for _, cal := range []*selector.Calibration{nil, &fitted} {
		if cal != nil {
			if _, err := r.SetCalibration(ctx, *cal); err != nil {
				t.Fatal(err)
			}
		}
		c := r.Calibration()
		for _, query := range queries {
			checkFusion(t, r, recs, query, c)
		}
	}
}

// checkFusion is TestHybridFusionByHand for one query under calibration c.
func checkFusion(t *testing.T, r *selector.Router, recs []habilis.Record, query string, c selector.Calibration) {
	t.Helper()
	ctx := context.Background()
	sc, err := r.Scores(ctx, query)
	if err != nil {
		t.Fatal(err)
	}
	sigs := checkSignals(t, r, recs, query, sc)
	want := fusedByHand(sc.Tools, sigs, c.Weights, c.Prior)
	fused := sc.Fused(c.Weights, c.Prior)
	for i, name := range sc.Tools {
		if !near(fused[i], want[i]) {
			t.Errorf("%q: Scores.Fused of %s under %+v = %v, by hand %v", query, name, c.Weights, fused[i], want[i])
		}
	}
	bonus := nameBonusByHand(t, r, sc.Tools, query)
	for i := range want {
		want[i] += bonus[i] - mismatchByHand(sc.Tools[i], query)
	}
	_, rk, err := r.SelectRanked(ctx, query, habilis.SelectOptions{Mode: habilis.ModeHybrid, K: len(sc.Tools)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rk.Matches) != len(sc.Tools) {
		t.Errorf("%q: ranking of %d tools, want every one of %d", query, len(rk.Matches), len(sc.Tools))
	}
	idx := make(map[string]int, len(sc.Tools))
	for i, name := range sc.Tools {
		idx[name] = i
	}
	for j, m := range rk.Matches {
		i := idx[m.Tool]
		if !near(m.Score, want[i]) {
			t.Errorf("%q: selection scores %s %v, by hand %v", query, m.Tool, m.Score, want[i])
		}
		// Ties within rounding may fall either way; anything else must be
		// in the hand-computed order.
		if prev := rk.Matches[max(j-1, 0)].Tool; want[idx[prev]] < want[i]-1e-4 {
			t.Errorf("%q: selection ranks %s (%v) above %s (%v)", query, prev, want[idx[prev]], m.Tool, want[i])
		}
		gate := sigs[i].evidence
		if !sigs[i].examples {
			gate = sigs[i].desc
		}
		if !near(m.GateScore, gate) || m.Passed != (m.GateScore >= m.Gate) {
			t.Errorf("%q: %s gate score %v (passed %v at %v), by hand %v", query, m.Tool, m.GateScore, m.Passed, m.Gate, gate)
		}
	}
}

// checkSignals compares the raw signals of sc, query's Scores, with those
// computed by hand from recs, and returns the latter in sc's order.
func checkSignals(t *testing.T, r *selector.Router, recs []habilis.Record, query string, sc *selector.Scores) []handSignals {
	t.Helper()
	qs, err := r.Embedder().Embed(context.Background(), []string{query}, habilis.Query)
	if err != nil {
		t.Fatal(err)
	}
	q := plain(qs[0])
	byName := make(map[string]habilis.Record, len(recs))
	for _, rec := range recs {
		byName[rec.Tool.Name] = rec
	}
	sigs := make([]handSignals, len(sc.Tools))
	for i, name := range sc.Tools {
		s := signalsByHand(byName[name], q)
		sigs[i] = s
		got := []float32{sc.Centroid[i], sc.Description[i], sc.Document[i], sc.Rocchio[i]}
		want := []float64{s.cent, s.desc, s.doc, s.roc}
		if !slices.EqualFunc(got, want, near) {
			t.Errorf("%q: Scores of %s (centroid, description, document, Rocchio) = %v, by hand %v", query, name, got, want)
		}
		if s.examples && !near(sc.Evidence[i], s.evidence) {
			t.Errorf("%q: Scores.Evidence of %s = %v, by hand (Rocchio + document) / 2 = %v", query, name, sc.Evidence[i], s.evidence)
		}
	}
	return sigs
}

// TestGatesLetThroughTheirShare checks what calibration promises, on a
// catalog written here: each example, held out of its tool (the centroid,
// Rocchio sum and document rebuilt without it, by hand), plays a new
// request, and at least MinPass of them reach the centroid gate (radius −
// margin, the margin the calibration chose) and 81 % the hybrid threshold
// on their evidence — less one example's share, since the cut falls
// between order statistics.
func TestGatesLetThroughTheirShare(t *testing.T) {
	r, _ := open(t)
	ctx := context.Background()
	if _, err := r.Load(ctx, shareCatalog, selector.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	recs, err := r.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cal := r.Calibration()
	var excess, evidence []float64
	for _, rec := range recs {
		ex, ev := heldOutByHand(t, r, rec)
		excess, evidence = append(excess, ex...), append(evidence, ev...)
	}
	if cal.Samples != len(excess) || cal.MarginSource != "examples" {
		t.Fatalf("calibration rests on %d samples (%s), want the %d held-out examples", cal.Samples, cal.MarginSource, len(excess))
	}
	n := float64(len(excess))
	for _, tt := range []struct {
		name    string
		scores  []float64
		cut     float32
		minPass float64
	}{
		{"centroid gate (score − radius ≥ −margin)", excess, -cal.Margin, selector.MinPass},
		{"hybrid threshold (evidence)", evidence, cal.HybridThreshold, 0.81},
	} {
		passed := 0
		for _, s := range tt.scores {
			if s >= float64(tt.cut)-1e-6 {
				passed++
			}
		}
		t.Logf("%s at %v: %d of %.0f held-out examples pass", tt.name, tt.cut, passed, n)
		if share := float64(passed) / n; share < tt.minPass-1/n {
			t.Errorf("%s at %v lets %d of %.0f held-out examples through (%.3f), want at least %.3f", tt.name, tt.cut, passed, n, share, tt.minPass-1/n)
		}
	}
}

// heldOutByHand returns, for each example of rec held out of its tool, its
// score against the centroid of the others less the tool's radius, and its
// evidence: the mean of its Rocchio score (the others and the description)
// and its score against the tool's document rebuilt without it. Tools with
// fewer than three examples give none, as calibration holds none out.
func heldOutByHand(t *testing.T, r *selector.Router, rec habilis.Record) (excess, evidence []float64) {
	t.Helper()
	if len(rec.ExampleVectors) < 3 {
		return nil, nil
	}
	ctx := context.Background()
	// The document of a tool without arguments: "name. description", then
	// its examples a line each.
	desc := rec.Tool.Name + ". " + rec.Tool.Description
	docs := make([]string, len(rec.Tool.Examples))
	for k := range docs {
		others := slices.Delete(slices.Clone(rec.Tool.Examples), k, k+1)
		docs[k] = strings.Join(append([]string{desc}, others...), "\n")
	}
	docVecs, err := r.Embedder().Embed(ctx, append(docs, strings.Join(append([]string{desc}, rec.Tool.Examples...), "\n")), habilis.Document)
	if err != nil {
		t.Fatal(err)
	}
	if whole := plain(docVecs[len(docs)]); !near(float32(whole.dot(plain(rec.DocumentVector))), 1) {
		t.Fatalf("%s: the document rebuilt here is not the stored one (cosine %v)", rec.Tool.Name, whole.dot(plain(rec.DocumentVector)))
	}
	u := plain(rec.DescriptionVector)
	for k, v := range rec.ExampleVectors {
		sum := plainVec{}
		for j, o := range rec.ExampleVectors {
			if j != k {
				sum = sum.plus(plain(o))
			}
		}
		pv := plain(v)
		excess = append(excess, pv.dot(sum)/sum.norm()-float64(rec.Radius))
		withDesc := sum.plus(u)
		roc := pv.dot(withDesc) / withDesc.norm()
		evidence = append(evidence, (roc+pv.dot(plain(docVecs[k])))/2)
	}
	return excess, evidence
}

// shareCatalog is six tools of five requests each, none with arguments.
var shareCatalog = []habilis.Tool{
	{Name: "book_flight", Description: "Book a flight between two airports on a date", Examples: []string{
		"book me a flight from Lisbon to Paris on Friday", "I need a plane ticket to Berlin next week",
		"reserve a seat on the morning flight to Madrid", "fly me to Rome on the 3rd of May", "get me on a flight to New York tomorrow"}},
	{Name: "play_music", Description: "Play a song, album or artist on the speakers", Examples: []string{
		"play some jazz", "put on the latest album by Radiohead", "I want to hear Bohemian Rhapsody",
		"play music by Miles Davis in the kitchen", "start my workout playlist"}},
	{Name: "set_alarm", Description: "Set an alarm clock for a time", Examples: []string{
		"wake me up at 6 tomorrow", "set an alarm for 7:30 am", "alarm at noon please",
		"I need to be up at five in the morning", "set my alarm for half past six"}},
	{Name: "translate_text", Description: "Translate text from one language into another", Examples: []string{
		"translate good morning into Japanese", "how do you say thank you in German", "what is cat in Spanish",
		"put this sentence into French: where is the station", "translate 'I love you' to Italian"}},
	{Name: "order_food", Description: "Order food for delivery from a restaurant", Examples: []string{
		"order a large pepperoni pizza", "get me sushi delivered for dinner", "I want to order Thai food",
		"deliver two burgers and fries to my place", "order a vegan lunch from the place nearby"}},
	{Name: "check_balance", Description: "Show the balance of a bank account", Examples: []string{
		"how much money is in my checking account", "what's my bank balance", "show my savings account balance",
		"do I have enough money in my account for rent", "check how much I have left in the bank"}},
}
