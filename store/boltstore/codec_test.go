package boltstore

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/store/storetest"
)

// decodeTool decodes one tools value the way a snapshot does: measure,
// then decode into slabs of the measured sizes.
func decodeTool(v []byte) (habilis.Record, exampleSummary, error) {
	m := &slabs{measuring: true}
	var scratch habilis.Record
	if _, err := m.tool(v, &scratch); err != nil {
		return habilis.Record{}, exampleSummary{}, err
	}
	s := newSlabs(m.need)
	var rec habilis.Record
	sum, err := s.tool(v, &rec)
	if err != nil {
		return habilis.Record{}, exampleSummary{}, err
	}
	s.finish()
	return rec, sum, nil
}

func TestToolRoundTrip(t *testing.T) {
	for _, sparse := range []bool{false, true} {
		for n := range 4 {
			r := storetest.Record("t", n, sparse, int64(n))
			got, sum, err := decodeTool(appendTool(nil, &r))
			if err != nil {
				t.Fatalf("decode(appendTool(%d examples, sparse %v)) error = %v", n, sparse, err)
			}
			want := r
			want.Tool.Name, want.Tool.Examples, want.ExampleVectors = "", nil, nil
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("decode(appendTool(%d examples, sparse %v)) mismatch (-want +got):\n%s", n, sparse, diff)
			}
			if sum.count != n {
				t.Errorf("summary count = %d, want %d", sum.count, n)
			}
		}
	}
}

func FuzzDecodeTool(f *testing.F) {
	for n := range 3 {
		r := storetest.Record("t", n, n%2 == 1, int64(n))
		f.Add(appendTool(nil, &r))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		rec, _, err := decodeTool(v) // must not panic
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
	f.Add(appendExample(nil, r.Tool.Examples[0], r.ExampleVectors[0]))
	r = storetest.Record("t", 2, false, 1)
	f.Add(appendExample(nil, r.Tool.Examples[1], r.ExampleVectors[1]))
	f.Fuzz(func(t *testing.T, v []byte) {
		m := &slabs{measuring: true}
		var text string
		var vec habilis.Vector
		if m.example(v, &text, &vec) != nil {
			return
		}
		s := newSlabs(m.need)
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
