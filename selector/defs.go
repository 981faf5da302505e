package selector

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"sync"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/layout"
	"github.com/habilis-router/habilis/internal/par"
)

// A stored index keeps the tools' definitions (toolDef as JSON, one after
// another; secDefEnds gives where each ends) compressed with DEFLATE in
// blocks of defBlock definitions (secDefsFlate, and secDefBlocks where
// each block ends): they repeat the records' text, which selection never
// reads, and took a twelfth of a dense catalog's file (docs/benchmarks.md).
// Blocks let a write that asks for a few tools' hashes inflate those
// tools' blocks alone. Indexes stored before hold them plain (secDefs),
// and are read as they are.
const (
	secDefsFlate = layout.SecDefsFlate
	secDefBlocks = layout.SecDefBlocks
	defBlock     = 64
)

// toolDefs gives tools' definitions by index.
type toolDefs interface {
	def(i int) (toolDef, error)
	// hash is def(i).Hash, without decoding every definition.
	hash(i int) (string, error)
}

// heapDefs are the definitions of an index built from records.
type heapDefs []toolDef

func (d heapDefs) def(i int) (toolDef, error) { return d[i], nil }

func (d heapDefs) hash(i int) (string, error) { return d[i].Hash, nil }

// defsJSON returns the JSON of each of the n definitions of defs, encoded
// on every core, or the first error in definition order.
func defsJSON(defs toolDefs, n int) ([][]byte, error) {
	out := make([][]byte, n)
	errs := make([]error, n)
	par.For(n, func(_, i int) {
		d, err := defs.def(i)
		if err == nil {
			if out[i], err = json.Marshal(d); err != nil {
				err = fmt.Errorf("encode index: %w", err)
			}
		}
		errs[i] = err
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// compressDefs returns the definitions' JSON compressed in blocks of
// defBlock, on every core, and the end of each block. DEFLATE's fastest
// level: the default compressed the synthetic catalog's definitions 2.8
// times against 2.6 at several times the cost, which every write storing
// the index pays.
func compressDefs(each [][]byte) (data []byte, ends []uint32, err error) {
	nb := (len(each) + defBlock - 1) / defBlock
	blocks := make([][]byte, nb)
	errs := make([]error, nb)
	writers := make([]*flate.Writer, par.Workers(nb))
	par.For(nb, func(w, b int) {
		var buf bytes.Buffer
		if writers[w] == nil {
			writers[w], errs[b] = flate.NewWriter(&buf, flate.BestSpeed)
		} else {
			writers[w].Reset(&buf)
		}
		for _, d := range each[b*defBlock : min((b+1)*defBlock, len(each))] {
			if errs[b] == nil {
				_, errs[b] = writers[w].Write(d)
			}
		}
		if errs[b] == nil {
			errs[b] = writers[w].Close()
		}
		blocks[b] = buf.Bytes()
	})
	ends = make([]uint32, nb)
	for b, z := range blocks {
		if errs[b] != nil {
			return nil, nil, fmt.Errorf("encode index: definitions: %w", errs[b])
		}
		data = append(data, z...)
		ends[b] = uint32(len(data))
	}
	return data, ends, nil
}

// storedDefs are the definitions in a stored index, checked against their
// CRC and decoded, all of them, when one is first asked for: a selection
// never asks, while listing tools asks for all of them, and a server may
// list them often.
type storedDefs struct {
	ends []uint32 // each definition's end in their JSON
	// data is their JSON, or compressed in blocks that end at blocks
	// (nil for plain JSON).
	data   []byte
	blocks []uint32
	sum    uint32
	once   sync.Once
	defs   []toolDef
	err    error
	// sound is the section's CRC check (check), which hash and decode
	// share.
	sound    sync.Once
	soundErr error
}

// errDefs is what reading damaged definitions returns.
var errDefs = fmt.Errorf("the stored index: the tool definitions fail their checksum: %w", habilis.ErrDamaged)

// hash decodes definition i alone (its block, when compressed): a write
// of a few tools asks for the hashes of those it may leave unchanged.
func (d *storedDefs) hash(i int) (string, error) {
	if err := d.check(); err != nil {
		return "", err
	}
	text, at, err := d.text(i/defBlock, nil)
	if err != nil {
		return "", err
	}
	start := uint32(0)
	if i > 0 {
		start = d.ends[i-1]
	}
	var td toolDef
	if err := json.Unmarshal(text[start-at:d.ends[i]-at], &td); err != nil {
		return "", fmt.Errorf("the stored index: tool %d: %v: %w", i, err, habilis.ErrDamaged)
	}
	return td.Hash, nil
}

// check verifies the section's CRC, once for hash and decode alike.
func (d *storedDefs) check() error {
	d.sound.Do(func() {
		if crc32.Checksum(d.data, castagnoli) != d.sum {
			d.soundErr = errDefs
		}
	})
	return d.soundErr
}

// text returns the JSON of block b of the definitions, and where it
// starts in the JSON of them all; plain definitions return all of it,
// from 0. zr, when not nil, is a reader to reuse.
func (d *storedDefs) text(b int, zr io.ReadCloser) ([]byte, uint32, error) {
	if d.blocks == nil {
		return d.data, 0, nil
	}
	var from, zfrom uint32
	if b > 0 {
		from, zfrom = d.ends[b*defBlock-1], d.blocks[b-1]
	}
	to := d.ends[min((b+1)*defBlock, len(d.ends))-1]
	z := bytes.NewReader(d.data[zfrom:d.blocks[b]])
	if zr == nil {
		zr = flate.NewReader(z)
	} else if err := zr.(flate.Resetter).Reset(z, nil); err != nil {
		return nil, 0, errDefs
	}
	// Inflating stops one byte past the size the ends give: a damaged
	// block never makes more than that.
	text, err := io.ReadAll(io.LimitReader(zr, int64(to-from)+1))
	if err != nil || len(text) != int(to-from) {
		return nil, 0, fmt.Errorf("the stored index: the tool definitions of block %d do not inflate to their size: %w", b, habilis.ErrDamaged)
	}
	return text, from, nil
}

func (d *storedDefs) def(i int) (toolDef, error) {
	d.once.Do(d.decode)
	if d.err != nil {
		return toolDef{}, d.err
	}
	return d.defs[i], nil
}

func (d *storedDefs) decode() {
	if d.err = d.check(); d.err != nil {
		return
	}
	defs := make([]toolDef, len(d.ends))
	var zr io.ReadCloser
	if d.blocks != nil {
		zr = flate.NewReader(bytes.NewReader(nil))
	}
	var text []byte
	var at uint32
	start := uint32(0)
	for i, end := range d.ends {
		if i == 0 || d.blocks != nil && i%defBlock == 0 {
			var err error
			if text, at, err = d.text(i/defBlock, zr); err != nil {
				d.err = err
				return
			}
		}
		if err := json.Unmarshal(text[start-at:end-at], &defs[i]); err != nil {
			d.err = fmt.Errorf("the stored index: tool %d: %v: %w", i, err, habilis.ErrDamaged)
			return
		}
		start = end
	}
	d.defs = defs
}

// decodeDefs reads the definitions' sections of a stored index into ix:
// compressed, or plain as indexes stored before hold them.
func decodeDefs(l *storedLayout, ix *index) error {
	ends, err := view[uint32](l, secDefEnds, l.Tools)
	if err != nil {
		return err
	}
	d := &storedDefs{ends: ends}
	if z, ok := l.Secs[secDefsFlate]; ok {
		if d.blocks, err = view[uint32](l, secDefBlocks, (l.Tools+defBlock-1)/defBlock); err != nil {
			return err
		}
		if err := checkEnds(d.blocks, len(z)); err != nil {
			return err
		}
		d.data, d.sum = z, l.Sums[secDefsFlate]
	} else {
		d.data, d.sum = l.Secs[secDefs], l.Sums[secDefs]
	}
	size := len(d.data)
	if d.blocks != nil {
		size = math.MaxInt // their JSON's size is checked as each block inflates
	}
	if err := checkEnds(ends, size); err != nil {
		return err
	}
	ix.defs = d
	return nil
}
