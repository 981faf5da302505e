package eval

import (
	"cmp"
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/wordsplit"
)

// BM25 parameters: the usual Okapi values.
const (
	bm25K1 = 1.5
	bm25B  = 0.75
)

// bm25 is an Okapi BM25 index over one catalog: one document a tool, made
// of its name's words, description, examples and arguments' names and
// descriptions.
type bm25 struct {
	names []string
	tf    []map[string]float64
	len   []float64
	avg   float64
	idf   map[string]float64
}

func newBM25(tools []habilis.Tool) *bm25 {
	ix := &bm25{names: make([]string, len(tools)), tf: make([]map[string]float64, len(tools)), len: make([]float64, len(tools)), idf: map[string]float64{}}
	df := map[string]int{}
	total := 0.0
	for i, t := range tools {
		ix.names[i] = t.Name
		words := bm25Tokens(bm25Document(t))
		tf := make(map[string]float64, len(words))
		for _, w := range words {
			if tf[w] == 0 {
				df[w]++
			}
			tf[w]++
		}
		ix.tf[i], ix.len[i] = tf, float64(len(words))
		total += ix.len[i]
	}
	if len(tools) > 0 {
		ix.avg = max(total/float64(len(tools)), 1)
	}
	n := float64(len(tools))
	for w, d := range df {
		ix.idf[w] = math.Log(1 + (n-float64(d)+0.5)/(float64(d)+0.5))
	}
	return ix
}

// scores returns every tool's BM25 score for query.
func (ix *bm25) scores(query string) []float64 {
	out := make([]float64, len(ix.names))
	words := bm25Tokens(query)
	for i, tf := range ix.tf {
		norm := bm25K1 * (1 - bm25B + bm25B*ix.len[i]/ix.avg)
		for _, w := range words {
			if f := tf[w]; f > 0 {
				out[i] += ix.idf[w] * f * (bm25K1 + 1) / (f + norm)
			}
		}
	}
	return out
}

// bm25Document is the text BM25 indexes for t.
func bm25Document(t habilis.Tool) string {
	parts := []string{t.Name, t.Description}
	parts = append(parts, t.Examples...)
	var schema struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	if json.Unmarshal(t.InputSchema, &schema) == nil {
		names := make([]string, 0, len(schema.Properties))
		for n := range schema.Properties {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			parts = append(parts, n, schema.Properties[n].Description)
		}
	}
	return strings.Join(parts, " ")
}

// bm25Tokens splits text into lower-case words of letters and digits,
// breaking camelCase and snake_case names apart; an acronym stays one
// word with what follows it ("HTTPServer"), as the baseline's figures were
// measured.
func bm25Tokens(text string) []string { return wordsplit.Split(text, wordsplit.Camel) }

// bm25Outcome is one query's BM25 ranking and top score.
type bm25Outcome struct {
	ranking []string
	top     float64
}

// RunBM25 measures Okapi BM25 as a baseline on qs, each query routed
// within its candidates when it has a list (with the idf of that list),
// else within tools. BM25 has no gate of its own: its decisions are taken
// at the single threshold on the top score that gives the best decision
// accuracy over all the queries, which favours BM25, since that threshold
// is chosen on the very queries it is measured on. Latency is not
// measured.
func RunBM25(ctx context.Context, tools []habilis.Tool, qs []Query, opts Options) (*Report, error) {
	opts, _, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	groups, order, err := groupByCatalog(tools, qs)
	if err != nil {
		return nil, err
	}
	outs := make([]bm25Outcome, len(qs))
	for _, key := range order {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		g := groups[key]
		ix := newBM25(g.tools)
		for _, qi := range g.queries {
			outs[qi] = ix.rank(qs[qi].Query, opts.K)
		}
	}
	th := bestThreshold(qs, outs)
	t := newTally(opts)
	for qi, q := range qs {
		o := outs[qi]
		top, abstained := "", len(o.ranking) == 0 || o.top < th
		if !abstained {
			top = o.ranking[0]
		}
		t.add(q, top, abstained, o.ranking, o.top)
	}
	rep := t.report(len(tools), "")
	rep.Latency = Latency{}
	rep.Baseline, rep.Threshold = "bm25", th
	return rep, nil
}

// rank returns the k best tools for query and the best score.
func (ix *bm25) rank(query string, k int) bm25Outcome {
	sc := ix.scores(query)
	idx := make([]int, len(sc))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(sc[b], sc[a]) })
	var o bm25Outcome
	for _, i := range idx[:min(k, len(idx))] {
		o.ranking = append(o.ranking, ix.names[i])
	}
	if len(idx) > 0 {
		o.top = sc[idx[0]]
	}
	return o
}

// bestThreshold returns the threshold on the top score that maximises the
// share of right decisions (an expected tool first, or nothing for a
// no-tool query), the lowest such one on ties.
func bestThreshold(qs []Query, outs []bm25Outcome) float64 {
	// A query decides right above the threshold when its first tool is
	// expected (or, for a no-tool query, never), and below it when it
	// expects no tool.
	type pt struct {
		score      float64
		above, low int
	}
	pts := make([]pt, 0, len(qs))
	right := 0 // right decisions with the threshold above every score
	for qi, q := range qs {
		o := outs[qi]
		if len(o.ranking) == 0 {
			if len(q.Expected) == 0 {
				right++
			}
			continue
		}
		p := pt{score: o.top}
		if len(q.Expected) == 0 {
			p.low = 1
			right++
		} else if slices.Contains(q.Expected, o.ranking[0]) {
			p.above = 1
		}
		pts = append(pts, p)
	}
	slices.SortFunc(pts, func(a, b pt) int { return cmp.Compare(b.score, a.score) })
	if len(pts) == 0 {
		return 0
	}
	// Abstaining on everything is a threshold just above the best score.
	best, bestRight := math.Nextafter(pts[0].score, math.Inf(1)), right
	for i := 0; i < len(pts); {
		j := i
		for j < len(pts) && pts[j].score == pts[i].score {
			right += pts[j].above - pts[j].low
			j++
		}
		if right >= bestRight {
			best, bestRight = pts[i].score, right
		}
		i = j
	}
	return best
}
