package selector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/collision"
	"github.com/habilis-router/habilis/internal/suggest"
)

// A patched write (see patch.go) runs these phases over the index in
// force, whose version it checks is the store's, without reading the
// stored catalog:
//
//	plan     which tools change, which stored rows die, what the patch keeps
//	embed    the changed tools, with the embedders fitted to the catalog
//	derive   their centroids and gates, backgrounds and collisions (against
//	         every tool, through the index), the calibration's maps updated
//	commit   the records and the patch written, the patched index swapped in
//
// What it keeps from the last full write: the embedders' fitted
// statistics and the catalog-wide calibration (margin, thresholds,
// weights, noise floor), within patchLimit (patch.go).

// patchPlan is what a patched write changes.
type patchPlan struct {
	ix, base *index
	req      writeRequest
	start    time.Time
	rep      *LoadReport
	put      []habilis.Tool  // tools to embed: added or changed
	gone     map[string]bool // tools deleted or replaced
	dead     []string        // the base's tools dead after the write
	keep     []int           // rows of ix's patch that stay
}

// patchable reports whether a write of req to the catalog of ix can be a
// patch: a merge or delete to a large lexical catalog whose index the
// store keeps as ix holds it, with a calibration that needs nothing
// beyond what a patch carries.
func (r *Router) patchable(ix *index, req writeRequest) bool {
	if _, keeps := r.store.(habilis.IndexStore); !keeps || !littleEndian || ix == nil || r.indexStale.Load() {
		return false
	}
	if req.replace || req.calibration != nil || !ix.stored || ix.sh.tri == nil || ix.prior != nil || ix.cal.Weights.Example != 0 {
		return false
	}
	if m := r.cfg.Margin; m != nil && !ix.cal.GatesFitted() && *m != ix.cal.Margin {
		return false
	}
	return ix.n() > findMaxTools
}

// patchWrite writes req as a patch. It reports false, having written
// nothing, when the write cannot be one (patchable, a catalog the store
// holds at another version than ix, a patch that would pass
// patchLimit): the caller writes the whole catalog then.
func (r *Router) patchWrite(ctx context.Context, op string, req writeRequest) (*LoadReport, bool, error) {
	if err := r.check(); err != nil {
		return nil, true, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ix := r.cur.Load()
	if !r.patchable(ix, req) {
		return nil, false, nil
	}
	v, err := r.store.Version(ctx)
	if err != nil {
		return nil, true, err // the store's errors name it
	}
	if v != ix.meta.Version {
		return nil, false, nil
	}
	p, err := planPatch(ix, req, op)
	if err != nil {
		return nil, true, err
	}
	if len(p.put) == 0 && len(p.gone) == 0 {
		p.rep.Version = v
		p.report(ix)
		return p.rep, true, nil
	}
	if len(p.keep)+len(p.put)+len(p.dead) > patchLimit(len(p.base.tools)) ||
		ix.n()+len(p.rep.Added)-len(p.rep.Removed) <= findMaxTools {
		return nil, false, nil
	}
	rep, err := r.commitPatch(ctx, p)
	if errors.Is(err, habilis.ErrConflict) {
		return nil, false, nil
	}
	return rep, true, err
}

// planPatch is the plan phase. It returns ErrNotFound for a delete of a
// tool the catalog does not hold.
func planPatch(ix *index, req writeRequest, op string) (*patchPlan, error) {
	p := &patchPlan{ix: ix, base: ix.base, req: req, start: time.Now(), rep: &LoadReport{}, gone: map[string]bool{}}
	if p.base == nil {
		p.base = ix
	}
	for _, t := range req.tools {
		i, held := ix.byName[t.Name]
		if held {
			h, err := ix.defs.hash(i)
			if err != nil {
				return nil, err
			}
			if h == t.Hash() {
				continue
			}
			p.gone[t.Name] = true
			p.rep.Updated = append(p.rep.Updated, t.Name)
		} else {
			p.rep.Added = append(p.rep.Added, t.Name)
		}
		p.put = append(p.put, t)
	}
	for _, n := range req.deletes {
		if _, held := ix.byName[n]; !held {
			return nil, suggest.UnknownTool(n, ix.byName)
		}
		p.gone[n] = true
		p.rep.Removed = append(p.rep.Removed, n)
	}
	nb := len(p.base.tools)
	for i := range nb {
		if name := p.base.tools[i].name; ix.gone(i) || p.gone[name] {
			p.dead = append(p.dead, name)
		}
	}
	for j := nb; j < len(ix.tools); j++ {
		if !p.gone[ix.tools[j].name] {
			p.keep = append(p.keep, j)
		}
	}
	return p, nil
}

// commitPatch embeds and derives the patch's new tools, writes them with
// the patch and swaps the patched index in.
func (r *Router) commitPatch(ctx context.Context, p *patchPlan) (*LoadReport, error) {
	ix := p.ix
	r.step(StepEmbed)
	recs, err := r.embedTools(ctx, ix, p.put)
	if err != nil {
		return nil, err
	}
	p.rep.Embedded = len(p.put) * 2
	for _, t := range p.put {
		p.rep.Embedded += len(t.Examples)
	}
	r.step(StepCalibrate)
	n := ix.n() + len(p.rep.Added) - len(p.rep.Removed)
	bv, err := r.background(ctx, ix.emb, ix.lex, n)
	if err != nil {
		return nil, err
	}
	// A patched catalog has the lexical embedder alone (patchable), whose
	// evidence weighs its two scores equally: no document weight to learn.
	bgs, _ := backgroundGates(recs, newShared(recs, 0, true), bv, ix.lex != nil && ix.sameLex, false)
	r.step(StepCollisions)
	pairs, err := r.patchCollisions(ix, p.gone, recs)
	if err != nil {
		return nil, err
	}
	cal, info := p.calibration(bgs, pairs)
	raw, err := json.Marshal(cal)
	if err != nil {
		return nil, fmt.Errorf("encode calibration: %w", err)
	}
	meta := ix.meta
	meta.Calibration = raw
	r.step(StepIndex)
	rows, err := p.rows(recs, bgs)
	if err != nil {
		return nil, err
	}
	pix := buildPatch(meta, ix.cal, ix.embedders, rows)
	infoJSON, err := json.Marshal(info)
	if err != nil {
		return nil, fmt.Errorf("encode index patch: %w", err)
	}
	blob, err := encodeIndex(pix, ix.meta.Version+1, section{secPatch, infoJSON})
	if err != nil {
		return nil, err
	}
	r.step(StepWrite)
	b := &habilis.Batch{BaseVersion: ix.meta.Version, Put: recs, Delete: p.req.deletes, Meta: meta, IndexPatch: blob}
	newMeta, err := r.store.Write(ctx, b)
	if err != nil {
		return nil, err // the store's errors name it
	}
	pix.meta = newMeta
	next, err := combine(p.base, pix, info, newMeta)
	if err != nil {
		return nil, err
	}
	r.swap(next)
	p.rep.Version = newMeta.Version
	p.report(next)
	r.cfg.Logger.Info("catalog written as a patch of its index", "version", p.rep.Version, "tools", p.rep.Tools, "added", len(p.rep.Added),
		"updated", len(p.rep.Updated), "removed", len(p.rep.Removed), "patched", len(rows), "dead", len(info.Dead), "duration", p.rep.Duration)
	return p.rep, nil
}

// report completes the report from the index the write leaves in force.
func (p *patchPlan) report(ix *index) {
	rep := p.rep
	// By name, as a whole write reports them.
	slices.Sort(rep.Added)
	slices.Sort(rep.Updated)
	slices.Sort(rep.Removed)
	rep.Tools = ix.n()
	rep.Unchanged = rep.Tools - len(rep.Added) - len(rep.Updated)
	var counts []int
	for _, i := range ix.sorted() {
		k := ix.tools[i].examples
		rep.Examples += k
		if k == 0 {
			rep.Bare++
		} else {
			counts = append(counts, k)
		}
	}
	if len(counts) > 0 {
		slices.Sort(counts)
		rep.MedianExamples = counts[(len(counts)-1)/2]
	}
	rep.Duration = time.Since(p.start)
}

// embedTools returns the records of tools, embedded with ix's embedders
// (the lexical one is the main one: patchable), with their centroids,
// radii and margins.
func (r *Router) embedTools(ctx context.Context, ix *index, tools []habilis.Tool) ([]habilis.Record, error) {
	var texts []string
	for _, t := range tools {
		desc := descriptionText(t)
		texts = append(texts, desc, toolDocument(desc, t))
		texts = append(texts, t.Examples...)
	}
	vs, err := r.embedAll(ctx, ix.emb, texts, func(int) {})
	if err != nil {
		return nil, err
	}
	recs := make([]habilis.Record, len(tools))
	for i, t := range tools {
		rec := &recs[i]
		*rec = habilis.Record{Tool: t, Hash: t.Hash(), DescriptionVector: vs[0], DocumentVector: vs[1], ExampleVectors: vs[2 : 2+len(t.Examples)]}
		for k, v := range rec.ExampleVectors {
			rec.ExampleVectors[k] = exampleVector(v)
		}
		vs = vs[2+len(t.Examples):]
		shape(rec)
		rec.Margin = ix.cal.Margin
		if t.Margin != nil {
			rec.Margin = *t.Margin
		}
	}
	return recs, nil
}

// patchCollisions returns the high-severity collisions of recs with each
// other and with the tools of ix that stay: centroid pairs at
// collision.HighSimilarity, as collides finds them in a catalog above
// findMaxTools, each tool's centroid scored against every other through
// the index. Each pair is given once, as two names.
func (r *Router) patchCollisions(ix *index, gone map[string]bool, recs []habilis.Record) ([][2]string, error) {
	high, err := collision.HighSimilarity(collision.Options{Threshold: r.cfg.CollisionThreshold})
	if err != nil {
		return nil, err
	}
	var pairs [][2]string
	s := new(scratch)
	s.size(len(ix.tools))
	for a := range recs {
		c := recs[a].Centroid
		if c.IsZero() {
			continue
		}
		if !ix.sh.scoreAll(c, c, s) {
			return nil, errDamaged
		}
		for b := range ix.tools {
			t := &ix.tools[b]
			if t.examples > 0 && !ix.gone(b) && !gone[t.name] && s.sig[b][sigCent] >= high {
				pairs = append(pairs, [2]string{recs[a].Tool.Name, t.name})
			}
		}
		for b := a + 1; b < len(recs); b++ {
			if !recs[b].Centroid.IsZero() && dot(c, recs[b].Centroid) >= high {
				pairs = append(pairs, [2]string{recs[a].Tool.Name, recs[b].Tool.Name})
			}
		}
	}
	return pairs, nil
}

// calibration returns the catalog's calibration after the write (the
// stored one, its backgrounds and collisions updated) and the patch's
// info.
func (p *patchPlan) calibration(bgs map[string]Background, pairs [][2]string) (Calibration, patchInfo) {
	cal := p.ix.calibration()
	bg := maps.Clone(cal.Background)
	col := maps.Clone(cal.Collides)
	if bg == nil {
		bg = map[string]Background{}
	}
	if col == nil {
		col = map[string][]string{}
	}
	// Lists are cloned before they change: the stored calibration's are
	// read by selections meanwhile.
	touched := map[string]bool{}
	for name := range p.gone {
		delete(bg, name)
		for _, o := range col[name] {
			col[o] = slices.DeleteFunc(slices.Clone(col[o]), func(x string) bool { return x == name })
			touched[o] = true
		}
		delete(col, name)
	}
	maps.Copy(bg, bgs)
	for _, pr := range pairs {
		col[pr[0]] = append(slices.Clone(col[pr[0]]), pr[1])
		col[pr[1]] = append(slices.Clone(col[pr[1]]), pr[0])
		touched[pr[0]], touched[pr[1]] = true, true
	}
	for name := range touched {
		cs := col[name]
		slices.Sort(cs)
		if cs = slices.Compact(cs); len(cs) == 0 {
			delete(col, name)
		} else {
			col[name] = cs
		}
	}
	cal.Background, cal.Collides = bg, col
	return cal, p.info(col)
}

// info returns the patch's info: its base, dead tools, and the collision
// lists of col that differ from the base's.
func (p *patchPlan) info(col map[string][]string) patchInfo {
	info := patchInfo{Base: p.ix.meta.Version, Dead: p.dead, Collides: map[string][]string{}}
	if p.ix.base != nil {
		info.Base = p.ix.baseVersion
	}
	base := p.base
	dead := make(map[string]bool, len(p.dead))
	for _, n := range p.dead {
		dead[n] = true
	}
	for i := range base.tools {
		name := base.tools[i].name
		if !dead[name] && !slices.Equal(col[name], base.collides[i]) {
			info.Collides[name] = nonNil(col[name])
		}
	}
	for name, cs := range col {
		if _, inBase := base.byName[name]; !inBase || dead[name] {
			info.Collides[name] = cs
		}
	}
	return info
}

// rows returns the patch's rows: those of ix's patch that stay, read
// back from its index, and recs.
func (p *patchPlan) rows(recs []habilis.Record, bgs map[string]Background) ([]patchRow, error) {
	ix := p.ix
	var rows []patchRow
	if len(p.keep) > 0 {
		cents, descs, docs, err := ix.sh.patch.tri.vectors()
		if err != nil {
			return nil, err
		}
		nb := len(p.base.tools)
		for _, j := range p.keep {
			d, err := ix.defs.def(j)
			if err != nil {
				return nil, err
			}
			row := patchRow{info: ix.tools[j], def: d, cent: cents[j-nb], desc: descs[j-nb], doc: docs[j-nb],
				sumNorm: ix.sh.sumNorm[j], rocchioNorm: ix.sh.rocchioNorm[j]}
			if ix.hasBackground != nil && ix.hasBackground[j] {
				row.background, row.hasBackground = ix.background[j], true
			}
			rows = append(rows, row)
		}
	}
	for i := range recs {
		rec := &recs[i]
		row := patchRow{info: toolInfo{name: rec.Tool.Name, examples: len(rec.Tool.Examples), radius: rec.Radius, hasRadius: rec.HasRadius, margin: rec.Margin},
			def: toolDef{Tool: rec.Tool, Hash: rec.Hash, RadiusExample: rec.RadiusExample}, cent: rec.Centroid, desc: rec.DescriptionVector, doc: rec.DocumentVector}
		row.sumNorm, row.rocchioNorm = rocchioNorms(rec)
		row.background, row.hasBackground = bgs[rec.Tool.Name]
		rows = append(rows, row)
	}
	return rows, nil
}
