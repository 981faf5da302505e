package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/bits"
	"os"
)

// The page walk checks a bbolt file's structure by reading the file
// itself, not bbolt's memory map. bbolt trusts its pages (its source,
// v1.5.0: db.page, Cursor.search, Tx.forEachPage): a page id past the end
// of the file makes it read beyond the mapping, which faults, and a page
// that names one of its ancestors as a child makes it recurse until the
// stack overflows or loop until memory runs out, none of which a recover
// catches. Its assertions (Page.FastCheck, the freelist's) panic. So Open
// walks the file once, under bbolt's file lock, and bbolt then only reads
// pages known to be sound: every page id in range, every page reached once,
// every element inside its page, the freelist disjoint from the pages in
// use, and every page below the high-water mark one or the other.
//
// The walk reads each page's header and elements, not the keys and values,
// so it costs a read a page of the tree (see docs/benchmarks.md). It does
// not check key order (Tx.Check does, in Check) nor the bytes of values,
// which bbolt keeps without checksums: the decoder and Check look at those.
//
// It reads with pread, a system call a page, rather than through a memory
// map: a page fault maps the pages around the one read too, so walking a
// map made every tree page resident, the size of the catalog (300 MB of a
// cold select's 308 MB at 30,000 tools), where reading costs a few
// milliseconds more (docs/benchmarks.md).

// bbolt's on-disk format, version 2 (go.etcd.io/bbolt/internal/common). It
// writes its structures in the machine's byte order.
const (
	boltMagic        = 0xED0CDAED
	boltVersion      = 2
	pageHeaderSize   = 16
	elementSize      = 16 // branch and leaf elements alike
	bucketHeaderSize = 16
	metaSize         = 64 // the meta's fields, checksum last
	branchPageFlag   = 0x01
	leafPageFlag     = 0x02
	metaPageFlag     = 0x04
	freelistPageFlag = 0x10
	bucketLeafFlag   = 0x01
	noFreelist       = ^uint64(0)
)

var ne = binary.NativeEndian

// boltMeta is what the walk needs of a meta page.
type boltMeta struct {
	pageSize             int
	root, freelist, high uint64 // high: the high-water mark, pages in use or free below it
	txid                 uint64
}

// parseMeta decodes the meta at the start of page p, or says why it is not
// valid as bbolt's Meta.Validate would.
func parseMeta(p []byte) (boltMeta, error) {
	if len(p) < pageHeaderSize+metaSize {
		return boltMeta{}, errors.New("short page")
	}
	m := p[pageHeaderSize : pageHeaderSize+metaSize]
	switch {
	case ne.Uint32(m[0:]) != boltMagic:
		return boltMeta{}, errors.New("no bbolt magic number")
	case ne.Uint32(m[4:]) != boltVersion:
		return boltMeta{}, fmt.Errorf("bbolt format version %d", ne.Uint32(m[4:]))
	}
	h := fnv.New64a()
	h.Write(m[:56])
	if h.Sum64() != ne.Uint64(m[56:]) {
		return boltMeta{}, errors.New("checksum mismatch")
	}
	return boltMeta{
		pageSize: int(ne.Uint32(m[8:])),
		root:     ne.Uint64(m[16:]),
		freelist: ne.Uint64(m[32:]),
		high:     ne.Uint64(m[40:]),
		txid:     ne.Uint64(m[48:]),
	}, nil
}

// looksBolt reports whether either meta page of the file at path is a
// valid bbolt meta: the file is a bbolt file, damaged or not.
func looksBolt(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	p := make([]byte, pageHeaderSize+metaSize)
	if _, err := f.ReadAt(p, 0); err == nil {
		if _, err := parseMeta(p); err == nil {
			return true
		}
	}
	// Page 0 is unreadable: look for page 1 where bbolt would, at each
	// page size it supports.
	for size := int64(1024); size <= 1<<24; size *= 2 {
		if _, err := f.ReadAt(p, size); err != nil {
			return false
		}
		if _, err := parseMeta(p); err == nil {
			return true
		}
	}
	return false
}

// pageWalk is one walk over a file. Problems are collected up to limit.
type pageWalk struct {
	r        io.ReaderAt
	size     int64
	pageSize int
	meta     boltMeta
	used     bitset // pages reached: metas, freelist, tree nodes and their overflow
	free     bitset // pages the freelist lists
	limit    int
	problems []string
	nodes    int // tree pages reached, overflow included

	// page holds the first bytes of the page last read by header, whose
	// id is pageID: its elements, with one read a page.
	page   []byte
	pageID uint64
}

// pagePrefix is how much of a page header reads: the header and 63
// elements, all of a leaf's of tools or examples, so that most pages take
// one read.
const pagePrefix = 1024

// noPage is no page's id.
const noPage = ^uint64(0)

// walkStats says what a sound walk found.
type walkStats struct {
	PageSize int
	Pages    uint64 // below the high-water mark
	Free     int
	TxID     uint64
}

// walkFile walks the file at path and returns up to limit problems.
func walkFile(path string, limit int) (walkStats, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return walkStats{}, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return walkStats{}, nil, err
	}
	w := &pageWalk{r: f, size: fi.Size(), limit: max(limit, 1), page: make([]byte, 0, pagePrefix), pageID: noPage}
	w.walk()
	st := walkStats{PageSize: w.pageSize, Pages: w.meta.high, Free: w.free.count(), TxID: w.meta.txid}
	return st, w.problems, nil
}

func (w *pageWalk) problem(format string, args ...any) {
	if len(w.problems) < w.limit {
		w.problems = append(w.problems, fmt.Sprintf(format, args...))
	}
}

func (w *pageWalk) full() bool { return len(w.problems) >= w.limit }

// walk runs the checks in order; each needs the ones before it sound.
func (w *pageWalk) walk() {
	if !w.readMetas() {
		return
	}
	w.used = newBitset(w.meta.high)
	w.free = newBitset(w.meta.high)
	w.used.set(0)
	w.used.set(1)
	w.readFreelist()
	if w.full() {
		return
	}
	w.walkTree()
	if w.full() {
		return
	}
	lost, first := 0, uint64(0)
	for id := uint64(2); id < w.meta.high; id++ {
		if !w.used.has(id) && !w.free.has(id) {
			if lost == 0 {
				first = id
			}
			lost++
		}
	}
	if lost > 0 {
		w.problem("%d pages neither in use nor free, the first %d", lost, first)
	}
}

// readMetas reads both meta pages and picks the one bbolt reads (DB.meta:
// the higher transaction id). bbolt falls back to the other when one does
// not validate, silently rolling the store back to its write before; for a
// catalog written once that is the empty store, so a bad meta page is
// reported rather than followed.
func (w *pageWalk) readMetas() bool {
	m0, ok := w.readMeta(0, 0)
	if !ok {
		return false
	}
	if m0.pageSize < 1024 || m0.pageSize > 1<<24 || bits.OnesCount(uint(m0.pageSize)) != 1 {
		w.problem("meta page 0: page size %d", m0.pageSize)
		return false
	}
	m1, ok := w.readMeta(1, m0.pageSize)
	switch {
	case !ok:
		return false
	case m1.pageSize != m0.pageSize:
		w.problem("meta page 1: page size %d, meta page 0 says %d", m1.pageSize, m0.pageSize)
		return false
	}
	m := m0
	if m1.txid > m.txid {
		m = m1
	}
	w.pageSize, w.meta = m.pageSize, m
	switch {
	case m.high < 4 || m.high > uint64(w.size)/uint64(m.pageSize):
		w.problem("meta page: %d pages in use, but the file holds %d (truncated?)", m.high, w.size/int64(m.pageSize))
	case m.root < 2 || m.root >= m.high:
		w.problem("meta page: root page %d outside 2-%d", m.root, m.high-1)
	case m.freelist != noFreelist && (m.freelist < 2 || m.freelist >= m.high):
		w.problem("meta page: freelist page %d outside 2-%d", m.freelist, m.high-1)
	default:
		return true
	}
	return false
}

// readMeta reads meta page i of a file of pages of pageSize bytes.
func (w *pageWalk) readMeta(i uint64, pageSize int) (boltMeta, bool) {
	p, err := w.readAt(int64(i)*int64(pageSize), pageHeaderSize+metaSize)
	if err != nil {
		w.problem("meta page %d: unreadable: %v", i, err)
		return boltMeta{}, false
	}
	m, err := parseMeta(p)
	if err != nil {
		w.problem("meta page %d: %v", i, err)
		return boltMeta{}, false
	}
	// bbolt writes meta page i with id i, the meta type and no elements
	// or overflow, but reads none of it back: the checksum covers the
	// meta alone.
	id, flags, count, overflow := ne.Uint64(p), ne.Uint16(p[8:]), ne.Uint16(p[10:]), ne.Uint32(p[12:])
	if id != i || flags != metaPageFlag || count != 0 || overflow != 0 {
		w.problem("meta page %d: header says page %d of type %#x, count %d, overflow %d", i, id, flags, count, overflow)
		return boltMeta{}, false
	}
	return m, true
}

// pageHeader is a page's first 16 bytes.
type pageHeader struct {
	id       uint64
	flags    uint16
	count    int
	overflow uint64
}

// read returns n bytes at byte offset off of page id, or nil after
// reporting why not. Bytes of the page header last read are those it
// read, valid until it reads another page.
func (w *pageWalk) read(id uint64, off, n int) []byte {
	if id == w.pageID && off >= 0 && n >= 0 && off+n <= len(w.page) {
		return w.page[off : off+n : off+n]
	}
	p, err := w.readAt(int64(id)*int64(w.pageSize)+int64(off), n)
	if err != nil {
		w.problem("page %d: unreadable: %v", id, err)
		return nil
	}
	return p
}

// readAt returns n bytes at off.
func (w *pageWalk) readAt(off int64, n int) ([]byte, error) {
	if off < 0 || n < 0 || off+int64(n) > w.size {
		return nil, io.ErrUnexpectedEOF
	}
	p := make([]byte, n)
	if _, err := w.r.ReadAt(p, off); err != nil {
		return nil, err
	}
	return p, nil
}

// readPage reads the first pagePrefix bytes of page id (fewer at the end
// of the file) into w.page, and returns its header, or nil after reporting
// why not.
func (w *pageWalk) readPage(id uint64) []byte {
	off := int64(id) * int64(w.pageSize)
	n := min(int64(pagePrefix), int64(w.pageSize), w.size-off)
	w.pageID, w.page = noPage, w.page[:0]
	if n < pageHeaderSize {
		w.problem("page %d: unreadable: %v", id, io.ErrUnexpectedEOF)
		return nil
	}
	if _, err := w.r.ReadAt(w.page[:n], off); err != nil {
		w.problem("page %d: unreadable: %v", id, err)
		return nil
	}
	w.pageID, w.page = id, w.page[:n]
	return w.page[:pageHeaderSize]
}

// header reads page id's header and checks it names id, has one of the
// flags in want, and ends, overflow included, below the high-water mark.
// It marks the page's span in use.
func (w *pageWalk) header(id uint64, want uint16, what string) (pageHeader, bool) {
	if id < 2 || id >= w.meta.high {
		w.problem("%s: page %d outside 2-%d", what, id, w.meta.high-1)
		return pageHeader{}, false
	}
	p := w.readPage(id)
	if p == nil {
		return pageHeader{}, false
	}
	h := pageHeader{id: ne.Uint64(p[0:]), flags: ne.Uint16(p[8:]), count: int(ne.Uint16(p[10:])), overflow: uint64(ne.Uint32(p[12:]))}
	switch {
	case h.id != id:
		w.problem("%s: page %d says it is page %d", what, id, h.id)
		return h, false
	case h.flags&want == 0 || bits.OnesCount16(h.flags) != 1:
		w.problem("%s: page %d has type flags %#x", what, id, h.flags)
		return h, false
	case h.overflow >= w.meta.high-id:
		w.problem("%s: page %d overflows %d pages past the high-water mark %d", what, id, h.overflow, w.meta.high)
		return h, false
	}
	for p := id; p <= id+h.overflow; p++ {
		switch {
		case w.used.has(p):
			w.problem("%s: page %d (of page %d) is referenced twice", what, p, id)
			return h, false
		case w.free.has(p):
			w.problem("%s: page %d (of page %d) is in use and free", what, p, id)
			return h, false
		}
		w.used.set(p)
	}
	return h, true
}

// readFreelist marks the pages the freelist lists as free.
func (w *pageWalk) readFreelist() {
	id := w.meta.freelist
	if id == noFreelist {
		return
	}
	h, ok := w.header(id, freelistPageFlag, "freelist")
	if !ok {
		return
	}
	span := int64(h.overflow+1) * int64(w.pageSize)
	start, count := pageHeaderSize, h.count
	if count == 0xFFFF { // the count is the first id's slot
		p := w.read(id, pageHeaderSize, 8)
		if p == nil {
			return
		}
		c := ne.Uint64(p)
		if c > uint64(span/8) {
			w.problem("freelist: page %d claims %d free pages", id, c)
			return
		}
		start, count = start+8, int(c)
	}
	if int64(start+8*count) > span {
		w.problem("freelist: page %d claims %d free pages, more than it holds", id, count)
		return
	}
	p := w.read(id, start, 8*count)
	if p == nil {
		return
	}
	for i := range count {
		f := ne.Uint64(p[8*i:])
		switch {
		case f < 2 || f >= w.meta.high:
			w.problem("freelist: free page %d outside 2-%d", f, w.meta.high-1)
			return
		case w.free.has(f):
			w.problem("freelist: page %d listed twice", f)
			return
		case w.used.has(f):
			w.problem("freelist: page %d is in use and free", f)
			return
		}
		w.free.set(f)
	}
}

// walkTree walks the root bucket and every bucket below it, with a stack
// rather than recursion: the walk never visits a page twice, so it ends.
func (w *pageWalk) walkTree() {
	stack := []uint64{w.meta.root}
	roots := map[uint64]bool{w.meta.root: true}
	for len(stack) > 0 && !w.full() {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		children, buckets := w.node(id, roots[id])
		stack = append(stack, children...)
		for _, b := range buckets {
			roots[b] = true
			stack = append(stack, b)
		}
	}
}

// node checks one branch or leaf page and returns the pages it refers to:
// a branch's children, and the root pages of the buckets a leaf holds.
// A bucket's root may be an empty leaf; any other page holds elements.
// Offsets are int64: elements' sizes are 32-bit and int may be too.
func (w *pageWalk) node(id uint64, root bool) (children, buckets []uint64) {
	h, elems, ok := w.nodeElements(id, root)
	if !ok {
		return nil, nil
	}
	span := int64(h.overflow+1) * int64(w.pageSize)
	branch := h.flags == branchPageFlag
	element := w.leafElement
	if branch {
		element = w.branchElement
	}
	end := int64(pageHeaderSize) // where the page's data ends: bbolt sizes pages to fit
	for i := range h.count {
		ref, elemEnd, ok := element(id, i, elems[elementSize*i:], span)
		if !ok {
			return nil, nil
		}
		end = max(end, elemEnd)
		switch {
		case branch:
			children = append(children, ref)
		case ref != 0:
			buckets = append(buckets, ref)
		}
	}
	if h.overflow > 0 && end <= int64(h.overflow)*int64(w.pageSize) {
		w.problem("tree: page %d: %d overflow pages for %d bytes of data", id, h.overflow, end)
		return nil, nil
	}
	return children, buckets
}

// nodeElements checks the header of branch or leaf page id and returns
// it with the page's element headers, which it checks fit in the page.
func (w *pageWalk) nodeElements(id uint64, root bool) (pageHeader, []byte, bool) {
	h, ok := w.header(id, branchPageFlag|leafPageFlag, "tree")
	if !ok {
		return h, nil, false
	}
	w.nodes += int(h.overflow) + 1
	span := int64(h.overflow+1) * int64(w.pageSize)
	if h.count == 0 && (!root || h.flags == branchPageFlag) {
		w.problem("tree: page %d is empty", id)
		return h, nil, false
	}
	if int64(pageHeaderSize+elementSize*h.count) > span {
		w.problem("tree: page %d holds %d elements, more than fit in %d bytes", id, h.count, span)
		return h, nil, false
	}
	elems := w.read(id, pageHeaderSize, elementSize*h.count)
	return h, elems, elems != nil
}

// branchElement checks element i of branch page id, whose header is e,
// and returns the child it points to and where its key ends in the page.
func (w *pageWalk) branchElement(id uint64, i int, e []byte, span int64) (child uint64, end int64, ok bool) {
	off := int64(pageHeaderSize + elementSize*i)
	kEnd := off + int64(ne.Uint32(e[0:])) + int64(ne.Uint32(e[4:]))
	if kEnd > span {
		w.problem("tree: page %d: element %d lies outside the page", id, i)
		return 0, 0, false
	}
	return ne.Uint64(e[8:]), kEnd, true
}

// leafElement checks element i of leaf page id, whose header is e, and
// returns the root page of the bucket it holds (0 for none, or an inline
// bucket) and where its value ends in the page.
func (w *pageWalk) leafElement(id uint64, i int, e []byte, span int64) (bucket uint64, end int64, ok bool) {
	off := int64(pageHeaderSize + elementSize*i)
	flags, ksize, vsize := ne.Uint32(e[0:]), int64(ne.Uint32(e[8:])), int64(ne.Uint32(e[12:]))
	vOff := off + int64(ne.Uint32(e[4:])) + ksize
	switch {
	case flags&^bucketLeafFlag != 0:
		w.problem("tree: page %d: element %d has flags %#x", id, i, flags)
		return 0, 0, false
	case ksize == 0:
		w.problem("tree: page %d: element %d has an empty key", id, i)
		return 0, 0, false
	case vOff+vsize > span:
		w.problem("tree: page %d: element %d lies outside the page", id, i)
		return 0, 0, false
	}
	if flags&bucketLeafFlag == 0 {
		return 0, vOff + vsize, true
	}
	b, ok := w.bucket(id, int(vOff), int(vsize), i)
	return b, vOff + vsize, ok
}

// bucket checks the bucket header stored at byte off of page id and
// returns its root page, 0 for an inline bucket (whose one leaf page lies
// in the value and must hold no bucket itself).
func (w *pageWalk) bucket(id uint64, off, size, elem int) (uint64, bool) {
	if size < bucketHeaderSize {
		w.problem("tree: page %d: element %d: bucket header of %d bytes", id, elem, size)
		return 0, false
	}
	v := w.read(id, off, size)
	if v == nil {
		return 0, false
	}
	root := ne.Uint64(v)
	if root != 0 {
		return root, true
	}
	p := v[bucketHeaderSize:]
	if len(p) < pageHeaderSize {
		w.problem("tree: page %d: element %d: inline bucket of %d bytes", id, elem, len(p))
		return 0, false
	}
	flags, count := ne.Uint16(p[8:]), int(ne.Uint16(p[10:]))
	if flags != leafPageFlag || pageHeaderSize+elementSize*count > len(p) {
		w.problem("tree: page %d: element %d: inline bucket with flags %#x and %d elements in %d bytes", id, elem, flags, count, len(p))
		return 0, false
	}
	for i := range count {
		e := p[pageHeaderSize+elementSize*i:]
		off := int64(pageHeaderSize + elementSize*i)
		flags, end := ne.Uint32(e[0:]), off+int64(ne.Uint32(e[4:]))+int64(ne.Uint32(e[8:]))+int64(ne.Uint32(e[12:]))
		if flags != 0 || ne.Uint32(e[8:]) == 0 || end > int64(len(p)) {
			w.problem("tree: page %d: element %d: inline bucket element %d is malformed", id, elem, i)
			return 0, false
		}
	}
	return 0, true
}

// bitset is a set of page ids below a bound.
type bitset []uint64

func newBitset(n uint64) bitset    { return make(bitset, (n+63)/64) }
func (b bitset) set(i uint64)      { b[i/64] |= 1 << (i % 64) }
func (b bitset) has(i uint64) bool { return b[i/64]&(1<<(i%64)) != 0 }

func (b bitset) count() int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}
