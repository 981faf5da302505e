package selector

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"slices"
	"sync/atomic"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/layout"
	"github.com/habilis-router/habilis/internal/par"
	"github.com/habilis-router/habilis/internal/terms"
	"github.com/habilis-router/habilis/internal/vec"
)

// An index is stored beside its catalog (habilis.Batch.Index) in a layout
// that selection reads where it lies, so that opening a stored catalog
// costs what a query touches rather than a rebuild from every record:
//
//	header   64 bytes: "habilisx", the layout version, the number of
//	         sections, the catalog version, tools, dimension, flags and
//	         a CRC-32C of the header and the section table
//	table    per section its id, CRC-32C, offset and length
//	sections each at a multiple of 64 bytes, arrays of little-endian
//	         words as the index holds them in memory
//
// The calibration, per-tool rows, names, collisions, priors, background
// gates, norms, term tables and offsets are checked against their CRCs
// on open; they are small beside the postings. The postings and dense
// values of sparse spaces, which make up most of a lexical index, are not
// read on open: a run is checked on its first use (runCheck) against a
// CRC of its own and to point inside the accumulator, so that opening
// costs what the queries touch. Dense rows are checked on open, as every
// query reads them all anyway. Tool definitions are checked when first
// asked for. CheckIndex checks everything.
//
// layoutVersion changes whenever the bytes would be read differently:
// a section's form, the posting layout, the term table's hash
// (terms.Slot). A stored index of another version is not read: the
// router builds the index from the records, as it does for a store
// written before indexes were stored, and the next write stores it anew.
// The store reads the layout too (internal/layout): from its format 3 on,
// records leave to the stored index the description, centroid and
// document vectors it holds, so a release that changes the layout must
// still read the rows of the versions before.
const (
	layoutMagic   = layout.Magic
	layoutVersion = layout.Version
	headerSize    = layout.HeaderSize
	entrySize     = layout.EntrySize
	sectionAlign  = layout.SectionAlign
)

// Section ids (internal/layout, which the store reads too).
const (
	secCalibration = layout.SecCalibration
	secTools       = layout.SecTools
	secNameEnds    = layout.SecNameEnds
	secNames       = layout.SecNames
	secDefEnds     = layout.SecDefEnds
	secDefs        = layout.SecDefs
	secCollideEnds = layout.SecCollideEnds
	secCollides    = layout.SecCollides
	secPrior       = layout.SecPrior
	secBackground  = layout.SecBackground
	secSumNorm     = layout.SecSumNorm
	secRocchioNorm = layout.SecRocchioNorm
	secTriTerms    = layout.SecTriTerms
	secTriOffsets  = layout.SecTriOffsets
	secTriPostings = layout.SecTriPostings
	secTriRunSums  = layout.SecTriRunSums
	secCent        = layout.SecCent
	secDesc        = layout.SecDesc
	secDoc         = layout.SecDoc
	spDense        = layout.SpDense
	spTerms        = layout.SpTerms
	spOffsets      = layout.SpOffsets
	spRows         = layout.SpRows
	spVals         = layout.SpVals
	spRunSums      = layout.SpRunSums
	flagMerged     = layout.FlagMerged
)

// toolRow is a tool's fixed-size part of a stored index.
type toolRow struct {
	examples       uint32
	radius, margin float32
	flags          uint32 // 1: has a radius
}

// backgroundRow is a tool's Background, has 1 when it has one.
type backgroundRow struct {
	has      uint32
	mean, sd [3]float32
}

// toolDef is what Tool returns beyond the figures selection reads.
type toolDef struct {
	Tool          habilis.Tool `json:"tool"`
	Hash          string       `json:"hash"`
	RadiusExample string       `json:"radius_example,omitempty"`
}

// littleEndian reports whether this machine stores words as the layout
// does; elsewhere indexes are neither stored nor read.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

var castagnoli = layout.Castagnoli

// errLayout wraps every reason a stored index is not used.
var errLayout = layout.ErrLayout

// errWeightsExamples reports a sound stored index that selection cannot
// use alone: its calibration weights the nearest example, whose vectors
// the index leaves out.
var errWeightsExamples = fmt.Errorf("%w: the calibration weights the nearest example, whose vectors it leaves out", errLayout)

// section is one section to encode.
type section struct {
	id   uint32
	data []byte
}

// encodeIndex returns ix in the stored layout, for the catalog version
// the write will commit.
func encodeIndex(ix *index, version uint64, extra ...section) ([]byte, error) {
	secs, err := indexSections(ix)
	if err != nil {
		return nil, err
	}
	return assemble(ix, version, append(secs, extra...)), nil
}

// assemble lays out the sections of ix, for the catalog version.
func assemble(ix *index, version uint64, secs []section) []byte {
	off := headerSize + entrySize*len(secs)
	offs := make([]int, len(secs))
	for i, s := range secs {
		off = (off + sectionAlign - 1) &^ (sectionAlign - 1)
		offs[i] = off
		off += len(s.data)
	}
	buf := make([]byte, off)
	copy(buf, layoutMagic)
	le := binary.LittleEndian
	le.PutUint32(buf[8:], layoutVersion)
	le.PutUint32(buf[12:], uint32(len(secs)))
	le.PutUint64(buf[16:], version)
	le.PutUint32(buf[24:], uint32(len(ix.tools)))
	le.PutUint32(buf[28:], uint32(ix.meta.Embedder.Dim))
	if ix.sh.tri != nil {
		le.PutUint32(buf[32:], flagMerged)
	}
	// Each section is summed and copied apart from the others, on every
	// core: on one, the index's encoding kept the other idle
	// (docs/benchmarks.md).
	par.For(len(secs), func(_, i int) {
		s := secs[i]
		e := buf[headerSize+entrySize*i:]
		le.PutUint32(e, s.id)
		le.PutUint32(e[4:], crc32.Checksum(s.data, castagnoli))
		le.PutUint64(e[8:], uint64(offs[i]))
		le.PutUint64(e[16:], uint64(len(s.data)))
		copy(buf[offs[i]:], s.data)
	})
	le.PutUint32(buf[60:], tableCRC(buf, len(secs)))
	return buf
}

func tableCRC(buf []byte, n int) uint32 { return layout.TableCRC(buf, n) }

// indexSections returns ix's sections.
func indexSections(ix *index) ([]section, error) {
	n := len(ix.tools)
	cal := ix.cal
	cal.Prior, cal.Background, cal.Collides = nil, nil, nil
	calJSON, err := json.Marshal(cal)
	if err != nil {
		return nil, fmt.Errorf("encode index: %w", err)
	}
	rows := make([]toolRow, n)
	nameEnds := make([]uint32, n)
	var names []byte
	defEnds := make([]uint32, n)
	defs := 0
	collideEnds := make([]uint32, n)
	var collides []uint32
	each, err := defsJSON(ix.defs, n)
	if err != nil {
		return nil, err
	}
	for i := range ix.tools {
		t := &ix.tools[i]
		rows[i] = toolRow{examples: uint32(t.examples), radius: t.radius, margin: t.margin}
		if t.hasRadius {
			rows[i].flags = 1
		}
		names = append(names, t.name...)
		nameEnds[i] = uint32(len(names))
		defs += len(each[i])
		defEnds[i] = uint32(defs)
		for _, c := range ix.collides[i] {
			if j, ok := ix.byName[c]; ok {
				collides = append(collides, uint32(j))
			}
		}
		collideEnds[i] = uint32(len(collides))
	}
	zdefs, blocks, err := compressDefs(each)
	if err != nil {
		return nil, err
	}
	var bg []backgroundRow
	if ix.background != nil {
		bg = make([]backgroundRow, n)
		for i, b := range ix.background {
			if ix.hasBackground[i] {
				bg[i] = backgroundRow{has: 1, mean: b.Mean, sd: b.SD}
			}
		}
	}
	secs := []section{
		{secCalibration, calJSON}, {secTools, vec.Bytes(rows)}, {secNameEnds, vec.Bytes(nameEnds)}, {secNames, names},
		{secDefEnds, vec.Bytes(defEnds)}, {secDefsFlate, zdefs}, {secDefBlocks, vec.Bytes(blocks)}, {secCollideEnds, vec.Bytes(collideEnds)}, {secCollides, vec.Bytes(collides)},
		{secPrior, vec.Bytes(ix.prior)}, {secBackground, vec.Bytes(bg)},
		{secSumNorm, vec.Bytes(ix.sh.sumNorm)}, {secRocchioNorm, vec.Bytes(ix.sh.rocchioNorm)},
	}
	if tri := ix.sh.tri; tri != nil {
		return append(secs, section{secTriTerms, vec.Bytes(tri.terms.Raw())}, section{secTriOffsets, vec.Bytes(tri.offsets)},
			section{secTriPostings, vec.Bytes(tri.postings)}, section{secTriRunSums, vec.Bytes(runSums(tri.offsets, tri.postings))}), nil
	}
	for _, sp := range []struct {
		base uint32
		s    *space
	}{{secCent, ix.sh.cent}, {secDesc, ix.sh.desc}, {secDoc, ix.sh.doc}} {
		if sp.s.dense != nil {
			secs = append(secs, section{sp.base + spDense, vec.Bytes(sp.s.dense.Data)})
			continue
		}
		rowsID, rows := sp.s.prow.Section()
		secs = append(secs, section{sp.base + spTerms, vec.Bytes(sp.s.terms.Raw())}, section{sp.base + spOffsets, vec.Bytes(sp.s.offsets)},
			section{sp.base + rowsID, rows}, section{sp.base + spVals, vec.Bytes(sp.s.pval)},
			section{sp.base + spRunSums, vec.Bytes(spaceRunSums(sp.s))})
	}
	return secs, nil
}

// runSums returns the CRC of each run of postings, summed on every core.
func runSums(offsets []int32, postings []vec.Posting) []uint32 {
	sums := make([]uint32, max(len(offsets)-1, 0))
	par.Ranges(len(sums), func(lo, hi int) {
		for k := lo; k < hi; k++ {
			sums[k] = crc32.Checksum(vec.Bytes(postings[offsets[k]:offsets[k+1]]), castagnoli)
		}
	})
	return sums
}

// spaceRunSums returns the CRC of each run of a sparse space's rows and
// values.
func spaceRunSums(s *space) []uint32 {
	sums := make([]uint32, max(len(s.offsets)-1, 0))
	for k := range sums {
		lo, hi := s.offsets[k], s.offsets[k+1]
		sums[k] = crc32.Update(crc32.Checksum(s.prow.Bytes(int(lo), int(hi)), castagnoli), castagnoli, vec.Bytes(s.pval[lo:hi]))
	}
	return sums
}

// IndexAt returns a stored index (habilis.Batch.Index) restamped as the
// index of catalog version v, or nil when data is not an index of the
// layout this release reads. An index names the catalog version it
// describes; a copy of a catalog (migrate) stores its index under the
// destination's version.
func IndexAt(data []byte, v uint64) []byte {
	if _, err := parseLayout(data); err != nil {
		return nil
	}
	out := slices.Clone(data)
	binary.LittleEndian.PutUint64(out[16:], v)
	n := int(binary.LittleEndian.Uint32(out[12:]))
	binary.LittleEndian.PutUint32(out[60:], tableCRC(out, n))
	return out
}

// CheckIndex checks a stored index whole, every section against its CRC
// and every run against its own, and returns its problems: what `store
// check` reports beyond the records.
func CheckIndex(data []byte) []string {
	l, err := parseLayout(data)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for id, b := range l.Secs {
		if crc32.Checksum(b, castagnoli) != l.Sums[id] {
			out = append(out, fmt.Sprintf("%v: section %d fails its checksum", errLayout, id))
		}
	}
	return out
}

// storedLayout is a stored index's header and sections, checked.
type storedLayout = layout.Layout

func parseLayout(data []byte) (*storedLayout, error) { return layout.Parse(data) }

func view[T any](l *storedLayout, id uint32, want int) ([]T, error) {
	return layout.View[T](l, id, want)
}

func checkEnds(ends []uint32, size int) error { return layout.CheckEnds(ends, size) }

// decodeIndex returns the index a stored layout describes, its large
// arrays in place in data, for a catalog of meta and the embedders emb.
// An index that cannot be read, or was built for another catalog version
// or other embedders, returns an error wrapping errLayout.
func decodeIndex(data []byte, meta habilis.CatalogMeta, emb embedders) (*index, error) {
	return decodeAt(data, meta.Version, meta, emb)
}

// decodeAt is decodeIndex of an index stamped with catalog version v:
// meta's, or for an index a patch applies to, the patch's base.
func decodeAt(data []byte, v uint64, meta habilis.CatalogMeta, emb embedders) (*index, error) {
	if !littleEndian {
		return nil, fmt.Errorf("%w: this machine is big-endian", errLayout)
	}
	l, err := parseLayout(data)
	if err != nil {
		return nil, err
	}
	switch {
	case l.Version != v:
		return nil, fmt.Errorf("%w: of catalog version %d, want %d (the catalog is at %d)", errLayout, l.Version, v, meta.Version)
	case l.Dim != meta.Embedder.Dim || l.Merged != emb.merged(l.Dim):
		return nil, fmt.Errorf("%w: built for other embedders", errLayout)
	}
	ix := &index{meta: meta, embedders: emb, stored: true, generic: new(genericSpace)}
	if err := json.Unmarshal(l.Secs[secCalibration], &ix.cal); err != nil {
		return nil, fmt.Errorf("%w: calibration: %v", errLayout, err)
	}
	if ix.cal.Weights.Example != 0 {
		// The nearest example needs the example vectors, which a stored
		// index leaves out.
		return nil, errWeightsExamples
	}
	if err := decodeTools(l, ix); err != nil {
		return nil, err
	}
	if ix.sh, err = decodeShared(l); err != nil {
		return nil, err
	}
	return ix, nil
}

// decodeTools reads the per-tool sections into ix.
func decodeTools(l *storedLayout, ix *index) error {
	n := l.Tools
	rows, err := view[toolRow](l, secTools, n)
	if err != nil {
		return err
	}
	nameEnds, err := view[uint32](l, secNameEnds, n)
	if err != nil {
		return err
	}
	names := string(l.Secs[secNames]) // one copy: names outlive the stored index
	if err := checkEnds(nameEnds, len(names)); err != nil {
		return err
	}
	ix.tools = make([]toolInfo, n)
	ix.byName = make(map[string]int, n)
	start := uint32(0)
	for i := range n {
		name := names[start:nameEnds[i]]
		start = nameEnds[i]
		if i > 0 && name <= ix.tools[i-1].name {
			return fmt.Errorf("%w: tool names out of order", errLayout)
		}
		r := rows[i]
		ix.tools[i] = toolInfo{name: name, examples: int(r.examples), radius: r.radius, hasRadius: r.flags&1 != 0, margin: r.margin}
		ix.byName[name] = i
		if r.examples == 0 {
			ix.bare = append(ix.bare, int32(i))
		}
	}
	if err := decodeCollides(l, ix); err != nil {
		return err
	}
	if ix.prior, err = view[float32](l, secPrior, -1); err != nil {
		return err
	}
	if len(ix.prior) != 0 && len(ix.prior) != n {
		return fmt.Errorf("%w: priors of %d tools", errLayout, len(ix.prior))
	}
	if len(ix.prior) == 0 {
		ix.prior = nil
	}
	if err := decodeBackground(l, ix); err != nil {
		return err
	}
	return decodeDefs(l, ix)
}

func decodeCollides(l *storedLayout, ix *index) error {
	n := l.Tools
	ends, err := view[uint32](l, secCollideEnds, n)
	if err != nil {
		return err
	}
	targets, err := view[uint32](l, secCollides, -1)
	if err != nil {
		return err
	}
	if err := checkEnds(ends, len(targets)); err != nil {
		return err
	}
	ix.collides = make([][]string, n)
	start := uint32(0)
	for i, end := range ends {
		for _, j := range targets[start:end] {
			if int(j) >= n {
				return fmt.Errorf("%w: a collision with tool %d of %d", errLayout, j, n)
			}
			ix.collides[i] = append(ix.collides[i], ix.tools[j].name)
		}
		start = end
	}
	return nil
}

func decodeBackground(l *storedLayout, ix *index) error {
	n := l.Tools
	rows, err := view[backgroundRow](l, secBackground, -1)
	if err != nil {
		return err
	}
	if len(rows) != 0 && len(rows) != n {
		return fmt.Errorf("%w: backgrounds of %d tools", errLayout, len(rows))
	}
	bs := make(map[string]Background, len(rows))
	for i, r := range rows {
		if r.has != 0 {
			bs[ix.tools[i].name] = Background{Mean: r.mean, SD: r.sd}
		}
	}
	ix.setBackground(bs)
	return nil
}

// decodeShared reads the norms and the spaces.
func decodeShared(l *storedLayout) (*shared, error) {
	n := l.Tools
	sh := &shared{}
	var err error
	if sh.sumNorm, err = view[float32](l, secSumNorm, n); err != nil {
		return nil, err
	}
	if sh.rocchioNorm, err = view[float32](l, secRocchioNorm, n); err != nil {
		return nil, err
	}
	if l.Merged {
		sh.tri, err = decodeTri(l)
		return sh, err
	}
	if sh.cent, err = decodeSpace(l, secCent, l.Dim); err != nil {
		return nil, err
	}
	if sh.desc, err = decodeSpace(l, secDesc, l.Dim); err != nil {
		return nil, err
	}
	sh.doc, err = decodeSpace(l, secDoc, 0)
	return sh, err
}

// postingRuns reads a term table and its offsets into postings runs of
// total postings.
func postingRuns(l *storedLayout, termsID, offsetsID uint32, total int) (terms.Table, []int32, error) {
	offsets, err := view[int32](l, offsetsID, -1)
	if err != nil {
		return terms.Table{}, nil, err
	}
	if len(offsets) == 0 || offsets[0] != 0 || int(offsets[len(offsets)-1]) != total || !slices.IsSorted(offsets) {
		return terms.Table{}, nil, fmt.Errorf("%w: damaged posting offsets", errLayout)
	}
	raw, err := view[uint32](l, termsID, -1)
	if err != nil {
		return terms.Table{}, nil, err
	}
	t, err := terms.FromRaw(raw, len(offsets)-1)
	if err != nil {
		return terms.Table{}, nil, fmt.Errorf("%w: %v", errLayout, err)
	}
	return t, offsets, nil
}

func decodeTri(l *storedLayout) (*triSpace, error) {
	postings, err := view[vec.Posting](l, secTriPostings, -1)
	if err != nil {
		return nil, err
	}
	t, offsets, err := postingRuns(l, secTriTerms, secTriOffsets, len(postings))
	if err != nil {
		return nil, err
	}
	sums, err := view[uint32](l, secTriRunSums, len(offsets)-1)
	if err != nil {
		return nil, err
	}
	return &triSpace{rows: l.Tools, terms: t, offsets: offsets, postings: postings, check: newRunCheck(sums)}, nil
}

func decodeSpace(l *storedLayout, base uint32, dim int) (*space, error) {
	s := &space{rows: l.Tools}
	if dim > 0 {
		data, err := view[float32](l, base+spDense, l.Tools*dim)
		if err != nil {
			return nil, err
		}
		s.dense = &vec.Slab{Dim: dim, Data: data}
		return s, nil
	}
	var err error
	if s.prow, err = layout.ViewRows(l, base); err != nil {
		return nil, err
	}
	if s.pval, err = view[float32](l, base+spVals, s.prow.Len()); err != nil {
		return nil, err
	}
	if s.terms, s.offsets, err = postingRuns(l, base+spTerms, base+spOffsets, s.prow.Len()); err != nil {
		return nil, err
	}
	sums, err := view[uint32](l, base+spRunSums, len(s.offsets)-1)
	if err != nil {
		return nil, err
	}
	s.check = newRunCheck(sums)
	return s, nil
}

// runCheck remembers which runs of a stored index have been checked
// against their CRC and to point inside the accumulator, so that each is
// checked once, on its first use: a damaged stored index fails the
// selection that reaches the damage (errDamaged) instead of moving a
// score or writing outside its memory.
type runCheck struct {
	sums []uint32
	done []atomic.Uint64
}

func newRunCheck(sums []uint32) *runCheck {
	return &runCheck{sums: sums, done: make([]atomic.Uint64, (len(sums)+63)/64)}
}

// ok reports whether run k is sound: the CRC of its bytes is its sum, and
// valid (its rows are in range). Both are checked the first time only.
func (c *runCheck) ok(k int32, valid func() bool, bytes ...[]byte) bool {
	w, bit := &c.done[k>>6], uint64(1)<<(k&63)
	if w.Load()&bit != 0 {
		return true
	}
	var sum uint32
	for _, b := range bytes {
		sum = crc32.Update(sum, castagnoli, b)
	}
	if sum != c.sums[k] || !valid() {
		return false
	}
	w.Or(bit)
	return true
}

// errDamaged is what a selection reaching a damaged stored index returns.
var errDamaged = fmt.Errorf("the stored index does not read whole: %w", habilis.ErrDamaged)
