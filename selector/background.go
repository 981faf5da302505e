package selector

import (
	"context"
	_ "embed"
	"fmt"
	"math"
	"strings"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/par"
)

// backgroundText holds generic requests that no catalog's tool is meant
// for, one a line: the background every catalog's gates are measured
// against. background.md says where they come from and how they were
// chosen.
//
//go:embed background.txt
var backgroundText string

// backgroundRequests returns the background requests.
func backgroundRequests() []string {
	return strings.Split(strings.TrimSpace(backgroundText), "\n")
}

// Background is how generic requests (the background) score at one tool:
// the mean and standard deviation of each gate score over them, in the
// order description, centroid, evidence. A tool's gates never sit below
// the mean plus z deviations, where z grows with the catalog (see
// backgroundZ), so that a request must stand out from what generic
// requests score at that tool, whatever the scale of the tool's scores: a
// tool whose words are common in requests has a higher gate than one whose
// words are rare, and a tool without examples has a gate at all.
type Background struct {
	Mean [3]float32 `json:"mean"`
	SD   [3]float32 `json:"sd"`
}

// The gate scores a Background describes.
const (
	bgDescription = iota // the description score (description mode, tools without examples)
	bgCentroid           // the centroid score (centroid mode)
	bgEvidence           // hybrid mode's evidence
)

// Gates returns the tool's background gate on each score (description,
// centroid, evidence) in a catalog of n tools.
func (b Background) Gates(n int) [3]float32 {
	zd, ze := backgroundZ(n, descriptionShare), backgroundZ(n, exampleShare)
	return [3]float32{b.Mean[0] + zd*b.SD[0], b.Mean[1] + ze*b.SD[1], b.Mean[2] + ze*b.SD[2]}
}

// Shares of background requests a whole catalog may let through, spread
// over its tools (backgroundZ): descriptionShare for description gates,
// exampleShare for the gates of tools with examples, which have the
// examples' own evidence beside it. Chosen on the tuning halves of the
// development sets (docs/quality.md): description-only sub-catalogs of
// 3-50 MetaTool and BFCL tools, BFCL's candidate lists, generic requests
// held out of the background at the sample catalog, and MetaTool half a.
const (
	descriptionShare = 0.05
	exampleShare     = 0.01
)

// backgroundZ returns how many standard deviations above the background's
// mean a tool's gate sits in a catalog of n tools, when at most share of
// generic requests should pass some tool's gate: each tool may let
// share / n through, which under a normal law is 1 − Φ(z). The
// background's scores have a heavier upper tail than a normal law, so the
// share let through is larger in fact; the shares were chosen on the
// measured rates (docs/quality.md, the background's shares).
func backgroundZ(n int, share float64) float32 {
	p := 1 - share/float64(max(n, 1))
	return float32(math.Sqrt2 * math.Erfinv(2*p-1))
}

// maxBackgroundScores bounds the tool scores the background costs a
// write (requests × tools): a catalog too large for every request is
// measured against the first ones only.
const maxBackgroundScores = 20_000_000

// backgroundVectors embeds the background requests with emb and, when it
// is another embedder, lex (nil vectors when lex is nil).
type backgroundVectors struct {
	info      habilis.EmbedderInfo
	q, lexVec []habilis.Vector
}

// embedBackground embeds the first n background requests for the main and
// the lexical signal.
func embedBackground(ctx context.Context, emb, lex habilis.Embedder, sameLex bool, n int) (*backgroundVectors, error) {
	reqs := backgroundRequests()
	reqs = reqs[:min(len(reqs), n)]
	qs, err := emb.Embed(ctx, reqs, habilis.Query)
	if err != nil {
		return nil, fmt.Errorf("selector: embed the background: %w", err)
	}
	bv := &backgroundVectors{info: emb.Info(), q: qs, lexVec: qs}
	switch {
	case lex == nil:
		bv.lexVec = make([]habilis.Vector, len(qs))
	case !sameLex:
		if bv.lexVec, err = lex.Embed(ctx, reqs, habilis.Query); err != nil {
			return nil, fmt.Errorf("selector: embed the background lexically: %w", err)
		}
	}
	if len(bv.q) != len(reqs) || len(bv.lexVec) != len(reqs) {
		return nil, fmt.Errorf("selector: embed the background: %d vectors for %d texts: %w", len(bv.q), len(reqs), habilis.ErrUnavailable)
	}
	return bv, nil
}

// backgroundGates scores the background bv against every tool of recs in
// sh's spaces and returns each tool's Background. withDoc puts the
// document score into the evidence, as the index does with the lexical
// embedder alone.
func backgroundGates(recs []habilis.Record, sh *shared, bv *backgroundVectors, withDoc bool) map[string]Background {
	if len(recs) == 0 || len(bv.q) == 0 {
		return nil
	}
	m := len(bv.q)
	workers := par.Workers(m)
	moms := make([][][3]moments, workers)
	bufs := make([]*scratch, workers)
	par.For(m, func(w, b int) {
		if bufs[w] == nil {
			bufs[w] = new(scratch)
			bufs[w].size(len(recs))
			moms[w] = make([][3]moments, len(recs))
		}
		s := bufs[w]
		sh.scoreAll(bv.q[b], bv.lexVec[b], s)
		for i := range recs {
			g := &s.sig[i]
			desc, cent := g[sigDesc], g[sigCent]
			if recs[i].Centroid.IsZero() {
				cent = desc
			}
			ev := rocchioScore(sh.sumNorm[i], sh.rocchioNorm[i], cent, desc)
			if withDoc {
				ev = evidence(ev, g[sigDoc])
			}
			mo := &moms[w][i]
			mo[0].add(desc)
			mo[1].add(cent)
			mo[2].add(ev)
		}
	})
	out := make(map[string]Background, len(recs))
	for i := range recs {
		var sum [3]moments
		for w := range moms {
			if moms[w] == nil {
				continue
			}
			for j := range 3 {
				sum[j].merge(moms[w][i][j])
			}
		}
		var b Background
		for j := range 3 {
			b.Mean[j], b.SD[j] = sum[j].meanStd()
			if sum[j].n < 2 {
				b.SD[j] = 0
			}
		}
		out[recs[i].Tool.Name] = b
	}
	return out
}
