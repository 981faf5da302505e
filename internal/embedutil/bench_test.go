package embedutil

import (
	"context"
	"strconv"
	"testing"
)

// BenchmarkBatcher1000 is the Batcher's own cost for 1,000 texts of 768
// dimensions (batching, goroutines, checks, normalisation), with requests
// that answer at once from memory.
func BenchmarkBatcher1000(b *testing.B) {
	const dim = 768
	texts := make([]string, 1000)
	raw := make([][]float32, len(texts))
	for i := range texts {
		texts[i] = strconv.Itoa(i)
		raw[i] = make([]float32, dim)
		for j := range raw[i] {
			raw[i][j] = float32((i+j)%17) + 1
		}
	}
	bt := New(Options{}, func(_ context.Context, ts []string) ([][]float32, error) {
		i, _ := strconv.Atoi(ts[0])
		return raw[i : i+len(ts)], nil
	})
	ctx := context.Background()
	for b.Loop() {
		if _, err := bt.Embed(ctx, texts, ""); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(len(texts)*b.N), "ns/text")
}
