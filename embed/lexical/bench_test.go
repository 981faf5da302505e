package lexical

import (
	"context"
	"fmt"
	"testing"

	"github.com/habilis-router/habilis"
)

// benchCorpus returns n example-like texts with a realistic vocabulary
// spread, so that Fit sees shared and rare features.
func benchCorpus(n int) []string {
	verbs := []string{"find", "book", "show", "translate", "convert", "search", "recommend", "compare", "track", "summarise", "schedule", "explain"}
	nouns := []string{"flights", "hotels", "weather", "stock prices", "recipes", "movies", "podcasts", "news articles", "exchange rates", "restaurants", "job openings", "courses", "SQL queries", "PDF files", "calendar events"}
	places := []string{"Paris", "Tokyo", "New York", "my area", "Berlin", "São Paulo", "the weekend", "next month"}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("Could you %s some %s near %s for me? I'm planning tool_%d and want the cheapest option, thanks %d",
			verbs[i%len(verbs)], nouns[(i/3)%len(nouns)], places[(i/7)%len(places)], i%997, i)
	}
	return out
}

// BenchmarkEmbedDocuments measures the load path: fitting the corpus and
// embedding every text, reported as examples per second.
func BenchmarkEmbedDocuments(b *testing.B) {
	ctx := context.Background()
	corpus := benchCorpus(10000)
	b.ReportAllocs()
	for b.Loop() {
		f, _, err := New(Options{}).Fit(ctx, corpus)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Embed(ctx, corpus, habilis.Document); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(corpus))/b.Elapsed().Seconds(), "examples/s")
}

// BenchmarkEmbedQuery measures one typical 20-word query against a fitted
// embedder.
func BenchmarkEmbedQuery(b *testing.B) {
	ctx := context.Background()
	f, _, err := New(Options{}).Fit(ctx, benchCorpus(10000))
	if err != nil {
		b.Fatal(err)
	}
	q := []string{"I'm planning a trip to Tokyo next month, can you find me cheap flights and a hotel close to the station?"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Embed(ctx, q, habilis.Query); err != nil {
			b.Fatal(err)
		}
	}
}
