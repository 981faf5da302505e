package selector

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
)

// TestStoredDefs checks that a stored index gives back every tool's
// definition and hash, from its compressed blocks (several of them, the
// last one short) and from the plain definitions indexes stored before
// hold.
func TestStoredDefs(t *testing.T) {
	ix, _, e := storedIndex(t, 2*defBlock+5)
	for i := range ix.defs.(heapDefs) {
		ix.defs.(heapDefs)[i].Hash = fmt.Sprintf("hash-%d", i)
	}
	data, err := encodeIndex(ix, ix.meta.Version)
	if err != nil {
		t.Fatal(err)
	}
	secs, err := indexSections(ix)
	if err != nil {
		t.Fatal(err)
	}
	each, err := defsJSON(ix.defs, len(ix.tools))
	if err != nil {
		t.Fatal(err)
	}
	var plain []section
	for _, s := range secs {
		switch s.id {
		case secDefsFlate:
			plain = append(plain, section{secDefs, bytes.Join(each, nil)})
		case secDefBlocks:
		default:
			plain = append(plain, s)
		}
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{{"compressed", data}, {"plain", assemble(ix, ix.meta.Version, plain)}} {
		got, err := decodeIndex(tc.data, ix.meta, e)
		if err != nil {
			t.Fatalf("%s: decodeIndex error = %v", tc.name, err)
		}
		if _, compressed := got.defs.(*storedDefs); !compressed {
			t.Fatalf("%s: definitions of type %T, want *storedDefs", tc.name, got.defs)
		}
		for i := range ix.tools {
			want := asStored(t, ix.defs, i)
			h, err := got.defs.hash(i)
			if err != nil || h != want.Hash {
				t.Errorf("%s: hash(%d) = %q, %v; want %q", tc.name, i, h, err, want.Hash)
			}
			d, err := got.defs.def(i)
			if err != nil {
				t.Fatalf("%s: def(%d) error = %v", tc.name, i, err)
			}
			if diff := cmp.Diff(want, d); diff != "" {
				t.Errorf("%s: def(%d) mismatch (-want +got):\n%s", tc.name, i, diff)
			}
		}
	}
	if l := len(data); l >= len(assemble(ix, ix.meta.Version, plain)) {
		t.Errorf("index with compressed definitions takes %d bytes, not fewer than with plain ones", l)
	}
}

// asStored returns definition i of defs as JSON gives it back.
func asStored(t *testing.T, defs toolDefs, i int) toolDef {
	t.Helper()
	d, _ := defs.def(i)
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var out toolDef
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStoredDefsDamaged checks that compressed definitions that do not
// inflate, or not to the size their ends give, are damage, even when
// their checksum holds: no panic, and ErrDamaged from def and hash.
func TestStoredDefsDamaged(t *testing.T) {
	ix, _, _ := storedIndex(t, defBlock+3)
	each, err := defsJSON(ix.defs, len(ix.tools))
	if err != nil {
		t.Fatal(err)
	}
	z, blocks, err := compressDefs(each)
	if err != nil {
		t.Fatal(err)
	}
	ends := make([]uint32, len(each))
	n := 0
	for i, d := range each {
		n += len(d)
		ends[i] = uint32(n)
	}
	longer := append([]uint32(nil), ends...)
	longer[len(longer)-1] += 10
	garbage := bytes.Repeat([]byte{0xa5}, len(z))
	for _, tc := range []struct {
		name string
		data []byte
		ends []uint32
	}{{"garbage", garbage, ends}, {"cut short", z[:len(z)-3], ends}, {"ends past the text", z, longer}} {
		bl := append([]uint32(nil), blocks...)
		bl[len(bl)-1] = min(bl[len(bl)-1], uint32(len(tc.data)))
		for _, last := range []int{0, len(each) - 1} {
			d := &storedDefs{ends: tc.ends, data: tc.data, blocks: bl, sum: crc32.Checksum(tc.data, castagnoli)}
			if _, err := d.def(last); !errors.Is(err, habilis.ErrDamaged) {
				t.Errorf("%s: def(%d) error = %v, want %v", tc.name, last, err, habilis.ErrDamaged)
			}
			d = &storedDefs{ends: tc.ends, data: tc.data, blocks: bl, sum: crc32.Checksum(tc.data, castagnoli)}
			if _, err := d.hash(last); last > 0 && !errors.Is(err, habilis.ErrDamaged) {
				t.Errorf("%s: hash(%d) error = %v, want %v", tc.name, last, err, habilis.ErrDamaged)
			}
		}
	}
}
