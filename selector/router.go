// Package selector indexes a catalog of tools and selects the tools that
// fit a request: per tool a description vector, the centroid of its
// examples, its radius (the least similar example) and a margin; selection
// by description, by centroid with a radius − margin gate that lets the
// router abstain, or by a hybrid of several signals.
//
// A Router owns the write path (embedding, calibration, an atomic store
// write) and an immutable in-memory index that it swaps whole after every
// write, so readers never see half a catalog.
package selector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/collision"
	"github.com/habilis-router/habilis/internal/par"
)

// Config configures a Router. Only Embedder is required.
type Config struct {
	// Embedder embeds descriptions, examples and queries.
	Embedder habilis.Embedder
	// Lexical, when set, supplies hybrid mode's lexical signal (each tool's
	// whole document). When Embedder is itself a CorpusEmbedder of kind
	// "lexical" it serves as both and Lexical may be nil.
	Lexical habilis.CorpusEmbedder
	// Margin, when non-nil, is the default margin of tools that set none,
	// instead of the one calibrated from the catalog's examples.
	Margin *float32
	// Reindex lets New re-embed a store that another embedder built
	// instead of refusing it with ErrEmbedderMismatch.
	Reindex bool
	// CollisionThreshold is the centroid similarity above which two tools
	// collide; zero means the collision package's default.
	CollisionThreshold float32
	// BatchSize is how many texts go to the embedder at once; zero means 256.
	BatchSize int
	// Logger receives load summaries; nil discards them.
	Logger *slog.Logger
}

// Router indexes catalogs into a Store and answers selections. It is safe
// for concurrent use: selections never block, writes are serialised.
type Router struct {
	store habilis.Store
	cfg   Config
	base  habilis.Embedder // unfitted
	lex   habilis.CorpusEmbedder

	mu  sync.Mutex // serialises writes
	cur atomic.Pointer[index]
	// bg keeps the background's vectors from a model embedder, whose
	// vectors do not depend on the catalog, between writes (under mu).
	bg     *backgroundVectors
	closed atomic.Bool
}

// New opens a router over store. It restores the store's catalog, checks
// that cfg.Embedder made it (ErrEmbedderMismatch otherwise, unless
// cfg.Reindex, in which case the catalog is re-embedded now), and builds
// the in-memory index.
func New(ctx context.Context, store habilis.Store, cfg Config) (*Router, error) {
	if cfg.Embedder == nil {
		return nil, fmt.Errorf("selector: no embedder: %w", habilis.ErrInvalid)
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 256
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Router{store: store, cfg: cfg, base: cfg.Embedder, lex: cfg.Lexical}
	if r.lex == nil {
		if ce, ok := cfg.Embedder.(habilis.CorpusEmbedder); ok && ce.Info().Kind == "lexical" {
			r.lex = ce
		}
	}
	snap, err := store.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("selector: open: %w", err)
	}
	if err := r.mismatch(snap.Meta); err != nil {
		if !cfg.Reindex {
			return nil, err
		}
		tools := make([]habilis.Tool, len(snap.Records))
		for i, rec := range snap.Records {
			tools[i] = rec.Tool
		}
		if _, err := r.write(ctx, snap, tools, nil, true, nil, nil); err != nil {
			return nil, err
		}
		return r, nil
	}
	ix, err := r.restore(ctx, snap)
	if err != nil {
		return nil, err
	}
	r.cur.Store(ix)
	return r, nil
}

// compatible reports whether vectors of a stored catalog can be compared
// with those of emb: same kind, model and algorithm, and the same
// dimension where both are known.
func compatible(stored, emb habilis.EmbedderInfo) bool {
	if stored.Kind != emb.Kind || stored.Model != emb.Model || stored.Algorithm() != emb.Algorithm() {
		return false
	}
	return stored.Dim == 0 || emb.Dim == 0 || stored.Dim == emb.Dim
}

// mismatch returns why the vectors of meta's catalog do not compare with
// this router's (a *habilis.MismatchError), or nil when they do or there is
// no catalog: another embedder built it, or another algorithm of the
// lexical embedder made its lexical vectors (those paired with a model's).
func (r *Router) mismatch(meta habilis.CatalogMeta) error {
	if meta.Version == 0 {
		return nil
	}
	e := &habilis.MismatchError{Stored: meta.Embedder, Configured: r.base.Info()}
	if !compatible(meta.Embedder, e.Configured) {
		return fmt.Errorf("selector: open: %w", e)
	}
	if r.lex != nil && meta.Lexical.Kind != "" && meta.Lexical.Algorithm() != r.lex.Info().Algorithm() {
		lex := r.lex.Info()
		e.StoredLexical, e.ConfiguredLexical = &meta.Lexical, &lex
		return fmt.Errorf("selector: open: %w", e)
	}
	return nil
}

// restore builds the index of a stored catalog, with the embedders fitted
// as they were when it was written.
func (r *Router) restore(ctx context.Context, snap *habilis.Snapshot) (*index, error) {
	emb, lex, err := r.restoreEmbedders(snap.Meta)
	if err != nil {
		return nil, err
	}
	cal, err := decodeCalibration(snap.Meta.Calibration)
	if err != nil {
		return nil, err
	}
	return buildIndex(snap.Meta, cal, emb, lex, r.sameLex(), snap.Records, nil)
}

func (r *Router) sameLex() bool {
	ce, ok := r.base.(habilis.CorpusEmbedder)
	return ok && r.lex != nil && ce == r.lex
}

func (r *Router) restoreEmbedders(meta habilis.CatalogMeta) (emb, lex habilis.Embedder, err error) {
	emb = r.base
	if ce, ok := r.base.(habilis.CorpusEmbedder); ok && meta.EmbedderState != nil {
		if emb, err = ce.Restore(meta.EmbedderState); err != nil {
			return nil, nil, fmt.Errorf("selector: restore embedder state: %w", err)
		}
	}
	if r.lex != nil {
		if r.sameLex() {
			lex = emb
		} else if meta.LexicalState != nil {
			if lex, err = r.lex.Restore(meta.LexicalState); err != nil {
				return nil, nil, fmt.Errorf("selector: restore lexical state: %w", err)
			}
		} else {
			lex = r.lex
		}
	}
	return emb, lex, nil
}

func decodeCalibration(raw json.RawMessage) (Calibration, error) {
	var c Calibration
	if len(raw) == 0 {
		return Calibration{Weights: defaultWeights, Margin: defaultMargin, MarginSource: "default"}, nil
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("selector: stored calibration: %v: %w", err, habilis.ErrInvalid)
	}
	return c, nil
}

// LoadOptions tune a load.
type LoadOptions struct {
	// Merge keeps stored tools that the load does not mention; by default a
	// load makes the catalog exactly the given tools.
	Merge bool
	// Progress, when set, is called as texts are embedded.
	Progress func(done, total int)
}

// LoadReport says what a write changed.
type LoadReport struct {
	Added     []string `json:"added"`
	Updated   []string `json:"updated"`
	Removed   []string `json:"removed"`
	Unchanged int      `json:"unchanged"`
	// Embedded counts the texts sent to the embedder; Reused those whose
	// vectors were already stored.
	Embedded int `json:"embedded"`
	Reused   int `json:"reused"`
	// Version is the catalog version after the write (unchanged when the
	// write changed nothing).
	Version  uint64 `json:"version"`
	Tools    int    `json:"tools"`
	Examples int    `json:"examples"`
	// MedianExamples is the median number of examples of the catalog's
	// tools that have any (0 when none has): the gate calibrated from them
	// is more permissive below about FewExamples.
	MedianExamples int `json:"median_examples"`
	// Bare counts the tools without examples, gated on their
	// descriptions.
	Bare     int           `json:"bare_tools"`
	Duration time.Duration `json:"duration_ns"`
}

// FewExamples is the median number of examples a tool below which the
// gate calibrated from a catalog's own examples lets noticeably more
// no-tool requests through. On MetaTool's catalog cut to each tool's first
// n examples, the default gate refused 90.8 / 86.4 % of no-tool requests
// (halves a / b of the queries) with 10 a tool, 82.9 / 75.8 % with 8,
// 76.3 / 68.2 % with 6 and 60.5 / 56.1 % with 4 (README, Quality).
const FewExamples = 10

// countExamples sets the report's Examples and MedianExamples from the
// catalog's records.
func (rep *LoadReport) countExamples(recs []habilis.Record) {
	rep.Examples, rep.Bare = 0, 0
	for i := range recs {
		rep.Examples += len(recs[i].Tool.Examples)
		if len(recs[i].Tool.Examples) == 0 {
			rep.Bare++
		}
	}
	rep.MedianExamples = medianExamples(recs)
}

// medianExamples returns the median number of examples of the records
// that have any, 0 when none has (the lower middle one of an even count).
func medianExamples(recs []habilis.Record) int {
	var n []int
	for i := range recs {
		if k := len(recs[i].Tool.Examples); k > 0 {
			n = append(n, k)
		}
	}
	if len(n) == 0 {
		return 0
	}
	slices.Sort(n)
	return n[(len(n)-1)/2]
}

// Load indexes tools and commits them to the store in one write. Loading
// the catalog that is already stored changes nothing and embeds nothing.
// On any error the store and the index are unchanged.
func (r *Router) Load(ctx context.Context, tools []habilis.Tool, opts LoadOptions) (*LoadReport, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(tools))
	for _, t := range tools {
		if seen[t.Name] {
			return nil, fmt.Errorf("selector: load: tool %q given twice: %w", t.Name, habilis.ErrInvalid)
		}
		seen[t.Name] = true
	}
	return r.update(ctx, "load", func(snap *habilis.Snapshot) (*LoadReport, error) {
		return r.write(ctx, snap, tools, nil, !opts.Merge, opts.Progress, nil)
	})
}

// update runs one write under the write lock, computed from the catalog
// as stored now. When another writer sharing the store commits between
// that read and the write's commit, the store refuses the write
// (ErrConflict) and update computes it again from the catalog as it is
// then, up to writeAttempts times: a write says what to change (tools to
// put, delete or replace, a calibration), so computed again it keeps the
// other writer's changes, and two writers' upserts of different tools
// both land, in order. A delete of a tool the other writer removed fails
// with ErrNotFound then, as it would have after it.
func (r *Router) update(ctx context.Context, op string, write func(*habilis.Snapshot) (*LoadReport, error)) (*LoadReport, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for attempt := 1; ; attempt++ {
		snap, err := r.store.Snapshot(ctx)
		if err != nil {
			return nil, fmt.Errorf("selector: %s: %w", op, err)
		}
		rep, err := write(snap)
		if !errors.Is(err, habilis.ErrConflict) || attempt == writeAttempts || ctx.Err() != nil {
			return rep, err
		}
		r.cfg.Logger.Info("another writer committed first; computing the write again", "op", op, "base", snap.Meta.Version, "attempt", attempt)
	}
}

// Delete removes tools by name in one write. Unknown names return
// ErrNotFound and change nothing.
func (r *Router) Delete(ctx context.Context, names []string) (*LoadReport, error) {
	return r.update(ctx, "delete", func(snap *habilis.Snapshot) (*LoadReport, error) {
		have := make(map[string]bool, len(snap.Records))
		for _, rec := range snap.Records {
			have[rec.Tool.Name] = true
		}
		for _, n := range names {
			if !have[n] {
				return nil, fmt.Errorf("selector: delete: tool %q: %w", n, habilis.ErrNotFound)
			}
		}
		return r.write(ctx, snap, nil, names, false, nil, nil)
	})
}

// SetCalibration stores a new calibration (from fit) and re-derives the
// margins of every tool from it.
func (r *Router) SetCalibration(ctx context.Context, cal Calibration) (*LoadReport, error) {
	return r.update(ctx, "calibrate", func(snap *habilis.Snapshot) (*LoadReport, error) {
		return r.write(ctx, snap, nil, nil, false, nil, &cal)
	})
}

// Config returns the router's configuration, so that a scratch router
// over another store can be made alike (fit's trial catalogs).
func (r *Router) Config() Config { return r.cfg }

// Calibration returns the calibration in force.
func (r *Router) Calibration() Calibration { return r.cur.Load().cal }

// Version returns the catalog version the router serves.
func (r *Router) Version() uint64 { return r.cur.Load().meta.Version }

// Embedder returns the embedder fitted to the current catalog.
func (r *Router) Embedder() habilis.Embedder { return r.cur.Load().emb }

// Tools returns the catalog's tools, sorted by name.
func (r *Router) Tools() []habilis.Tool {
	ix := r.cur.Load()
	out := make([]habilis.Tool, len(ix.tools))
	for i := range ix.tools {
		out[i] = ix.tools[i].tool
	}
	return out
}

// ToolInfo is a tool with its gate, as `tools show` prints it.
type ToolInfo struct {
	Tool          habilis.Tool `json:"tool"`
	Hash          string       `json:"hash"`
	Radius        float32      `json:"radius"`
	RadiusSource  string       `json:"radius_source"`
	RadiusExample string       `json:"radius_example,omitempty"`
	Margin        float32      `json:"margin"`
	Threshold     float32      `json:"threshold"`
	CollidesWith  []string     `json:"collides_with"`
}

// Tool returns one tool with its gate, or ErrNotFound.
func (r *Router) Tool(name string) (*ToolInfo, error) {
	ix := r.cur.Load()
	i, ok := ix.byName[name]
	if !ok {
		return nil, fmt.Errorf("tool %q: %w", name, habilis.ErrNotFound)
	}
	t := &ix.tools[i]
	thr, radius, src := ix.gate(i)
	return &ToolInfo{Tool: t.tool, Hash: t.hash, Radius: radius, RadiusSource: src, RadiusExample: t.radiusExample,
		Margin: t.margin, Threshold: thr, CollidesWith: nonNil(ix.collides[i])}, nil
}

// Collisions analyses the stored catalog with its examples (leave-one-out
// leaks included).
func (r *Router) Collisions(ctx context.Context, threshold float32) ([]habilis.Collision, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	snap, err := r.store.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("selector: collisions: %w", err)
	}
	cal, err := decodeCalibration(snap.Meta.Calibration)
	if err != nil {
		return nil, err
	}
	if threshold == 0 {
		threshold = r.cfg.CollisionThreshold
	}
	cols, err := collision.Find(snap.Records, collision.Options{Threshold: threshold, CatalogThreshold: cal.Threshold, GateFloor: cal.NoiseFloor})
	if err != nil {
		return nil, fmt.Errorf("selector: collisions: %w", err)
	}
	return cols, nil
}

// Records returns the stored records with their vectors, for analysis
// (collisions, projections, evaluation).
func (r *Router) Records(ctx context.Context) ([]habilis.Record, error) {
	snap, err := r.store.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("selector: records: %w", err)
	}
	return snap.Records, nil
}

// Close marks the router closed; it does not close the store, which the
// caller owns.
func (r *Router) Close() error {
	r.closed.Store(true)
	return nil
}

func (r *Router) check() error {
	if r.closed.Load() {
		return fmt.Errorf("selector: %w", habilis.ErrClosed)
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// write computes the new catalog from snap, tools (put or replace) and
// deletes, embeds what changed, commits and swaps the index in. newCal,
// when set, is a calibration learned by fit to store instead of the
// catalog's own estimate.
func (r *Router) write(ctx context.Context, snap *habilis.Snapshot, tools []habilis.Tool, deletes []string, replace bool, progress func(int, int), newCal *Calibration) (*LoadReport, error) {
	start := time.Now()
	rep := &LoadReport{}
	old := make(map[string]*habilis.Record, len(snap.Records))
	for i := range snap.Records {
		old[snap.Records[i].Tool.Name] = &snap.Records[i]
	}
	// The new catalog, by name.
	next := make(map[string]habilis.Tool, len(snap.Records)+len(tools))
	if !replace {
		for _, rec := range snap.Records {
			next[rec.Tool.Name] = rec.Tool
		}
	}
	for _, t := range tools {
		next[t.Name] = t
	}
	for _, n := range deletes {
		delete(next, n)
	}
	names := make([]string, 0, len(next))
	for n := range next {
		names = append(names, n)
	}
	slices.Sort(names)

	oldCal, err := decodeCalibration(snap.Meta.Calibration)
	if err != nil && snap.Meta.Version > 0 {
		return nil, err
	}
	fixed := &oldCal
	if snap.Meta.Version == 0 {
		fixed = nil
	}
	if newCal != nil {
		fixed = newCal
	}
	// What fit learned (thresholds, weights, priors) is on the scale of
	// the scores of the embedders it was fitted with. Re-embedding the
	// catalog with another one recalibrates from the examples instead.
	dropFit := fixed != nil && fixed.Fitted && newCal == nil && r.mismatch(snap.Meta) != nil
	if dropFit {
		fixed = nil
	}

	// Fit corpus embedders on the new catalog's documents.
	var corpus []string
	descTexts := make([]string, len(names))
	for i, n := range names {
		t := next[n]
		descTexts[i] = descriptionText(t)
		corpus = append(corpus, descTexts[i])
		corpus = append(corpus, t.Examples...)
	}
	// A corpus embedder's term weights come from at least as many texts
	// as the background holds: a small catalog is topped up with
	// background requests, so that even a catalog of a few tools knows
	// which words every request uses ("what", "can", "me"). A large
	// catalog's own texts say it better: on MetaTool's 2,200 texts, adding
	// the background lowered ranking top-1 on half a.
	bg := backgroundRequests()
	corpus = append(corpus, bg[:max(0, len(bg)-len(corpus))]...)
	meta := habilis.CatalogMeta{Calibration: nil}
	emb := r.base
	if ce, ok := r.base.(habilis.CorpusEmbedder); ok {
		fitted, state, err := ce.Fit(ctx, corpus)
		if err != nil {
			return nil, fmt.Errorf("selector: fit embedder: %w", err)
		}
		emb, meta.EmbedderState = fitted, state
	}
	var lex habilis.Embedder
	if r.lex != nil {
		if r.sameLex() {
			lex, meta.LexicalState = emb, meta.EmbedderState
		} else {
			fitted, state, err := r.lex.Fit(ctx, corpus)
			if err != nil {
				return nil, fmt.Errorf("selector: fit lexical embedder: %w", err)
			}
			lex, meta.LexicalState = fitted, state
		}
		meta.Lexical = lex.Info()
	}

	sameEmb := snap.Meta.Version > 0 && snap.Meta.Embedder == emb.Info()
	sameLexInfo := snap.Meta.Version > 0 && lex != nil && snap.Meta.Lexical == lex.Info()

	// Work out which texts need embedding; reuse stored vectors whose
	// embedder (including its fitted statistics) is unchanged.
	recs := make([]habilis.Record, len(names))
	var embTexts, lexTexts []string
	type slot struct {
		rec  int
		kind int // 0 description, 1 example, 2 document
		ex   int
	}
	var embSlots, lexSlots []slot
	for i, n := range names {
		t := next[n]
		rec := habilis.Record{Tool: t, Hash: t.Hash(), ExampleVectors: make([]habilis.Vector, len(t.Examples))}
		o := old[n]
		var oldDesc string
		if o != nil {
			oldDesc = descriptionText(o.Tool)
		}
		var oldEx map[string]habilis.Vector
		if o != nil && sameEmb {
			oldEx = make(map[string]habilis.Vector, len(o.Tool.Examples))
			for k, e := range o.Tool.Examples {
				oldEx[e] = o.ExampleVectors[k]
			}
		}
		if o != nil && sameEmb && oldDesc == descTexts[i] {
			rec.DescriptionVector = o.DescriptionVector
			rep.Reused++
		} else {
			embTexts = append(embTexts, descTexts[i])
			embSlots = append(embSlots, slot{rec: i, kind: 0})
		}
		for k, e := range t.Examples {
			if v, ok := oldEx[e]; ok {
				rec.ExampleVectors[k] = v
				rep.Reused++
				continue
			}
			embTexts = append(embTexts, e)
			embSlots = append(embSlots, slot{rec: i, kind: 1, ex: k})
		}
		if lex != nil {
			doc := documentText(descTexts[i], t.Examples)
			if o != nil && sameLexInfo && documentText(oldDesc, o.Tool.Examples) == doc {
				rec.DocumentVector = o.DocumentVector
				rep.Reused++
			} else {
				lexTexts = append(lexTexts, doc)
				lexSlots = append(lexSlots, slot{rec: i, kind: 2})
			}
		}
		recs[i] = rec
	}
	total := len(embTexts) + len(lexTexts)
	// The same tools, the same fitted embedders and no new calibration:
	// nothing to recompute (calibration and collision analysis cost far
	// more than the comparison).
	if total == 0 && newCal == nil && len(recs) == len(snap.Records) && unchanged(recs, old) &&
		snap.Meta.Embedder == emb.Info() && (lex == nil || snap.Meta.Lexical == lex.Info()) {
		rep.Unchanged, rep.Tools, rep.Version = len(recs), len(recs), snap.Meta.Version
		rep.countExamples(recs)
		rep.Duration = time.Since(start)
		return rep, r.serveIfIdle(ctx, snap)
	}
	done := 0
	report := func(n int) {
		done += n
		if progress != nil {
			progress(done, total)
		}
	}
	embVecs, err := r.embedAll(ctx, emb, embTexts, report)
	if err != nil {
		return nil, err
	}
	meta.Embedder = emb.Info() // a dense embedder knows its dimension now
	if err := checkDim(meta.Embedder, embVecs); err != nil {
		return nil, err
	}
	for k, s := range embSlots {
		if s.kind == 0 {
			recs[s.rec].DescriptionVector = embVecs[k]
		} else {
			recs[s.rec].ExampleVectors[s.ex] = embVecs[k]
		}
	}
	if lex != nil {
		lexVecs, err := r.embedAll(ctx, lex, lexTexts, report)
		if err != nil {
			return nil, err
		}
		for k, s := range lexSlots {
			recs[s.rec].DocumentVector = lexVecs[k]
		}
	}
	rep.Embedded = total

	par.For(len(recs), func(_, i int) { shape(&recs[i]) })
	var heldOutDoc func(int) []habilis.Vector
	if lex != nil && r.sameLex() {
		heldOutDoc = func(a int) []habilis.Vector {
			return heldOutDocuments(ctx, lex, recs[a].Tool)
		}
	}
	// Calibration and the index share the Rocchio norms and, with the
	// lexical embedder alone, the merged space: built once for both.
	sh := newShared(recs, meta.Embedder.Dim, meta.Embedder.Dim == 0 && r.sameLex())
	cal := calibrate(recs, fixed, sh, heldOutDoc)
	if r.cfg.Margin != nil && !cal.Fitted {
		cal.Margin, cal.MarginSource = *r.cfg.Margin, "config"
	}
	for i := range recs {
		recs[i].Margin = cal.Margin
		if m := recs[i].Tool.Margin; m != nil {
			recs[i].Margin = *m
		}
	}
	if meta.Embedder.Dim == 0 {
		// The background's rule (backgroundZ) was chosen on the lexical
		// embedder's scores. A model's cosines are compressed into a
		// narrow band where mean + z deviations can pass the scores of
		// the tool's own requests, so model catalogs keep the gates
		// calibrated from their examples until the rule is measured on
		// them.
		bv, err := r.background(ctx, emb, lex, len(recs))
		if err != nil {
			return nil, err
		}
		cal.Background = backgroundGates(recs, sh, bv, lex != nil && r.sameLex())
		if !cal.Fitted && !hasExamples(recs) {
			// Without examples the background is the gate.
			cal.DescriptionThreshold = 0
		}
	}
	if cal.Collides, err = collides(recs, cal, r.cfg.CollisionThreshold); err != nil {
		// A catalog too large or too odd for the analysis still serves;
		// its matches just name no collisions.
		r.cfg.Logger.Warn("collision analysis skipped", "err", err)
		cal.Collides = nil
	}
	calJSON, err := json.Marshal(cal)
	if err != nil {
		return nil, fmt.Errorf("selector: encode calibration: %w", err)
	}
	meta.Calibration = calJSON

	// Diff against the stored catalog: only changed records are written.
	b := &habilis.Batch{BaseVersion: snap.Meta.Version, Meta: meta}
	for i := range recs {
		rec := &recs[i]
		o := old[rec.Tool.Name]
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
		if _, ok := next[o.Tool.Name]; !ok {
			rep.Removed = append(rep.Removed, o.Tool.Name)
			b.Delete = append(b.Delete, o.Tool.Name)
		}
	}
	rep.Tools = len(recs)
	rep.countExamples(recs)
	changed := len(b.Put) > 0 || len(b.Delete) > 0 || snap.Meta.Version == 0 ||
		!metaEqual(snap.Meta, meta)
	if !changed {
		rep.Version = snap.Meta.Version
		rep.Duration = time.Since(start)
		return rep, r.serveIfIdle(ctx, snap)
	}
	newMeta, err := r.store.Write(ctx, b)
	if err != nil {
		return nil, fmt.Errorf("selector: write: %w", err)
	}
	ix, err := buildIndex(newMeta, cal, emb, lex, r.sameLex(), recs, sh)
	if err != nil {
		return nil, err
	}
	r.cur.Store(ix)
	rep.Version = newMeta.Version
	rep.Duration = time.Since(start)
	if dropFit {
		attrs := []any{"fitted_with", snap.Meta.Embedder.Detail(), "embedder", newMeta.Embedder.Detail()}
		if l := snap.Meta.Lexical; l.Kind != "" && l != snap.Meta.Embedder {
			attrs = append(attrs, "lexical_fitted_with", l.Detail(), "lexical", newMeta.Lexical.Detail())
		}
		r.cfg.Logger.Warn("fitted calibration dropped: it was fitted with other embedders; run fit again", attrs...)
	}
	r.cfg.Logger.Info("catalog written", "version", rep.Version, "tools", rep.Tools, "added", len(rep.Added),
		"updated", len(rep.Updated), "removed", len(rep.Removed), "embedded", rep.Embedded, "duration", rep.Duration)
	return rep, nil
}

// hasExamples reports whether any record has examples.
func hasExamples(recs []habilis.Record) bool {
	return slices.ContainsFunc(recs, func(r habilis.Record) bool { return len(r.Tool.Examples) > 0 })
}

// background returns the background requests embedded for a catalog of
// n tools, at most maxBackgroundScores / n of them. A model embedder's
// vectors are kept for the next write; a corpus embedder's depend on the
// catalog and are made anew.
func (r *Router) background(ctx context.Context, emb, lex habilis.Embedder, n int) (*backgroundVectors, error) {
	m := max(32, maxBackgroundScores/max(n, 1))
	if _, corpus := emb.(habilis.CorpusEmbedder); !corpus && r.bg != nil && r.bg.info == emb.Info() && len(r.bg.q) == min(m, len(backgroundRequests())) {
		bv := &backgroundVectors{info: r.bg.info, q: r.bg.q, lexVec: make([]habilis.Vector, len(r.bg.q))}
		if lex != nil {
			vs, err := lex.Embed(ctx, backgroundRequests()[:len(bv.q)], habilis.Query)
			if err != nil {
				return nil, fmt.Errorf("selector: embed the background lexically: %w", err)
			}
			bv.lexVec = vs
		}
		return bv, nil
	}
	bv, err := embedBackground(ctx, emb, lex, r.sameLex(), m)
	if err != nil {
		return nil, err
	}
	if _, corpus := emb.(habilis.CorpusEmbedder); !corpus {
		r.bg = bv
	}
	return bv, nil
}

func (r *Router) embedAll(ctx context.Context, emb habilis.Embedder, texts []string, report func(int)) ([]habilis.Vector, error) {
	out := make([]habilis.Vector, 0, len(texts))
	for lo := 0; lo < len(texts); lo += r.cfg.BatchSize {
		hi := min(lo+r.cfg.BatchSize, len(texts))
		vs, err := emb.Embed(ctx, texts[lo:hi], habilis.Document)
		if err != nil {
			return nil, fmt.Errorf("selector: embed with %s: %w", emb.Info(), err)
		}
		if len(vs) != hi-lo {
			return nil, fmt.Errorf("selector: embed with %s: %d vectors for %d texts: %w", emb.Info(), len(vs), hi-lo, habilis.ErrUnavailable)
		}
		out = append(out, vs...)
		report(hi - lo)
	}
	return out, nil
}

// checkDim refuses vectors whose form does not match the embedder's info.
func checkDim(info habilis.EmbedderInfo, vs []habilis.Vector) error {
	for _, v := range vs {
		if v.IsZero() {
			continue
		}
		if info.Dim > 0 && len(v.Dense) != info.Dim {
			return fmt.Errorf("selector: embedder %s returned a vector of dimension %d: %w", info, len(v.Dense), habilis.ErrEmbedderMismatch)
		}
		if info.Dim == 0 && v.Dense != nil {
			return fmt.Errorf("selector: embedder %s returned dense vectors but reports no dimension: %w", info, habilis.ErrEmbedderMismatch)
		}
	}
	return nil
}

// shape computes a record's centroid and radius from its example vectors.
func shape(rec *habilis.Record) {
	rec.Centroid, rec.Radius, rec.HasRadius, rec.RadiusExample = habilis.Vector{}, 0, false, ""
	var vs []habilis.Vector
	for _, v := range rec.ExampleVectors {
		if !v.IsZero() {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return
	}
	rec.Centroid = mean(vs)
	if len(vs) < 2 {
		return
	}
	rec.HasRadius = true
	first := true
	for k, v := range rec.ExampleVectors {
		if v.IsZero() {
			continue
		}
		if s := dot(v, rec.Centroid); first || s < rec.Radius {
			rec.Radius, rec.RadiusExample, first = s, rec.Tool.Examples[k], false
		}
	}
}

// serveIfIdle builds the index of the stored catalog when the router has
// none yet (a write that changed nothing on a router being opened).
func (r *Router) serveIfIdle(ctx context.Context, snap *habilis.Snapshot) error {
	if r.cur.Load() != nil {
		return nil
	}
	ix, err := r.restore(ctx, snap)
	if err != nil {
		return err
	}
	r.cur.Store(ix)
	return nil
}

// unchanged reports whether every new record's tool is stored with the
// same definition.
func unchanged(recs []habilis.Record, old map[string]*habilis.Record) bool {
	for i := range recs {
		o := old[recs[i].Tool.Name]
		if o == nil || o.Hash != recs[i].Hash {
			return false
		}
	}
	return true
}

// sameRecord reports whether two records would store the same thing.
func sameRecord(a, b *habilis.Record) bool {
	if a.Hash != b.Hash || a.Margin != b.Margin || a.Radius != b.Radius || a.HasRadius != b.HasRadius {
		return false
	}
	if !sameVector(a.DescriptionVector, b.DescriptionVector) || !sameVector(a.DocumentVector, b.DocumentVector) || !sameVector(a.Centroid, b.Centroid) {
		return false
	}
	if len(a.ExampleVectors) != len(b.ExampleVectors) {
		return false
	}
	for i := range a.ExampleVectors {
		if !sameVector(a.ExampleVectors[i], b.ExampleVectors[i]) {
			return false
		}
	}
	return true
}

func sameVector(a, b habilis.Vector) bool {
	return slices.Equal(a.Dense, b.Dense) && slices.Equal(a.Indices, b.Indices) && slices.Equal(a.Values, b.Values)
}

func metaEqual(a, b habilis.CatalogMeta) bool {
	return a.Embedder == b.Embedder && a.Lexical == b.Lexical && slices.Equal(a.EmbedderState, b.EmbedderState) &&
		slices.Equal(a.LexicalState, b.LexicalState) && calibrationEqual(a.Calibration, b.Calibration)
}

// calibrationEqual compares two stored calibrations, taking numbers equal
// within a relative 1e-5: re-estimating an unchanged catalog may differ in
// the last bits (SIMD sums depend on memory alignment), and that is no
// change worth a new catalog version.
func calibrationEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	return near(x, y)
}

func near(x, y any) bool {
	switch xv := x.(type) {
	case float64:
		yv, ok := y.(float64)
		return ok && math.Abs(xv-yv) <= 1e-5*max(1, math.Abs(xv), math.Abs(yv))
	case map[string]any:
		yv, ok := y.(map[string]any)
		if !ok || len(xv) != len(yv) {
			return false
		}
		for k, v := range xv {
			if w, ok := yv[k]; !ok || !near(v, w) {
				return false
			}
		}
		return true
	case []any:
		yv, ok := y.([]any)
		if !ok || len(xv) != len(yv) {
			return false
		}
		for i := range xv {
			if !near(xv[i], yv[i]) {
				return false
			}
		}
		return true
	}
	return x == y
}
