package boltstore

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
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

// decodeRecord2 decodes a format 2 tools value and examples value, as a
// snapshot does (the name aside).
func decodeRecord2(tool, ex []byte) (habilis.Record, error) {
	rec, sum, s, err := decodeTool(2, tool)
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

// encode2 returns r's tools and examples values in format 2.
func encode2(r *habilis.Record) (tool, ex []byte) {
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
	recs = append(recs, empty)
	for i, r := range recs {
		tool, ex := encode2(&r)
		got, err := decodeRecord2(tool, ex)
		if err != nil {
			t.Fatalf("record %d: decodeRecord2(encode2()) error = %v", i, err)
		}
		want := r
		want.Tool.Name = ""
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("record %d: decodeRecord2(encode2()) mismatch (-want +got):\n%s", i, diff)
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

// FuzzDecodeRecord decodes format 2 tools and examples values: what
// decodes is a valid record, which encodes and decodes again to itself.
func FuzzDecodeRecord(f *testing.F) {
	for n := range 3 {
		r := storetest.Record("t", n, n%2 == 1, int64(n))
		tool, ex := encode2(&r)
		f.Add(tool, ex)
	}
	r := sharedTerms(storetest.Record("t", 3, true, 5), 100)
	tool, ex := encode2(&r)
	f.Add(tool, ex)
	f.Fuzz(func(t *testing.T, tool, ex []byte) {
		if len(ex) == 0 {
			ex = nil
		}
		rec, err := decodeRecord2(tool, ex) // must not panic
		if err != nil {
			return
		}
		vecs := append([]habilis.Vector{rec.DescriptionVector, rec.Centroid, rec.DocumentVector}, rec.ExampleVectors...)
		for _, v := range vecs {
			if err := v.Validate(); err != nil {
				t.Fatalf("decodeRecord2(%x, %x) = invalid vector: %v", tool, ex, err)
			}
		}
		again, err := decodeRecord2(encode2(&rec))
		if err != nil {
			t.Fatalf("decodeRecord2(encode2(decodeRecord2(%x, %x))) error = %v", tool, ex, err)
		}
		if diff := cmp.Diff(rec, again); diff != "" {
			t.Errorf("decodeRecord2(%x, %x) does not survive encode2 (-first +again):\n%s", tool, ex, diff)
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
