package selector

import (
	"context"
	"math"
	"sync"

	"github.com/habilis-router/habilis"
)

// genericSpace scores a request against the background requests with the
// lexical embedder fitted to a catalog: how close the request is to the
// nearest generic request, which no tool is meant for. A request that
// looks like a generic one is less likely to have a tool, whatever it
// scores at the tools: the no-tool confidence takes that similarity off
// (see index.noToolConfidence).
type genericSpace struct {
	once sync.Once
	sp   *space
	pool sync.Pool // *[]float32, one score a background request
}

// The weight of the nearest background request's similarity against the
// logit of the no-tool confidence, for a best tool with examples (the
// background confidence) and without (the calibrated confidence), whose
// logits have other scales. Each is the best of the weights measured on
// the tuning parts: MetaTool half a for the first; the description-only
// sub-catalogs, BFCL's even rows and the MCP catalogs' tuning part for the
// second (docs/quality.md, the nearest generic request).
const (
	genericWeightExamples = 10
	genericWeightBare     = 4
)

// nearestGeneric returns the lexical similarity of ql, the request's
// lexical vector, to the nearest background request, or 0 without a
// lexical embedder. The background's space is built on first use, so
// that opening a stored catalog does not pay for it.
func (ix *index) nearestGeneric(ql habilis.Vector) float32 {
	if ix.lex == nil || ix.generic == nil || ql.IsZero() {
		return 0
	}
	g := ix.generic
	g.once.Do(func() {
		vs, err := ix.lex.Embed(context.Background(), backgroundRequests(), habilis.Query)
		if err != nil {
			return // only a cancelled context makes the lexical embedder fail
		}
		g.sp = newSpace(dropCommon(vs, len(vs)/20), 0)
	})
	if g.sp == nil {
		return 0
	}
	buf, _ := g.pool.Get().(*[]float32)
	if buf == nil {
		b := make([]float32, g.sp.rows)
		buf = &b
	}
	g.sp.scoreAll(ql, *buf)
	best := float32(0)
	for _, x := range *buf {
		best = max(best, x)
	}
	g.pool.Put(buf)
	return best
}

// noToolConfidence returns the ranking's confidence that some tool
// applies, c, lowered as the request resembles a generic one: the logit
// of c less weight × its similarity to the nearest background request.
// On the tuning parts it separates requests no tool serves better than c
// alone, with examples and without; the gates do not use it, since as a
// gate it did not decide better (docs/quality.md).
func noToolConfidence(c, nearest float32, weight float64) float32 {
	p := min(max(float64(c), 1e-6), 1-1e-6)
	x := math.Log(p/(1-p)) - weight*float64(nearest)
	return float32(1 / (1 + math.Exp(-x)))
}

// dropCommon returns vs without the terms that more than most of them
// hold: the words and pieces of words every request has ("the", "what"),
// whose postings would cost most of a scan and add little to a
// similarity.
func dropCommon(vs []habilis.Vector, most int) []habilis.Vector {
	df := map[uint32]int{}
	for _, v := range vs {
		for _, t := range v.Indices {
			df[t]++
		}
	}
	out := make([]habilis.Vector, len(vs))
	for i, v := range vs {
		var w habilis.Vector
		for k, t := range v.Indices {
			if df[t] <= most {
				w.Indices = append(w.Indices, t)
				w.Values = append(w.Values, v.Values[k])
			}
		}
		out[i] = w
	}
	return out
}
