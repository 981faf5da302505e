package selector

import (
	"math/rand/v2"
	"testing"

	"github.com/habilis-router/habilis"
)

// TestBuildIndexOwnsVectors checks that an index scores examples from
// copies of its own: overwriting every vector of the records it was built
// from changes no nearest-example score. A store's snapshot decodes all
// vectors into shared slabs, so an index that kept a slice of one would keep
// them all.
func TestBuildIndexOwnsVectors(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	lexRecs, emb := lexicalRecords(t, rng, 30)
	for _, tc := range []struct {
		name string
		recs []habilis.Record
		dim  int
	}{
		{"sparse", lexRecs, 0},
		{"dense", denseRecords(rng, 30, 16), 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			meta := habilis.CatalogMeta{Embedder: habilis.EmbedderInfo{Kind: "test", Dim: tc.dim}}
			w := defaultWeights
			w.Example = 0.1 // the index keeps example vectors only when they are weighted
			ix, err := buildIndex(meta, Calibration{Weights: w}, embedders{emb: emb, lex: emb, sameLex: tc.dim == 0}, tc.recs, nil)
			if err != nil {
				t.Fatal(err)
			}
			queries := make([]habilis.Vector, 0, len(tc.recs))
			for i := range tc.recs {
				queries = append(queries, tc.recs[i].DescriptionVector.Clone())
			}
			score := func() []float32 {
				var out []float32
				for _, q := range queries {
					for i := range tc.recs {
						out = append(out, ix.nearestExample(i, q))
					}
				}
				return out
			}
			before := score()
			nonzero := false
			for _, s := range before {
				nonzero = nonzero || s != 0
			}
			if !nonzero {
				t.Fatal("every nearest-example score is 0: the test compares nothing")
			}
			for i := range tc.recs {
				for _, v := range tc.recs[i].ExampleVectors {
					clear(v.Dense)
					clear(v.Values)
					clear(v.Indices)
				}
			}
			after := score()
			for k := range before {
				if before[k] != after[k] {
					t.Fatalf("score %d changed from %v to %v when the records' vectors were overwritten", k, before[k], after[k])
				}
			}
		})
	}
}

// TestBuildIndexLeavesExamples checks that an index keeps no example
// vector unless the calibration weights the nearest example: selection
// reads them for nothing else.
func TestBuildIndexLeavesExamples(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	recs, emb := lexicalRecords(t, rng, 30)
	ix, err := buildIndex(habilis.CatalogMeta{}, Calibration{Weights: defaultWeights}, embedders{emb: emb, lex: emb, sameLex: true}, recs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ix.exSparse != nil || ix.exSlab != nil || ix.exStart != nil {
		t.Errorf("index with an unweighted nearest example keeps %d sparse example vectors", len(ix.exSparse))
	}
}
