package lexical

import (
	"context"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/radix"
)

func BenchmarkZZParts(b *testing.B) {
	ctx := context.Background()
	f, _, _ := New(Options{}).Fit(ctx, benchCorpus(10000))
	e := f.(*Embedder)
	q := "I'm planning a trip to Tokyo next month, can you find me cheap flights and a hotel close to the station?"
	s := e.scratch()
	b.Run("tokenize", func(b *testing.B) {
		for b.Loop() {
			s.reset()
			s.tokenize(q)
		}
	})
	b.Run("features", func(b *testing.B) {
		for b.Loop() {
			s.feats = s.feats[:0]
			s.features(&e.weights)
		}
		b.ReportMetric(float64(len(s.feats)), "feats")
	})
	feats := append([]uint32(nil), s.feats...)
	b.Run("sort", func(b *testing.B) {
		for b.Loop() {
			copy(s.feats, feats)
			s.tmp = radix.Sort(s.feats, s.tmp)
		}
	})
	b.Run("idf", func(b *testing.B) {
		var x float32
		for b.Loop() {
			for _, id := range feats {
				x += e.lookupIDF(id)
			}
		}
	})
	b.Run("all", func(b *testing.B) {
		for b.Loop() {
			e.embed(s, q, habilis.Query)
		}
	})
}

func BenchmarkZZTail(b *testing.B) {
	ctx := context.Background()
	f, _, _ := New(Options{}).Fit(ctx, benchCorpus(10000))
	e := f.(*Embedder)
	q := "I'm planning a trip to Tokyo next month, can you find me cheap flights and a hotel close to the station?"
	s := e.scratch()
	s.reset()
	s.tokenize(q)
	s.features(&e.weights)
	s.tmp = radix.Sort(s.feats, s.tmp)
	feats := append([]uint32(nil), s.feats...)
	b.Run("front", func(b *testing.B) {
		for b.Loop() {
			s.reset()
			s.tokenize(q)
			s.features(&e.weights)
			s.tmp = radix.Sort(s.feats, s.tmp)
		}
	})
	b.Run("all", func(b *testing.B) {
		for b.Loop() {
			e.embed(s, q, habilis.Query)
		}
	})
	_ = feats
}
