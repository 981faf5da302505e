package lexical

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// The fitted state is, in order: the magic "hlx", a format byte, the
// family weights as little-endian float32 bits, the number of documents,
// the number of features, then per feature the gap to the previous id and
// its document frequency (all unsigned varints), and a CRC-32 (IEEE) of
// everything before it. Ids ascend, so gaps are small (about three bytes
// a feature in all) and the same corpus always gives the same bytes.
const (
	stateMagic  = "hlx"
	stateFormat = 1
	stateHeader = len(stateMagic) + 1 + 4*numFamilies
)

func encodeState(weights [numFamilies]float32, docs uint32, ids, dfs []uint32) []byte {
	b := make([]byte, 0, stateHeader+16+3*len(ids))
	b = append(b, stateMagic...)
	b = append(b, stateFormat)
	for _, w := range weights {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(w))
	}
	b = binary.AppendUvarint(b, uint64(docs))
	b = binary.AppendUvarint(b, uint64(len(ids)))
	var prev uint32
	for i, id := range ids {
		b = binary.AppendUvarint(b, uint64(id-prev))
		b = binary.AppendUvarint(b, uint64(dfs[i]))
		prev = id
	}
	return binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

// decodeState reads and validates a state: whatever the bytes, it returns
// ascending ids with document frequencies in [1, docs], or an error.
func decodeState(b []byte) (weights [numFamilies]float32, docs uint32, ids, dfs []uint32, err error) {
	fail := func(err error) ([numFamilies]float32, uint32, []uint32, []uint32, error) {
		return weights, 0, nil, nil, err
	}
	body, err := stateBody(b)
	if err != nil {
		return fail(err)
	}
	p := len(stateMagic) + 1
	for f := range weights {
		w := math.Float32frombits(binary.LittleEndian.Uint32(body[p:]))
		if !(w >= 0 && w <= math.MaxFloat32) {
			return fail(fmt.Errorf("family %d weight %v", f, w))
		}
		weights[f] = w
		p += 4
	}
	r := reader{b: body[p:]}
	docs, n := r.uint32(), r.uint32()
	if r.err != nil {
		return fail(r.err)
	}
	if uint64(n)*2 > uint64(len(r.b)) { // a feature takes two bytes at least
		return fail(fmt.Errorf("%d features in %d bytes", n, len(r.b)))
	}
	if ids, dfs, err = decodeFeatures(&r, n, docs); err != nil {
		return fail(err)
	}
	if len(r.b) != 0 {
		return fail(fmt.Errorf("%d trailing bytes", len(r.b)))
	}
	return weights, docs, ids, dfs, nil
}

// stateBody returns a state's bytes without its checksum, once its
// magic, format and checksum are checked.
func stateBody(b []byte) ([]byte, error) {
	if len(b) < stateHeader+4 || string(b[:len(stateMagic)]) != stateMagic {
		return nil, errors.New("not a lexical state")
	}
	if f := b[len(stateMagic)]; f != stateFormat {
		return nil, fmt.Errorf("state format %d, want %d", f, stateFormat)
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return nil, errors.New("state checksum mismatch")
	}
	return body, nil
}

// decodeFeatures reads n features of a state of docs documents from r:
// ids ascending, as gaps, each with a document frequency in [1, docs].
func decodeFeatures(r *reader, n, docs uint32) (ids, dfs []uint32, err error) {
	ids, dfs = make([]uint32, n), make([]uint32, n)
	var prev uint64
	for i := range ids {
		gap, df := r.uint32(), r.uint32()
		if r.err != nil {
			return nil, nil, fmt.Errorf("feature %d: %w", i, r.err)
		}
		if gap == 0 && i > 0 {
			return nil, nil, fmt.Errorf("feature %d: ids not ascending", i)
		}
		id := prev + uint64(gap)
		if id>>famShift > famConcept {
			return nil, nil, fmt.Errorf("feature %d: id %#x out of range", i, id)
		}
		if df == 0 || df > docs {
			return nil, nil, fmt.Errorf("feature %d: document frequency %d of %d documents", i, df, docs)
		}
		ids[i], dfs[i], prev = uint32(id), df, id
	}
	return ids, dfs, nil
}

// reader reads unsigned varints, remembering the first error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uint32() uint32 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	switch {
	case n == 0:
		r.err = errors.New("truncated")
	case n < 0 || v > math.MaxUint32:
		r.err = errors.New("varint overflow")
	default:
		r.b = r.b[n:]
		return uint32(v)
	}
	return 0
}
