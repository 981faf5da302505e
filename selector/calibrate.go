package selector

import (
	"cmp"
	"hash/fnv"
	"math"
	"slices"
	"sort"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/collision"
	"github.com/habilis-router/habilis/internal/par"
)

// Calibration is the catalog-wide part of selection: the default margin,
// the thresholds of tools that have no radius, and hybrid mode's fusion.
// It is stored with the catalog (CatalogMeta.Calibration).
//
// Without labelled queries everything is derived from the catalog's own
// examples, leave-one-out: an example is held out of its tool, the tool's
// centroid and radius are recomputed without it, and the example plays a
// new request. The default margin is set so that MinPass of those
// held-out examples pass their own tool's gate. `fit` replaces these
// estimates with ones learned from labelled traffic.
type Calibration struct {
	// Margin is the margin of tools that set none.
	Margin float32 `json:"margin"`
	// MarginSource says where Margin came from: "config" (set by the
	// operator), "examples" (leave-one-out over the catalog), "fit"
	// (labelled queries) or "default" (a catalog too small to estimate).
	MarginSource string `json:"margin_source"`
	// Threshold is the gate of tools with exactly one example: a request
	// passes when its similarity to that example reaches Threshold. It is
	// the same percentile of held-out example scores as the margin.
	Threshold float32 `json:"threshold"`
	// DescriptionThreshold is the gate of tools without examples, on the
	// description score: the MinPass-quantile lower bound of examples'
	// similarity to their own tool's description, or, in a catalog with no
	// examples at all, the 90th percentile of the similarity between two
	// different tools' descriptions.
	DescriptionThreshold float32 `json:"description_threshold"`
	// Weights are hybrid mode's weights of each signal's z-score.
	Weights Weights `json:"weights"`
	// Confidence maps a tool's gate score minus its threshold to a
	// probability that it applies: 1 / (1 + exp(-(Slope*x + Intercept))),
	// one half at the threshold by default.
	Confidence Logistic `json:"confidence"`
	// NoiseFloor is the similarity of an example to the centroid of a tool
	// it is not for that nine in ten such pairs stay under: what an
	// unrelated request scores. No gate sits below it, however wide a
	// tool's margin.
	NoiseFloor float32 `json:"noise_floor"`
	// HybridThreshold is hybrid mode's gate: a tool with examples passes
	// when its evidence reaches it (see weighed: its Rocchio score, the
	// centroid of its examples and its description, and its lexical
	// document score). It lets hybridMinPass of held-out examples
	// through.
	HybridThreshold float32 `json:"hybrid_threshold"`
	// DocumentWeight is, with a model embedder, the weight of the lexical
	// document score beside the Rocchio score in hybrid mode's evidence
	// (see weighed); 0, as in catalogs stored before it, leaves the
	// Rocchio score alone. The lexical embedder weighs them equally. It
	// is recomputed with every write, from the background.
	DocumentWeight float32 `json:"document_weight,omitempty"`
	// Background holds, by tool, how high the background requests score
	// there (see Background); no gate sits below it. It is recomputed with
	// every write.
	Background map[string]Background `json:"background,omitempty"`
	// Prior holds per-tool score offsets learned from labelled traffic
	// (how often each tool is the answer), added to the fused score.
	Prior map[string]float32 `json:"prior,omitempty"`
	// Samples is how many held-out examples or labelled queries the
	// estimates rest on.
	Samples int `json:"samples"`
	// Collides maps each tool to the tools it collides with at high
	// severity: examples of one that the other takes when left out of
	// their own tool, or near-identical centroids. It is recomputed with
	// every write.
	Collides map[string][]string `json:"collides,omitempty"`
	// Fitted reports a calibration learned by fit from labelled queries;
	// it is kept when the catalog changes, where an estimate from the
	// catalog alone is redone, but not when the catalog is re-embedded
	// with another embedder, whose scores are on another scale.
	Fitted bool `json:"fitted"`
	// GatesFromExamples, on a fitted calibration, reports that fit
	// learned the fusion weights and prior but not the gates, from too few
	// labelled requests for a tool: the thresholds, margin and confidence
	// are calibrated from the examples at every write, as for a catalog
	// fit never saw, rather than kept as they were when fit ran.
	GatesFromExamples bool `json:"gates_from_examples,omitempty"`
}

// Weights are the fusion weights of hybrid mode.
type Weights struct {
	Centroid    float32 `json:"centroid"`
	Description float32 `json:"description"`
	Document    float32 `json:"document"`
	Example     float32 `json:"example"`
}

// Logistic is a one-feature logistic model.
type Logistic struct {
	Slope     float32 `json:"slope"`
	Intercept float32 `json:"intercept"`
}

// Apply returns the logistic of x.
func (l Logistic) Apply(x float32) float32 {
	return float32(1 / (1 + math.Exp(-float64(l.Slope*x+l.Intercept))))
}

const (
	// MinPass is the smallest share of held-out examples that the
	// calibrated margin and thresholds let through their own tool's gate.
	MinPass = 0.85
	// hybridMinPass is MinPass for hybrid mode's gate, whose evidence
	// separates better: of the two shares that met both abstention
	// targets on half a of the MetaTool development queries, the one that
	// leaves more room on the no-tool rate, which rests on fewer queries
	// (docs/quality.md, Earlier releases).
	hybridMinPass = 0.81
	// defaultMargin is used when a catalog has too few examples to
	// estimate one (fewer than minSamples held-out examples).
	defaultMargin = 0.05
	minSamples    = 20
	// noiseQuantile places the noise floor among the scores of examples
	// at tools they are not for.
	noiseQuantile = 0.9
	// maxCalibrationSamples bounds the held-out examples calibration
	// scores against the whole catalog (each costs one search): on larger
	// catalogs, tools are taken in a deterministic order by name hash until
	// this many are scored.
	maxCalibrationSamples = 2000
	// maxCalibrationExamples bounds the examples per tool in it.
	maxCalibrationExamples = 32
)

// defaultWeights were chosen on half a of the MetaTool development queries
// (split by a hash of the query text) and checked on half b. The Rocchio
// signal holds the description as one example among several; a small
// weight of its own (0.1) adds what the author's words say beyond the
// examples. Over a grid of description weights 0-0.4 and document weights
// 0.25-0.75, it is the point whose neighbourhood ranks best on half a. The
// nearest example added nothing there while costing most of the selection
// time, so it is off; fit does not try it either, and only a calibration
// stored through SetCalibration can weight it.
var defaultWeights = Weights{Centroid: 1, Description: 0.1, Document: 0.5}

// calibrate estimates a Calibration from records (with vectors, centroids
// and radii). fixed, when non-nil, keeps the fields learned by fit and only
// refreshes what depends on the catalog.
//
// Each gate is set where it best separates the requests a tool should take
// from those it should not, measured on the catalog itself: an example held
// out of its own tool (leave-one-out) should pass that tool's gate, and
// should fail the gate of every other tool, as a request would that no
// tool of the catalog is meant for. The threshold chosen maximises the
// share of the first passing minus the share of the second passing
// (Youden's J).
//
// sh is newShared of recs: the spaces held-out examples are scored in,
// and the Rocchio norms. lex, when not nil, puts the document signal into
// hybrid mode's evidence (see heldOutLexical). Its functions must be safe
// for concurrent use: the sampled tools are scored on GOMAXPROCS
// goroutines, and their scores gathered in sampling order, so the result
// does not depend on how many there are.
func calibrate(recs []habilis.Record, fixed *Calibration, sh *shared, lex *heldOutLexical) Calibration {
	sampled := calibrationSample(recs)
	shapes := shapesOf(recs)
	samples := make([]heldOutScores, len(sampled))
	bufs := make([]*scratch, par.Workers(len(sampled)))
	par.For(len(sampled), func(w, t int) {
		if bufs[w] == nil {
			bufs[w] = new(scratch)
			bufs[w].size(len(recs))
		}
		samples[t] = heldOut(recs, shapes, sampled[t], sh, bufs[w], lex)
	})
	// Gate excess (score − (radius − margin) at margin 0) of held-out
	// examples at their own tool (pos) and at the best other tool (neg);
	// likewise raw centroid scores and description scores.
	var posEx, negEx, posRaw, negRaw, posDesc, negDesc, posEv, negEv, noise []float32
	for _, h := range samples {
		posEx, negEx = append(posEx, h.posEx...), append(negEx, h.negEx...)
		posRaw, negRaw = append(posRaw, h.posRaw...), append(negRaw, h.negRaw...)
		posDesc, negDesc = append(posDesc, h.posDesc...), append(negDesc, h.negDesc...)
		posEv, negEv = append(posEv, h.posEv...), append(negEv, h.negEv...)
		noise = append(noise, h.noise...)
	}
	c := Calibration{Weights: defaultWeights, Samples: len(posEx), MarginSource: "examples"}
	if len(posEx) < minSamples {
		c.Margin, c.MarginSource = defaultMargin, "default"
	} else {
		c.Margin = clamp01(-youden(posEx, negEx))
	}
	c.NoiseFloor = quantile(noise, noiseQuantile)
	c.Threshold = max(youden(posRaw, negRaw), c.NoiseFloor)
	c.HybridThreshold = youdenCut(posEv, negEv, hybridMinPass)
	if len(posDesc) > 0 {
		c.DescriptionThreshold = youden(posDesc, negDesc)
	} else {
		c.DescriptionThreshold = crossDescriptionQuantile(recs, 0.9)
	}
	// Confidence is one half at the hybrid threshold and nine in ten at
	// the median held-out example.
	c.Confidence = Logistic{Slope: 10}
	if len(posEv) > 0 {
		if d := quantile(slices.Clone(posEv), 0.5) - c.HybridThreshold; d > 0.01 {
			c.Confidence.Slope = float32(math.Log(9)) / d
		}
	}
	if fixed != nil && fixed.Fitted {
		// What fit learned from labelled traffic outlives catalog changes.
		c.Weights, c.Prior = fixed.Weights, fixed.Prior
		c.Fitted, c.GatesFromExamples = true, fixed.GatesFromExamples
		if fixed.GatesFitted() {
			c.Confidence, c.Margin, c.MarginSource, c.Samples = fixed.Confidence, fixed.Margin, fixed.MarginSource, fixed.Samples
			c.Threshold, c.DescriptionThreshold, c.HybridThreshold = fixed.Threshold, fixed.DescriptionThreshold, fixed.HybridThreshold
			c.NoiseFloor = fixed.NoiseFloor
		}
	}
	return c
}

// GatesFitted reports that fit learned the gates (thresholds, margin,
// confidence) from labelled requests, and that writes keep them.
func (c Calibration) GatesFitted() bool { return c.Fitted && !c.GatesFromExamples }

// calibrationSample returns the tools whose examples calibration holds
// out, in sampling order (sampleTools): tools are taken until
// maxCalibrationSamples nonzero examples are, counting at most
// maxCalibrationExamples of each.
func calibrationSample(recs []habilis.Record) []int {
	var sampled []int
	scored := 0
	for _, a := range sampleTools(recs) {
		if scored >= maxCalibrationSamples {
			break
		}
		sampled = append(sampled, a)
		for _, v := range heldOutExamples(&recs[a]) {
			if !v.IsZero() {
				scored++
			}
		}
	}
	return sampled
}

// heldOutExamples returns the examples of r that calibration holds out:
// its first maxCalibrationExamples.
func heldOutExamples(r *habilis.Record) []habilis.Vector {
	vs := r.ExampleVectors
	if len(vs) > maxCalibrationExamples {
		vs = vs[:maxCalibrationExamples]
	}
	return vs
}

// heldOutScores are what calibration learns from one tool's held-out
// examples, in example order: see calibrate.
type heldOutScores struct {
	posEx, negEx, posRaw, negRaw, posDesc, negDesc, posEv, negEv, noise []float32
}

// toolShape is what heldOut reads of every other tool for each example,
// side by side rather than in records a few hundred bytes apart: at
// 30,000 tools, 2,000 examples read it 60 million times.
type toolShape struct {
	radius              float32
	hasRadius, centroid bool
}

func shapesOf(recs []habilis.Record) []toolShape {
	out := make([]toolShape, len(recs))
	for i := range recs {
		out[i] = toolShape{radius: recs[i].Radius, hasRadius: recs[i].HasRadius, centroid: !recs[i].Centroid.IsZero()}
	}
	return out
}

// heldOutLexical is the lexical side of calibration's held-out examples,
// for when the document signal joins hybrid mode's evidence with the
// weight weight (see weighed). docs returns tool a's document rebuilt
// without each of its held-out examples; queries returns the held-out
// examples' lexical vectors, or is nil when the main embedder is the
// lexical one, whose example vectors serve.
type heldOutLexical struct {
	docs, queries func(a int) []habilis.Vector
	weight        float32
}

// of returns tool a's documents rebuilt without each of its held-out
// examples vs, and those examples' lexical vectors (vs themselves when the
// main embedder is the lexical one); none for a nil l or when they do
// not pair.
func (l *heldOutLexical) of(a int, vs []habilis.Vector) (docs, queries []habilis.Vector) {
	if l == nil {
		return nil, nil
	}
	docs, queries = l.docs(a), vs
	if l.queries != nil {
		if queries = l.queries(a); len(queries) != len(vs) {
			return nil, nil
		}
	}
	return docs, queries
}

// heldOut scores each held-out example of tool a at its own tool and at
// every other in sh's spaces, with s as working memory; shapes are
// shapesOf(recs).
func heldOut(recs []habilis.Record, shapes []toolShape, a int, sh *shared, s *scratch, lex *heldOutLexical) heldOutScores {
	var h heldOutScores
	// A sample of every example's score at the tools it is not for.
	noiseStride := max(1, len(recs)/64)
	r := &recs[a]
	vs := heldOutExamples(r)
	var held, roc []float32
	var ownDocs, lexVecs []habilis.Vector
	if len(vs) >= MinHeldOutExamples {
		held, roc = leaveOneOut(vs, r.DescriptionVector)
		ownDocs, lexVecs = lex.of(a, vs)
	}
	sig := s.sig
	for k, v := range vs {
		if v.IsZero() {
			continue
		}
		withDoc := k < len(ownDocs)
		// The document signal is scored only when it joins the evidence.
		var ql habilis.Vector
		if withDoc {
			ql = lexVecs[k]
		}
		sh.scoreAll(v, ql, s)
		bestEx, bestRaw, bestDesc, bestEv := float32(-2), float32(-2), float32(-2), float32(-2)
		for b := range shapes {
			if b == a {
				continue
			}
			tb := &shapes[b]
			if b%noiseStride == 0 && tb.centroid {
				h.noise = append(h.noise, sig[b][sigCent])
			}
			bestDesc = max(bestDesc, sig[b][sigDesc])
			if !tb.centroid {
				continue
			}
			rb := rocchioScore(sh.sumNorm[b], sh.rocchioNorm[b], sig[b][sigCent], sig[b][sigDesc])
			if withDoc {
				rb = weighed(rb, sig[b][sigDoc], lex.weight)
			}
			bestEv = max(bestEv, rb)
			bestRaw = max(bestRaw, sig[b][sigCent])
			if tb.hasRadius {
				bestEx = max(bestEx, sig[b][sigCent]-tb.radius)
			}
		}
		h.posDesc = append(h.posDesc, sig[a][sigDesc])
		h.negDesc = append(h.negDesc, bestDesc)
		if len(held) == len(vs) {
			// At serving time the gate is the full radius minus the
			// margin, and a new request scores like a held-out example.
			h.posEx = append(h.posEx, held[k]-r.Radius)
			h.posRaw = append(h.posRaw, held[k])
			h.negEx = append(h.negEx, bestEx)
			h.negRaw = append(h.negRaw, bestRaw)
			ev := roc[k]
			if withDoc {
				ev = weighed(ev, dot(lexVecs[k], ownDocs[k]), lex.weight)
			}
			h.posEv = append(h.posEv, ev)
			h.negEv = append(h.negEv, bestEv)
		}
	}
	return h
}

// findMaxTools is the catalog size up to which every write runs the full
// collision analysis (with leave-one-out example leaks) to find the pairs
// that collide; larger catalogs use centroid pairs alone.
const findMaxTools = 500

// collides returns the high-severity collisions of recs, by tool. Tools
// without examples take part by their description gates under cal, as in
// Router.Collisions, so that a tool's collides_with (and a decision's
// ambiguity) names the high pairs the collisions report lists.
func collides(recs []habilis.Record, cal Calibration, threshold float32, sameLex bool) (map[string][]string, error) {
	if !hasExamples(recs) {
		// Pairs of two tools without examples are low whatever their
		// similarity: nothing to look for.
		return nil, nil
	}
	// Above findMaxTools, Pairs keeps to its restricted pass (centroid
	// pairs above the threshold, found through an inverted index), which
	// is all a high severity can rest on without the leak analysis.
	opts := collisionOptions(recs, cal, threshold, findMaxTools, sameLex)
	opts.HighOnly = true
	var cols []habilis.Collision
	var err error
	if len(recs) <= findMaxTools {
		cols, err = collision.Find(recs, opts)
	} else {
		cols, err = collision.Pairs(recs, opts)
	}
	if err != nil {
		return nil, err
	}
	high := cols[:0]
	for _, c := range cols {
		if c.Severity == habilis.SeverityHigh {
			high = append(high, c)
		}
	}
	return collision.ForTool(high), nil
}

// collisionOptions are the collision analysis' options for recs under
// cal: its gates, and tools without examples standing in by their
// description gates (descriptionGates).
func collisionOptions(recs []habilis.Record, cal Calibration, threshold float32, maxTools int, sameLex bool) collision.Options {
	bare := descriptionGates(recs, cal, sameLex)
	return collision.Options{Threshold: threshold, CatalogThreshold: cal.Threshold, GateFloor: cal.NoiseFloor, MaxTools: maxTools,
		Bare: func(rec int) (float32, bool) { g, ok := bare[rec]; return g, ok }, DescriptionWeight: descriptionWeight}
}

// descriptionGates returns, by position in recs, the description gate of
// each tool without examples as an index built from recs under cal gates
// it (index.bareDescriptionGate, index.setBackground): the background's
// gate with the lexical embedder, the calibrated threshold otherwise.
func descriptionGates(recs []habilis.Record, cal Calibration, sameLex bool) map[int]float32 {
	gates := make(map[int]float32)
	for k := range recs {
		if len(recs[k].Tool.Examples) > 0 {
			continue
		}
		g := cal.DescriptionThreshold
		if b, ok := cal.Background[recs[k].Tool.Name]; ok && sameLex {
			g = b.Gates(len(recs))[bgDescription]
		}
		gates[k] = g
	}
	return gates
}

// weighed is hybrid mode's gate score of a tool, its evidence: its
// Rocchio and document scores weighed w to 1, (roc + w·doc) / (1 + w).
//
// With the lexical embedder w is 1, the mean: the two views weigh words
// differently (one vector per example against one for the whole tool),
// and their mean separates requests for no tool from requests for some
// tool better than either on half a of the MetaTool development queries
// (docs/quality.md, Earlier releases).
//
// With a model embedder the two are on different scales, and w is
// Calibration.DocumentWeight, the ratio of their spreads over the
// background (see backgroundGates), so that each counts as much as the
// other in telling a request from generic ones (docs/models.md).
func weighed(roc, doc, w float32) float32 { return (roc + w*doc) / (1 + w) }

// descriptionPrior sets how many examples' worth a tool's description
// weighs in its Rocchio vector (descriptionWeight).
const descriptionPrior = 3

// descriptionWeight returns the weight of the description u in the
// Rocchio vector Σv + m·u of a tool with n examples: m = max(1,
// descriptionPrior − n), two for a single example, one from two on. A
// single example is a small sample of the requests a tool serves, and
// words it shares with a request by chance ("hello world", "picture")
// outweighed the description it was added to: on the MCP development
// catalogs with one to three examples for some tools, ranking top-1 fell
// from 66.0 to 54.2 %; 56.7 % with this weight. A weight growing with the
// examples that are missing (max(1, 6 − n)) generalised better (60.6 %),
// but an example then no longer routed its own request where a tool's
// near twin was described in the same words (read_file, read_text_file):
// an example given to correct a misroute must correct it
// (docs/quality.md, a few examples).
func descriptionWeight(n int) float32 { return float32(max(1, descriptionPrior-n)) }

// rocchioNorms returns the norms the Rocchio score of a record is
// computed from (see rocchioFrom), both 0 for a tool without examples.
func rocchioNorms(r *habilis.Record) (sum, roc float32) {
	if r.Centroid.IsZero() {
		return 0, 0
	}
	for _, v := range r.ExampleVectors {
		sum += dot(v, r.Centroid)
	}
	return rocchioFrom(r, sum)
}

// rocchioFrom is rocchioNorms of r, a record with a centroid, given sum
// = ‖Σv‖ over its examples: ‖Σv‖ and ‖Σv + m·u‖ with its description u
// and m its descriptionWeight, each divided by m. The Rocchio score
// q·(Σv + m·u)/‖Σv + m·u‖ then follows from the centroid and description
// scores as rocchioScore computes it, since Σv = ‖Σv‖ c.
func rocchioFrom(r *habilis.Record, sum float32) (float32, float32) {
	n := 0
	for _, v := range r.ExampleVectors {
		if !v.IsZero() {
			n++
		}
	}
	m := descriptionWeight(n)
	cu := dot(r.Centroid, r.DescriptionVector)
	roc := float32(math.Sqrt(float64(max(sum*sum+2*m*sum*cu+m*m, 1e-12))))
	return sum / m, roc / m
}

// rocchioScore is the Rocchio score from the centroid score cent and the
// description score desc of a tool with those norms.
func rocchioScore(sum, roc, cent, desc float32) float32 {
	if roc == 0 {
		return desc
	}
	return (sum*cent + desc) / roc
}

// youden returns the threshold t that maximises the share of pos at or
// above t minus the share of neg at or above t (Youden's J: the cut that
// best separates the two), but never one that lets fewer than MinPass of
// pos through: wrongly refusing a request the catalog covers costs more
// than a doubtful match, which the caller still sees explained. With
// either side empty it returns the 1 − MinPass quantile of pos (or 0).
func youden(pos, neg []float32) float32 { return youdenCut(pos, neg, MinPass) }

// LearnGates sets hybrid mode's threshold, the margin and the confidence
// from labelled requests, as fit learns them: posEvidence and posGate are
// the hybrid evidence and the centroid gate excess (score minus radius,
// the best over the tools that have a radius) at the top-ranked tool of
// requests a tool should take, negEvidence and negGate the same for
// requests no tool should. Each gate is the cut that best separates the
// two while letting MinPass of the first through (youden), the margin
// within [0, 1]; the confidence is one half at the threshold and nine in
// ten at the median request a tool should take. Without requests for no
// tool it changes nothing: there is nothing to separate.
func (c *Calibration) LearnGates(posEvidence, negEvidence, posGate, negGate []float32) {
	if len(negEvidence) == 0 {
		return
	}
	c.HybridThreshold = youden(posEvidence, negEvidence)
	c.Margin, c.MarginSource = clamp01(-youden(posGate, negGate)), "fit"
	if d := upperMedian(posEvidence) - c.HybridThreshold; d > 0.01 {
		c.Confidence = Logistic{Slope: float32(math.Log(9)) / d}
	}
}

// upperMedian returns the element of xs at half its length once sorted
// (the upper of the two middle ones), 0 for none; xs is left as it was.
func upperMedian(xs []float32) float32 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// youdenCut is youden with minPass as the smallest share of pos let
// through (0 for none).
func youdenCut(pos, neg []float32, minPass float64) float32 {
	if len(pos) == 0 {
		return 0
	}
	floor := quantile(slices.Clone(pos), 1-minPass)
	if len(neg) == 0 {
		return floor
	}
	type pt struct {
		x   float32
		pos bool
	}
	all := make([]pt, 0, len(pos)+len(neg))
	for _, x := range pos {
		all = append(all, pt{x, true})
	}
	for _, x := range neg {
		all = append(all, pt{x, false})
	}
	slices.SortFunc(all, func(a, b pt) int { return cmp.Compare(b.x, a.x) })
	// Walk thresholds from high to low: below each distinct value,
	// everything seen so far passes.
	np, nn := float64(len(pos)), float64(len(neg))
	var tp, fp float64
	best, bestJ := all[0].x, math.Inf(-1)
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].x == all[i].x {
			if all[j].pos {
				tp++
			} else {
				fp++
			}
			j++
		}
		if jv := tp/np - fp/nn; jv > bestJ {
			bestJ, best = jv, all[i].x
			if j < len(all) {
				// Cut halfway to the next value down, so the gate does not
				// sit exactly on one example.
				best = (all[i].x + all[j].x) / 2
			}
		}
		i = j
	}
	return min(best, floor)
}

// leaveOneOut returns, for each example i of one tool, its score s₋ᵢ
// against the centroid recomputed without it (held) and its Rocchio score
// against that centroid with the description u weighed as
// descriptionWeight of the examples left (roc).
// An example whose leave-one-out centroid is zero is skipped, so callers
// use the results only when they hold one value per example.
func leaveOneOut(vs []habilis.Vector, u habilis.Vector) (held, roc []float32) {
	n := len(vs)
	g := make([]float32, n*n) // Gram matrix of the examples
	for i := range vs {
		for j := i; j < n; j++ {
			d := dot(vs[i], vs[j])
			g[i*n+j], g[j*n+i] = d, d
		}
	}
	// With S = Σ v_j: v_j·(S − v_i) = rowsum_j − g_ji and
	// ‖S − v_i‖² = ‖S‖² − 2·rowsum_i + g_ii.
	row := make([]float32, n)
	var ss float32
	for i := range n {
		for j := range n {
			row[i] += g[i*n+j]
		}
		ss += row[i]
	}
	vu := make([]float32, n)
	var su float32
	nonzero := 0
	for i := range n {
		vu[i] = dot(vs[i], u)
		su += vu[i]
		if !vs[i].IsZero() {
			nonzero++
		}
	}
	for i := range n {
		norm2 := ss - 2*row[i] + g[i*n+i]
		if norm2 <= 1e-12 {
			continue
		}
		// Rocchio without example i: v_i·(S − v_i + m·u) / ‖S − v_i + m·u‖,
		// m the description's weight with the examples left.
		m := descriptionWeight(nonzero - 1)
		rn2 := norm2 + 2*m*(su-vu[i]) + m*m
		roc = append(roc, (row[i]-g[i*n+i]+m*vu[i])/float32(math.Sqrt(float64(max(rn2, 1e-12)))))
		inv := 1 / float32(math.Sqrt(float64(norm2)))
		held = append(held, (row[i]-g[i*n+i])*inv)
	}
	return held, roc
}

// crossDescriptionQuantile returns the q-quantile of the similarity between
// two different tools' description vectors, over a deterministic sample of
// pairs; it stands in for a description threshold when no tool has examples.
func crossDescriptionQuantile(recs []habilis.Record, q float64) float32 {
	if len(recs) < 2 {
		return 0
	}
	var sims []float32
	step := max(1, len(recs)/200)
	for i := 0; i < len(recs); i += step {
		for j := i + 1; j < len(recs); j += step {
			sims = append(sims, dot(recs[i].DescriptionVector, recs[j].DescriptionVector))
		}
	}
	return quantile(sims, q)
}

// sampleTools returns the indexes of the records in the order calibration
// looks at them: by a hash of the name, so that a catalog too large to
// score whole is sampled without regard to how its tools are named or
// sorted.
func sampleTools(recs []habilis.Record) []int {
	idx := make([]int, len(recs))
	keys := make([]uint32, len(recs))
	for i := range idx {
		idx[i] = i
		f := fnv.New32a()
		f.Write([]byte(recs[i].Tool.Name))
		keys[i] = f.Sum32()
	}
	sort.Slice(idx, func(a, b int) bool { return keys[idx[a]] < keys[idx[b]] })
	return idx
}

// quantile returns the q-quantile of xs (linear interpolation), sorting xs
// in place; 0 for an empty slice. It never leaves the two order statistics
// it lies between: interpolated in float32, the quantile between two equal
// scores could round above them, and a gate set there refuse both.
func quantile(xs []float32, q float64) float32 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	pos := q * float64(len(xs)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(xs)-1)
	f := pos - float64(lo)
	v := float32(float64(xs[lo])*(1-f) + float64(xs[hi])*f)
	return min(max(v, xs[lo]), xs[hi])
}

func clamp01(x float32) float32 { return min(max(x, 0), 1) }
