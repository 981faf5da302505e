package boltstore

import (
	"encoding/binary"
	"errors"
	"maps"
	"math"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/vec"
)

// The on-disk encoding, format version 4. Integers written as "uvarint" are
// encoding/binary varints; floats and sparse indices are little-endian
// float32 and uint32, so a vector's coordinates are a plain array.
//
//	str       uvarint length, bytes
//	optbytes  byte 0 (nil) | byte 1, uvarint length, bytes
//	terms     uvarint n, then n uvarints: the first index, then each
//	          index less the one before it, less one (strictly ascending)
//	vector    byte 0 (no coordinates)
//	        | byte 1, uvarint n, n float32            (dense)
//	        | byte 2, uvarint n, n uint32, n float32  (sparse)
//	        | byte 3, len(terms) float32               (sparse, every term)
//	        | byte 4, uvarint n, (len(terms)+7)/8 bytes of bitmap whose n
//	          set bits (bit i%8 of byte i/8) are the terms it has,
//	          n float32                                (sparse, a bitmap)
//	        | byte 5, uvarint n, n uvarint positions in terms, each but
//	          the first less the one before it, less one,
//	          n float32                                (sparse, positions)
//	        | byte 6                                   (held by the index)
//	        | byte 7, uvarint n, float32 scale s, n int8 q (dense, each
//	          coordinate float32(q)·s; examples alone)
//
//	meta/format   uint32 big-endian format version
//	meta/catalog  uint64 version, int64 UpdatedAt in Unix nanoseconds,
//	              str kind, str model, varint dim, str embedder version,
//	              optbytes embedder state, optbytes calibration,
//	              str lexical kind, str lexical model, varint lexical dim,
//	              str lexical version, optbytes lexical state
//	tools/<name>  str description, optbytes input schema,
//	              byte 0 | byte 1 float32 (Tool.Margin), optbytes executor,
//	              byte 0 | byte 1, uvarint n, n × (str key, str value) (Meta),
//	              str hash, terms, vector description, vector centroid,
//	              vector document,
//	              float32 radius, byte has-radius, str radius example,
//	              float32 margin, then a summary of the tool's examples for
//	              sizing snapshots: uvarint count, uvarint text bytes,
//	              uvarint dense floats, uvarint sparse coordinates
//	examples/<name>  count × (str text, vector), count as the summary says;
//	              no key for a tool without examples
//
// A tool's terms are every sparse index of its vectors, examples included,
// and its sparse vectors name their indices by their places in that list
// (kinds 3 to 5, whichever is shortest): a lexical tool's description,
// centroid and examples use the terms of its document, so each index is
// written once a tool rather than once a vector, and the bitmap of an
// example costs a bit a term of the tool instead of four bytes a term of
// the example (docs/benchmarks.md, where the file's bytes go). Kinds 3 to 5
// appear only after terms.
//
// Examples' dense vectors are written in kind 7 when they lie on its grid,
// which they do once the router has rounded them where it embeds them
// (vec.Round8): a quarter of kind 1's bytes, and exactly the same floats
// back. Any other dense vector (a centroid, a description, an example of
// a store written before format 4 or by another writer) is written in
// kind 1, so the encoding loses nothing. Formats 2 and 3 are format 4
// without kind 7 (and 2 without kind 6): their values are read as they
// are, and the next write marks the file format 4.
//
// Format 1 differs in two places, and is still read: tool values have no
// terms (so vectors are of kinds 0 to 2 only), and each tool's examples are
// a nested bucket examples/<name>/<uint32 big-endian index> of one value an
// example (str text, vector), which took a branch page and two leaf pages
// a tool. A write to a format 1 file rewrites it in the current format
// first (see migrate.go).
//
// Raw JSON (schema, executor, calibration) is kept byte for byte rather than
// re-encoded, so what a store returns is exactly what it was given.

const (
	kindZero      = 0
	kindDense     = 1
	kindSparse    = 2
	kindAll       = 3
	kindBitmap    = 4
	kindPositions = 5
	kindHeld      = 6
	kindDense8    = 7
)

// errCorrupt reports stored bytes that do not decode.
var errCorrupt = errors.New("corrupt data")

func appendUvarint(b []byte, x int) []byte { return binary.AppendUvarint(b, uint64(x)) }

func appendStr(b []byte, s string) []byte {
	b = appendUvarint(b, len(s))
	return append(b, s...)
}

func appendOptBytes(b, p []byte) []byte {
	if p == nil {
		return append(b, 0)
	}
	b = append(b, 1)
	b = appendUvarint(b, len(p))
	return append(b, p...)
}

func appendF32(b []byte, f float32) []byte {
	return binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendVector(b []byte, v habilis.Vector) []byte {
	switch {
	case v.Dense != nil:
		b = append(b, kindDense)
		b = appendUvarint(b, len(v.Dense))
		for _, f := range v.Dense {
			b = appendF32(b, f)
		}
	case v.Indices != nil || v.Values != nil:
		b = append(b, kindSparse)
		b = appendUvarint(b, len(v.Indices))
		for _, i := range v.Indices {
			b = binary.LittleEndian.AppendUint32(b, i)
		}
		for _, f := range v.Values {
			b = appendF32(b, f)
		}
	default:
		b = append(b, kindZero)
	}
	return b
}

// appendInfo appends str kind, str model, varint dim, str version.
func appendInfo(b []byte, i habilis.EmbedderInfo) []byte {
	b = appendStr(b, i.Kind)
	b = appendStr(b, i.Model)
	b = binary.AppendVarint(b, int64(i.Dim))
	return appendStr(b, i.Version)
}

func appendMeta(b []byte, m habilis.CatalogMeta) []byte {
	b = binary.LittleEndian.AppendUint64(b, m.Version)
	b = binary.LittleEndian.AppendUint64(b, uint64(m.UpdatedAt.UnixNano()))
	b = appendInfo(b, m.Embedder)
	b = appendOptBytes(b, m.EmbedderState)
	b = appendOptBytes(b, m.Calibration)
	b = appendInfo(b, m.Lexical)
	return appendOptBytes(b, m.LexicalState)
}

// encoder encodes records in the current format, reusing its scratch
// space from one record to the next.
type encoder struct {
	terms, spare []uint32
	pos          []int
	q            []int8 // an example's coordinates on the 8-bit grid
	// hold, when not nil, is the index the write stores, which may hold
	// the record's vectors; held says which of them it holds (setTerms).
	hold *holder
	held [signals]bool
}

// setTerms makes e.terms the ascending union of the sparse indices of r's
// vectors. Stored indices ascend (Vector.Validate), so each vector is
// merged in one pass; a lexical tool's document holds the others' terms,
// so the later merges add nothing.
func (e *encoder) setTerms(r *habilis.Record) {
	e.held = e.hold.holds(r)
	e.terms = e.terms[:0]
	add := func(v habilis.Vector) {
		if len(v.Indices) > 0 {
			e.spare = union(e.spare[:0], e.terms, v.Indices)
			e.terms, e.spare = e.spare, e.terms
		}
	}
	add(r.DocumentVector)
	add(r.DescriptionVector)
	add(r.Centroid)
	for _, v := range r.ExampleVectors {
		add(v)
	}
}

// union appends to dst the ascending union of ascending a and b.
func union(dst, a, b []uint32) []uint32 {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			dst = append(dst, a[i])
			i++
		case a[i] > b[j]:
			dst = append(dst, b[j])
			j++
		default:
			dst = append(dst, a[i])
			i, j = i+1, j+1
		}
	}
	dst = append(dst, a[i:]...)
	return append(dst, b[j:]...)
}

func appendTerms(b []byte, terms []uint32) []byte {
	b = appendUvarint(b, len(terms))
	for i, t := range terms {
		if i > 0 {
			t -= terms[i-1] + 1
		}
		b = binary.AppendUvarint(b, uint64(t))
	}
	return b
}

// vector appends v, whose sparse indices are all in e.terms.
func (e *encoder) vector(b []byte, v habilis.Vector) []byte {
	if v.Dense != nil || len(v.Indices) == 0 || len(v.Values) != len(v.Indices) {
		return appendVector(b, v)
	}
	if len(v.Indices) == len(e.terms) {
		return appendFloats(append(b, kindAll), v.Values)
	}
	// Each index's place in the terms, found by walking both in step.
	e.pos = e.pos[:0]
	k, gaps := 0, 0
	for _, idx := range v.Indices {
		for e.terms[k] != idx {
			k++
		}
		if n := len(e.pos); n > 0 {
			gaps += uvarintLen(k - e.pos[n-1] - 1)
		} else {
			gaps += uvarintLen(k)
		}
		e.pos = append(e.pos, k)
	}
	if bitmap := (len(e.terms) + 7) / 8; bitmap <= gaps {
		b = appendUvarint(append(b, kindBitmap), len(v.Indices))
		n := len(b)
		b = append(b, make([]byte, bitmap)...)
		for _, p := range e.pos {
			b[n+p/8] |= 1 << (p % 8)
		}
	} else {
		b = appendUvarint(append(b, kindPositions), len(v.Indices))
		for i, p := range e.pos {
			if i > 0 {
				p -= e.pos[i-1] + 1
			}
			b = appendUvarint(b, p)
		}
	}
	return appendFloats(b, v.Values)
}

func uvarintLen(x int) int {
	n := 1
	for ; x >= 0x80; x >>= 7 {
		n++
	}
	return n
}

func appendFloats(b []byte, fs []float32) []byte {
	for _, f := range fs {
		b = appendF32(b, f)
	}
	return b
}

// tool appends r's tools value; e.terms must be r's (setTerms).
func (e *encoder) tool(b []byte, r *habilis.Record) []byte {
	t := &r.Tool
	b = appendStr(b, t.Description)
	b = appendOptBytes(b, t.InputSchema)
	if t.Margin == nil {
		b = append(b, 0)
	} else {
		b = appendF32(append(b, 1), *t.Margin)
	}
	b = appendOptBytes(b, t.Executor)
	if t.Meta == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		b = appendUvarint(b, len(t.Meta))
		// Sorted keys keep the file's contents a function of the catalog.
		for _, k := range slices.Sorted(maps.Keys(t.Meta)) {
			b = appendStr(b, k)
			b = appendStr(b, t.Meta[k])
		}
	}
	b = appendStr(b, r.Hash)
	if e.held == [signals]bool{true, true, true} && len(e.terms) == len(r.DocumentVector.Indices) {
		b = appendTerms(b, nil) // the document's: it holds every other's
	} else {
		b = appendTerms(b, e.terms)
	}
	for _, sv := range [...]struct {
		sig int
		v   habilis.Vector
	}{{sigDesc, r.DescriptionVector}, {sigCent, r.Centroid}, {sigDoc, r.DocumentVector}} {
		if e.held[sv.sig] {
			b = append(b, kindHeld)
		} else {
			b = e.vector(b, sv.v)
		}
	}
	b = appendF32(b, r.Radius)
	b = appendBool(b, r.HasRadius)
	b = appendStr(b, r.RadiusExample)
	b = appendF32(b, r.Margin)
	return appendSummary(b, r)
}

// appendSummary appends the summary of r's examples.
func appendSummary(b []byte, r *habilis.Record) []byte {
	var text, dense, sparse int
	for i, v := range r.ExampleVectors {
		text += len(r.Tool.Examples[i])
		if v.Dense != nil {
			dense += len(v.Dense)
		} else {
			sparse += len(v.Indices)
		}
	}
	b = appendUvarint(b, len(r.ExampleVectors))
	b = appendUvarint(b, text)
	b = appendUvarint(b, dense)
	return appendUvarint(b, sparse)
}

// examples appends r's examples value; e.terms must be r's (setTerms).
func (e *encoder) examples(b []byte, r *habilis.Record) []byte {
	for i, text := range r.Tool.Examples {
		b = e.example(appendStr(b, text), r.ExampleVectors[i])
	}
	return b
}

// example appends an example's vector: in kind 7 when it is dense and on
// the 8-bit grid, so that it decodes to the very same floats.
func (e *encoder) example(b []byte, v habilis.Vector) []byte {
	if v.Dense == nil {
		return e.vector(b, v)
	}
	e.q = slices.Grow(e.q[:0], len(v.Dense))[:len(v.Dense)]
	scale, ok := vec.Quantize8(e.q, v.Dense)
	if !ok {
		return e.vector(b, v)
	}
	b = appendUvarint(append(b, kindDense8), len(v.Dense))
	b = appendF32(b, scale)
	for _, q := range e.q {
		b = append(b, byte(q))
	}
	return b
}

// reader decodes one stored value. The first malformed read sets err and
// makes every later read return zero values, so decoders check err once at
// the end instead of after every field.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail() {
	r.err = errCorrupt
	r.b = nil
}

func (r *reader) byte() byte {
	if len(r.b) < 1 {
		r.fail()
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) uvarint() uint64 {
	x, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return x
}

func (r *reader) varint() int64 {
	x, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return x
}

// count reads a length whose items take at least width bytes each, and
// fails unless that many bytes remain: a corrupt length never makes a
// decoder allocate more than the value could hold.
func (r *reader) count(width int) int {
	n := r.uvarint()
	if n > uint64(len(r.b)/width) {
		r.fail()
		return 0
	}
	return int(n)
}

// next returns the next n bytes, aliasing the stored value.
func (r *reader) next(n int) []byte {
	if n < 0 || n > len(r.b) {
		r.fail()
		return nil
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p
}

func (r *reader) u64() uint64 {
	p := r.next(8)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(p)
}

func (r *reader) f32() float32 {
	p := r.next(4)
	if p == nil {
		return 0
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(p))
}

// strBytes returns a str field's bytes, aliasing the stored value.
func (r *reader) strBytes() []byte { return r.next(r.count(1)) }

// string returns a str field as a string of its own.
func (r *reader) string() string { return string(r.strBytes()) }

// optBytes returns an optbytes field, aliasing the stored value; ok is false
// for nil.
func (r *reader) optBytes() (p []byte, ok bool) {
	switch r.byte() {
	case 0:
		return nil, false
	case 1:
		return r.strBytes(), r.err == nil
	}
	r.fail()
	return nil, false
}

// done fails unless the whole value was read.
func (r *reader) done() error {
	if r.err == nil && len(r.b) != 0 {
		r.fail()
	}
	return r.err
}

// info reads what appendInfo wrote.
func (r *reader) info() habilis.EmbedderInfo {
	var i habilis.EmbedderInfo
	i.Kind = r.string()
	i.Model = r.string()
	dim := r.varint()
	if dim < math.MinInt32 || dim > math.MaxInt32 {
		r.fail()
	}
	i.Dim = int(dim)
	i.Version = r.string()
	return i
}

func decodeMeta(v []byte) (habilis.CatalogMeta, error) {
	r := &reader{b: v}
	var m habilis.CatalogMeta
	m.Version = r.u64()
	m.UpdatedAt = time.Unix(0, int64(r.u64())).UTC()
	m.Embedder = r.info()
	if p, ok := r.optBytes(); ok {
		m.EmbedderState = slices.Clone(p)
	}
	if p, ok := r.optBytes(); ok {
		m.Calibration = slices.Clone(p)
	}
	m.Lexical = r.info()
	if p, ok := r.optBytes(); ok {
		m.LexicalState = slices.Clone(p)
	}
	return m, r.done()
}

// exampleSummary is what a tool's value says about its examples.
type exampleSummary struct {
	count, text, dense, sparse int
}

// slabs hold the decoded contents of a whole snapshot in a few large
// arrays. A first pass over the tools measures (measuring true, adding up
// need); the second decodes into arrays of exactly that size, and every
// record's vectors, raw JSON and texts are subslices of them. A large
// catalog thus costs a few big allocations instead of millions of small
// ones.
type slabs struct {
	measuring bool
	need      sizes
	// format is the format of the values decoded; terms, from format 2
	// on, the terms of the tool being decoded, which its vectors and its
	// examples' name by their places.
	format int
	terms  []uint32
	// held gives the vectors the stored index holds (kind 6); name is the
	// tool being decoded.
	held *heldRows
	name []byte

	floats   []float32 // dense coordinates and sparse values
	indices  []uint32  // sparse indices
	raw      []byte    // input schemas and executors
	margins  []float32 // tools' margin overrides
	examples []string
	vectors  []habilis.Vector

	// text receives every string; refs say where each belongs once
	// text.String() is taken at the end.
	text strings.Builder
	refs []textRef
}

// newSlabs returns slabs for decoding values of format, which a measuring
// pass found to need need.
func newSlabs(format int, need sizes) *slabs {
	s := &slabs{
		format:   format,
		need:     need,
		floats:   make([]float32, 0, need.floats),
		indices:  make([]uint32, 0, need.indices),
		raw:      make([]byte, 0, need.raw),
		margins:  make([]float32, 0, need.margins),
		examples: make([]string, need.examples),
		vectors:  make([]habilis.Vector, need.examples),
		refs:     make([]textRef, 0, need.strs),
	}
	s.text.Grow(need.text)
	return s
}

type sizes struct {
	floats, indices, raw, margins, examples, text, strs int
	held                                                int // vectors of kind 6, which need no room
}

type textRef struct {
	dst      *string
	off, len int
}

// str decodes a str field into *dst (assigned by finish).
func (s *slabs) str(r *reader, dst *string) {
	p := r.strBytes()
	if r.err == nil && !s.strFrom(p, dst) {
		r.fail()
	}
}

// strFrom queues p as the value of *dst. It reports false when the snapshot
// holds more text than the first pass measured, which only corrupt data
// can cause.
func (s *slabs) strFrom(p []byte, dst *string) bool {
	if s.measuring {
		s.need.text += len(p)
		s.need.strs++
		return true
	}
	if len(s.refs) == cap(s.refs) || len(p) > s.need.text-s.text.Len() {
		return false
	}
	s.refs = append(s.refs, textRef{dst: dst, off: s.text.Len(), len: len(p)})
	s.text.Write(p)
	return true
}

// finish assigns every decoded string.
func (s *slabs) finish() {
	all := s.text.String()
	for _, ref := range s.refs {
		*ref.dst = all[ref.off : ref.off+ref.len]
	}
}

func (s *slabs) optRaw(r *reader) []byte {
	p, ok := r.optBytes()
	if !ok {
		return nil
	}
	if s.measuring {
		s.need.raw += len(p)
		return nil
	}
	if len(p) > cap(s.raw)-len(s.raw) {
		r.fail()
		return nil
	}
	n := len(s.raw)
	s.raw = append(s.raw, p...)
	return s.raw[n:len(s.raw):len(s.raw)]
}

func (s *slabs) vector(r *reader) habilis.Vector {
	switch kind := r.byte(); kind {
	case kindZero:
		return habilis.Vector{}
	case kindDense:
		n := r.count(4)
		p := r.next(4 * n)
		if r.err != nil {
			return habilis.Vector{}
		}
		if s.measuring {
			s.need.floats += n
			return habilis.Vector{}
		}
		d, ok := s.takeFloats(p, n)
		if !ok {
			r.fail()
		}
		return habilis.Vector{Dense: d}
	case kindSparse:
		n := r.count(8)
		pi := r.next(4 * n)
		pv := r.next(4 * n)
		idx, ok := s.indicesFor(r, n)
		if !ok {
			return habilis.Vector{}
		}
		pi = pi[:4*n]
		// Write refuses indices that do not ascend (Vector.Validate), so
		// reading such is damage.
		ascending := true
		for i := range idx {
			idx[i] = binary.LittleEndian.Uint32(pi[4*i : 4*i+4])
			ascending = ascending && (i == 0 || idx[i] > idx[i-1])
		}
		v, ok := s.takeFloats(pv, n)
		if !ok || !ascending {
			r.fail()
		}
		return habilis.Vector{Indices: idx, Values: v}
	case kindAll, kindBitmap, kindPositions:
		if s.format < 2 {
			break
		}
		return s.termVector(r, kind)
	case kindDense8:
		if s.format < 4 {
			break
		}
		return s.dense8(r)
	}
	r.fail()
	return habilis.Vector{}
}

// dense8 decodes a dense vector of kind 7. Its scale must be finite and
// above zero, as Quantize8 makes it, and so every coordinate it gives.
func (s *slabs) dense8(r *reader) habilis.Vector {
	n := r.count(1)
	scale := r.f32()
	p := r.next(n)
	if r.err != nil {
		return habilis.Vector{}
	}
	if !(scale > 0) || math.Float32bits(scale)&expBits == expBits {
		r.fail()
		return habilis.Vector{}
	}
	if s.measuring {
		s.need.floats += n
		return habilis.Vector{}
	}
	if n > cap(s.floats)-len(s.floats) {
		r.fail()
		return habilis.Vector{}
	}
	start := len(s.floats)
	s.floats = s.floats[:start+n]
	d := s.floats[start : start+n : start+n]
	vec.Dequantize8(d, p, scale)
	for _, f := range d {
		if math.Float32bits(f)&expBits == expBits {
			r.fail()
			return habilis.Vector{}
		}
	}
	return habilis.Vector{Dense: d}
}

// heldVector returns the vector of signal sig that the stored index
// holds for the tool being decoded (kind 6). A measuring pass counts
// nothing for it: the vector lies in the rows read from the index.
func (s *slabs) heldVector(r *reader, sig int) habilis.Vector {
	if s.format < 3 {
		r.fail()
		return habilis.Vector{}
	}
	if s.measuring {
		s.need.held++
		return habilis.Vector{}
	}
	v, ok := s.held.vector(s.name, sig)
	if !ok {
		r.fail()
	}
	return v
}

// toolVector decodes one of a tool's own vectors, of signal sig.
func (s *slabs) toolVector(r *reader, sig int) (habilis.Vector, bool) {
	if len(r.b) > 0 && r.b[0] == kindHeld {
		r.byte()
		return s.heldVector(r, sig), true
	}
	return s.vector(r), false
}

// indicesFor returns room for a sparse vector's n indices in s.indices,
// or false: when r failed, when s only measures (counting what the vector
// needs), or when the slab has no room, which is damage (r fails).
func (s *slabs) indicesFor(r *reader, n int) ([]uint32, bool) {
	if r.err != nil {
		return nil, false
	}
	if s.measuring {
		s.need.floats += n
		s.need.indices += n
		return nil, false
	}
	if n > cap(s.indices)-len(s.indices) {
		r.fail()
		return nil, false
	}
	start := len(s.indices)
	s.indices = s.indices[:start+n]
	return s.indices[start : start+n : start+n], true
}

// termVector decodes a sparse vector of kind 3 to 5, which names its
// indices by their places in s.terms.
func (s *slabs) termVector(r *reader, kind byte) habilis.Vector {
	var n int
	var places []byte
	switch kind {
	case kindAll:
		n = len(s.terms)
	case kindBitmap:
		n = r.count(4)
		places = r.next((len(s.terms) + 7) / 8)
	case kindPositions:
		n = r.count(5)
		start := r.b
		for range n {
			r.uvarint()
		}
		places = start[:len(start)-len(r.b)]
	}
	pv := r.next(4 * n)
	idx, ok := s.indicesFor(r, n)
	if !ok {
		return habilis.Vector{}
	}
	switch kind {
	case kindAll:
		ok = copy(idx, s.terms) == n
	case kindBitmap:
		ok = fromBitmap(idx, places, s.terms)
	case kindPositions:
		ok = fromPositions(idx, places, s.terms)
	}
	v, finite := s.takeFloats(pv, n)
	if !ok || !finite {
		r.fail()
	}
	return habilis.Vector{Indices: idx, Values: v}
}

// fromBitmap fills idx with the terms whose bits are set in bitmap, and
// reports whether there were exactly len(idx) of them, none past the terms.
func fromBitmap(idx []uint32, bitmap []byte, terms []uint32) bool {
	n := 0
	for i, c := range bitmap {
		for ; c != 0; c &= c - 1 {
			p := 8*i + bits.TrailingZeros8(c)
			if n == len(idx) || p >= len(terms) {
				return false
			}
			idx[n] = terms[p]
			n++
		}
	}
	return n == len(idx)
}

// fromPositions fills idx with the terms at the places p holds (len(idx)
// uvarints, as kind 5 writes them), and reports whether they all lie in
// the terms.
func fromPositions(idx []uint32, p []byte, terms []uint32) bool {
	next := uint64(0)
	for i := range idx {
		d, n := binary.Uvarint(p)
		if n <= 0 || d >= uint64(len(terms)) || next+d >= uint64(len(terms)) { // d first: next+d must not wrap
			return false
		}
		p = p[n:]
		idx[i] = terms[next+d]
		next += d + 1
	}
	return true
}

// readTerms reads a terms list into dst[:0], failing unless it ascends
// strictly within uint32.
func (r *reader) readTerms(dst []uint32) []uint32 {
	n := r.count(1)
	dst = dst[:0]
	next := uint64(0)
	for range n {
		d := r.uvarint()
		if d > math.MaxUint32 || next+d > math.MaxUint32 {
			r.fail()
			return dst[:0]
		}
		dst = append(dst, uint32(next+d))
		next += d + 1
	}
	return dst
}

// takeFloats decodes n little-endian float32s from p into the float slab.
// A NaN or an infinity is damage: no embedder makes one.
func (s *slabs) takeFloats(p []byte, n int) ([]float32, bool) {
	if n > cap(s.floats)-len(s.floats) {
		return nil, false
	}
	start := len(s.floats)
	s.floats = s.floats[:start+n]
	d := s.floats[start : start+n : start+n]
	// Slicing p to its exact length and each word to p[4i:4i+4] lets the
	// compiler drop the bounds checks: the loop runs at memory speed.
	// A NaN or an infinity has every exponent bit set.
	p = p[:4*n]
	finite := true
	for i := range d {
		u := binary.LittleEndian.Uint32(p[4*i : 4*i+4])
		if u&expBits == expBits {
			finite = false
		}
		d[i] = math.Float32frombits(u)
	}
	return d, finite
}

// expBits are a float32's exponent bits.
const expBits = 0x7f800000

// tool decodes a tools value into rec (whose name the caller sets) and
// returns the summary of its examples. When measuring it only adds up what
// the record will need.
func (s *slabs) tool(v []byte, rec *habilis.Record) (exampleSummary, error) {
	r := &reader{b: v}
	t := &rec.Tool
	s.str(r, &t.Description)
	t.InputSchema = s.optRaw(r)
	s.toolMargin(r, t)
	t.Executor = s.optRaw(r)
	s.toolMeta(r, t)
	s.str(r, &rec.Hash)
	if s.format >= 2 {
		s.terms = r.readTerms(s.terms)
	}
	s.toolVectors(r, rec)
	rec.Radius = r.f32()
	switch r.byte() {
	case 0:
		rec.HasRadius = false
	case 1:
		rec.HasRadius = true
	default:
		r.fail()
	}
	s.str(r, &rec.RadiusExample)
	rec.Margin = r.f32()
	sum := r.exampleSummary()
	if err := r.done(); err != nil {
		return exampleSummary{}, err
	}
	if s.measuring {
		s.need.examples += sum.count
		s.need.strs += sum.count
		s.need.text += sum.text
		s.need.floats += sum.dense + sum.sparse
		s.need.indices += sum.sparse
	}
	return sum, nil
}

// toolMargin decodes the tool's own margin, if it has one, into the
// margins slab.
func (s *slabs) toolMargin(r *reader, t *habilis.Tool) {
	switch r.byte() {
	case 0:
	case 1:
		m := r.f32()
		if s.measuring {
			s.need.margins++
		} else if len(s.margins) < cap(s.margins) {
			s.margins = append(s.margins, m)
			t.Margin = &s.margins[len(s.margins)-1]
		} else {
			r.fail()
		}
	default:
		r.fail()
	}
}

// toolMeta decodes the tool's meta map, if it has one.
func (s *slabs) toolMeta(r *reader, t *habilis.Tool) {
	switch r.byte() {
	case 0:
	case 1:
		n := r.count(2)
		if !s.measuring {
			t.Meta = make(map[string]string, n)
		}
		for range n {
			k, v := r.strBytes(), r.strBytes()
			if !s.measuring && r.err == nil {
				t.Meta[string(k)] = string(v)
			}
		}
	default:
		r.fail()
	}
}

// exampleSummary reads the counts and sizes of a tool's examples that end
// its value, each below 2^31.
func (r *reader) exampleSummary() exampleSummary {
	var sum exampleSummary
	for _, f := range []*int{&sum.count, &sum.text, &sum.dense, &sum.sparse} {
		x := r.uvarint()
		if x > math.MaxInt32 {
			r.fail()
		}
		*f = int(x)
	}
	return sum
}

// toolVectors decodes a tool's description, centroid and document.
func (s *slabs) toolVectors(r *reader, rec *habilis.Record) {
	rec.DescriptionVector, _ = s.toolVector(r, sigDesc)
	rec.Centroid, _ = s.toolVector(r, sigCent)
	var held bool
	rec.DocumentVector, held = s.toolVector(r, sigDoc)
	if held && len(s.terms) == 0 {
		// The document's indices are the tool's terms (see the format).
		s.terms = append(s.terms, rec.DocumentVector.Indices...)
	}
}

// example decodes one format 1 examples value into *text and *vec.
func (s *slabs) example(v []byte, text *string, vec *habilis.Vector) error {
	r := &reader{b: v}
	s.str(r, text)
	*vec = s.vector(r)
	return r.done()
}

// examplesValue decodes a format 2 examples value, which must hold exactly
// len(texts) examples, into texts and vecs; s.terms must be the tool's.
func (s *slabs) examplesValue(v []byte, texts []string, vecs []habilis.Vector) error {
	r := &reader{b: v}
	for i := range texts {
		s.str(r, &texts[i])
		vecs[i] = s.vector(r)
	}
	return r.done()
}
