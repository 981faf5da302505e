package selector

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/layout"
	"github.com/habilis-router/habilis/internal/vec"
)

// A write of a few tools to a large catalog patches the stored index
// instead of rebuilding it (habilis.Batch.IndexPatch): the patch is a
// small index of its own, in the stored layout, of the tools written since
// the stored index was, with the stored tools those writes deleted or
// replaced, and the collision lists they changed. Selection scores the
// stored rows and the patch's in one pass; the stored rows of tools the
// patch deleted or replaced are dead, never ranked. Each patched write
// rewrites the patch whole, so its cost grows with the tools written
// since the last full write, which patchLimit bounds.

// secPatch is the section of a patch that holds its patchInfo.
const secPatch = layout.SecPatch

// patchInfo is what a patch says beyond its tools.
type patchInfo struct {
	// Base is the catalog version of the stored index the patch applies
	// to.
	Base uint64 `json:"base"`
	// Dead names the stored index's tools the patch deletes or replaces.
	Dead []string `json:"dead,omitempty"`
	// Collides holds the collision lists that differ from the stored
	// index's: of its tools whose lists the patch changed, and of the
	// patch's own tools.
	Collides map[string][]string `json:"collides,omitempty"`
}

// patchLimit is how many tools (in the patch, and dead in the stored
// index) a patch of a stored index of n tools may hold; a write that
// would pass it writes the whole index again, refitting the embedders'
// statistics and recalibrating the catalog. Between full writes, the
// statistics and the catalog-wide calibration are those of the last full
// write: with at most n/64 tools written since, at most 1/64 of the
// catalog's documents differ from those they were estimated on.
func patchLimit(n int) int { return n / 64 }

// decodeStored returns the index a stored layout and its patch (nil for
// none) describe for a catalog of meta and the embedders emb.
func decodeStored(data, patch []byte, meta habilis.CatalogMeta, emb embedders) (*index, error) {
	if patch == nil {
		return decodeAt(data, meta.Version, meta, emb)
	}
	info, err := readPatchInfo(patch)
	if err != nil {
		return nil, err
	}
	base, err := decodeAt(data, info.Base, meta, emb)
	if err != nil {
		return nil, err
	}
	pix, err := decodeAt(patch, meta.Version, meta, emb)
	if err != nil {
		return nil, fmt.Errorf("patch: %w", err)
	}
	return combine(base, pix, info, meta)
}

// readPatchInfo returns a stored patch's patchInfo.
func readPatchInfo(patch []byte) (patchInfo, error) {
	var info patchInfo
	l, err := parseLayout(patch)
	if err != nil {
		return info, fmt.Errorf("patch: %w", err)
	}
	raw, ok := l.Secs[secPatch]
	if !ok {
		return info, fmt.Errorf("%w: a patch without its section", errLayout)
	}
	if err := json.Unmarshal(raw, &info); err != nil {
		return info, fmt.Errorf("%w: patch: %v", errLayout, err)
	}
	return info, nil
}

// combine returns base patched with pix: base's rows, then pix's.
func combine(base, pix *index, info patchInfo, meta habilis.CatalogMeta) (*index, error) {
	if base.prior != nil || pix.prior != nil || base.sh.tri == nil || pix.sh.tri == nil {
		return nil, fmt.Errorf("%w: a patch of an index with priors or without a merged space", errLayout)
	}
	nb, np := len(base.tools), len(pix.tools)
	cal := base.cal
	cal.Prior, cal.Background, cal.Collides = nil, nil, nil
	ix := &index{meta: meta, cal: cal, embedders: base.embedders, stored: true, pin: base.pin, generic: base.generic, base: base, baseVersion: info.Base}
	ix.tools = append(slices.Clip(base.tools), pix.tools...)
	ix.dead = make([]bool, nb+np)
	for _, name := range info.Dead {
		i, ok := base.byName[name]
		if !ok {
			return nil, fmt.Errorf("%w: the patch deletes %q, which the index does not hold", errLayout, name)
		}
		ix.dead[i] = true
	}
	ix.byName = make(map[string]int, nb+np)
	for i := range base.tools {
		if !ix.dead[i] {
			ix.byName[base.tools[i].name] = i
		}
	}
	for j := range pix.tools {
		name := pix.tools[j].name
		if _, dup := ix.byName[name]; dup {
			return nil, fmt.Errorf("%w: the patch adds %q, which the index holds", errLayout, name)
		}
		ix.byName[name] = nb + j
	}
	ix.live = len(ix.byName)
	ix.order = mergeOrder(ix, nb)
	ix.place = make([]int32, nb+np)
	for p, i := range ix.order {
		ix.place[i] = int32(p)
	}
	for _, i := range base.bare {
		if !ix.dead[i] {
			ix.bare = append(ix.bare, i)
		}
	}
	for _, j := range pix.bare {
		ix.bare = append(ix.bare, int32(nb)+j)
	}
	ix.defs = patchedDefs{base: base.defs, patch: pix.defs, split: nb}
	ix.sh = &shared{sumNorm: slices.Concat(base.sh.sumNorm, pix.sh.sumNorm), rocchioNorm: slices.Concat(base.sh.rocchioNorm, pix.sh.rocchioNorm),
		tri: base.sh.tri, patch: &shared{tri: pix.sh.tri}}
	ix.collides = make([][]string, nb+np)
	copy(ix.collides, base.collides)
	for name, cs := range info.Collides {
		if i, ok := ix.byName[name]; ok {
			ix.collides[i] = cs
		}
	}
	ix.combineBackground(base, pix)
	return ix, nil
}

// mergeOrder returns ix's live rows in name order: the rows of the stored
// index and of the patch are each in name order already.
func mergeOrder(ix *index, nb int) []int32 {
	order := make([]int32, 0, ix.live)
	i, j := 0, nb
	for i < nb || j < len(ix.tools) {
		if i < nb && ix.dead[i] {
			i++
			continue
		}
		if j == len(ix.tools) || (i < nb && ix.tools[i].name < ix.tools[j].name) {
			order = append(order, int32(i))
			i++
			continue
		}
		order = append(order, int32(j))
		j++
	}
	return order
}

// combineBackground sets ix's backgrounds from base's and pix's rows,
// with the gates of a catalog of ix.live tools.
func (ix *index) combineBackground(base, pix *index) {
	n := len(ix.tools)
	ix.bg = make([][3]float32, n)
	if base.background != nil || pix.background != nil {
		ix.background, ix.hasBackground = make([]Background, n), make([]bool, n)
		for k, part := range []*index{base, pix} {
			if part.background == nil {
				continue
			}
			at := k * len(base.tools)
			copy(ix.background[at:], part.background)
			copy(ix.hasBackground[at:], part.hasBackground)
		}
	}
	inf := float32(math.Inf(-1))
	for i := range ix.bg {
		if ix.hasBackground == nil || !ix.hasBackground[i] {
			ix.bg[i] = [3]float32{inf, inf, inf}
			continue
		}
		ix.bg[i] = ix.background[i].Gates(ix.live)
	}
}

// patchedDefs are the definitions of a patched index: base's rows, then
// the patch's from split on.
type patchedDefs struct {
	base, patch toolDefs
	split       int
}

func (d patchedDefs) def(i int) (toolDef, error) {
	if i < d.split {
		return d.base.def(i)
	}
	return d.patch.def(i - d.split)
}

func (d patchedDefs) hash(i int) (string, error) {
	if i < d.split {
		return d.base.hash(i)
	}
	return d.patch.hash(i - d.split)
}

// vectors returns each row's centroid, description and document vectors
// as the space holds them, read back from its postings: what a patch
// carries forward of the tools it already holds. It returns errDamaged
// for a stored run that fails its check.
func (s *triSpace) vectors() (cents, descs, docs []habilis.Vector, err error) {
	cents, descs, docs = make([]habilis.Vector, s.rows), make([]habilis.Vector, s.rows), make([]habilis.Vector, s.rows)
	termOf := make([]uint32, len(s.offsets)-1)
	raw := s.terms.Raw()
	for e := 0; e+1 < len(raw); e += 2 {
		if slot := raw[e+1]; slot != 0 && int(slot) <= len(termOf) {
			termOf[slot-1] = raw[e]
		}
	}
	// Slots ascend with their terms, so each row's terms come out in
	// ascending order.
	for k, term := range termOf {
		ps := s.postings[s.offsets[k]:s.offsets[k+1]]
		if s.check != nil && !s.check.ok(int32(k), func() bool { return vec.PostingsIn(ps, s.rows) }, vec.Bytes(ps)) {
			return nil, nil, nil, errDamaged
		}
		for _, p := range ps {
			r := p.Row()
			for _, c := range []struct {
				v *habilis.Vector
				w float32
			}{{&cents[r], p.Cent}, {&descs[r], p.Desc}, {&docs[r], p.Doc}} {
				if c.w != 0 {
					c.v.Indices, c.v.Values = append(c.v.Indices, term), append(c.v.Values, c.w)
				}
			}
		}
	}
	return cents, descs, docs, nil
}

// patchRow is one tool of a patch in the making: what the patch's index
// holds of it.
type patchRow struct {
	info                 toolInfo
	def                  toolDef
	cent, desc, doc      habilis.Vector
	sumNorm, rocchioNorm float32
	background           Background
	hasBackground        bool
}

// buildPatch returns the index of a patch's rows (sorted by name here).
func buildPatch(meta habilis.CatalogMeta, cal Calibration, emb embedders, rows []patchRow) *index {
	slices.SortFunc(rows, func(a, b patchRow) int { return cmp.Compare(a.info.name, b.info.name) })
	n := len(rows)
	ix := &index{meta: meta, cal: cal, embedders: emb, byName: make(map[string]int, n), generic: new(genericSpace)}
	ix.tools = make([]toolInfo, n)
	defs := make(heapDefs, n)
	ix.defs = defs
	sh := &shared{sumNorm: make([]float32, n), rocchioNorm: make([]float32, n)}
	cents, descs, docs := make([]habilis.Vector, n), make([]habilis.Vector, n), make([]habilis.Vector, n)
	ix.background, ix.hasBackground = make([]Background, n), make([]bool, n)
	for i := range rows {
		r := &rows[i]
		ix.tools[i], defs[i] = r.info, r.def
		ix.byName[r.info.name] = i
		if r.info.examples == 0 {
			ix.bare = append(ix.bare, int32(i))
		}
		sh.sumNorm[i], sh.rocchioNorm[i] = r.sumNorm, r.rocchioNorm
		cents[i], descs[i], docs[i] = r.cent, r.desc, r.doc
		ix.background[i], ix.hasBackground[i] = r.background, r.hasBackground
	}
	sh.tri = newTriSpace(cents, descs, docs)
	ix.sh = sh
	ix.collides = make([][]string, n)
	ix.bg = make([][3]float32, n)
	return ix
}
