package boltstore

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/vec"
	"github.com/habilis-router/habilis/store/storetest"
)

// decodeTool decodes one tools value of format the way a snapshot does:
// measure, then decode into slabs of the measured sizes. It returns the
// slabs too, whose terms a format 2 examples value needs.
func decodeTool(format int, v []byte) (habilis.Record, exampleSummary, *slabs, error) {
	m := &slabs{measuring: true, format: format}
	var scratch habilis.Record
	if _, err := m.tool(v, &scratch); err != nil {
		return habilis.Record{}, exampleSummary{}, nil, err
	}
	s := newSlabs(format, m.need)
	var rec habilis.Record
	sum, err := s.tool(v, &rec)
	if err != nil {
		return habilis.Record{}, exampleSummary{}, nil, err
	}
	s.finish()
	return rec, sum, s, nil
}

// decodeValues decodes a tools value and examples value of format (2 or
// later), as a snapshot does (the name aside).
func decodeValues(format int, tool, ex []byte) (habilis.Record, error) {
	rec, sum, s, err := decodeTool(format, tool)
	if err != nil {
		return habilis.Record{}, err
	}
	if sum.count == 0 {
		if ex != nil {
			return habilis.Record{}, errCorrupt
		}
		return rec, nil
	}
	texts, vecs := s.examples[:sum.count], s.vectors[:sum.count]
	if err := s.examplesValue(ex, texts, vecs); err != nil {
		return habilis.Record{}, err
	}
	s.finish()
	rec.Tool.Examples, rec.ExampleVectors = texts, vecs
	return rec, nil
}

// encode returns r's tools and examples values in the current format.
func encode(r *habilis.Record) (tool, ex []byte) {
	var e encoder
	e.setTerms(r)
	tool = e.tool(nil, r)
	if len(r.Tool.Examples) > 0 {
		ex = e.examples(nil, r)
	}
	return tool, ex
}

// sharedTerms returns r with its description and examples drawing on the
// terms of its document, as a lexical tool's do, so that encoding them
// takes the bitmap and positions kinds.
func sharedTerms(r habilis.Record, doc int) habilis.Record {
	var terms []uint32
	for i := range doc {
		terms = append(terms, uint32(1000+7*i))
	}
	pick := func(every int) habilis.Vector {
		var v habilis.Vector
		for i, t := range terms {
			if i%every == 0 {
				v.Indices, v.Values = append(v.Indices, t), append(v.Values, float32(i+1)/64)
			}
		}
		return v
	}
	r.DocumentVector = pick(1)
	r.DescriptionVector = pick(3)
	r.Centroid = pick(2)
	for k := range r.ExampleVectors {
		r.ExampleVectors[k] = pick(2 + 40*k) // bitmaps, then positions
	}
	return r
}

func TestToolRoundTrip(t *testing.T) {
	for _, sparse := range []bool{false, true} {
		for n := range 4 {
			r := storetest.Record("t", n, sparse, int64(n))
			got, sum, _, err := decodeTool(1, appendTool1(nil, &r))
			if err != nil {
				t.Fatalf("decode(appendTool1(%d examples, sparse %v)) error = %v", n, sparse, err)
			}
			want := r
			want.Tool.Name, want.Tool.Examples, want.ExampleVectors = "", nil, nil
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("decode(appendTool1(%d examples, sparse %v)) mismatch (-want +got):\n%s", n, sparse, diff)
			}
			if sum.count != n {
				t.Errorf("summary count = %d, want %d", sum.count, n)
			}
		}
	}
}

func TestRecordRoundTrip(t *testing.T) {
	var recs []habilis.Record
	for _, sparse := range []bool{false, true} {
		for n := range 4 {
			recs = append(recs, storetest.Record("t", n, sparse, int64(n)))
		}
	}
	recs = append(recs, sharedTerms(storetest.Record("t", 3, true, 5), 300), sharedTerms(storetest.Record("t", 0, true, 6), 9))
	empty := storetest.Record("t", 1, true, 7)
	empty.DescriptionVector = habilis.Vector{Indices: []uint32{}, Values: []float32{}}
	recs = append(recs, empty, onGrid(storetest.Record("t", 3, false, 8)))
	for i, r := range recs {
		tool, ex := encode(&r)
		got, err := decodeValues(formatVersion, tool, ex)
		if err != nil {
			t.Fatalf("record %d: decodeValues(encode()) error = %v", i, err)
		}
		want := r
		want.Tool.Name = ""
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("record %d: decodeValues(encode()) mismatch (-want +got):\n%s", i, diff)
		}
	}
	// The shared-terms record takes every sparse kind of format 2.
	r := sharedTerms(storetest.Record("t", 3, true, 5), 300)
	var e encoder
	e.setTerms(&r)
	for _, c := range []struct {
		v    habilis.Vector
		kind byte
	}{{r.DocumentVector, kindAll}, {r.DescriptionVector, kindBitmap}, {r.ExampleVectors[2], kindPositions}} {
		if got := e.vector(nil, c.v)[0]; got != c.kind {
			t.Errorf("vector of %d of %d terms encoded as kind %d, want %d", len(c.v.Indices), len(e.terms), got, c.kind)
		}
	}
}

// FuzzDecodeTool decodes format 1 tools values.
func FuzzDecodeTool(f *testing.F) {
	for n := range 3 {
		r := storetest.Record("t", n, n%2 == 1, int64(n))
		f.Add(appendTool1(nil, &r))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		rec, _, _, err := decodeTool(1, v) // must not panic
		if err != nil {
			return
		}
		for _, vec := range []habilis.Vector{rec.DescriptionVector, rec.Centroid} {
			if len(vec.Indices) != len(vec.Values) {
				t.Errorf("decode(%x) = vector of %d indices and %d values", v, len(vec.Indices), len(vec.Values))
			}
		}
	})
}

// FuzzDecodeRecord decodes tools and examples values of the current
// format: what decodes is a valid record, which encodes and decodes again
// to itself.
func FuzzDecodeRecord(f *testing.F) {
	for n := range 3 {
		r := storetest.Record("t", n, n%2 == 1, int64(n))
		tool, ex := encode(&r)
		f.Add(tool, ex)
	}
	r8 := onGrid(storetest.Record("t", 2, false, 4))
	tool8, ex8 := encode(&r8)
	f.Add(tool8, ex8)
	r := sharedTerms(storetest.Record("t", 3, true, 5), 100)
	tool, ex := encode(&r)
	f.Add(tool, ex)
	f.Fuzz(func(t *testing.T, tool, ex []byte) {
		if len(ex) == 0 {
			ex = nil
		}
		rec, err := decodeValues(formatVersion, tool, ex) // must not panic
		if err != nil {
			return
		}
		vecs := append([]habilis.Vector{rec.DescriptionVector, rec.Centroid, rec.DocumentVector}, rec.ExampleVectors...)
		for _, v := range vecs {
			if err := v.Validate(); err != nil {
				t.Fatalf("decodeValues(%x, %x) = invalid vector: %v", tool, ex, err)
			}
		}
		tool2, ex2 := encode(&rec)
		again, err := decodeValues(formatVersion, tool2, ex2)
		if err != nil {
			t.Fatalf("decodeValues(encode(decodeValues(%x, %x))) error = %v", tool, ex, err)
		}
		if diff := cmp.Diff(rec, again); diff != "" {
			t.Errorf("decodeValues(%x, %x) does not survive encode (-first +again):\n%s", tool, ex, diff)
		}
	})
}

func FuzzDecodeMeta(f *testing.F) {
	f.Add(appendMeta(nil, storetest.Meta(8, 1)))
	f.Add(appendMeta(nil, storetest.Meta(0, 2)))
	f.Fuzz(func(t *testing.T, v []byte) {
		m, err := decodeMeta(v) // must not panic
		if err != nil {
			return
		}
		// Whatever decodes is written back as the same meta: a decoder that
		// read one field into another would not survive the round trip.
		again, err := decodeMeta(appendMeta(nil, m))
		if err != nil {
			t.Fatalf("decodeMeta(appendMeta(decodeMeta(%x))) error = %v", v, err)
		}
		if diff := cmp.Diff(m, again); diff != "" {
			t.Errorf("decodeMeta(%x) does not survive appendMeta (-first +again):\n%s", v, diff)
		}
	})
}

func FuzzDecodeExample(f *testing.F) {
	r := storetest.Record("t", 2, true, 1)
	f.Add(appendExample1(nil, r.Tool.Examples[0], r.ExampleVectors[0]))
	r = storetest.Record("t", 2, false, 1)
	f.Add(appendExample1(nil, r.Tool.Examples[1], r.ExampleVectors[1]))
	f.Fuzz(func(t *testing.T, v []byte) {
		m := &slabs{measuring: true, format: 1}
		var text string
		var vec habilis.Vector
		if m.example(v, &text, &vec) != nil {
			return
		}
		s := newSlabs(1, m.need)
		if err := s.example(v, &text, &vec); err != nil {
			// Measuring reads only sizes; decoding also refuses values no
			// writer makes (a NaN, indices out of order), as damage.
			if !errors.Is(err, errCorrupt) {
				t.Fatalf("example(%x) decodes measuring, then fails decoding with %v, want errCorrupt", v, err)
			}
			return
		}
		s.finish()
		if len(vec.Indices) != len(vec.Values) {
			t.Errorf("example(%x) = vector of %d indices and %d values", v, len(vec.Indices), len(vec.Values))
		}
	})
}

// onGrid returns r with its dense example vectors on the 8-bit grid, as
// the router writes them.
func onGrid(r habilis.Record) habilis.Record {
	r.ExampleVectors = slices.Clone(r.ExampleVectors)
	for k, v := range r.ExampleVectors {
		if v.Dense != nil {
			r.ExampleVectors[k] = habilis.Vector{Dense: vec.Round8(v.Dense)}
		}
	}
	return r
}

// TestDense8 checks that dense examples on the 8-bit grid are written in
// kind 7, a byte a coordinate, and others in kind 1; and that a kind 7
// vector whose scale is not finite and above zero, whose coordinates
// overflow, or that is cut short is damage, as is kind 7 in a format 3
// value.
func TestDense8(t *testing.T) {
	r := onGrid(storetest.Generate("t", 1, storetest.Shape{Dim: 64}, 3))
	var e encoder
	e.setTerms(&r)
	ex := e.examples(nil, &r)
	text := len(appendStr(nil, r.Tool.Examples[0]))
	if got, want := ex[text], byte(kindDense8); got != want || len(ex) != text+1+1+4+64 {
		t.Fatalf("on-grid example encoded as kind %d in %d bytes, want kind %d in %d", got, len(ex), want, text+1+1+4+64)
	}
	off := storetest.Generate("t", 1, storetest.Shape{Dim: 64}, 3)
	if got := e.examples(nil, &off)[text]; got != kindDense {
		t.Errorf("off-grid example encoded as kind %d, want %d", got, kindDense)
	}
	tool, _ := encode(&r)
	if _, err := decodeValues(formatVersion, tool, ex); err != nil {
		t.Fatalf("decodeValues(kind 7) error = %v", err)
	}
	if _, err := decodeValues(3, tool, ex); !errors.Is(err, errCorrupt) {
		t.Errorf("decodeValues(format 3, kind 7) error = %v, want %v", err, errCorrupt)
	}
	scaleAt := text + 2
	for _, c := range []struct {
		name  string
		scale float32
	}{{"zero", 0}, {"negative", -0.01}, {"NaN", float32(math.NaN())}, {"infinite", float32(math.Inf(1))}, {"overflowing", math.MaxFloat32}} {
		bad := slices.Clone(ex)
		binary.LittleEndian.PutUint32(bad[scaleAt:], math.Float32bits(c.scale))
		if _, err := decodeValues(formatVersion, tool, bad); !errors.Is(err, errCorrupt) {
			t.Errorf("decodeValues(kind 7, %s scale) error = %v, want %v", c.name, err, errCorrupt)
		}
	}
	for _, n := range []int{text + 1, scaleAt + 3, len(ex) - 1} {
		if _, err := decodeValues(formatVersion, tool, ex[:n]); !errors.Is(err, errCorrupt) {
			t.Errorf("decodeValues(kind 7 cut to %d bytes) error = %v, want %v", n, err, errCorrupt)
		}
	}
}
