package boltstore

import (
	"bytes"
	"context"
	"fmt"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/layout"
	bolt "go.etcd.io/bbolt"
)

// A tool's description, centroid and document vectors are in its record
// and in the selector's stored index alike; from format 3 on a record
// leaves to the index those the index holds bit for bit (codec.go, kind
// 6), which at 30,000 lexical tools is 5 KB a tool, a fifth of the file
// (docs/benchmarks.md). The index is opaque to the selector's callers but
// not to this package, which reads its rows through internal/layout.

// A row's vectors, as internal/layout numbers them.
const (
	sigCent = layout.Cent
	sigDesc = layout.Desc
	sigDoc  = layout.Doc
	signals = 3
)

// holder is the index a write stores, as the encoder asks it which of a
// record's vectors it holds: by name, a digest of each of its rows'
// vectors (layout.Digests).
type holder struct {
	dim     int
	byName  map[string]int
	digests [][signals]uint64
}

// newHolder returns the holder of index, the index a write stores, or nil
// when the write stores none (writeIndex) or it does not read: the
// records then keep their vectors.
func newHolder(index []byte) *holder {
	if len(index) == 0 || len(index) > bolt.MaxValueSize {
		return nil
	}
	l, err := layout.Parse(index)
	if err != nil {
		return nil
	}
	names, err := l.Names()
	if err != nil {
		return nil
	}
	d, err := layout.Digests(l)
	if err != nil {
		return nil
	}
	return &holder{dim: l.Dim, byName: indexNames(names), digests: d}
}

func indexNames(names []string) map[string]int {
	m := make(map[string]int, len(names))
	for i, n := range names {
		m[n] = i
	}
	return m
}

// vectors returns r's vectors by signal.
func vectors(r *habilis.Record) [signals]habilis.Vector {
	var v [signals]habilis.Vector
	v[sigCent], v[sigDesc], v[sigDoc] = r.Centroid, r.DescriptionVector, r.DocumentVector
	return v
}

// holds reports which of r's vectors h holds as r does: of the form of
// its signal's rows (dense of the index's dimension, or sparse), with no
// coordinate of value 0 when sparse (the index keeps none), and the same
// digest as the row of r's name.
func (h *holder) holds(r *habilis.Record) [signals]bool {
	var held [signals]bool
	if h == nil {
		return held
	}
	row, ok := h.byName[r.Tool.Name]
	if !ok {
		return held
	}
	for sig, v := range vectors(r) {
		held[sig] = h.fits(sig, v) && layout.Digest(v) == h.digests[row][sig]
	}
	return held
}

// fits reports whether v has the form of the rows of signal sig.
func (h *holder) fits(sig int, v habilis.Vector) bool {
	if h.dim > 0 && sig != sigDoc {
		return len(v.Dense) == h.dim
	}
	if v.Dense != nil || len(v.Indices) == 0 || len(v.Indices) != len(v.Values) {
		return false
	}
	for _, x := range v.Values {
		if x == 0 {
			return false
		}
	}
	return true
}

// heldRows gives the vectors of a stored index, read on first use: a
// snapshot of a catalog none of whose records leave a vector to the
// index never reads them.
type heldRows struct {
	index  []byte // the stored index, in place
	loaded bool
	rows   *layout.Rows
	byName map[string]int
	err    error
}

// vector returns the vector of signal sig of the tool named name, or
// false when the index holds no such tool or cannot be read (h.err).
func (h *heldRows) vector(name []byte, sig int) (habilis.Vector, bool) {
	if h == nil {
		return habilis.Vector{}, false
	}
	if !h.loaded {
		h.loaded = true
		h.rows, h.byName, h.err = readRows(h.index)
	}
	row, ok := h.byName[string(name)]
	if h.err != nil || !ok {
		return habilis.Vector{}, false
	}
	return h.rows.Vector(row, sig), true
}

// storedIndexData returns the index stored in tx, in place, or nil.
func storedIndexData(tx *bolt.Tx) []byte {
	if b := tx.Bucket([]byte(bucketIndex)); b != nil {
		return b.Get([]byte(keyIndex))
	}
	return nil
}

// readRows reads the vectors and names of a stored index.
func readRows(index []byte) (*layout.Rows, map[string]int, error) {
	if index == nil {
		return nil, nil, fmt.Errorf("tools leave vectors to a stored index, and there is none: %w", errCorrupt)
	}
	l, err := layout.Parse(index)
	if err != nil {
		return nil, nil, fmt.Errorf("the index that holds the tools' vectors: %v: %w", err, errCorrupt)
	}
	names, err := l.Names()
	if err != nil {
		return nil, nil, fmt.Errorf("the index that holds the tools' vectors: %v: %w", err, errCorrupt)
	}
	rows, err := layout.ReadRows(l)
	if err != nil {
		return nil, nil, fmt.Errorf("the index that holds the tools' vectors: %v: %w", err, errCorrupt)
	}
	return rows, indexNames(names), nil
}

// keepsIndex reports whether writeIndex keeps the stored index for the
// batch, storing its patch beside it.
func keepsIndex(tx *bolt.Tx, index, patch []byte) bool {
	return index == nil && len(patch) > 0 && len(patch) <= bolt.MaxValueSize && storedIndexData(tx) != nil
}

// rehome writes back into their records the vectors that the stored
// index holds for the tools a batch leaves in place, when the index the
// batch stores instead (hold, nil for none) does not hold them as well:
// a record never leaves a vector to an index that is gone or changed.
// The stored index is compared with the new one by digests; only the
// tools they differ on are decoded and written again.
func rehome(ctx context.Context, tx *bolt.Tx, b *habilis.Batch, hold *holder) error {
	old := storedIndexData(tx)
	if !layout.Is(old) {
		return nil // no record leaves a vector to what is not an index
	}
	l, err := layout.Parse(old)
	if err != nil {
		return fmt.Errorf("the index that holds the tools' vectors: %v: %w", err, errCorrupt)
	}
	names, err := l.Names()
	if err != nil {
		return fmt.Errorf("the index that holds the tools' vectors: %v: %w", err, errCorrupt)
	}
	digests, err := layout.Digests(l)
	if err != nil {
		return fmt.Errorf("the index that holds the tools' vectors: %v: %w", err, errCorrupt)
	}
	gone := make(map[string]bool, len(b.Put)+len(b.Delete))
	for i := range b.Put {
		gone[b.Put[i].Tool.Name] = true
	}
	for _, name := range b.Delete {
		gone[name] = true
	}
	var redo []string
	for row, name := range names {
		if gone[name] {
			continue
		}
		if hold != nil {
			if r, ok := hold.byName[name]; ok && hold.digests[r] == digests[row] {
				continue
			}
		}
		redo = append(redo, name)
	}
	return rewrite(ctx, tx, redo, hold)
}

// rewrite decodes the tools named, with the vectors the stored index
// holds, and writes them again for the index hold (nil: none).
func rewrite(ctx context.Context, tx *bolt.Tx, names []string, hold *holder) error {
	if len(names) == 0 {
		return nil
	}
	tools, examples := catalogBuckets(tx)
	held := &heldRows{index: storedIndexData(tx)}
	recs := make([]habilis.Record, 0, len(names))
	for i, name := range names {
		if i%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		k := []byte(name)
		v := tools.Get(k)
		if v == nil {
			continue // not a tool of the catalog: the index is stale
		}
		if !bytes.Contains(v, []byte{kindHeld}) {
			continue // no byte 6 at all: nothing left to the index
		}
		rec, err := decodeRecord(storedFormat(tx), examples, k, v, held)
		if err != nil {
			return fmt.Errorf("tool %q: %w", name, err)
		}
		recs = append(recs, rec)
	}
	var a arena
	e := encoder{hold: hold}
	for i := range recs {
		if err := putTool(tools, examples, &a, &e, &recs[i]); err != nil {
			return fmt.Errorf("tool %q: %w", recs[i].Tool.Name, err)
		}
	}
	return nil
}
