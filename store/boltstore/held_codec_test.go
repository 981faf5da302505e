package boltstore

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/selector"
	bolt "go.etcd.io/bbolt"
)

// heldCatalog loads a small lexical catalog through the selector and
// returns its stored index and, per tool, its name and its tools and
// examples values, which leave their vectors to that index.
func heldCatalog(tb testing.TB) (index []byte, values [][3][]byte) {
	tb.Helper()
	ctx := context.Background()
	path := filepath.Join(tb.TempDir(), "habilis.db")
	s, err := Open(path, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	r, err := selector.New(ctx, s, selector.Config{Embedder: lexical.New(lexical.Options{})})
	if err != nil {
		tb.Fatal(err)
	}
	var tools []habilis.Tool
	for i := range 6 {
		tools = append(tools, habilis.Tool{Name: fmt.Sprintf("t%d", i), Description: fmt.Sprintf("send report %d to the team", i),
			Examples: []string{fmt.Sprintf("mail report %d", i), fmt.Sprintf("share the report number %d with everyone", i)}})
	}
	if _, err := r.Load(ctx, tools, selector.LoadOptions{}); err != nil {
		tb.Fatal(err)
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		index = bytes.Clone(storedIndexData(tx))
		tools, ex := catalogBuckets(tx)
		return tools.ForEach(func(k, v []byte) error {
			values = append(values, [3][]byte{bytes.Clone(k), bytes.Clone(v), bytes.Clone(ex.Get(k))})
			return nil
		})
	})
	if err != nil {
		tb.Fatal(err)
	}
	return index, values
}

// decodeHeld decodes a format 3 tool named name, with the vectors index
// holds, as a snapshot does (the examples' summary aside).
func decodeHeld(index, name, tool, ex []byte) (habilis.Record, error) {
	held := &heldRows{index: index}
	m := &slabs{measuring: true, format: 3, held: held, name: name}
	var scratch habilis.Record
	if _, err := m.tool(tool, &scratch); err != nil {
		return habilis.Record{}, err
	}
	s := newSlabs(3, m.need)
	s.held, s.name = held, name
	var rec habilis.Record
	sum, err := s.tool(tool, &rec)
	if err != nil {
		return habilis.Record{}, err
	}
	if sum.count > 0 {
		if sum.count > len(s.examples) {
			return habilis.Record{}, errCorrupt
		}
		texts, vecs := s.examples[:sum.count], s.vectors[:sum.count]
		if err := s.examplesValue(ex, texts, vecs); err != nil {
			return habilis.Record{}, err
		}
		rec.Tool.Examples, rec.ExampleVectors = texts, vecs
	}
	s.finish()
	return rec, nil
}

// FuzzDecodeHeld decodes format 3 tools and examples values, whose
// vectors are held by a stored index, damaged or not: nothing panics, and
// what decodes has valid vectors.
func FuzzDecodeHeld(f *testing.F) {
	index, values := heldCatalog(f)
	held := 0
	for _, v := range values {
		rec, err := decodeHeld(index, v[0], v[1], v[2])
		if err != nil {
			f.Fatalf("decodeHeld(%s) error = %v", v[0], err)
		}
		if rec.DocumentVector.IsZero() || len(rec.ExampleVectors) != 2 {
			f.Fatalf("decodeHeld(%s) = %+v, want its document and examples", v[0], rec)
		}
		if bytes.IndexByte(v[1], kindHeld) >= 0 {
			held++
		}
		f.Add(v[0], v[1], v[2])
	}
	if held == 0 {
		f.Fatal("no tools value leaves a vector to the index")
	}
	f.Fuzz(func(t *testing.T, name, tool, ex []byte) {
		rec, err := decodeHeld(index, name, tool, ex) // must not panic
		if err != nil {
			return
		}
		vecs := append([]habilis.Vector{rec.DescriptionVector, rec.Centroid, rec.DocumentVector}, rec.ExampleVectors...)
		for _, v := range vecs {
			if err := v.Validate(); err != nil {
				t.Fatalf("decodeHeld(%q, %x, %x) = invalid vector: %v", name, tool, ex, err)
			}
		}
	})
}
