package selector

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"runtime/debug"
	"slices"
	"time"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/par"
	"github.com/habilis-router/habilis/internal/vec"
)

// The write path is a pipeline of phases over one change:
//
//	plan    the new catalog by name, and which calibration it keeps (pure)
//	fit     the corpus embedders fitted to the new catalog's texts
//	reuse   the records, with every stored vector that is still valid,
//	        and the texts left to embed (pure)
//	embed   those texts, through the embedders
//	derive  centroids, radii, calibration, margins and collisions (pure)
//	diff    the batch of changed records and the report (pure)
//	commit  the store's write, then the new index swapped in
//
// A write whose tools, fitted embedders and calibration are all unchanged
// stops after reuse: nothing is embedded, analysed or written.

// writeRequest is what one write asks for.
type writeRequest struct {
	// tools are put into the catalog, or make it up whole with replace.
	tools   []habilis.Tool
	deletes []string
	replace bool
	// calibration, when set, is one learned by fit, stored instead of the
	// catalog's own estimate.
	calibration *Calibration
	// progress, when set, is called as texts are embedded.
	progress func(done, total int)
}

// change is one write in the making: the stored catalog it starts from,
// the request, and what each phase derives, in the order of the phases.
type change struct {
	snap  *habilis.Snapshot
	req   writeRequest
	start time.Time
	rep   *LoadReport

	// plan
	old       map[string]*habilis.Record // the stored records by name
	next      map[string]habilis.Tool    // the new catalog by name
	names     []string                   // next's names, sorted
	descTexts []string                   // each tool's description text, by names
	stored    Calibration                // the stored calibration
	fixed     *Calibration               // what calibrate keeps fit's fields from, or nil
	dropFit   bool                       // a fitted calibration is dropped (a reindex)

	// fit
	meta habilis.CatalogMeta // the new meta; Embedder and Calibration come later
	emb  embedders
	// corpusAt is where each tool's description text lies in the corpus
	// (its examples follow it), by names; lexJoined, when not nil, embeds
	// groups of the corpus's texts joined with the lexical embedder, from
	// the analysis fitting it made (lexical.Embedder.FitJoined).
	corpusAt  []int
	lexJoined func(ctx context.Context, groups [][]int) ([]habilis.Vector, error)

	// reuse
	recs []habilis.Record // by names
	work embedWork

	// derive
	sh  *shared
	cal Calibration

	// diff
	batch *habilis.Batch
	// storeIndex asks for a write even of an unchanged catalog, to store
	// the index the store lacks.
	storeIndex bool
}

// embedWork is the texts a write embeds, each with the vector it fills.
type embedWork struct {
	embTexts, lexTexts []string
	embSlots, lexSlots []slot
}

func (w *embedWork) total() int { return len(w.embTexts) + len(w.lexTexts) }

// slot is where an embedded vector goes: a record's description, one of
// its examples, or its document.
type slot struct {
	rec  int
	kind slotKind
	ex   int
}

type slotKind int

const (
	slotDescription slotKind = iota
	slotExample
	slotDocument
)

// write runs the phases of one change of the catalog in snap.
func (r *Router) write(ctx context.Context, snap *habilis.Snapshot, req writeRequest) (*LoadReport, error) {
	c, err := planChange(snap, req, r.mismatch(snap.Meta) != nil)
	if err != nil {
		return nil, err
	}
	if err := r.fitEmbedders(ctx, c); err != nil {
		return nil, err
	}
	planReuse(c)
	c.storeIndex = r.indexStale.Load()
	if c.unchanged() {
		c.rep.Unchanged, c.rep.Tools, c.rep.Version = len(c.recs), len(c.recs), snap.Meta.Version
		return c.finish(), r.serveIfIdle(ctx, snap)
	}
	if err := r.embed(ctx, c); err != nil {
		return nil, err
	}
	if err := r.derive(ctx, c); err != nil {
		return nil, err
	}
	if !diff(c) {
		c.rep.Version = snap.Meta.Version
		return c.finish(), r.serveIfIdle(ctx, snap)
	}
	return r.commit(ctx, c)
}

// planChange is the plan phase: the new catalog (snap's tools, those
// replaced or added by req, less req's deletes) and the calibration it
// keeps. mismatched says that snap's vectors were made by other embedders
// than the router's (a reindex).
func planChange(snap *habilis.Snapshot, req writeRequest, mismatched bool) (*change, error) {
	c := &change{snap: snap, req: req, start: time.Now(), rep: &LoadReport{}}
	c.planCatalog()
	if err := c.planCalibration(mismatched); err != nil {
		return nil, err
	}
	return c, nil
}

// planCatalog sets the stored records and the new catalog by name, the
// new catalog's sorted names and each tool's description text.
func (c *change) planCatalog() {
	snap, req := c.snap, c.req
	c.old = make(map[string]*habilis.Record, len(snap.Records))
	for i := range snap.Records {
		c.old[snap.Records[i].Tool.Name] = &snap.Records[i]
	}
	c.next = make(map[string]habilis.Tool, len(snap.Records)+len(req.tools))
	if !req.replace {
		for _, rec := range snap.Records {
			c.next[rec.Tool.Name] = rec.Tool
		}
	}
	for _, t := range req.tools {
		c.next[t.Name] = t
	}
	for _, n := range req.deletes {
		delete(c.next, n)
	}
	c.names = make([]string, 0, len(c.next))
	for n := range c.next {
		c.names = append(c.names, n)
	}
	slices.Sort(c.names)
	// Each description text reads its tool's argument schema.
	c.descTexts = make([]string, len(c.names))
	par.For(len(c.names), func(_, i int) { c.descTexts[i] = descriptionText(c.next[c.names[i]]) })
}

// planCalibration sets the stored calibration and the one the write
// keeps fit's fields from (none, the stored one or the request's).
// mismatched says that the stored vectors were made by other embedders
// than the router's (a reindex).
func (c *change) planCalibration(mismatched bool) error {
	var err error
	c.stored, err = decodeCalibration(c.snap.Meta.Calibration)
	if err != nil && c.snap.Meta.Version > 0 {
		return err
	}
	if c.snap.Meta.Version > 0 {
		c.fixed = &c.stored
	}
	if c.req.calibration != nil {
		c.fixed = c.req.calibration
	}
	// What fit learned (thresholds, weights, priors) is on the scale of
	// the scores of the embedders it was fitted with. Re-embedding the
	// catalog with another one recalibrates from the examples instead.
	c.dropFit = c.fixed != nil && c.fixed.Fitted && c.req.calibration == nil && mismatched
	if c.dropFit {
		c.fixed = nil
	}
	return nil
}

// corpus returns every document text of the new catalog: what corpus
// embedders are fitted to.
func (c *change) corpus() []string {
	var corpus []string
	c.corpusAt = make([]int, len(c.names))
	for i, n := range c.names {
		c.corpusAt[i] = len(corpus)
		corpus = append(corpus, c.descTexts[i])
		corpus = append(corpus, c.next[n].Examples...)
	}
	// A corpus embedder's term weights come from at least as many texts
	// as the background holds: a small catalog is topped up with
	// background requests, so that even a catalog of a few tools knows
	// which words every request uses ("what", "can", "me"). A large
	// catalog's own texts say it better (docs/quality.md, the background
	// in the term weights of small catalogs).
	bg := backgroundRequests()
	return append(corpus, bg[:max(0, len(bg)-len(corpus))]...)
}

// fitEmbedders is the fit phase: the router's corpus embedders fitted to
// the new catalog, their states in the new meta.
func (r *Router) fitEmbedders(ctx context.Context, c *change) error {
	corpus := c.corpus()
	c.emb = embedders{emb: r.base, sameLex: r.sameLex()}
	if ce, ok := r.base.(habilis.CorpusEmbedder); ok {
		fitted, state, joined, err := fitJoined(ctx, ce, corpus, c.emb.sameLex)
		if err != nil {
			return fmt.Errorf("fit embedder: %w", err)
		}
		c.emb.emb, c.meta.EmbedderState, c.lexJoined = fitted, state, joined
	}
	if r.lex == nil {
		return nil
	}
	if c.emb.sameLex {
		c.emb.lex, c.meta.LexicalState = c.emb.emb, c.meta.EmbedderState
	} else {
		fitted, state, joined, err := fitJoined(ctx, r.lex, corpus, true)
		if err != nil {
			return fmt.Errorf("fit lexical embedder: %w", err)
		}
		c.emb.lex, c.meta.LexicalState, c.lexJoined = fitted, state, joined
	}
	c.meta.Lexical = c.emb.lex.Info()
	return nil
}

// joinedFitter is a corpus embedder that fits and also returns a function
// embedding groups of the corpus's texts joined (as EmbedJoined) from the
// analysis fitting made (the lexical one's FitJoined).
type joinedFitter interface {
	FitJoined(ctx context.Context, corpus []string) (habilis.CorpusEmbedder, []byte,
		func(ctx context.Context, groups [][]int) ([]habilis.Vector, error), error)
}

// fitJoined fits ce to corpus and, when lexical (ce is the lexical
// signal's embedder) and ce can, returns the function embedding groups
// of the corpus joined, or nil.
func fitJoined(ctx context.Context, ce habilis.CorpusEmbedder, corpus []string, lexical bool) (habilis.CorpusEmbedder, []byte,
	func(ctx context.Context, groups [][]int) ([]habilis.Vector, error), error) {
	if jf, ok := ce.(joinedFitter); ok && lexical {
		return jf.FitJoined(ctx, corpus)
	}
	fitted, state, err := ce.Fit(ctx, corpus)
	return fitted, state, nil, err
}

// planReuse is the reuse phase: the new catalog's records, with the
// stored vectors whose embedder (fitted statistics included) and text are
// unchanged, and the texts left to embed.
func planReuse(c *change) {
	meta := c.snap.Meta
	sameEmb := meta.Version > 0 && meta.Embedder == c.emb.emb.Info()
	sameLex := meta.Version > 0 && c.emb.lex != nil && meta.Lexical == c.emb.lex.Info()
	c.recs = make([]habilis.Record, len(c.names))
	// Hashing each tool's definition and building its document are most
	// of this phase (0.27 s of a 30,000-tool load), each tool's alone.
	docs := make([]string, len(c.names))
	par.For(len(c.names), func(_, i int) {
		t := c.next[c.names[i]]
		c.recs[i] = habilis.Record{Tool: t, Hash: t.Hash(), ExampleVectors: make([]habilis.Vector, len(t.Examples))}
		if c.emb.lex != nil {
			docs[i] = toolDocument(c.descTexts[i], t)
		}
	})
	for i, n := range c.names {
		t := c.recs[i].Tool
		o := c.old[n]
		var oldDesc string
		if o != nil {
			oldDesc = descriptionText(o.Tool)
		}
		vecText := descriptionVectorText(t, c.descTexts[i], c.emb.sameLex)
		if o != nil && sameEmb {
			c.reuseEmbedded(i, o, vecText, descriptionVectorText(o.Tool, oldDesc, c.emb.sameLex) == vecText)
		} else {
			c.embedAfresh(i, vecText)
		}
		if c.emb.lex == nil {
			continue
		}
		doc := docs[i]
		if o != nil && sameLex && toolDocument(oldDesc, o.Tool) == doc {
			c.recs[i].DocumentVector = o.DocumentVector
			c.rep.Reused++
		} else {
			c.work.lexTexts = append(c.work.lexTexts, doc)
			c.work.lexSlots = append(c.work.lexSlots, slot{rec: i, kind: slotDocument})
		}
	}
}

// reuseEmbedded takes record i's description vector (when sameDesc) and
// its example vectors from o where the texts match, and plans the rest;
// desc is the text of its description vector.
func (c *change) reuseEmbedded(i int, o *habilis.Record, desc string, sameDesc bool) {
	rec := &c.recs[i]
	oldEx := make(map[string]habilis.Vector, len(o.Tool.Examples))
	for k, e := range o.Tool.Examples {
		oldEx[e] = o.ExampleVectors[k]
	}
	if sameDesc {
		rec.DescriptionVector = o.DescriptionVector
		c.rep.Reused++
	} else {
		c.planEmbed(i, slotDescription, 0, desc)
	}
	for k, e := range rec.Tool.Examples {
		if v, ok := oldEx[e]; ok {
			rec.ExampleVectors[k] = v
			c.rep.Reused++
			continue
		}
		c.planEmbed(i, slotExample, k, e)
	}
}

// embedAfresh plans the embedding of record i's description (the text
// desc) and examples.
func (c *change) embedAfresh(i int, desc string) {
	c.planEmbed(i, slotDescription, 0, desc)
	for k, e := range c.recs[i].Tool.Examples {
		c.planEmbed(i, slotExample, k, e)
	}
}

func (c *change) planEmbed(rec int, kind slotKind, ex int, text string) {
	c.work.embTexts = append(c.work.embTexts, text)
	c.work.embSlots = append(c.work.embSlots, slot{rec: rec, kind: kind, ex: ex})
}

// unchanged reports a change that changes nothing: the same tools, the
// same fitted embedders and no new calibration, so that nothing needs
// recomputing (calibration and collision analysis cost far more than
// this comparison).
func (c *change) unchanged() bool {
	meta := c.snap.Meta
	if c.work.total() != 0 || c.req.calibration != nil || c.storeIndex || len(c.recs) != len(c.snap.Records) {
		return false
	}
	for i := range c.recs {
		if o := c.old[c.recs[i].Tool.Name]; o == nil || o.Hash != c.recs[i].Hash {
			return false
		}
	}
	return meta.Embedder == c.emb.emb.Info() && (c.emb.lex == nil || meta.Lexical == c.emb.lex.Info())
}

// finish completes the report of a change that ends here.
func (c *change) finish() *LoadReport {
	c.rep.countExamples(c.recs)
	c.rep.Duration = time.Since(c.start)
	return c.rep
}

// embed is the embed phase: the planned texts embedded and placed in the
// records.
func (r *Router) embed(ctx context.Context, c *change) error {
	done, total := 0, c.work.total()
	report := func(n int) {
		done += n
		if c.req.progress != nil {
			c.req.progress(done, total)
		}
		if r.cfg.Progress != nil {
			r.cfg.Progress(StepEmbed, done, total)
		}
	}
	if total > 0 {
		report(0)
	}
	var embJoined func(ctx context.Context, groups [][]int) ([]habilis.Vector, error)
	if c.emb.sameLex {
		embJoined = c.lexJoined
	}
	embVecs, err := r.embedSlots(ctx, c.emb.emb, c.work.embTexts, c.groups(c.work.embSlots, embJoined), embJoined, report)
	if err != nil {
		return err
	}
	c.meta.Embedder = c.emb.emb.Info() // a dense embedder knows its dimension now
	if err := checkDim(c.meta.Embedder, embVecs); err != nil {
		return err
	}
	c.place(embVecs)
	if c.emb.lex != nil {
		lexVecs, err := r.embedSlots(ctx, c.emb.lex, c.work.lexTexts, c.groups(c.work.lexSlots, c.lexJoined), c.lexJoined, report)
		if err != nil {
			return err
		}
		for k, s := range c.work.lexSlots {
			c.recs[s.rec].DocumentVector = lexVecs[k]
		}
	}
	c.rep.Embedded = total
	// The texts (documents built for the lexical signal among them) are
	// not read again: a large load's memory peaks later, without them.
	c.work, c.descTexts, c.lexJoined = embedWork{}, nil, nil
	return nil
}

// place puts the embedder's vectors in the records, the examples' on
// the grid the store keeps them on (exampleVector). Each vector is let
// go once placed, so that the examples of a large load are not held
// twice.
func (c *change) place(vs []habilis.Vector) {
	for k, s := range c.work.embSlots {
		if s.kind == slotDescription {
			c.recs[s.rec].DescriptionVector = vs[k]
		} else {
			c.recs[s.rec].ExampleVectors[s.ex] = exampleVector(vs[k])
		}
		vs[k] = habilis.Vector{}
	}
}

// exampleVector returns an example's vector as it is stored: a dense one
// on the 8-bit grid (vec.Round8), rounded here, where it is embedded and
// before any centroid, calibration or collision is computed from it, so
// that a store keeping it in 8 bits a coordinate gives back exactly the
// vector the router computed with, in this process, on reopening and at
// every later write; a sparse one as it is. Examples are read by writes
// alone, never by selection.
func exampleVector(v habilis.Vector) habilis.Vector {
	if v.Dense == nil {
		return v
	}
	return habilis.Vector{Dense: vec.Round8(v.Dense)}
}

// groups returns, for each slot, the texts of the corpus its text joins
// (indices into the corpus), or nil for a text the corpus lacks (the
// summary a tool without examples is documented by); none without
// joined. The slots' texts are those of the lexical embedder, whose
// description text is the corpus's.
func (c *change) groups(slots []slot, joined func(context.Context, [][]int) ([]habilis.Vector, error)) [][]int {
	if joined == nil {
		return nil
	}
	out := make([][]int, len(slots))
	for k, s := range slots {
		at, n := c.corpusAt[s.rec], len(c.recs[s.rec].Tool.Examples)
		switch {
		case s.kind == slotDescription:
			out[k] = []int{at}
		case s.kind == slotExample:
			out[k] = []int{at + 1 + s.ex}
		case n > 0: // documentText: the description and the examples
			out[k] = make([]int, n+1)
			for j := range out[k] {
				out[k][j] = at + j
			}
		}
	}
	return out
}

// derive is the derive phase: every record's centroid and radius, the
// background's gates, the calibration, the margins and the collisions.
func (r *Router) derive(ctx context.Context, c *change) error {
	r.step(StepCalibrate)
	recs := c.recs
	sums := make([]float32, len(recs))
	par.For(len(recs), func(_, i int) { sums[i] = shapeSum(&recs[i]) })
	// Calibration, the background and the index share the Rocchio norms
	// and, with the lexical embedder alone, the merged space: built once
	// for all.
	dim := c.meta.Embedder.Dim
	c.sh = newSharedSums(recs, dim, c.emb.merged(dim), sums)
	bv, err := r.background(ctx, c.emb.emb, c.emb.lex, len(recs))
	if err != nil {
		return err
	}
	lexical := c.emb.lex != nil && c.emb.sameLex
	bg, weight := backgroundGates(recs, c.sh, bv, lexical, c.emb.lex != nil && !lexical)
	calibrateChange(ctx, c, r.cfg, weight)
	c.cal.Background, c.cal.DocumentWeight = bg, weight
	if !c.cal.GatesFitted() && !hasExamples(recs) && lexical {
		// Without examples the background is the gate (see
		// index.setBackground for a model embedder's).
		c.cal.DescriptionThreshold = 0
	}
	r.step(StepCollisions)
	if c.cal.Collides, err = collides(recs, c.cal, r.cfg.CollisionThreshold, c.emb.sameLex); err != nil {
		// A catalog too large or too odd for the analysis still serves;
		// its matches just name no collisions.
		r.cfg.Logger.Warn("collision analysis skipped", "err", err)
		c.cal.Collides = nil
	}
	raw, err := json.Marshal(c.cal)
	if err != nil {
		return fmt.Errorf("encode calibration: %w", err)
	}
	c.meta.Calibration = raw
	return nil
}

// calibrateChange computes the calibration from the records' own
// examples (keeping what fit learned) and the margins, the records shaped
// and c.sh built. weight is the lexical document's weight in the
// evidence of a model embedder (0 for none). It runs no embedder but the
// lexical one, to rebuild documents without a held-out example.
func calibrateChange(ctx context.Context, c *change, cfg Config, weight float32) {
	recs := c.recs
	var lex *heldOutLexical
	switch {
	case c.emb.lex != nil && c.emb.sameLex:
		lex = &heldOutLexical{weight: 1, docs: func(a int) []habilis.Vector {
			return heldOutDocuments(ctx, c.emb.lex, recs[a].Tool)
		}}
	case c.emb.lex != nil && weight > 0:
		lex = &heldOutLexical{weight: weight,
			docs:    func(a int) []habilis.Vector { return heldOutDocuments(ctx, c.emb.lex, recs[a].Tool) },
			queries: func(a int) []habilis.Vector { return heldOutQueries(ctx, c.emb.lex, recs[a].Tool) }}
	}
	c.cal = calibrate(recs, c.fixed, c.sh, lex)
	if cfg.Margin != nil && !c.cal.GatesFitted() {
		c.cal.Margin, c.cal.MarginSource = *cfg.Margin, "config"
	}
	for i := range recs {
		recs[i].Margin = c.cal.Margin
		if m := recs[i].Tool.Margin; m != nil {
			recs[i].Margin = *m
		}
	}
}

// diff is the diff phase: the batch of records that changed and the
// report. It reports whether there is anything to write.
func diff(c *change) bool {
	snap := c.snap
	rep := c.rep
	b := &habilis.Batch{BaseVersion: snap.Meta.Version, Meta: c.meta}
	for i := range c.recs {
		rec := &c.recs[i]
		o := c.old[rec.Tool.Name]
		switch {
		case o == nil:
			rep.Added = append(rep.Added, rec.Tool.Name)
			b.Put = append(b.Put, *rec)
		case !sameRecord(o, rec):
			if o.Hash != rec.Hash {
				rep.Updated = append(rep.Updated, rec.Tool.Name)
			}
			b.Put = append(b.Put, *rec)
		default:
			rep.Unchanged++
		}
	}
	for _, o := range snap.Records {
		if _, ok := c.next[o.Tool.Name]; !ok {
			rep.Removed = append(rep.Removed, o.Tool.Name)
			b.Delete = append(b.Delete, o.Tool.Name)
		}
	}
	rep.Tools = len(c.recs)
	c.batch = b
	return len(b.Put) > 0 || len(b.Delete) > 0 || snap.Meta.Version == 0 || c.storeIndex || !c.sameMeta()
}

// sameMeta reports whether the new meta stores what the stored one does:
// the same embedders, states and calibration.
func (c *change) sameMeta() bool {
	a, b := c.snap.Meta, c.meta
	return a.Embedder == b.Embedder && a.Lexical == b.Lexical && slices.Equal(a.EmbedderState, b.EmbedderState) &&
		slices.Equal(a.LexicalState, b.LexicalState) && len(a.Calibration) > 0 && sameCalibration(c.stored, c.cal)
}

// commit is the commit phase: the new index built, the batch written
// with it (to a store that keeps indexes), and the index swapped in.
func (r *Router) commit(ctx context.Context, c *change) (*LoadReport, error) {
	r.step(StepIndex)
	// A large load's memory peaks from here to the store's write: the
	// index is built and encoded beside what embedding, calibration and
	// the collision pass left for the collector. A collection frees it
	// first and hands its pages back to the system: the encoded index is
	// one allocation, larger than any run of the pages freed, and took
	// new pages beside them. 30,000 tools × 8: 1.18-1.19 GB resident
	// instead of 1.12-1.43 GB with the collection alone, as it had last
	// run (docs/benchmarks.md); a small catalog's write does not pay
	// for it.
	if len(c.recs) > 1024 {
		debug.FreeOSMemory()
	}
	_, keeps := r.store.(habilis.IndexStore)
	ix, stored, err := indexFor(c, keeps && littleEndian)
	if err != nil {
		return nil, err
	}
	r.step(StepWrite)
	newMeta, err := r.store.Write(ctx, c.batch)
	if err != nil {
		return nil, err // the store's errors name it
	}
	c.batch.Index = nil
	if ix == nil {
		ix = r.inPlace(ctx, newMeta.Version, c.emb)
	}
	if ix == nil {
		if ix, err = decodeIndex(stored, newMeta, c.emb); err != nil {
			r.cfg.Logger.Warn("the index just stored does not read back: building it again", "err", err)
			if ix, err = buildIndex(newMeta, c.cal, c.emb, c.recs, nil); err != nil {
				return nil, err
			}
		}
	}
	ix.meta = newMeta
	r.indexStale.Store(keeps && !littleEndian)
	r.swap(ix)
	return r.written(c, newMeta), nil
}

// inPlace returns the index the store holds at catalog version v, read
// where it lies (a memory map), or nil when the store would copy it out
// or holds another version. A write serves the index it has just stored
// from there rather than from the form it encoded, which the heap would
// hold for as long as the index is in force: at 100,000 tools with a
// model embedder, 877 MiB of heap against 43 MiB (docs/benchmarks.md).
func (r *Router) inPlace(ctx context.Context, v uint64, emb embedders) *index {
	is, ok := r.store.(interface {
		habilis.IndexStore
		IndexInPlace() bool
	})
	if !ok || !is.IndexInPlace() {
		return nil
	}
	st, err := is.Index(ctx)
	if err != nil {
		return nil
	}
	if st.Data == nil || st.Meta.Version != v {
		st.Release()
		return nil
	}
	ix, err := decodeStored(st.Data, st.Patch, st.Meta, emb)
	if err != nil {
		st.Release()
		return nil
	}
	ix.pin = &pin{release: st.Release}
	return ix
}

// indexFor builds the index of the change and, when encode, its stored
// form, which the batch then carries. The router serves a stored index
// in its stored form, so the index built in memory, as large, is
// dropped (nil) before the store's write, when a load's memory peaks,
// unless the nearest example is weighted (its vectors are not stored).
func indexFor(c *change, encode bool) (ix *index, stored []byte, err error) {
	if ix, err = buildIndex(c.meta, c.cal, c.emb, c.recs, c.sh); err != nil || !encode {
		return ix, nil, err
	}
	// The store assigns the version the batch's base is one below.
	if stored, err = encodeIndex(ix, c.snap.Meta.Version+1); err != nil {
		return nil, nil, err
	}
	c.batch.Index = stored
	if c.cal.Weights.Example == 0 {
		ix, c.sh = nil, nil
	}
	return ix, stored, nil
}

// written completes the report of a change written as newMeta, and logs
// it.
func (r *Router) written(c *change, newMeta habilis.CatalogMeta) *LoadReport {
	rep := c.rep
	rep.Version = newMeta.Version
	rep.countExamples(c.recs)
	rep.Duration = time.Since(c.start)
	if c.dropFit {
		old := c.snap.Meta
		attrs := []any{"fitted_with", old.Embedder.Detail(), "embedder", newMeta.Embedder.Detail()}
		if l := old.Lexical; l.Kind != "" && l != old.Embedder {
			attrs = append(attrs, "lexical_fitted_with", l.Detail(), "lexical", newMeta.Lexical.Detail())
		}
		r.cfg.Logger.Warn("fitted calibration dropped: it was fitted with other embedders; run fit again", attrs...)
	}
	r.cfg.Logger.Info("catalog written", "version", rep.Version, "tools", rep.Tools, "added", len(rep.Added),
		"updated", len(rep.Updated), "removed", len(rep.Removed), "embedded", rep.Embedded, "duration", rep.Duration)
	return rep
}

// sameCalibration compares two calibrations field by field, taking
// numbers equal within a relative 1e-5: re-estimating an unchanged catalog
// may differ in the last bits (SIMD sums depend on memory alignment), and
// that is no change worth a new catalog version. Empty and nil maps and
// slices are equal, as they are once stored.
func sameCalibration(a, b Calibration) bool {
	return near(reflect.ValueOf(a), reflect.ValueOf(b))
}

// near is sameCalibration's comparison of any two values of one type.
func near(x, y reflect.Value) bool {
	switch x.Kind() {
	case reflect.Float32, reflect.Float64:
		a, b := x.Float(), y.Float()
		return math.Abs(a-b) <= 1e-5*max(1, math.Abs(a), math.Abs(b))
	case reflect.Struct:
		for i := range x.NumField() {
			if !near(x.Field(i), y.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		return nearMaps(x, y)
	case reflect.Slice, reflect.Array:
		if x.Len() != y.Len() {
			return false
		}
		for i := range x.Len() {
			if !near(x.Index(i), y.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Pointer:
		if x.IsNil() || y.IsNil() {
			return x.IsNil() == y.IsNil()
		}
		return near(x.Elem(), y.Elem())
	}
	return x.Equal(y)
}

// nearMaps is near of two maps: the same keys, their values near.
func nearMaps(x, y reflect.Value) bool {
	if x.Len() != y.Len() {
		return false
	}
	for it := x.MapRange(); it.Next(); {
		w := y.MapIndex(it.Key())
		if !w.IsValid() || !near(it.Value(), w) {
			return false
		}
	}
	return true
}
