package selector

import (
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/par"
	"github.com/habilis-router/habilis/internal/vec"
)

// index is an immutable, in-memory view of one catalog version: everything
// selection reads. A write builds a new index and swaps it in whole, so a
// reader sees either the old catalog or the new one, never a mix.
type index struct {
	meta      habilis.CatalogMeta
	cal       Calibration
	embedders // fitted for this catalog

	tools  []toolInfo // sorted by name
	byName map[string]int
	// bare lists the tools without examples, so that a selection need not
	// look at every tool to find them.
	bare []int32

	// sh scores a query against every tool and holds the Rocchio norms.
	sh *shared
	// Example vectors for nearest-example scoring of candidates: tool i owns
	// rows exStart[i]:exStart[i+1], in exSlab (dense) or exSparse.
	exStart  []int32
	exSlab   *vec.Slab
	exSparse []habilis.Vector

	collides [][]string // per tool, sorted

	// prior is the calibration's per-tool prior by index, or nil.
	prior []float32
	// background and hasBackground are each tool's Background, by index.
	background    []Background
	hasBackground []bool

	// defs gives the tools' definitions.
	defs toolDefs
	// stored reports an index read from the store's layout; pin, when
	// set, keeps the memory it reads in place alive (see Router.acquire).
	stored bool
	pin    *pin
	// full is the whole calibration of a stored index, whose cal lacks
	// the per-tool maps (held by index above), decoded when asked for.
	fullOnce sync.Once
	full     Calibration
	// generic scores requests against the background requests, for the
	// no-tool confidence.
	generic *genericSpace
	// bg holds each tool's background gates (Background.Gates) by index;
	// a tool the calibration has no Background for (a store written
	// before there was one) has none, -Inf, and so have the description
	// and centroid gates with a model embedder (setBackground).
	bg [][3]float32

	// A patched index (patch.go) is a stored index's rows followed by its
	// patch's: base is the index patched (nil for an index not patched),
	// dead marks the rows of tools
	// the patch deleted or replaced (nil when none is), live counts the
	// others and order lists them by name (nil when the rows are in name
	// order, none dead).
	base  *index
	dead  []bool
	live  int
	order []int32
	// place is each live row's place in order, for ties (topK.rank).
	place []int32
	// baseVersion is the catalog version base was stored at.
	baseVersion uint64
}

// n returns the number of tools in the catalog.
func (ix *index) n() int {
	if ix.dead == nil {
		return len(ix.tools)
	}
	return ix.live
}

// gone reports whether row i is a tool the catalog no longer holds.
func (ix *index) gone(i int) bool { return ix.dead != nil && ix.dead[i] }

// sorted returns the rows of the catalog's tools in name order.
func (ix *index) sorted() []int32 {
	if ix.order != nil {
		return ix.order
	}
	rows := make([]int32, len(ix.tools))
	for i := range rows {
		rows[i] = int32(i)
	}
	return rows
}

// rocchio returns tool i's Rocchio score from its centroid and description
// scores.
func (ix *index) rocchio(i int, cent, desc float32) float32 {
	return rocchioScore(ix.sh.sumNorm[i], ix.sh.rocchioNorm[i], cent, desc)
}

// evidence returns hybrid mode's gate score of a tool from its Rocchio
// and document scores (see weighed): their mean with the lexical
// embedder, weighed by the calibration's DocumentWeight with a model
// embedder.
func (ix *index) evidence(roc, doc float32) float32 {
	if ix.sameLex {
		return weighed(roc, doc, 1)
	}
	return weighed(roc, doc, ix.cal.DocumentWeight)
}

// toolInfo is what selection reads of a tool: its name, how many
// examples it has, and its gate.
type toolInfo struct {
	name      string
	examples  int
	radius    float32
	hasRadius bool
	margin    float32
}

// gate returns tool i's centroid-mode gate (see centroidGate), its radius
// and where the radius comes from.
func (ix *index) gate(i int) (threshold, radius float32, source string) {
	t := &ix.tools[i]
	switch {
	case t.hasRadius:
		return ix.centroidGate(i), t.radius, "examples"
	case t.examples == 1:
		return ix.centroidGate(i), ix.cal.Threshold + t.margin, "catalog"
	default:
		return ix.centroidGate(i), ix.cal.DescriptionThreshold + t.margin, "catalog"
	}
}

// centroidGate is tool i's gate in centroid mode, on its centroid score:
// radius − margin raised to the noise floor for a tool with two examples
// or more, the catalog's one-example threshold for a tool with one, and
// its description gate for a tool with none.
func (ix *index) centroidGate(i int) float32 {
	t := &ix.tools[i]
	switch {
	case t.hasRadius:
		return max(t.radius-t.margin, ix.cal.NoiseFloor, ix.bg[i][bgCentroid])
	case t.examples == 1:
		return max(ix.cal.Threshold, ix.bg[i][bgCentroid])
	}
	return ix.descriptionGate(i)
}

// descriptionGate is tool i's gate on its description score: in
// description mode for every tool, in the other modes for tools without
// examples (bareDescriptionGate).
func (ix *index) descriptionGate(i int) float32 {
	if ix.tools[i].examples == 0 {
		return ix.bareDescriptionGate(i)
	}
	return max(ix.cal.DescriptionThreshold, ix.bg[i][bgDescription])
}

// bareDescriptionGate is the description gate tool i has, or would have,
// without examples: the background's, where the background sets one (the
// lexical embedder; see setBackground), else the calibrated description
// threshold. That threshold is what examples held out of their tools
// score at their own descriptions, which they often paraphrase: it says
// how requests for those tools read, not how requests for a tool without
// examples do. It had raised every bare tool's gate once a few tools had
// an example: on the MCP catalogs with one example for three tools,
// reported part, decisions 53.6 % at 36.4 % wrong abstentions, 66.3 % at
// 6.2 % with this gate and 67.5 % at 6.2 % without the examples
// (docs/quality.md, a few examples).
func (ix *index) bareDescriptionGate(i int) float32 {
	if bg := ix.bg[i][bgDescription]; !math.IsInf(float64(bg), -1) {
		return bg
	}
	return ix.cal.DescriptionThreshold
}

// MinHeldOutExamples is the fewest examples a tool needs for calibration
// to hold them out one at a time. A tool with fewer examples adds nothing
// to the hybrid gate or the margin, and hybrid mode lets through what it
// would let through without them (index.bareGate, hybridSignals). Its
// examples still count toward the description threshold and the noise
// floor, which need no example held out (calibrate); with the lexical
// embedder neither gates a tool without examples.
const MinHeldOutExamples = 3

// bareGate returns the score and gate hybrid mode would gate tool i on
// had it no examples, its signals being sg: its evidence when
// bareEvidence, its description score otherwise, against bareThreshold.
func (ix *index) bareGate(i int, sg signals) (score, gate float32) {
	if ix.bareEvidence(i) {
		return ix.evidence(sg.roc, sg.doc), ix.bareThreshold(i)
	}
	return sg.desc, ix.bareThreshold(i)
}

// bareScore names the score of bareGate.
func (ix *index) bareScore(i int) string {
	if ix.bareEvidence(i) {
		return "evidence"
	}
	return "description score"
}

// gateScores names the score tool i's gate is on in each mode, as
// selection gates it (centroidGate, hybridSignals).
func (ix *index) gateScores(i int) map[habilis.Mode]string {
	scores := map[habilis.Mode]string{habilis.ModeDescription: "description score", habilis.ModeCentroid: "centroid score", habilis.ModeHybrid: "evidence"}
	if ix.tools[i].examples == 0 {
		scores[habilis.ModeCentroid], scores[habilis.ModeHybrid] = "description score", ix.bareScore(i)
	}
	return scores
}

// bareThreshold is the gate of bareGate: the background's on the evidence
// at the description share when bareEvidence, bareDescriptionGate
// otherwise.
func (ix *index) bareThreshold(i int) float32 {
	switch {
	case ix.bareEvidence(i) && ix.tools[i].examples == 0:
		return ix.hybridGate(i)
	case ix.bareEvidence(i):
		return ix.background[i].bareEvidenceGate(ix.n())
	}
	return ix.bareDescriptionGate(i)
}

// hybridGate is tool i's gate in hybrid mode, on its evidence, for a tool
// with examples or one that bareEvidence gates there; a tool without
// examples has only the background's gate.
func (ix *index) hybridGate(i int) float32 {
	if ix.tools[i].examples == 0 {
		return ix.bg[i][bgEvidence]
	}
	return max(ix.cal.HybridThreshold, ix.bg[i][bgEvidence])
}

// bareEvidence reports that hybrid mode gates tool i, which has no
// examples, on its evidence (its description score weighed with its
// lexical document's, see weighed) rather than on its description score
// alone: with a model embedder whose calibration weighs the document
// (DocumentWeight) and a Background at the tool. The description-only
// catalogs of the development sets decide better so than on either score
// alone (docs/models.md).
func (ix *index) bareEvidence(i int) bool {
	return !ix.sameLex && ix.cal.DocumentWeight > 0 && ix.hasBackground != nil && ix.hasBackground[i]
}

// shared is what both calibration and the index compute over a catalog's
// records, so that a write computes it once: per tool the Rocchio norms
// (rocchioNorms), and the spaces a query is scored in: tri, the merged
// space of the three signals, when the lexical embedder is the only one,
// else one space per signal.
type shared struct {
	sumNorm, rocchioNorm []float32
	tri                  *triSpace
	cent, desc, doc      *space
	// patch, in a patched index, scores the rows after those of the
	// spaces above (its norms are in sumNorm and rocchioNorm already).
	patch *shared
}

// rows returns how many rows sh's own spaces score.
func (sh *shared) rows() int {
	if sh.tri != nil {
		return sh.tri.rows
	}
	return sh.cent.rows
}

// newShared computes shared over recs (vectors of dimension dim, 0 for
// sparse ones), with a merged space when merged is set. The spaces are
// built on one goroutine while the norms are computed on the others.
func newShared(recs []habilis.Record, dim int, merged bool) *shared {
	return newSharedSums(recs, dim, merged, nil)
}

// newSharedSums is newShared given, when not nil, each record's sum of
// its examples' dot products with its centroid (shapeSum), which the
// Rocchio norms then need not compute again.
func newSharedSums(recs []habilis.Record, dim int, merged bool, sums []float32) *shared {
	sh := &shared{sumNorm: make([]float32, len(recs)), rocchioNorm: make([]float32, len(recs))}
	var wg sync.WaitGroup
	wg.Go(func() {
		if merged {
			sh.tri = newTriSpace(columns(recs))
			return
		}
		cents, descs, docs := columns(recs)
		sh.cent, sh.desc, sh.doc = newSpace(cents, dim), newSpace(descs, dim), newSpace(docs, 0)
	})
	par.For(len(recs), func(_, i int) {
		switch r := &recs[i]; {
		case sums == nil:
			sh.sumNorm[i], sh.rocchioNorm[i] = rocchioNorms(r)
		case !r.Centroid.IsZero():
			sh.sumNorm[i], sh.rocchioNorm[i] = rocchioFrom(r, sums[i])
		}
	})
	wg.Wait()
	return sh
}

// scoreAll writes the query's score against every tool's centroid,
// description and document into s.sig[i][sigCent], s.sig[i][sigDesc] and
// s.sig[i][sigDoc], for every tool i (q is the main embedder's vector, ql
// the lexical one's), with s's other buffers as working space.
//
// It returns false when a stored index's postings are damaged.
func (sh *shared) scoreAll(q, ql habilis.Vector, s *scratch) bool {
	if sh.patch == nil {
		return sh.scoreRows(q, ql, s, s.sig)
	}
	n := sh.rows()
	ok := sh.scoreRows(q, ql, s, s.sig[:n])
	return sh.patch.scoreRows(q, ql, s, s.sig[n:]) && ok
}

// scoreRows is scoreAll over sh's own spaces, into sig. With s.centroidOnly
// and dense spaces it scores the centroids alone (see centroidOnly, and
// lazy, which says so to the readers of the scores: over sparse spaces
// of their own it scores them all).
func (sh *shared) scoreRows(q, ql habilis.Vector, s *scratch, sig [][4]float32) bool {
	if sh.tri != nil {
		var ok bool
		s.runs, ok = sh.tri.accumulate(q, sig, s.runs)
		return ok
	}
	col := s.col[:len(sig)]
	ok := sh.cent.scoreColumn(q, col, sig, sigCent)
	if sh.lazy(s) {
		return ok
	}
	ok = sh.desc.scoreColumn(q, col, sig, sigDesc) && ok
	return sh.doc.scoreColumn(ql, col, sig, sigDoc) && ok
}

// lazy reports whether scoreAll leaves the description and document
// scores unscored under s: centroid mode over dense spaces.
func (sh *shared) lazy(s *scratch) bool {
	return s.centroidOnly && sh.tri == nil && sh.desc != nil && sh.desc.dense != nil
}

// descriptionOf returns tool i's description score for q, as scoreAll
// writes it, for dense spaces.
func (sh *shared) descriptionOf(q habilis.Vector, i int) float32 {
	if n := sh.rows(); i >= n && sh.patch != nil {
		sh, i = sh.patch, i-n
	}
	return sh.desc.scoreRow(q, i)
}

// embedders are the embedders fitted to one catalog.
type embedders struct {
	emb habilis.Embedder
	lex habilis.Embedder // the lexical signal's, or nil
	// sameLex reports that emb is the lexical embedder, so one query
	// embedding serves both.
	sameLex bool
}

// infos returns the Info of the main and the lexical embedder (zero
// without one): what the vectors of a query depend on.
func (e embedders) infos() (emb, lex habilis.EmbedderInfo) {
	if e.lex != nil {
		lex = e.lex.Info()
	}
	return e.emb.Info(), lex
}

// merged reports whether a catalog of vectors of dimension dim (0 for
// sparse ones) is scored in one merged space: when the lexical embedder is
// the only one.
func (e embedders) merged(dim int) bool { return dim == 0 && e.sameLex }

// buildIndex makes an index from records that carry their vectors. It
// keeps each vector once: dense vectors move into slabs, sparse ones into
// inverted indexes, and the records' own copies are not retained.
//
// sh, when not nil, is newShared of recs sorted by name, computed already
// for calibration (with a merged space when emb.merged); it is used as is.
func buildIndex(meta habilis.CatalogMeta, cal Calibration, emb embedders, recs []habilis.Record, sh *shared) (*index, error) {
	sort.Slice(recs, func(i, j int) bool { return recs[i].Tool.Name < recs[j].Tool.Name })
	ix := &index{meta: meta, cal: cal, embedders: emb, byName: make(map[string]int, len(recs)), generic: new(genericSpace)}
	dim := meta.Embedder.Dim
	ix.tools = make([]toolInfo, len(recs))
	defs := make(heapDefs, len(recs))
	ix.defs = defs
	for i := range recs {
		r := &recs[i]
		if _, dup := ix.byName[r.Tool.Name]; dup {
			return nil, fmt.Errorf("index: duplicate tool %q: %w", r.Tool.Name, habilis.ErrInvalid)
		}
		ix.byName[r.Tool.Name] = i
		ix.tools[i] = toolInfo{name: r.Tool.Name, examples: len(r.Tool.Examples), radius: r.Radius, hasRadius: r.HasRadius, margin: r.Margin}
		defs[i] = toolDef{Tool: r.Tool, Hash: r.Hash, RadiusExample: r.RadiusExample}
		if len(r.Tool.Examples) == 0 {
			ix.bare = append(ix.bare, int32(i))
		}
	}
	if cal.Weights.Example != 0 {
		// Selection reads the example vectors only to weight the nearest
		// example; without that weight they stay in the store.
		if err := ix.keepExamples(recs, dim); err != nil {
			return nil, err
		}
	}
	if sh == nil {
		sh = newShared(recs, dim, emb.merged(dim))
	}
	ix.sh = sh
	if len(cal.Prior) > 0 {
		ix.prior = make([]float32, len(recs))
		for i := range recs {
			ix.prior[i] = cal.Prior[recs[i].Tool.Name]
		}
	}
	ix.setBackground(cal.Background)
	ix.collides = make([][]string, len(recs))
	for i := range recs {
		ix.collides[i] = cal.Collides[recs[i].Tool.Name]
	}
	return ix, nil
}

// calibration returns the calibration in force, per-tool maps included.
func (ix *index) calibration() Calibration {
	if !ix.stored {
		return ix.cal
	}
	ix.fullOnce.Do(func() {
		c, err := decodeCalibration(ix.meta.Calibration)
		if err != nil {
			c = ix.cal
		}
		ix.full = c
	})
	return ix.full
}

// keepExamples copies the records' example vectors into the index, for
// nearestExample. Sparse ones are copied into two arrays of their own:
// the records' vectors may share the store's decoding slabs with the
// centroids and descriptions, which the spaces copy, and keeping one
// example would keep those slabs whole.
func (ix *index) keepExamples(recs []habilis.Record, dim int) error {
	ix.exStart = make([]int32, len(recs)+1)
	nEx, nnz := 0, 0
	for i := range recs {
		nEx += len(recs[i].ExampleVectors)
		for _, v := range recs[i].ExampleVectors {
			nnz += len(v.Indices)
		}
	}
	var exIdx []uint32
	var exVal []float32
	if dim > 0 {
		ix.exSlab = vec.NewSlab(dim, nEx)
	} else {
		ix.exSparse = make([]habilis.Vector, 0, nEx)
		exIdx, exVal = make([]uint32, 0, nnz), make([]float32, 0, nnz)
	}
	for i := range recs {
		r := &recs[i]
		for _, v := range r.ExampleVectors {
			switch {
			case dim > 0 && len(v.Dense) != dim:
				return fmt.Errorf("index: tool %q: example vector of dimension %d, want %d: %w", r.Tool.Name, len(v.Dense), dim, habilis.ErrEmbedderMismatch)
			case dim > 0:
				ix.exSlab.Append(v.Dense)
			case len(v.Indices) == 0:
				ix.exSparse = append(ix.exSparse, habilis.Vector{})
			default:
				lo := len(exIdx)
				exIdx, exVal = append(exIdx, v.Indices...), append(exVal, v.Values...)
				ix.exSparse = append(ix.exSparse, habilis.Vector{Indices: exIdx[lo:len(exIdx):len(exIdx)], Values: exVal[lo:len(exVal):len(exVal)]})
			}
		}
		ix.exStart[i+1] = ix.exStart[i] + int32(len(r.ExampleVectors))
	}
	return nil
}

// setBackground sets each tool's Background and background gates from
// bs, by name.
func (ix *index) setBackground(bs map[string]Background) {
	n := ix.n()
	ix.bg = make([][3]float32, n)
	if len(bs) > 0 {
		ix.background, ix.hasBackground = make([]Background, n), make([]bool, n)
	}
	inf := float32(math.Inf(-1))
	for i := range ix.tools {
		b, ok := bs[ix.tools[i].name]
		if !ok {
			ix.bg[i] = [3]float32{inf, inf, inf}
			continue
		}
		ix.background[i], ix.hasBackground[i] = b, true
		ix.bg[i] = b.Gates(n)
		if ix.tools[i].examples == 0 {
			ix.bg[i][bgEvidence] = b.bareEvidenceGate(n)
		}
		if !ix.sameLex {
			// The description and centroid gates' rule was measured on
			// the lexical embedder's scores only. With a model, a
			// cosine's band is narrow enough that mean + z deviations
			// can pass the scores of a tool's own requests, so those
			// modes keep the gates calibrated from the examples; hybrid
			// mode's evidence was measured (docs/models.md).
			ix.bg[i][bgDescription], ix.bg[i][bgCentroid] = inf, inf
		}
	}
}

// scoreAll is shared.scoreAll, but for tools without examples, which have
// no centroid: their centroid score is their description score, so that
// their gate and their centroid-mode rank use it.
func (ix *index) scoreAll(q, ql habilis.Vector, s *scratch) error {
	if !ix.sh.scoreAll(q, ql, s) {
		return errDamaged
	}
	lazy := ix.sh.lazy(s)
	for _, i := range ix.bare {
		if lazy {
			s.sig[i][sigDesc] = ix.sh.descriptionOf(q, int(i))
		}
		s.sig[i][sigCent] = s.sig[i][sigDesc]
	}
	return nil
}

// nearestExample returns the best similarity of q to one of tool i's
// examples (0 when it has none).
func (ix *index) nearestExample(i int, q habilis.Vector) float32 {
	lo, hi := int(ix.exStart[i]), int(ix.exStart[i+1])
	best := float32(0)
	for r := lo; r < hi; r++ {
		var s float32
		if ix.exSlab != nil {
			if len(q.Dense) == ix.exSlab.Dim {
				s = vec.Dot(ix.exSlab.Row(r), q.Dense)
			}
		} else {
			s = dot(ix.exSparse[r], q)
		}
		if r == lo || s > best {
			best = s
		}
	}
	return best
}
