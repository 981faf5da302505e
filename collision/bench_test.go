package collision

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/vec"
)

// benchDense returns n dense tools of dimension dim around random
// directions, with k examples each when k > 0 and a bare centroid with a
// radius of 0.5 to 0.8 otherwise.
func benchDense(n, k, dim int) []habilis.Record {
	r := rand.New(rand.NewPCG(uint64(n), uint64(dim)))
	recs := make([]habilis.Record, n)
	for i := range recs {
		center := make([]float64, dim)
		for d := range center {
			center[d] = r.NormFloat64()
		}
		name := fmt.Sprintf("tool%05d", i)
		if k == 0 {
			recs[i] = centroidTool(name, float32(0.5+0.3*r.Float64()), unit(center...))
			recs[i].Margin = 0.05
			continue
		}
		exs := make([]ex, k)
		for e := range exs {
			v := make([]float64, dim)
			for d := range v {
				v[d] = center[d] + 0.6*r.NormFloat64()
			}
			exs[e] = ex{fmt.Sprintf("%s example %d", name, e), unit(v...)}
		}
		recs[i] = denseTool(name, 0.05, exs...)
	}
	return recs
}

// benchSparse returns n sparse tools over a vocabulary of 50,000 terms, in
// the manner of the lexical embedder: frequent terms drawn from a Zipf law
// with small weights, and rarer topic terms with larger ones. With k
// examples each, an example holds 12 of its tool's 40 topic terms and 4
// frequent ones; without, the centroid holds 30 frequent and 70 topic terms
// and a radius of 0.3 to 0.45.
func benchSparse(n, k int) []habilis.Record {
	const vocab = 50000
	r := rand.New(rand.NewPCG(uint64(n), uint64(k)))
	zipf := rand.NewZipf(r, 1.1, 1, vocab-1)
	sparse := func(frequent, topic []uint32) habilis.Vector {
		w := make(map[uint32]float32)
		for _, t := range frequent {
			w[t] += 0.2 * r.Float32()
		}
		for _, t := range topic {
			w[t] += 0.5 + r.Float32()
		}
		var v habilis.Vector
		for t := range w {
			v.Indices = append(v.Indices, t)
		}
		slices.Sort(v.Indices)
		for _, t := range v.Indices {
			v.Values = append(v.Values, w[t])
		}
		vec.Normalize(v.Values)
		return v
	}
	draw := func(m int, f func() uint32) []uint32 {
		ts := make([]uint32, m)
		for i := range ts {
			ts[i] = f()
		}
		return ts
	}
	recs := make([]habilis.Record, n)
	for i := range recs {
		name := fmt.Sprintf("tool%06d", i)
		if k == 0 {
			recs[i] = habilis.Record{
				Tool:      habilis.Tool{Name: name},
				Centroid:  sparse(draw(30, func() uint32 { return uint32(zipf.Uint64()) }), draw(70, func() uint32 { return r.Uint32N(vocab) })),
				Radius:    float32(0.3 + 0.15*r.Float64()),
				HasRadius: true,
				Margin:    0.05,
			}
			continue
		}
		topic := draw(40, func() uint32 { return r.Uint32N(vocab) })
		rec := habilis.Record{Tool: habilis.Tool{Name: name}, Margin: 0.05}
		var idx [][]uint32
		var val [][]float32
		for e := range k {
			v := sparse(draw(4, func() uint32 { return uint32(zipf.Uint64()) }), draw(12, func() uint32 { return topic[r.IntN(len(topic))] }))
			rec.Tool.Examples = append(rec.Tool.Examples, fmt.Sprintf("%s example %d", name, e))
			rec.ExampleVectors = append(rec.ExampleVectors, v)
			idx, val = append(idx, v.Indices), append(val, v.Values)
		}
		ci, cv := vec.MeanSparse(idx, val)
		rec.Centroid = habilis.Vector{Indices: ci, Values: cv}
		rec.HasRadius, rec.Radius = true, 2
		for _, v := range rec.ExampleVectors {
			rec.Radius = min(rec.Radius, vec.SparseDot(v.Indices, v.Values, ci, cv))
		}
		recs[i] = rec
	}
	return recs
}

func BenchmarkPairs(b *testing.B) {
	benchAnalysis(b, Pairs, []benchCatalog{
		{"dense64/200x10", func() []habilis.Record { return benchDense(200, 10, 64) }},
		{"sparse/200x10", func() []habilis.Record { return benchSparse(200, 10) }},
		{"dense64/10000", func() []habilis.Record { return benchDense(10000, 0, 64) }},
		{"sparse100/10000", func() []habilis.Record { return benchSparse(10000, 0) }},
		{"sparse100/100000-restricted", func() []habilis.Record { return benchSparse(100000, 0) }},
		{"dense384/100000-restricted", func() []habilis.Record { return clusteredDense(100000, 5, 384, 1) }},
	})
}

func BenchmarkFind(b *testing.B) {
	benchAnalysis(b, Find, []benchCatalog{
		{"dense64/200x10", func() []habilis.Record { return benchDense(200, 10, 64) }},
		{"sparse/200x10", func() []habilis.Record { return benchSparse(200, 10) }},
		{"dense64/2000x10", func() []habilis.Record { return benchDense(2000, 10, 64) }},
		{"sparse/2000x10", func() []habilis.Record { return benchSparse(2000, 10) }},
	})
}

// benchCatalog names a catalog to benchmark on, built only when its
// benchmark runs.
type benchCatalog struct {
	name string
	recs func() []habilis.Record
}

// benchAnalysis runs fn (Pairs or Find) over each catalog, reporting the
// process's CPU time per run and how many collisions fn finds.
func benchAnalysis(b *testing.B, fn func([]habilis.Record, Options) ([]habilis.Collision, error), cats []benchCatalog) {
	for _, bc := range cats {
		b.Run(bc.name, func(b *testing.B) {
			recs := bc.recs()
			var cols []habilis.Collision
			start := cpuTime()
			for b.Loop() {
				var err error
				if cols, err = fn(recs, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(len(cols)), "collisions")
		})
	}
}
