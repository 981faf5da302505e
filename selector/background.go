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

// BackgroundRequests returns the built-in generic requests that no
// catalog's tool is meant for, which every catalog's gates are measured
// against: what fit separates labelled requests from when it is given no
// request for no tool.
func BackgroundRequests() []string { return backgroundRequests() }

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

// z returns how many standard deviations score x of kind k stands above
// the background's mean.
func (b Background) z(k int, x float32) float32 {
	return (x - b.Mean[k]) / max(b.SD[k], 1e-6)
}

// Gates returns the tool's background gate on each score (description,
// centroid, evidence) in a catalog of n tools.
func (b Background) Gates(n int) [3]float32 {
	zd, ze := backgroundZ(n, descriptionShare), backgroundZ(n, exampleShare)
	return [3]float32{b.Mean[0] + zd*b.SD[0], b.Mean[1] + ze*b.SD[1], b.Mean[2] + ze*b.SD[2]}
}

// bareEvidenceGate returns the gate on hybrid mode's evidence of a tool
// without examples in a catalog of n tools: at the description share, as
// its description gate, since the evidence is all it has.
func (b Background) bareEvidenceGate(n int) float32 {
	return b.Mean[bgEvidence] + backgroundZ(n, descriptionShare)*b.SD[bgEvidence]
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
		return nil, fmt.Errorf("embed the built-in background requests: %w", err)
	}
	bv := &backgroundVectors{info: emb.Info(), q: qs, lexVec: qs}
	switch {
	case lex == nil:
		bv.lexVec = make([]habilis.Vector, len(qs))
	case !sameLex:
		if bv.lexVec, err = lex.Embed(ctx, reqs, habilis.Query); err != nil {
			return nil, fmt.Errorf("embed the built-in background requests lexically: %w", err)
		}
	}
	if len(bv.q) != len(reqs) || len(bv.lexVec) != len(reqs) {
		return nil, fmt.Errorf("embed the built-in background requests: %d vectors for %d texts: %w", len(bv.q), len(reqs), habilis.ErrUnavailable)
	}
	return bv, nil
}

// backgroundGates scores the background bv against every tool of recs in
// sh's spaces and returns each tool's Background. With the lexical
// embedder alone (lexical), the evidence is the mean of the Rocchio and
// document scores, as the index computes it.
//
// With a model embedder and a lexical one beside it (weigh), it also
// returns the document's weight in the evidence (Calibration.
// DocumentWeight): the Rocchio score's standard deviation over the
// background divided by the document score's, each averaged over the
// tools. The two scores then spread alike, and the weighed evidence
// separates requests for no tool from requests for some tool better than
// either: on MetaTool half a with the Universal Sentence Encoder, the
// no-tool AUROC of the ranked tools' largest background z-score is 0.947,
// against 0.854 for the Rocchio score alone and 0.912 for an unweighed
// sum (docs/models.md).
func backgroundGates(recs []habilis.Record, sh *shared, bv *backgroundVectors, lexical, weigh bool) (map[string]Background, float32) {
	if len(recs) == 0 || len(bv.q) == 0 {
		return nil, 0
	}
	acc := scoreBackground(recs, sh, bv, lexical)
	var w float32
	if weigh {
		w = documentWeight(acc)
	}
	out := make(map[string]Background, len(recs))
	for i := range recs {
		var b Background
		for j := range 3 {
			b.Mean[j], b.SD[j] = acc[i].m[j].meanStd()
			if acc[i].m[j].n < 2 {
				b.SD[j] = 0
			}
		}
		if w > 0 {
			b.Mean[bgEvidence], b.SD[bgEvidence] = acc[i].weighed(w)
		}
		out[recs[i].Tool.Name] = b
	}
	return out, w
}

// bgScores are the background's moments at one tool: of the description,
// centroid and evidence scores (the Rocchio score unless lexical), and
// of the document score with its cross moment with the Rocchio score.
type bgScores struct {
	m      [3]moments
	doc    moments
	rocDoc float64
}

func (a *bgScores) merge(o *bgScores) {
	for j := range 3 {
		a.m[j].merge(o.m[j])
	}
	a.doc.merge(o.doc)
	a.rocDoc += o.rocDoc
}

// weighed returns the mean and standard deviation of the evidence
// weighed(roc, doc, w) over the background, from the moments of its two
// scores.
func (a *bgScores) weighed(w float32) (mean, sd float32) {
	r, d := a.m[bgEvidence], a.doc
	if r.n < 2 {
		return 0, 0
	}
	n, wf := float64(r.n), float64(w)
	mr, md := r.s/n, d.s/n
	vr, vd := r.ss/n-mr*mr, d.ss/n-md*md
	cov := a.rocDoc/n - mr*md
	v := (vr + wf*wf*vd + 2*wf*cov) / ((1 + wf) * (1 + wf))
	return float32((mr + wf*md) / (1 + wf)), float32(math.Sqrt(max(v, 0)))
}

// scoreBackground returns the background's moments at each tool.
func scoreBackground(recs []habilis.Record, sh *shared, bv *backgroundVectors, lexical bool) []bgScores {
	m := len(bv.q)
	workers := par.Workers(m)
	accs := make([][]bgScores, workers)
	bufs := make([]*scratch, workers)
	par.For(m, func(w, b int) {
		if bufs[w] == nil {
			bufs[w] = new(scratch)
			bufs[w].size(len(recs))
			accs[w] = make([]bgScores, len(recs))
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
			a := &accs[w][i]
			if lexical {
				ev = weighed(ev, g[sigDoc], 1)
			} else {
				a.doc.add(g[sigDoc])
				a.rocDoc += float64(ev) * float64(g[sigDoc])
			}
			a.m[0].add(desc)
			a.m[1].add(cent)
			a.m[2].add(ev)
		}
	})
	out := make([]bgScores, len(recs))
	for i := range recs {
		for w := range accs {
			if accs[w] != nil {
				out[i].merge(&accs[w][i])
			}
		}
	}
	return out
}

// documentWeight returns the Rocchio score's background deviation over
// the document score's, each averaged over the tools; 0 when the
// document score does not vary (no lexical vectors).
func documentWeight(acc []bgScores) float32 {
	var roc, doc float64
	for i := range acc {
		r, rok := acc[i].m[bgEvidence].spread()
		d, dok := acc[i].doc.spread()
		if rok && dok {
			roc += r
			doc += d
		}
	}
	if doc == 0 {
		return 0
	}
	return float32(roc / doc)
}
