// Package layout reads the selector's stored index (habilis.Batch.Index)
// as it lies: its header, section table and sections, checked against
// their CRCs, and the vectors of its rows (rows.go), which a store reads
// back instead of keeping a second copy in its records. The selector
// writes the layout (selector/layout.go, where it is described) and reads
// it through this package too.
package layout

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/habilis-router/habilis/internal/terms"
	"github.com/habilis-router/habilis/internal/vec"
)

// The header, the table and the sections' alignment; see
// selector/layout.go. Version changes whenever the bytes would be read
// differently.
const (
	Magic        = "habilisx"
	Version      = 1
	HeaderSize   = 64
	EntrySize    = 24
	SectionAlign = 64
)

// Section ids.
const (
	SecCalibration uint32 = iota + 1
	SecTools
	SecNameEnds
	SecNames
	SecDefEnds
	SecDefs
	SecCollideEnds
	SecCollides
	SecPrior
	SecBackground
	SecSumNorm
	SecRocchioNorm
	SecTriTerms
	SecTriOffsets
	SecTriPostings
	SecTriRunSums
	// SecPatch holds a patch's description (selector/patch.go).
	SecPatch
	// SecDefsFlate holds the tool definitions compressed in blocks, which
	// end where SecDefBlocks says (selector/defs.go); indexes stored
	// before hold them plain, in SecDefs.
	SecDefsFlate
	SecDefBlocks
	// A space of its own (no merged space) takes six ids from its base:
	// dense rows, or term table, offsets, rows, values and run CRCs; and
	// a seventh, the rows in their packed form (PostingRows), which
	// replaces the rows of indexes stored before.
	SecCent uint32 = 32
	SecDesc uint32 = 40
	SecDoc  uint32 = 48
)

// A space's sections, from its base.
const (
	SpDense = iota
	SpTerms
	SpOffsets
	SpRows
	SpVals
	SpRunSums
	SpRows24
)

// FlagMerged marks an index whose three signals share one merged space.
const FlagMerged = 1

// Castagnoli is the CRC-32C table of every checksum of the layout.
var Castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrLayout wraps every reason a stored index is not read.
var ErrLayout = errors.New("stored index")

// Lazy reports the sections not checked against their CRC by Parse: the
// postings and sparse values, which the selector checks a run at a time
// on first use, and the tool definitions.
func Lazy(id uint32) bool {
	switch id {
	case SecTriPostings, SecDefs, SecDefsFlate:
		return true
	}
	if id >= SecCent {
		k := (id - SecCent) % 8
		return k == SpRows || k == SpVals || k == SpRows24
	}
	return false
}

// TableCRC is the CRC of the header before its CRC and of a table of n
// sections.
func TableCRC(buf []byte, n int) uint32 {
	c := crc32.Update(0, Castagnoli, buf[:60])
	return crc32.Update(c, Castagnoli, buf[HeaderSize:HeaderSize+EntrySize*n])
}

// Is reports whether data starts as an index of this layout version,
// sound or not.
func Is(data []byte) bool {
	return len(data) >= 12 && string(data[:8]) == Magic && binary.LittleEndian.Uint32(data[8:]) == Version
}

// Layout is a stored index's header and sections, checked.
type Layout struct {
	Version uint64 // the catalog version it describes
	Tools   int
	Dim     int
	Merged  bool
	Secs    map[uint32][]byte
	Sums    map[uint32]uint32 // each section's CRC
}

// Parse reads and checks data's header, table and the sections Lazy
// does not name.
func Parse(data []byte) (*Layout, error) {
	if len(data) < HeaderSize || string(data[:8]) != Magic {
		return nil, fmt.Errorf("%w: not an index", ErrLayout)
	}
	le := binary.LittleEndian
	if v := le.Uint32(data[8:]); v != Version {
		return nil, fmt.Errorf("%w: layout %d, this release reads %d", ErrLayout, v, Version)
	}
	n := int(le.Uint32(data[12:]))
	if n > 64 || HeaderSize+EntrySize*n > len(data) {
		return nil, fmt.Errorf("%w: damaged header", ErrLayout)
	}
	if le.Uint32(data[60:]) != TableCRC(data, n) {
		return nil, fmt.Errorf("%w: damaged header (checksum)", ErrLayout)
	}
	l := &Layout{Version: le.Uint64(data[16:]), Tools: int(le.Uint32(data[24:])), Dim: int(le.Uint32(data[28:])),
		Merged: le.Uint32(data[32:])&FlagMerged != 0, Secs: make(map[uint32][]byte, n), Sums: make(map[uint32]uint32, n)}
	for i := range n {
		e := data[HeaderSize+EntrySize*i:]
		id, sum, off, size := le.Uint32(e), le.Uint32(e[4:]), le.Uint64(e[8:]), le.Uint64(e[16:])
		if off > uint64(len(data)) || size > uint64(len(data))-off {
			return nil, fmt.Errorf("%w: section %d out of bounds", ErrLayout, id)
		}
		b := data[off : off+size : off+size]
		if !Lazy(id) && crc32.Checksum(b, Castagnoli) != sum {
			return nil, fmt.Errorf("%w: section %d fails its checksum", ErrLayout, id)
		}
		l.Secs[id], l.Sums[id] = b, sum
	}
	return l, nil
}

// Check checks section id against its CRC, for the sections Parse does
// not check.
func (l *Layout) Check(id uint32) error {
	if crc32.Checksum(l.Secs[id], Castagnoli) != l.Sums[id] {
		return fmt.Errorf("%w: section %d fails its checksum", ErrLayout, id)
	}
	return nil
}

// littleEndian reports whether this machine stores words as the layout
// does; View refuses to read the layout's words elsewhere.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// View returns section id as a slice of T of length want (any length
// when want < 0), in place.
func View[T any](l *Layout, id uint32, want int) ([]T, error) {
	if !littleEndian {
		return nil, fmt.Errorf("%w: this machine is big-endian", ErrLayout)
	}
	v, err := vec.View[T](l.Secs[id])
	if err != nil {
		return nil, fmt.Errorf("%w: section %d: %v", ErrLayout, id, err)
	}
	if want >= 0 && len(v) != want {
		return nil, fmt.Errorf("%w: section %d holds %d words, want %d", ErrLayout, id, len(v), want)
	}
	return v, nil
}

// CheckEnds checks that ends are the ascending end offsets of pieces of
// a section of size bytes (or words).
func CheckEnds(ends []uint32, size int) error {
	prev := uint32(0)
	for _, e := range ends {
		if e < prev || int(e) > size {
			return fmt.Errorf("%w: damaged offsets", ErrLayout)
		}
		prev = e
	}
	return nil
}

// Names returns the tools' names, in row order (ascending), each a
// string of its own.
func (l *Layout) Names() ([]string, error) {
	ends, err := View[uint32](l, SecNameEnds, l.Tools)
	if err != nil {
		return nil, err
	}
	all := string(l.Secs[SecNames])
	if err := CheckEnds(ends, len(all)); err != nil {
		return nil, err
	}
	names := make([]string, l.Tools)
	start := uint32(0)
	for i, end := range ends {
		names[i] = all[start:end]
		start = end
		if i > 0 && names[i] <= names[i-1] {
			return nil, fmt.Errorf("%w: tool names out of order", ErrLayout)
		}
	}
	return names, nil
}

// termTable returns the terms of a stored term table in slot order.
func termTable(raw []uint32, slots int) ([]uint32, error) {
	t, err := terms.FromRaw(raw, slots)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrLayout, err)
	}
	ts, err := t.Terms(slots)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrLayout, err)
	}
	return ts, nil
}
