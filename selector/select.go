package selector

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/suggest"
	"github.com/habilis-router/habilis/internal/vec"
)

// DefaultK is how many tools a selection returns when K is 0.
const DefaultK = 5

// MaxK is the largest K a selection may ask for, locally or from a
// server (api.MaxK), so that both refuse the same requests.
const MaxK = 1000

// CheckK returns a *KError when k is outside 0 (DefaultK) to MaxK.
func CheckK(k int) error {
	if k < 0 || k > MaxK {
		return &KError{K: k}
	}
	return nil
}

// KError is a K out of range, named as the caller gave it. It unwraps to
// habilis.ErrInvalid.
type KError struct{ K int }

// Reason says what is wrong with K, without naming the field.
func (e *KError) Reason() string {
	return fmt.Sprintf("%d is out of range: want 1 to %d, or 0 for %d", e.K, MaxK, DefaultK)
}

func (e *KError) Error() string { return "k: " + e.Reason() }

func (e *KError) Unwrap() error { return habilis.ErrInvalid }

// scratch holds one selection's per-tool score buffers, reused through a
// pool so that a selection over a large catalog allocates little.
type scratch struct {
	// sig holds each tool's raw scores side by side, indexed by sigCent,
	// sigDesc, sigDoc and sigRoc, so that a pass over the tools reads one
	// array.
	sig   [][4]float32
	fused []float32
	col   []float32 // one signal of every tool, for spaces that score one at a time
	runs  []vec.Run // the query's terms that a triSpace holds
	// content is the query's content terms (see index.contentTerms), nil
	// when the gates do not look at them.
	content *content
	// intent is the query's (see index.intentOf), nil without one.
	intent *intent
	// centroidOnly asks scoreAll for the centroid scores alone: centroid
	// mode ranks by them, and with dense vectors reading every
	// description too doubled the bytes a selection reads. The
	// description scores of the tools it looks at are scored one by one
	// (signalsOf), equal to the bit; q is the query they are scored for.
	centroidOnly bool
	q            habilis.Vector
}

// The raw scores of a tool in scratch.sig, in the order triSpace
// accumulates them.
const (
	sigCent = iota // centroid (description for a tool without examples)
	sigDesc        // description
	sigDoc         // whole document, lexically
	sigRoc         // Rocchio (hybrid mode only)
)

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func (s *scratch) size(n int) {
	if cap(s.sig) < n {
		s.sig, s.fused, s.col = make([][4]float32, n), make([]float32, n), make([]float32, n)
	}
	s.sig, s.fused, s.col = s.sig[:n], s.fused[:n], s.col[:n]
}

// Select returns the tools that fit query, best first, with the figures
// that explain each. It returns ErrInvalid for an empty query or a bad
// option and ErrNotFound for an unknown pinned or denied tool.
func (r *Router) Select(ctx context.Context, query string, opts habilis.SelectOptions) (*habilis.Decision, error) {
	d, _, err := r.SelectRanked(ctx, query, opts)
	return d, err
}

// SelectRanked is Select that also returns the ranking behind the
// decision (up to K tools, whether or not they pass their gates), from the
// same embedding and the same scan: evaluation measures recall and
// abstention on it.
func (r *Router) SelectRanked(ctx context.Context, query string, opts habilis.SelectOptions) (*habilis.Decision, *Ranking, error) {
	ix, done, err := r.acquire()
	defer done()
	if err != nil {
		return nil, nil, err
	}
	return ix.selectQuery(ctx, query, opts)
}

// selectQuery embeds query and decides on it.
func (ix *index) selectQuery(ctx context.Context, query string, opts habilis.SelectOptions) (*habilis.Decision, *Ranking, error) {
	sel, err := ix.selection(query, opts)
	if err != nil {
		return nil, nil, err
	}
	var q, ql habilis.Vector
	if ix.n() > 0 {
		qs, qls, err := ix.queryVectors(ctx, []string{query})
		if err != nil {
			return nil, nil, err
		}
		q, ql = qs[0], qls[0]
	}
	return ix.decide(ctx, query, q, ql, sel)
}

// QueryBatch is queries embedded together, to be selected or scored one
// at a time: a model embedder sends them as a few batched requests
// instead of one request a query. Their vectors serve as long as the
// catalog's embedders are fitted as they were (always, for a model's
// vectors); a query is embedded again, alone, when they are not.
type QueryBatch struct {
	r        *Router
	texts    []string
	emb, lex habilis.EmbedderInfo // the embedders that made q and ql
	q, ql    []habilis.Vector
}

// EmbedQueries embeds queries for selection with the catalog as it is
// now. It returns ErrInvalid for an empty query.
func (r *Router) EmbedQueries(ctx context.Context, queries []string) (*QueryBatch, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	for i, query := range queries {
		if strings.TrimSpace(query) == "" {
			return nil, fmt.Errorf("query %d: must not be empty: %w", i+1, habilis.ErrInvalid)
		}
	}
	ix, done, err := r.acquire()
	defer done()
	if err != nil {
		return nil, err
	}
	b := &QueryBatch{r: r, texts: queries}
	if ix.n() == 0 || len(queries) == 0 {
		return b, nil
	}
	b.emb, b.lex = ix.infos()
	if b.q, b.ql, err = ix.queryVectors(ctx, queries); err != nil {
		return nil, err
	}
	return b, nil
}

// Len returns how many queries b holds.
func (b *QueryBatch) Len() int { return len(b.texts) }

// SelectRanked is Router.SelectRanked of query i.
func (b *QueryBatch) SelectRanked(ctx context.Context, i int, opts habilis.SelectOptions) (*habilis.Decision, *Ranking, error) {
	ix, done, err := b.r.acquire()
	defer done()
	if err != nil {
		return nil, nil, err
	}
	sel, err := ix.selection(b.texts[i], opts)
	if err != nil {
		return nil, nil, err
	}
	var q, ql habilis.Vector
	if ix.n() > 0 {
		if q, ql, err = b.vectors(ctx, ix, i); err != nil {
			return nil, nil, err
		}
	}
	return ix.decide(ctx, b.texts[i], q, ql, sel)
}

// Scores is Router.Scores of query i.
func (b *QueryBatch) Scores(ctx context.Context, i int) (*Scores, error) {
	ix, done, err := b.r.acquire()
	defer done()
	if err != nil {
		return nil, err
	}
	q, ql, err := b.vectors(ctx, ix, i)
	if err != nil {
		return nil, err
	}
	return ix.scores(q, ql)
}

// vectors returns query i's vectors for ix: the batch's when ix's
// embedders made them, else embedded now.
func (b *QueryBatch) vectors(ctx context.Context, ix *index, i int) (q, ql habilis.Vector, err error) {
	if emb, lex := ix.infos(); b.q != nil && emb == b.emb && lex == b.lex {
		return b.q[i], b.ql[i], nil
	}
	qs, qls, err := ix.queryVectors(ctx, b.texts[i:i+1])
	if err != nil {
		return q, ql, err
	}
	return qs[0], qls[0], nil
}

// Ranking is a selection before the gates: every considered tool with its
// figures, best first. Evaluation reads it to measure recall and
// abstention separately from the decision.
type Ranking struct {
	Matches []habilis.Match
	// Confidence that some tool applies (the best tool's), for abstention.
	Confidence float32
	// gate and threshold are the best tool's gate score and threshold.
	gate, threshold float32
	// pinned holds the pinned tools' matches, scored in the same pass.
	pinned []habilis.Match
	// rival is a tool that collides with the best passing tool and passes
	// its own gate too, or "".
	rival string
}

// selection is a selection's options, checked against the catalog.
type selection struct {
	mode   habilis.Mode
	k      int
	denied map[int]bool
	pinned []int
	opts   habilis.SelectOptions
}

// selection checks query and opts against the catalog.
func (ix *index) selection(query string, opts habilis.SelectOptions) (*selection, error) {
	if strings.TrimSpace(query) == "" {
		return nil, fmt.Errorf("query: must not be empty: %w", habilis.ErrInvalid)
	}
	mode, err := habilis.ParseMode(string(opts.Mode))
	if err != nil {
		return nil, fmt.Errorf("select: %w", err)
	}
	sel := &selection{mode: mode, k: opts.K, denied: make(map[int]bool, len(opts.Denied)), opts: opts}
	if err := CheckK(sel.k); err != nil {
		return nil, err
	}
	if sel.k == 0 {
		sel.k = DefaultK
	}
	for _, n := range opts.Denied {
		i, ok := ix.byName[n]
		if !ok {
			return nil, fmt.Errorf("denied %w", suggest.UnknownTool(n, ix.byName))
		}
		sel.denied[i] = true
	}
	sel.pinned = make([]int, 0, len(opts.Pinned))
	for _, n := range opts.Pinned {
		i, ok := ix.byName[n]
		if !ok {
			return nil, fmt.Errorf("pinned %w", suggest.UnknownTool(n, ix.byName))
		}
		if sel.denied[i] {
			// Pinned tools are always returned and denied ones never.
			return nil, fmt.Errorf("tool %q is both pinned and denied: %w", n, habilis.ErrInvalid)
		}
		sel.pinned = append(sel.pinned, i)
	}
	return sel, nil
}

// decide makes the decision on query, embedded as q (and ql for the
// lexical signal).
func (ix *index) decide(ctx context.Context, query string, q, ql habilis.Vector, sel *selection) (*habilis.Decision, *Ranking, error) {
	d := &habilis.Decision{Query: query, Mode: sel.mode, Matches: []habilis.Match{}, CatalogVersion: ix.meta.Version}
	if ix.n() == 0 {
		d.Abstained, d.Reason = true, "the catalog is empty"
		return d, &Ranking{Matches: []habilis.Match{}}, nil
	}
	var in *intent
	if sel.mode != habilis.ModeCentroid && sel.mode != habilis.ModeDescription {
		in = ix.intentOf(query) // hybrid mode's name bonus alone reads it
	}
	rk, err := ix.rank(ctx, q, ql, ix.contentTerms(query, sel.mode), in, sel.mode, sel.k, sel.denied, sel.pinned)
	if err != nil {
		return nil, nil, err
	}
	var passed []habilis.Match
	for _, m := range rk.Matches {
		if m.Passed {
			passed = append(passed, m)
		}
	}
	switch {
	case len(passed) == 0:
		d.Abstained = true
		d.Reason = abstainReason(rk, len(sel.denied))
	case rk.rival != "":
		// Ambiguity rests on the chosen tool and the tools it collides
		// with, whatever k is: see index.rival.
		d.Ambiguous = true
		d.Reason = fmt.Sprintf("ambiguous: %s and %s both fit and their regions overlap", passed[0].Tool, rk.rival)
	}
	switch {
	case sel.opts.FailOpen:
		// Fail-open hands over the k best whatever their gates say; each
		// match says whether it passed.
		d.Matches = rk.Matches
	case !d.Abstained:
		d.Matches = passed
	}
	if len(d.Matches) > sel.k {
		d.Matches = d.Matches[:sel.k]
	}
	for _, m := range rk.pinned {
		if !slices.ContainsFunc(d.Matches, func(x habilis.Match) bool { return x.Tool == m.Tool }) {
			d.Matches = append(d.Matches, m)
		}
	}
	return d, rk, nil
}

// abstainReason says why a selection that denied the given number of
// tools passed none.
func abstainReason(rk *Ranking, denied int) string {
	if len(rk.Matches) == 0 {
		// rank ranks every tool that is not denied: none ranked means
		// the request denied them all.
		if denied > 0 {
			return "every tool of the catalog is denied"
		}
		return "no tool shares any feature with the query"
	}
	if rk.gate >= rk.threshold {
		// The best tool reached its gate and was refused for sharing
		// no content word with the query (see index.shares).
		return fmt.Sprintf("no tool fits: every candidate fails its gate (best %s shares no word with the request but function words and common operations)", rk.Matches[0].Tool)
	}
	return fmt.Sprintf("no tool fits: every candidate fails its gate (best %s: gate score %.3f < gate %.3f)", rk.Matches[0].Tool, rk.gate, rk.threshold)
}

// rival returns a tool that collides at high severity with the best
// passing tool of rk and passes its own gate too (sig gives a tool's
// signals), or "" when there is none. It looks at the colliding tools
// themselves, not at the top k, so that a decision's ambiguity does not
// depend on how many matches were asked for.
func (ix *index) rival(rk *Ranking, denied map[int]bool, sig func(i int) signals) string {
	for _, m := range rk.Matches {
		if !m.Passed {
			continue
		}
		for _, name := range ix.collides[ix.byName[m.Tool]] {
			j, ok := ix.byName[name]
			if !ok || isDenied(denied, j) {
				continue
			}
			if sig(j).passes() {
				return name
			}
		}
		return ""
	}
	return ""
}

// signals are one tool's raw scores for a query.
type signals struct {
	tool                 int
	cent, desc, doc, ex  float32
	roc                  float32
	fused                float32
	gateScore, threshold float32
	// plain reports a tool that shares no content term with the query
	// (see index.shares and index.phrasedOnly): it fails its gate
	// whatever its scores. It is looked for only in tools whose scores
	// reach their gates.
	plain bool
}

// passes reports whether the tool passes its gate.
func (sg signals) passes() bool { return sg.gateScore >= sg.threshold && !sg.plain }

// queryVectors embeds the queries for the main and the lexical embedder,
// in one call to each.
func (ix *index) queryVectors(ctx context.Context, queries []string) (qs, qls []habilis.Vector, err error) {
	qs, err = ix.emb.Embed(ctx, queries, habilis.Query)
	if err != nil {
		return nil, nil, fmt.Errorf("embed the request: %w", err)
	}
	if len(qs) != len(queries) {
		return nil, nil, fmt.Errorf("embed the request: %d vectors for %d texts: %w", len(qs), len(queries), habilis.ErrUnavailable)
	}
	// A vector of another form than the catalog's scored 0 against every
	// tool, silently: the catalog's meta says what its vectors are.
	if err := checkDim(ix.meta.Embedder, qs); err != nil {
		return nil, nil, fmt.Errorf("embed the request: %w", err)
	}
	switch {
	case ix.lex == nil:
		qls = make([]habilis.Vector, len(queries))
	case ix.sameLex:
		qls = qs
	default:
		if qls, err = ix.lex.Embed(ctx, queries, habilis.Query); err != nil {
			return nil, nil, fmt.Errorf("embed the request lexically: %w", err)
		}
		if len(qls) != len(queries) {
			return nil, nil, fmt.Errorf("embed the request lexically: %d vectors for %d texts: %w", len(qls), len(queries), habilis.ErrUnavailable)
		}
	}
	return qs, qls, nil
}

// signalsOf returns tool i's signals in description and centroid modes,
// ranked by its score in column key of s.sig, with the mode's gate: in
// description mode its description score against its description gate, in
// centroid mode its centroid score against its centroid gate (its
// description score and gate without examples).
func (ix *index) signalsOf(s *scratch, key, i int) signals {
	g := &s.sig[i]
	if ix.sh.lazy(s) {
		g[sigDesc] = ix.sh.descriptionOf(s.q, i)
		if ix.tools[i].examples == 0 {
			g[sigCent] = g[sigDesc]
		}
	}
	sg := signals{tool: i, cent: g[sigCent], desc: g[sigDesc], fused: g[key]}
	switch {
	case key == sigDesc:
		// Description mode gates every tool on its description.
		sg.gateScore, sg.threshold = sg.desc, ix.descriptionGate(i)
	case ix.tools[i].examples > 0:
		sg.gateScore, sg.threshold = sg.cent, ix.centroidGate(i)
	default:
		sg.gateScore, sg.threshold = sg.desc, ix.descriptionGate(i)
	}
	sg.plain = sg.gateScore >= sg.threshold && ix.phrasedOnly(sg, s.content)
	return sg
}

// rank scores every tool for the query embedded as q and ql and returns
// the best k (denied tools excluded).
func (ix *index) rank(ctx context.Context, q, ql habilis.Vector, content *content, in *intent, mode habilis.Mode, k int, denied map[int]bool, pinned []int) (*Ranking, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("select: %w", err)
	}
	k = min(k, ix.n())
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	s.size(len(ix.tools))
	s.content = content
	s.intent = in
	s.centroidOnly, s.q = mode == habilis.ModeCentroid, q
	if err := ix.scoreAll(q, ql, s); err != nil {
		return nil, err
	}
	var key int
	switch mode {
	case habilis.ModeDescription:
		key = sigDesc
	case habilis.ModeCentroid:
		key = sigCent
	default:
		rk := ix.hybrid(q, ql, s, k, denied)
		if len(rk.Matches) > 0 {
			w := float64(genericWeightBare)
			if ix.tools[ix.byName[rk.Matches[0].Tool]].examples > 0 {
				w = genericWeightExamples
			}
			rk.Confidence = noToolConfidence(rk.Confidence, ix.nearestGeneric(ql), w)
		}
		for _, i := range pinned {
			m := ix.hybridMatch(ix.hybridSignals(s, i))
			m.Pinned = true
			rk.pinned = append(rk.pinned, m)
		}
		rk.rival = ix.rival(rk, denied, func(i int) signals { return ix.hybridSignals(s, i) })
		return rk, nil
	}
	best := newTopK(k, ix.place)
	for i := range s.sig {
		if !isDenied(denied, i) && !ix.gone(i) {
			best.offer(i, s.sig[i][key])
		}
	}
	top := best.indexes()
	rk := &Ranking{Matches: make([]habilis.Match, 0, len(top))}
	for _, i := range top {
		sg := ix.signalsOf(s, key, i)
		rk.Matches = append(rk.Matches, ix.explain(sg))
		if len(rk.Matches) == 1 {
			rk.gate, rk.threshold = sg.gateScore, sg.threshold
		}
	}
	for _, i := range pinned {
		m := ix.explain(ix.signalsOf(s, key, i))
		m.Pinned = true
		rk.pinned = append(rk.pinned, m)
	}
	rk.rival = ix.rival(rk, denied, func(i int) signals { return ix.signalsOf(s, key, i) })
	if len(rk.Matches) > 0 {
		best := rk.Matches[0]
		if mode == habilis.ModeCentroid {
			rk.Confidence = best.Confidence
		} else {
			rk.Confidence = best.Score
		}
	}
	return rk, nil
}

// hybrid ranks by a fusion of z-scores (each signal standardised over the
// catalog, so that no signal dominates by its scale): the Rocchio score
// (examples' centroid with the description weighed as descriptionWeight
// examples), the description, the whole-document lexical score and, when
// weighted, the nearest example, plus any prior learned from labelled
// traffic. The nearest example, the costliest, is scored only for the
// candidates the others put near the top. The gate is on the tool's
// evidence (see index.evidence and hybridSignals), not on the fused score,
// which says which tool fits best but not whether any does.
func (ix *index) hybrid(q, ql habilis.Vector, s *scratch, k int, denied map[int]bool) *Ranking {
	w := ix.cal.Weights
	// One pass adds each tool's Rocchio score and gathers the moments
	// the signals are standardised by; a second fuses and keeps the best.
	var roc, desc, doc moments
	for i := range s.sig {
		g := &s.sig[i]
		g[sigRoc] = ix.rocchio(i, g[sigCent], g[sigDesc])
		if ix.gone(i) {
			continue
		}
		roc.add(g[sigRoc])
		desc.add(g[sigDesc])
		doc.add(g[sigDoc])
	}
	f := newFusion(w, ix.prior, roc, desc, doc)
	pool := k
	if w.Example != 0 {
		pool = max(2*k, 16)
	}
	if ix.namer() != nil {
		pool = max(pool, namePool)
	}
	best := newTopK(min(pool, ix.n()), ix.place)
	for i := range s.sig {
		g := &s.sig[i]
		s.fused[i] = f.at(i, g[sigRoc], g[sigDesc], g[sigDoc])
		if !isDenied(denied, i) && !ix.gone(i) {
			best.offer(i, s.fused[i])
		}
	}
	top := best.indexes()
	sgs := make([]signals, len(top))
	for j, i := range top {
		sgs[j] = ix.hybridSignals(s, i)
	}
	ix.nameBonus(sgs, ql, s.intent)
	if w.Example != 0 {
		exs := make([]float32, len(sgs))
		for j := range sgs {
			i := sgs[j].tool
			if ix.tools[i].examples > 0 {
				sgs[j].ex = ix.nearestExample(i, q)
			} else {
				sgs[j].ex = sgs[j].desc
			}
			exs[j] = sgs[j].ex
		}
		em, esd := momentsOf(exs).meanStd()
		for j := range sgs {
			sgs[j].fused += w.Example * z(sgs[j].ex, em, esd)
		}
		slices.SortStableFunc(sgs, func(a, b signals) int { return cmp.Compare(b.fused, a.fused) })
	}
	if len(sgs) > k {
		sgs = sgs[:k]
	}
	rk := &Ranking{Matches: make([]habilis.Match, len(sgs))}
	for j, sg := range sgs {
		rk.Matches[j] = ix.hybridMatch(sg)
	}
	if len(rk.Matches) > 0 {
		rk.Confidence = rk.Matches[0].Confidence
		rk.gate, rk.threshold = sgs[0].gateScore, sgs[0].threshold
		if c, ok := ix.backgroundConfidence(sgs); ok {
			rk.Confidence = c
		}
	}
	return rk
}

// backgroundConfidence returns the confidence that some tool applies from
// how far the ranked tools' evidence stands above the background's: the
// largest of their background z-scores, through a logistic that is one
// half at the gates' z. It applies when the best tool has examples and a
// Background; ok is false otherwise. It is used where it separates
// no-tool queries better than the best tool's calibrated confidence, for
// tools with examples; tools without keep the latter (docs/quality.md,
// the no-tool confidence).
func (ix *index) backgroundConfidence(sgs []signals) (float32, bool) {
	if len(sgs) == 0 || ix.background == nil || ix.tools[sgs[0].tool].examples == 0 {
		return 0, false
	}
	best, ok := float32(math.Inf(-1)), false
	for _, sg := range sgs {
		i := sg.tool
		if !ix.hasBackground[i] || ix.tools[i].examples == 0 {
			continue
		}
		b := ix.background[i]
		best, ok = max(best, b.z(bgEvidence, sg.gateScore)), true
	}
	if !ok {
		return 0, false
	}
	x := float64(best - backgroundZ(ix.n(), exampleShare))
	return float32(1 / (1 + math.Exp(-x))), true
}

// fuse writes hybrid mode's fused score of every tool into out (see
// fusion).
func fuse(w Weights, prior, roc, desc, doc, out []float32) {
	f := newFusion(w, prior, momentsOf(roc), momentsOf(desc), momentsOf(doc))
	for i := range out {
		out[i] = f.at(i, roc[i], desc[i], doc[i])
	}
}

// fusion is hybrid mode's fused score: the weighted sum of each signal's
// z-score over the catalog (so that no signal dominates by its scale) plus
// the tool's prior, if any.
type fusion struct {
	w                         Weights
	prior                     []float32
	rm, rsd, dm, dsd, lm, lsd float32 // Rocchio, description and document means and deviations
}

// newFusion returns the fusion under weights w and prior (nil for none)
// of signals with the moments roc, desc and doc over the catalog.
func newFusion(w Weights, prior []float32, roc, desc, doc moments) fusion {
	f := fusion{w: w, prior: prior}
	f.rm, f.rsd = roc.meanStd()
	f.dm, f.dsd = desc.meanStd()
	f.lm, f.lsd = doc.meanStd()
	return f
}

// at returns the fused score of tool i with the signals roc, desc and doc.
func (f *fusion) at(i int, roc, desc, doc float32) float32 {
	s := f.w.Centroid*z(roc, f.rm, f.rsd) + f.w.Description*z(desc, f.dm, f.dsd) + f.w.Document*z(doc, f.lm, f.lsd)
	if f.prior != nil {
		s += f.prior[i]
	}
	return s
}

// Scores are one query's raw signals for every tool of the catalog, in the
// order of Tools: what fit tunes hybrid mode on.
type Scores struct {
	Tools []string
	// Centroid, Description, Document and Rocchio are the signals; for a
	// tool without examples Centroid and Rocchio hold its description
	// score.
	Centroid, Description, Document, Rocchio []float32
	// Evidence is hybrid mode's gate score of each tool with examples,
	// compared with Calibration.HybridThreshold.
	Evidence []float32
	// Gate is each tool's centroid-mode gate score minus its radius (0 for
	// tools without one); HasRadius says which tools have one.
	Gate      []float32
	HasRadius []bool
	// HasExamples says which tools have examples.
	HasExamples []bool
}

// Fused returns the hybrid fusion of s under weights w and the per-tool
// prior (by name; missing tools have none), as selection computes it.
func (s *Scores) Fused(w Weights, prior map[string]float32) []float32 {
	var p []float32
	if len(prior) > 0 {
		p = make([]float32, len(s.Tools))
		for i, n := range s.Tools {
			p[i] = prior[n]
		}
	}
	out := make([]float32, len(s.Tools))
	fuse(w, p, s.Rocchio, s.Description, s.Document, out)
	return out
}

// Scores returns the raw signals of query for every tool.
func (r *Router) Scores(ctx context.Context, query string) (*Scores, error) {
	ix, done, err := r.acquire()
	defer done()
	if err != nil {
		return nil, err
	}
	qs, qls, err := ix.queryVectors(ctx, []string{query})
	if err != nil {
		return nil, err
	}
	return ix.scores(qs[0], qls[0])
}

// scores returns the raw signals of the query embedded as q and ql.
func (ix *index) scores(q, ql habilis.Vector) (*Scores, error) {
	n := ix.n()
	sc := &Scores{Tools: make([]string, n), Centroid: make([]float32, n), Description: make([]float32, n),
		Document: make([]float32, n), Rocchio: make([]float32, n), Evidence: make([]float32, n), Gate: make([]float32, n),
		HasRadius: make([]bool, n), HasExamples: make([]bool, n)}
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	s.size(len(ix.tools))
	s.centroidOnly = false // every signal, whatever a selection left
	if err := ix.scoreAll(q, ql, s); err != nil {
		return nil, err
	}
	sig := s.sig
	for j, r := range ix.sorted() {
		i := int(r)
		t := &ix.tools[i]
		sc.Centroid[j], sc.Description[j], sc.Document[j] = sig[i][sigCent], sig[i][sigDesc], sig[i][sigDoc]
		sc.Tools[j] = t.name
		sc.HasExamples[j] = t.examples > 0
		sc.Rocchio[j] = ix.rocchio(i, sc.Centroid[j], sc.Description[j])
		sc.Evidence[j] = ix.evidence(sc.Rocchio[j], sc.Document[j])
		if t.hasRadius {
			sc.HasRadius[j] = true
			sc.Gate[j] = sc.Centroid[j] - t.radius
		}
	}
	return sc, nil
}

// hybridMatch explains a tool's hybrid signals, with the calibrated
// confidence that it applies.
func (ix *index) hybridMatch(sg signals) habilis.Match {
	m := ix.explain(sg)
	m.Confidence = ix.cal.Confidence.Apply(sg.gateScore - sg.threshold)
	return m
}

// hybridSignals returns tool i's hybrid signals with its hybrid gate: its
// evidence (see index.evidence) against its hybrid gate, or, for a tool
// without examples, what bareGate says.
func (ix *index) hybridSignals(s *scratch, i int) signals {
	g := &s.sig[i]
	sg := signals{tool: i, cent: g[sigCent], desc: g[sigDesc], doc: g[sigDoc], roc: g[sigRoc], fused: s.fused[i]}
	n := ix.tools[i].examples
	if n == 0 {
		sg.gateScore, sg.threshold = ix.bareGate(i, sg)
	} else {
		sg.gateScore, sg.threshold = ix.evidence(sg.roc, sg.doc), ix.hybridGate(i)
	}
	// Examples too few to calibrate on never make a tool refuse what it
	// would take without them (docs/quality.md, a few examples).
	if n > 0 && n < MinHeldOutExamples && sg.gateScore < sg.threshold {
		if score, gate := ix.bareGate(i, sg); score >= gate {
			sg.gateScore, sg.threshold = score, gate
		}
	}
	sg.plain = sg.gateScore >= sg.threshold && ix.phrasedOnly(sg, s.content)
	return sg
}

// explain turns signals into a Match.
func (ix *index) explain(sg signals) habilis.Match {
	t := &ix.tools[sg.tool]
	_, radius, src := ix.gate(sg.tool)
	cent := sg.cent
	if t.examples == 0 {
		cent = 0
	}
	m := habilis.Match{
		Tool:             t.name,
		Score:            sg.fused,
		CentroidScore:    cent,
		DescriptionScore: sg.desc,
		ExampleScore:     sg.ex,
		Radius:           radius,
		RadiusSource:     src,
		Margin:           t.margin,
		Passed:           sg.passes(),
		Gate:             sg.threshold,
		GateScore:        sg.gateScore,
		Confidence:       clamp01(0.5 + (sg.gateScore - sg.threshold)),
		CollidesWith:     nonNil(ix.collides[sg.tool]),
	}
	return m
}

// moments accumulates the mean and standard deviation of a series one
// value at a time.
type moments struct {
	n     int
	s, ss float64
}

func (m *moments) add(x float32) {
	m.n++
	m.s += float64(x)
	m.ss += float64(x) * float64(x)
}

// meanStd returns the series' mean and standard deviation, with a
// deviation of 1 for an empty or constant series.
func (m moments) meanStd() (mean, std float32) {
	if m.n == 0 {
		return 0, 1
	}
	mu := m.s / float64(m.n)
	v := m.ss/float64(m.n) - mu*mu
	if v <= 1e-12 {
		return float32(mu), 1
	}
	return float32(mu), float32(math.Sqrt(v))
}

// spread returns the series' standard deviation, and false when it has
// fewer than two values or does not vary.
func (m moments) spread() (float64, bool) {
	if m.n < 2 {
		return 0, false
	}
	mu := m.s / float64(m.n)
	v := m.ss/float64(m.n) - mu*mu
	if v <= 1e-12 {
		return 0, false
	}
	return math.Sqrt(v), true
}

// merge adds o's series to m's.
func (m *moments) merge(o moments) {
	m.n += o.n
	m.s += o.s
	m.ss += o.ss
}

func momentsOf(xs []float32) moments {
	var m moments
	for _, x := range xs {
		m.add(x)
	}
	return m
}

func z(x, mean, std float32) float32 { return (x - mean) / std }

// isDenied reports whether tool i is denied, cheaply when none is.
func isDenied(denied map[int]bool, i int) bool { return len(denied) > 0 && denied[i] }

// topK keeps the k best of the scores offered to it: the largest, ties
// going to the lower index (or the lower rank, when ranks are given), so
// that results are deterministic.
type topK struct {
	k    int
	heap []scored // a min-heap: the worst kept is at the root
	// rank, when set, orders the indexes for ties: a patched index's
	// rows by name, as an index built whole holds them.
	rank []int32
}

// scored is a tool's index and score.
type scored struct {
	i     int
	score float32
}

// worse reports whether a ranks below b.
func (t *topK) worse(a, b scored) bool {
	return a.score < b.score || (a.score == b.score && t.tie(a.i, b.i) > 0)
}

// tie compares indexes i and j of equal scores: negative when i goes
// first.
func (t *topK) tie(i, j int) int {
	if t.rank != nil {
		return cmp.Compare(t.rank[i], t.rank[j])
	}
	return cmp.Compare(i, j)
}

// newTopK returns a topK of k, ties ordered by rank (nil: by index).
func newTopK(k int, rank []int32) *topK {
	return &topK{k: k, heap: make([]scored, 0, max(k, 0)), rank: rank}
}

// offer considers tool i with score.
func (t *topK) offer(i int, score float32) {
	x := scored{i, score}
	h := t.heap
	if len(h) < t.k {
		// Sift x up from the end.
		j := len(h)
		h = append(h, x)
		for j > 0 {
			p := (j - 1) / 2
			if !t.worse(h[j], h[p]) {
				break
			}
			h[j], h[p] = h[p], h[j]
			j = p
		}
		t.heap = h
		return
	}
	if len(h) == 0 || !t.worse(h[0], x) {
		return
	}
	// Replace the root and sift it down.
	h[0] = x
	for j := 0; ; {
		c := 2*j + 1
		if c >= len(h) {
			break
		}
		if r := c + 1; r < len(h) && t.worse(h[r], h[c]) {
			c = r
		}
		if !t.worse(h[c], h[j]) {
			break
		}
		h[j], h[c] = h[c], h[j]
		j = c
	}
}

// indexes returns the indexes kept, best first.
func (t *topK) indexes() []int {
	slices.SortFunc(t.heap, func(a, b scored) int {
		return cmp.Or(cmp.Compare(b.score, a.score), t.tie(a.i, b.i))
	})
	idx := make([]int, len(t.heap))
	for j, x := range t.heap {
		idx[j] = x.i
	}
	return idx
}
