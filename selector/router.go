// Package selector indexes a catalog of tools and selects the tools that
// fit a request: per tool a description vector, the centroid of its
// examples, its radius (the least similar example), a margin and a
// lexical vector of its whole document; selection by description, by
// centroid or by a hybrid of several signals, each mode with gates that
// let the router abstain (radius − margin in centroid mode), calibrated on
// the catalog and on a background of generic requests (background.go).
//
// A Router owns the write path (embedding, calibration, an atomic store
// write) and an immutable in-memory index that it swaps whole after every
// write, its own or, with Follow, another process's, so readers never see
// half a catalog.
package selector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/collision"
	"github.com/habilis-router/habilis/internal/suggest"
	"github.com/habilis-router/habilis/store/memstore"
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
	// Progress, when set, is told how every write and New advance: as
	// each step starts (done and total 0) and, while texts are embedded,
	// how many of how many are (see Step). It is called from the
	// goroutine doing the work and must return quickly.
	Progress func(step Step, done, total int)
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
	// indexStale reports a store that keeps indexes (an IndexStore)
	// without a usable one for the catalog served: the next write stores
	// one even when the catalog is unchanged.
	indexStale atomic.Bool
	// unused, when set, logs why the stored index was not used
	// (openStored), once the records it is built from are read instead.
	unused func()
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
		return nil, fmt.Errorf("no embedder: %w", habilis.ErrInvalid)
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
	r.step(StepRead)
	ix, err := r.openStored(ctx)
	if err != nil {
		return nil, err
	}
	if ix != nil {
		r.cur.Store(ix)
		return r, nil
	}
	snap, err := store.Snapshot(ctx)
	if err != nil {
		return nil, err // the store's errors name it
	}
	r.sayUnused()
	if err := r.mismatch(snap.Meta); err != nil {
		if !cfg.Reindex {
			return nil, err
		}
		tools := make([]habilis.Tool, len(snap.Records))
		for i, rec := range snap.Records {
			tools[i] = rec.Tool
		}
		if _, err := r.write(ctx, snap, writeRequest{tools: tools, replace: true}); err != nil {
			return nil, err
		}
		return r, nil
	}
	r.step(StepIndex)
	ix, err = r.restore(ctx, snap)
	if err != nil {
		return nil, err
	}
	r.cur.Store(ix)
	return r, nil
}

// Step is a step of opening a router or of a write, for progress reports.
type Step string

// The steps, in the order a write takes them. Opening reads the store and,
// when it holds no index this release reads, indexes it; a write reads the
// store, embeds what changed, calibrates, analyses collisions, indexes the
// new catalog and writes the store with its index.
const (
	StepRead       Step = "reading the store"
	StepEmbed      Step = "embedding"
	StepCalibrate  Step = "calibrating"
	StepCollisions Step = "analysing collisions"
	StepIndex      Step = "indexing"
	StepWrite      Step = "writing the store"
)

// step reports the start of a step.
func (r *Router) step(s Step) {
	if r.cfg.Progress != nil {
		r.cfg.Progress(s, 0, 0)
	}
}

// sayUnused logs why openStored did not use the stored index, if it
// did not.
func (r *Router) sayUnused() {
	if r.unused != nil {
		r.unused()
		r.unused = nil
	}
}

// openStored returns the index stored with the catalog, read in place,
// or nil when the store keeps none that this router can use: a store
// that keeps no indexes, an empty catalog, one made by other embedders
// (which the caller refuses or re-embeds), or an index missing, damaged,
// of another layout or of another version of the catalog, in which case
// the caller builds it from the records, and the next write stores it.
func (r *Router) openStored(ctx context.Context) (*index, error) {
	is, ok := r.store.(habilis.IndexStore)
	if !ok {
		return nil, nil
	}
	st, err := is.Index(ctx)
	if err != nil {
		return nil, err // the store's errors name it
	}
	if st.Meta.Version == 0 || r.mismatch(st.Meta) != nil {
		st.Release()
		return nil, nil
	}
	r.indexStale.Store(true)
	if st.Data == nil {
		st.Release()
		r.cfg.Logger.Info("the store holds no index of its catalog (written by an earlier release?): building it from the records; the next write stores it",
			"version", st.Meta.Version)
		return nil, nil
	}
	emb, err := r.restoreEmbedders(st.Meta)
	if err != nil {
		st.Release()
		return nil, err
	}
	ix, err := decodeStored(st.Data, st.Patch, st.Meta, emb)
	if errors.Is(err, errWeightsExamples) {
		// Sound, and stored again by the next write as it is: nothing
		// for a write to mend.
		st.Release()
		r.indexStale.Store(false)
		return nil, nil
	}
	if err != nil {
		st.Release()
		// Said once the records are read: when they cannot be either
		// (their vectors are in the index, boltstore's format 3), the
		// caller's error says it all.
		r.unused = func() {
			r.cfg.Logger.Warn("stored index not used: building it from the records; the next write stores it", "version", st.Meta.Version, "reason", err)
		}
		return nil, nil
	}
	r.indexStale.Store(false)
	ix.pin = &pin{release: st.Release}
	return ix, nil
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
		return e
	}
	if r.lex != nil && meta.Lexical.Kind != "" && meta.Lexical.Algorithm() != r.lex.Info().Algorithm() {
		lex := r.lex.Info()
		e.StoredLexical, e.ConfiguredLexical = &meta.Lexical, &lex
		return e
	}
	return nil
}

// restore builds the index of a stored catalog, with the embedders fitted
// as they were when it was written.
func (r *Router) restore(ctx context.Context, snap *habilis.Snapshot) (*index, error) {
	emb, err := r.restoreEmbedders(snap.Meta)
	if err != nil {
		return nil, err
	}
	cal, err := decodeCalibration(snap.Meta.Calibration)
	if err != nil {
		return nil, err
	}
	return buildIndex(snap.Meta, cal, emb, snap.Records, nil)
}

func (r *Router) sameLex() bool {
	ce, ok := r.base.(habilis.CorpusEmbedder)
	return ok && r.lex != nil && ce == r.lex
}

// restoreEmbedders returns the router's embedders fitted with the states
// stored in meta.
func (r *Router) restoreEmbedders(meta habilis.CatalogMeta) (embedders, error) {
	e := embedders{emb: r.base, sameLex: r.sameLex()}
	if ce, ok := r.base.(habilis.CorpusEmbedder); ok && meta.EmbedderState != nil {
		var err error
		if e.emb, err = ce.Restore(meta.EmbedderState); err != nil {
			return e, fmt.Errorf("the stored embedder state does not decode (%v): %w", err, habilis.ErrDamaged)
		}
	}
	switch {
	case r.lex == nil:
	case e.sameLex:
		e.lex = e.emb
	case meta.LexicalState != nil:
		lex, err := r.lex.Restore(meta.LexicalState)
		if err != nil {
			return e, fmt.Errorf("the stored lexical embedder state does not decode (%v): %w", err, habilis.ErrDamaged)
		}
		e.lex = lex
	default:
		e.lex = r.lex
	}
	return e, nil
}

func decodeCalibration(raw json.RawMessage) (Calibration, error) {
	var c Calibration
	if len(raw) == 0 {
		return Calibration{Weights: defaultWeights, Margin: defaultMargin, MarginSource: "default"}, nil
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("the stored calibration does not decode (%v): %w", err, habilis.ErrDamaged)
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
// no-tool requests through, as measured on MetaTool's catalog cut to 4-10
// examples a tool (docs/quality.md, Earlier releases).
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
			return nil, fmt.Errorf("tool %q is given twice: %w", t.Name, habilis.ErrInvalid)
		}
		seen[t.Name] = true
	}
	start := time.Now()
	if opts.Merge {
		if rep, done, err := r.patchWrite(ctx, "load", writeRequest{tools: tools}); done {
			return rep, err
		}
	}
	rep, err := r.update(ctx, "load", func(snap *habilis.Snapshot) (*LoadReport, error) {
		return r.write(ctx, snap, writeRequest{tools: tools, replace: !opts.Merge, progress: opts.Progress})
	})
	if rep != nil {
		rep.Duration = time.Since(start) // reading the stored catalog too
	}
	return rep, err
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
		r.step(StepRead)
		snap, err := r.store.Snapshot(ctx)
		if err != nil {
			return nil, err // the store's errors name it
		}
		rep, err := write(snap)
		if !errors.Is(err, habilis.ErrConflict) || attempt == writeAttempts || ctx.Err() != nil {
			return rep, err
		}
		r.cfg.Logger.Info("another writer committed first; computing the write again", "op", op, "base", snap.Meta.Version, "attempt", attempt)
	}
}

// Delete removes tools by name in one write. Unknown names return
// ErrNotFound and change nothing; a name given twice is deleted once.
func (r *Router) Delete(ctx context.Context, names []string) (*LoadReport, error) {
	// The store refuses a batch that deletes a tool twice: a patched
	// write, which hands the names on, failed where a whole one did not.
	names = distinct(names)
	if rep, done, err := r.patchWrite(ctx, "delete", writeRequest{deletes: names}); done {
		return rep, err
	}
	return r.update(ctx, "delete", func(snap *habilis.Snapshot) (*LoadReport, error) {
		have := make(map[string]bool, len(snap.Records))
		for _, rec := range snap.Records {
			have[rec.Tool.Name] = true
		}
		for _, n := range names {
			if !have[n] {
				return nil, suggest.UnknownTool(n, have)
			}
		}
		return r.write(ctx, snap, writeRequest{deletes: names})
	})
}

// SetCalibration stores a new calibration (from fit) and re-derives the
// margins of every tool from it.
func (r *Router) SetCalibration(ctx context.Context, cal Calibration) (*LoadReport, error) {
	return r.update(ctx, "calibrate", func(snap *habilis.Snapshot) (*LoadReport, error) {
		return r.write(ctx, snap, writeRequest{calibration: &cal})
	})
}

// Trial returns a router configured as r over a new in-memory store,
// holding tools: a catalog to try settings on (fit's) without writing r's
// store. The caller closes it.
func (r *Router) Trial(ctx context.Context, tools []habilis.Tool) (*Router, error) {
	cfg := r.cfg
	cfg.Reindex = false
	t, err := New(ctx, memstore.New(), cfg)
	if err != nil {
		return nil, err
	}
	if _, err := t.Load(ctx, tools, LoadOptions{}); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// Calibration returns the calibration in force.
func (r *Router) Calibration() Calibration { return r.cur.Load().calibration() }

// StoredCalibrationError returns the error (ErrDamaged) of the catalog's
// stored calibration when it does not decode, else nil. A router opened
// from a stored index serves the index's copy of the calibration, which
// its checksum vouches for, and reads the catalog's own only to write
// (which refuses it), for Collisions and in CheckSnapshot: commands that
// show the calibration without those ask here, to warn.
func (r *Router) StoredCalibrationError() error {
	ix := r.cur.Load()
	if !ix.stored {
		return nil // built from the records, after decoding it
	}
	_, err := decodeCalibration(ix.meta.Calibration)
	return err
}

// Version returns the catalog version the router serves.
func (r *Router) Version() uint64 { return r.cur.Load().meta.Version }

// Embedder returns the embedder fitted to the current catalog.
func (r *Router) Embedder() habilis.Embedder { return r.cur.Load().emb }

// Tools returns the catalog's tools, sorted by name. A tool whose stored
// definition cannot be read comes back with its name alone.
func (r *Router) Tools() []habilis.Tool {
	ix, done, err := r.acquire()
	defer done()
	if err != nil {
		return nil
	}
	out := make([]habilis.Tool, 0, ix.n())
	for _, i := range ix.sorted() {
		d, err := ix.defs.def(int(i))
		if err != nil {
			d.Tool = habilis.Tool{Name: ix.tools[i].name}
		}
		out = append(out, d.Tool)
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
	// Threshold is the tool's gate in centroid mode (Gates["centroid"]),
	// kept under its first name.
	Threshold float32 `json:"threshold"`
	// Gates holds the tool's gate in each mode ("description", "centroid",
	// "hybrid"): what the gate score of a match in that mode must reach.
	// A tool without examples is gated on its description score in every
	// mode (but in hybrid mode on its evidence with a model embedder that
	// weighs the lexical document); one with examples on its description
	// score in description mode, its centroid score in centroid mode and
	// its evidence in hybrid mode. With fewer than MinHeldOutExamples
	// examples, hybrid mode also lets through what it would without them.
	Gates map[habilis.Mode]float32 `json:"gates"`
	// GateScores names, for each mode, the score its gate is on:
	// "description score", "centroid score" or "evidence".
	GateScores map[habilis.Mode]string `json:"gate_scores"`
	// FallbackGate, for a tool with fewer than MinHeldOutExamples
	// examples, is the gate it would have in hybrid mode without them,
	// which it passes too, on FallbackGateScore: its description score, or
	// its evidence with a model embedder that weighs the lexical document.
	// 0 and "" otherwise.
	FallbackGate      float32  `json:"fallback_gate,omitempty"`
	FallbackGateScore string   `json:"fallback_gate_score,omitempty"`
	CollidesWith      []string `json:"collides_with"`
}

// Has reports whether the catalog holds a tool named name: Tool's check
// without its answer, nor the suggestions its error looks for, for a
// request path that only asks (the chat proxy asks for every tool a
// request offers).
func (r *Router) Has(name string) bool {
	ix, done, err := r.acquire()
	defer done()
	if err != nil || ix == nil {
		return false
	}
	_, ok := ix.byName[name]
	return ok
}

// Tool returns one tool with its gate, or an UnknownToolError (ErrNotFound)
// suggesting the names name most likely misspells.
func (r *Router) Tool(name string) (*ToolInfo, error) {
	ix, done, err := r.acquire()
	defer done()
	if err != nil {
		return nil, err
	}
	i, ok := ix.byName[name]
	if !ok {
		return nil, suggest.UnknownTool(name, ix.byName)
	}
	d, err := ix.defs.def(i)
	if err != nil {
		return nil, err
	}
	t := &ix.tools[i]
	thr, radius, src := ix.gate(i)
	gates := map[habilis.Mode]float32{habilis.ModeDescription: ix.descriptionGate(i), habilis.ModeCentroid: thr, habilis.ModeHybrid: ix.descriptionGate(i)}
	if t.examples > 0 || ix.bareEvidence(i) {
		gates[habilis.ModeHybrid] = ix.hybridGate(i)
	}
	info := &ToolInfo{Tool: d.Tool, Hash: d.Hash, Radius: radius, RadiusSource: src, RadiusExample: d.RadiusExample,
		Margin: t.margin, Threshold: thr, Gates: gates, GateScores: ix.gateScores(i), CollidesWith: nonNil(ix.collides[i])}
	if t.examples > 0 && t.examples < MinHeldOutExamples {
		info.FallbackGate, info.FallbackGateScore = ix.bareThreshold(i), ix.bareScore(i)
	}
	return info, nil
}

// Collisions analyses the stored catalog with its examples (leave-one-out
// leaks included). Above collision.DefaultMaxTools tools with examples,
// where scoring every example against every tool would take minutes, it
// reports the centroid pairs above the threshold alone (collision.Pairs)
// and says so in a warning.
func (r *Router) Collisions(ctx context.Context, threshold float32) ([]habilis.Collision, error) {
	return r.collisions(ctx, threshold, collision.DefaultMaxTools)
}

// collisions is Collisions with the largest catalog analysed with leaks.
func (r *Router) collisions(ctx context.Context, threshold float32, maxLeaks int) ([]habilis.Collision, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	snap, err := r.store.Snapshot(ctx)
	if err != nil {
		return nil, err // the store's errors name it
	}
	cal, err := decodeCalibration(snap.Meta.Calibration)
	if err != nil {
		return nil, err
	}
	if threshold == 0 {
		threshold = r.cfg.CollisionThreshold
	}
	opts := collisionOptions(snap.Records, cal, threshold, maxLeaks, r.sameLex())
	find := collision.Find
	if n := withCentroid(snap.Records); n > maxLeaks {
		r.cfg.Logger.Warn("collisions: too many tools to score every example against every tool: centroid pairs only, without example leaks",
			"tools_with_examples", n, "limit", maxLeaks)
		find = collision.Pairs
	}
	cols, err := find(snap.Records, opts)
	if err != nil {
		return nil, fmt.Errorf("collisions: %w", err)
	}
	return cols, nil
}

// withCentroid counts the records with a centroid: the tools with examples.
func withCentroid(recs []habilis.Record) int {
	n := 0
	for i := range recs {
		if !recs[i].Centroid.IsZero() {
			n++
		}
	}
	return n
}

// Records returns the stored records with their vectors, for analysis
// (collisions, projections, evaluation).
func (r *Router) Records(ctx context.Context) ([]habilis.Record, error) {
	snap, err := r.store.Snapshot(ctx)
	if err != nil {
		return nil, err // the store's errors name it
	}
	return snap.Records, nil
}

// Close marks the router closed; it does not close the store, which the
// caller owns.
func (r *Router) Close() error {
	r.closed.Store(true)
	r.cur.Load().retire()
	return nil
}

func (r *Router) check() error {
	if r.closed.Load() {
		return fmt.Errorf("router: %w", habilis.ErrClosed)
	}
	return nil
}

// distinct returns names without repeats, in the order of their first
// appearance.
func distinct(names []string) []string {
	seen := make(map[string]bool, len(names))
	out := make([]string, 0, len(names))
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
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
				return nil, fmt.Errorf("embed the background lexically: %w", err)
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
			return nil, err // the embedders' errors name them
		}
		if len(vs) != hi-lo {
			return nil, fmt.Errorf("embed with %s: %d vectors for %d texts: %w", emb.Info(), len(vs), hi-lo, habilis.ErrUnavailable)
		}
		out = append(out, vs...)
		report(hi - lo)
	}
	return out, nil
}

// embedSlots is embedAll of texts, except that a text with a group
// (groups[i] not nil) is embedded by joined, from the analysis fitting
// made of the texts it joins, to the vector emb gives the text.
func (r *Router) embedSlots(ctx context.Context, emb habilis.Embedder, texts []string, groups [][]int,
	joined func(context.Context, [][]int) ([]habilis.Vector, error), report func(int)) ([]habilis.Vector, error) {
	if joined == nil {
		return r.embedAll(ctx, emb, texts, report)
	}
	out := make([]habilis.Vector, len(texts))
	var plain []int // the texts without a group
	for lo := 0; lo < len(texts); lo += r.cfg.BatchSize {
		hi := min(lo+r.cfg.BatchSize, len(texts))
		var batch [][]int
		var at []int
		for i := lo; i < hi; i++ {
			if groups[i] == nil {
				plain = append(plain, i)
				continue
			}
			batch, at = append(batch, groups[i]), append(at, i)
		}
		vs, err := joined(ctx, batch)
		if err != nil {
			return nil, err // the embedders' errors name them
		}
		for k, i := range at {
			out[i] = vs[k]
		}
		report(len(batch))
	}
	rest := make([]string, len(plain))
	for k, i := range plain {
		rest[k] = texts[i]
	}
	vs, err := r.embedAll(ctx, emb, rest, report)
	if err != nil {
		return nil, err
	}
	for k, i := range plain {
		out[i] = vs[k]
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
			return fmt.Errorf("embedder %s returned a vector of dimension %d: %w", info, len(v.Dense), habilis.ErrEmbedderMismatch)
		}
		if info.Dim == 0 && v.Dense != nil {
			return fmt.Errorf("embedder %s returned dense vectors but reports no dimension: %w", info, habilis.ErrEmbedderMismatch)
		}
	}
	return nil
}

// shape computes a record's centroid and radius from its example vectors.
func shape(rec *habilis.Record) { shapeSum(rec) }

// shapeSum is shape, and returns the sum of the record's example vectors'
// dot products with its centroid, in example order (0 without a
// centroid): the sum rocchioNorms starts from, which shape computes on
// its way to the radius.
func shapeSum(rec *habilis.Record) float32 {
	rec.Centroid, rec.Radius, rec.HasRadius, rec.RadiusExample = habilis.Vector{}, 0, false, ""
	var vs []habilis.Vector
	for _, v := range rec.ExampleVectors {
		if !v.IsZero() {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return 0
	}
	rec.Centroid = mean(vs)
	var sum float32 // from +0, as rocchioNorms's: the zero examples it adds add nothing
	if len(vs) < 2 {
		return sum + dot(vs[0], rec.Centroid)
	}
	rec.HasRadius = true
	first := true
	for k, v := range rec.ExampleVectors {
		if v.IsZero() {
			continue
		}
		s := dot(v, rec.Centroid)
		sum += s
		if first || s < rec.Radius {
			rec.Radius, rec.RadiusExample, first = s, rec.Tool.Examples[k], false
		}
	}
	return sum
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
