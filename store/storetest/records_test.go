package storetest

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/testutil"
)

func norm(v habilis.Vector) float64 {
	var s float64
	for _, x := range v.Dense {
		s += float64(x) * float64(x)
	}
	for _, x := range v.Values {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func TestGenerate(t *testing.T) {
	tests := []struct {
		name       string
		examples   int
		shape      Shape
		wantDim    int // dense dimension, or 0
		wantNZ     int // nonzeros of each sparse example vector
		wantRadius bool
	}{
		{"dense none", 0, Shape{Dim: 8}, 8, 0, false},
		{"dense one", 1, Shape{Dim: 8}, 8, 0, false},
		{"dense many", 7, Shape{Dim: 384}, 384, 0, true},
		{"sparse default", 3, Shape{}, 0, 6, true},
		{"sparse 40", 10, Shape{NonZeros: 40}, 0, 40, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Generate("tool", tc.examples, tc.shape, 3)
			if diff := cmp.Diff(r, Generate("tool", tc.examples, tc.shape, 3)); diff != "" {
				t.Errorf("Generate() is not deterministic (-first +second):\n%s", diff)
			}
			if len(r.Tool.Examples) != tc.examples || len(r.ExampleVectors) != tc.examples {
				t.Errorf("Generate() has %d examples and %d vectors, want %d", len(r.Tool.Examples), len(r.ExampleVectors), tc.examples)
			}
			checkVectors(t, r, tc.examples, tc.wantDim, tc.wantNZ)
			if r.HasRadius != tc.wantRadius {
				t.Errorf("Generate().HasRadius = %v, want %v", r.HasRadius, tc.wantRadius)
			}
			if r.HasRadius {
				checkRadius(t, r)
			}
			if r.Tool.InputSchema == nil || r.Hash == "" || r.Tool.Meta == nil {
				t.Errorf("Generate() left InputSchema, Hash or Meta unset: %+v", r.Tool)
			}
		})
	}
}

// checkVectors checks that r's vectors are unit length, of dense size dim
// (sparse when 0) with strictly ascending indices, its example vectors
// with nz nonzeros each when nz > 0, and its centroid zero without
// examples.
func checkVectors(t *testing.T, r habilis.Record, examples, dim, nz int) {
	t.Helper()
	vs := append([]habilis.Vector{r.DescriptionVector}, r.ExampleVectors...)
	if examples > 0 {
		vs = append(vs, r.Centroid)
	} else if !r.Centroid.IsZero() {
		t.Errorf("Generate(no examples).Centroid = %v, want zero", r.Centroid)
	}
	for i, v := range vs {
		if n := norm(v); math.Abs(n-1) > 1e-5 {
			t.Errorf("vector %d norm = %v, want 1", i, n)
		}
		if v.IsSparse() != (dim == 0) || (dim > 0 && len(v.Dense) != dim) {
			t.Errorf("vector %d = dense %d, sparse %v, want dim %d", i, len(v.Dense), v.IsSparse(), dim)
		}
		for j := 1; j < len(v.Indices); j++ {
			if v.Indices[j] <= v.Indices[j-1] {
				t.Errorf("vector %d indices not strictly ascending at %d", i, j)
			}
		}
	}
	if nz > 0 {
		for i, v := range r.ExampleVectors {
			if len(v.Indices) != nz {
				t.Errorf("example vector %d has %d nonzeros, want %d", i, len(v.Indices), nz)
			}
		}
	}
}

// checkRadius checks that r's radius is the least similarity of an
// example to the centroid, and names that example.
func checkRadius(t *testing.T, r habilis.Record) {
	t.Helper()
	least, text := float32(2), ""
	for i, v := range r.ExampleVectors {
		if d := dot(v, r.Centroid); d < least {
			least, text = d, r.Tool.Examples[i]
		}
	}
	if r.Radius != least || r.RadiusExample != text {
		t.Errorf("Generate() radius = %v (%q), want %v (%q)", r.Radius, r.RadiusExample, least, text)
	}
}

func TestCatalog(t *testing.T) {
	recs := Catalog(12, 2, true, 5)
	if len(recs) != 12 {
		t.Fatalf("Catalog(12) has %d records, want 12", len(recs))
	}
	for i := 1; i < len(recs); i++ {
		if recs[i-1].Tool.Name >= recs[i].Tool.Name {
			t.Errorf("Catalog() names not sorted: %q before %q", recs[i-1].Tool.Name, recs[i].Tool.Name)
		}
	}
	if recs[0].Hash == recs[1].Hash {
		t.Errorf("Catalog() records 0 and 1 share hash %q", recs[0].Hash)
	}
}

// TestRecordSetsEveryField checks what Record and Meta promise, that
// every field a store keeps is set (an even seed and two examples or more
// for the optional ones), so that the suite's round trips cover each: a
// field added to a record, a tool or a meta has to be given a value here.
func TestRecordSetsEveryField(t *testing.T) {
	for _, sparse := range []bool{false, true} {
		if u := testutil.Unset(Record("x", 3, sparse, 12)); len(u) > 0 {
			t.Errorf("Record(sparse %v) leaves %v unset", sparse, u)
		}
	}
	// Version and UpdatedAt are the store's to set; the lexical embedder
	// has no model and no fixed dimension.
	if u := testutil.Unset(Meta(8, 3), "CatalogMeta.Version", "CatalogMeta.UpdatedAt", "CatalogMeta.Lexical.Model", "CatalogMeta.Lexical.Dim"); len(u) > 0 {
		t.Errorf("Meta leaves %v unset", u)
	}
}
