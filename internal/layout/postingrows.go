package layout

import (
	"encoding/binary"
	"fmt"

	"github.com/habilis-router/habilis/internal/vec"
)

// MaxPacked is the most rows a sparse space packs its postings' rows for.
const MaxPacked = 1 << 24

// PostingRows are the rows of a sparse space's postings, in one of two
// forms. Packed: three bytes a row, little-endian, and one byte more, so
// that any row is read as one 32-bit word (SpRows24), for a space of up to
// MaxPacked rows; the rows were a quarter of a dense catalog's file as
// int32 (docs/benchmarks.md). Wide: an int32 a row (SpRows), for larger
// spaces and as indexes stored before hold them. Exactly one is set for
// a space with postings.
type PostingRows struct {
	Packed []byte
	Wide   []int32
}

// PackRows returns n rows of a space of rows rows in the form that suits
// it, each set by fill(at), which sets row j with at(j, row).
func PackRows(n, rows int, fill func(at func(j int, row int32))) PostingRows {
	if rows > MaxPacked {
		w := make([]int32, n)
		fill(func(j int, row int32) { w[j] = row })
		return PostingRows{Wide: w}
	}
	p := make([]byte, 3*n+1)
	fill(func(j int, row int32) {
		p[3*j], p[3*j+1], p[3*j+2] = byte(row), byte(row>>8), byte(row>>16)
	})
	return PostingRows{Packed: p}
}

// Len returns the number of rows.
func (p PostingRows) Len() int {
	if p.Packed != nil {
		return (len(p.Packed) - 1) / 3
	}
	return len(p.Wide)
}

// At returns row j.
func (p PostingRows) At(j int) int32 {
	if p.Packed != nil {
		return int32(binary.LittleEndian.Uint32(p.Packed[3*j:]) & (MaxPacked - 1))
	}
	return p.Wide[j]
}

// Bytes returns the stored bytes of rows [lo, hi), which run checksums
// cover.
func (p PostingRows) Bytes(lo, hi int) []byte {
	if p.Packed != nil {
		return p.Packed[3*lo : 3*hi]
	}
	return vec.Bytes(p.Wide[lo:hi])
}

// Section returns the id, from a space's base, and the bytes of the
// section that stores the rows.
func (p PostingRows) Section() (uint32, []byte) {
	if p.Packed != nil {
		return SpRows24, p.Packed
	}
	return SpRows, vec.Bytes(p.Wide)
}

// In reports whether every row of [lo, hi) is in [0, n).
func (p PostingRows) In(lo, hi, n int) bool {
	for j := lo; j < hi; j++ {
		if r := p.At(j); r < 0 || int(r) >= n {
			return false
		}
	}
	return true
}

// Has reports whether the ascending rows [lo, hi) hold row.
func (p PostingRows) Has(lo, hi int, row int32) bool {
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch r := p.At(m); {
		case r == row:
			return true
		case r < row:
			lo = m + 1
		default:
			hi = m
		}
	}
	return false
}

// ViewRows returns the rows of the sparse space at base in place, in the
// form it was stored in.
func ViewRows(l *Layout, base uint32) (PostingRows, error) {
	if b, ok := l.Secs[base+SpRows24]; ok {
		if len(b)%3 != 1 {
			return PostingRows{}, fmt.Errorf("%w: section %d holds %d bytes, not three a row and one", ErrLayout, base+SpRows24, len(b))
		}
		return PostingRows{Packed: b}, nil
	}
	w, err := View[int32](l, base+SpRows, -1)
	return PostingRows{Wide: w}, err
}
