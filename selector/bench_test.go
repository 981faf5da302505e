package selector_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/boltstore"
)

// synth makes a catalog of n tools with nEx examples each, and queries
// that paraphrase random tools. Words come from a vocabulary of made-up
// syllable words: each tool has a few topic words of its own; requests mix
// them with common verbs and function words, so the inverted index sees
// the long posting lists of real text.
func synth(n, nEx int, seed uint64) ([]habilis.Tool, []string) {
	return synthShaped(n, nEx, shape{minWords: 8, maxWords: 15}, seed)
}

// shape is how long a synthetic catalog's texts are: requests and examples
// of minWords to maxWords words, and descriptions of the tool's topic words
// plus, when long, one more sentence of such words.
type shape struct {
	minWords, maxWords int
	longDescriptions   bool
}

// longShape has the lengths of MetaTool's texts: examples and requests of
// about 17 words (10-25 here) and descriptions of about 13.
var longShape = shape{minWords: 10, maxWords: 25, longDescriptions: true}

// synthShaped is synth with texts of the given shape.
func synthShaped(n, nEx int, sh shape, seed uint64) ([]habilis.Tool, []string) {
	rng := rand.New(rand.NewPCG(seed, 42))
	// 20 onsets × 6 vowels × 4 codas: words whose character n-grams
	// spread over catalogs as real words' do, rather than every n-gram
	// occurring in every tool.
	var syl []string
	for _, c := range strings.Fields("b c d f g h j k l m n p r s t v w z st tr") {
		for _, v := range strings.Fields("a e i o u y") {
			for _, e := range []string{"", "n", "r", "s"} {
				syl = append(syl, c+v+e)
			}
		}
	}
	word := func() string {
		var b strings.Builder
		for range 2 + rng.IntN(2) {
			b.WriteString(syl[rng.IntN(len(syl))])
		}
		return b.String()
	}
	vocab := make([]string, 20000)
	for i := range vocab {
		vocab[i] = word()
	}
	common := strings.Fields("please can you the a to for my in of with show me find get what is how do I need want check list send make")
	sentence := func(topic []string) string {
		var w []string
		for range sh.minWords + rng.IntN(sh.maxWords-sh.minWords+1) {
			switch rng.IntN(3) {
			case 0:
				w = append(w, topic[rng.IntN(len(topic))])
			case 1:
				w = append(w, common[rng.IntN(len(common))])
			default:
				w = append(w, vocab[int(rng.ExpFloat64()*2000)%len(vocab)])
			}
		}
		return strings.Join(w, " ")
	}
	tools := make([]habilis.Tool, n)
	topics := make([][]string, n)
	for i := range tools {
		topic := []string{vocab[rng.IntN(len(vocab))], vocab[rng.IntN(len(vocab))], vocab[rng.IntN(len(vocab))]}
		topics[i] = topic
		t := habilis.Tool{Name: fmt.Sprintf("tool_%06d", i), Description: "Handles " + strings.Join(topic, " ") + " requests.",
			InputSchema: []byte(`{"properties":{},"type":"object"}`)}
		if sh.longDescriptions {
			t.Description += " " + sentence(topic) + "."
		}
		seen := map[string]bool{}
		for len(t.Examples) < nEx {
			if s := sentence(topic); !seen[s] {
				seen[s] = true
				t.Examples = append(t.Examples, s)
			}
		}
		tools[i] = t
	}
	qs := make([]string, 256)
	for i := range qs {
		qs[i] = sentence(topics[rng.IntN(n)])
	}
	return tools, qs
}

// benchRouter returns a router over the synthetic catalog of n tools ×
// nEx examples, and queries for it. With HABILIS_BENCH_DIR set, the store
// is kept there between runs, so a later run reloads an unchanged catalog
// (embedding nothing) rather than indexing 100,000 tools again.
func benchRouter(b *testing.B, n, nEx int) (*selector.Router, []string) {
	b.Helper()
	tools, qs := synth(n, nEx, 1)
	return benchLoad(b, tools, fmt.Sprintf("bench-%d-%d.db", n, nEx)), qs
}

// benchLoad loads tools into a router over the store file name, kept in
// HABILIS_BENCH_DIR when it is set (and re-embedded if another lexical
// algorithm built it).
func benchLoad(b *testing.B, tools []habilis.Tool, name string) *selector.Router {
	b.Helper()
	dir := os.Getenv("HABILIS_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	r, err := selector.New(context.Background(), openStore(b, filepath.Join(dir, name)),
		selector.Config{Embedder: lexical.New(lexical.Options{}), Reindex: true})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := r.Load(context.Background(), tools, selector.LoadOptions{}); err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkSelect measures one selection, in process, on one core
// (run with -cpu 1), at the catalog sizes of the design's targets: tools
// of 5 examples of 8-15 words. tools=200-long has 200 tools with the text
// lengths of MetaTool's (10 examples and requests of 10-25 words,
// descriptions of a sentence), so a request reaches more of the index.
// The 100,000-tool catalog is skipped with -short.
func BenchmarkSelect(b *testing.B) {
	for _, c := range []struct {
		name  string
		large bool // skipped with -short
		load  func(b *testing.B) (*selector.Router, []string)
	}{
		{"tools=200", false, func(b *testing.B) (*selector.Router, []string) { return benchRouter(b, 200, 5) }},
		{"tools=200-long", false, func(b *testing.B) (*selector.Router, []string) {
			tools, qs := synthShaped(200, 10, longShape, 1)
			return benchLoad(b, tools, "bench-200-10-long.db"), qs
		}},
		{"tools=10000", false, func(b *testing.B) (*selector.Router, []string) { return benchRouter(b, 10_000, 5) }},
		{"tools=100000", true, func(b *testing.B) (*selector.Router, []string) { return benchRouter(b, 100_000, 5) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			if c.large && testing.Short() {
				b.Skip("100,000 tools: run without -short")
			}
			r, qs := c.load(b)
			ctx := context.Background()
			for _, mode := range []habilis.Mode{habilis.ModeHybrid, habilis.ModeCentroid, habilis.ModeDescription} {
				b.Run(string(mode), func(b *testing.B) {
					b.ReportAllocs()
					i := 0
					for b.Loop() {
						if _, err := r.Select(ctx, qs[i%len(qs)], habilis.SelectOptions{Mode: mode}); err != nil {
							b.Fatal(err)
						}
						i++
					}
				})
			}
		})
	}
}

// BenchmarkLoad measures indexing a new catalog of 2,000 tools × 10
// examples into a new store (embedding, calibration, collisions, one
// write), reported as examples per second.
func BenchmarkLoad(b *testing.B) {
	tools, _ := synth(2000, 10, 2)
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		st := openStore(b, filepath.Join(b.TempDir(), "load.db"))
		r := lexicalRouter(b, st)
		b.StartTimer()
		if _, err := r.Load(ctx, tools, selector.LoadOptions{}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		r.Close()
		st.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(20000*b.N)/b.Elapsed().Seconds(), "examples/s")
}

// BenchmarkReloadUnchanged measures loading the catalog that is already
// stored: nothing is embedded or written.
func BenchmarkReloadUnchanged(b *testing.B) {
	tools, _ := synth(2000, 10, 2)
	r, _ := benchRouter(b, 1, 1)
	ctx := context.Background()
	if _, err := r.Load(ctx, tools, selector.LoadOptions{}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		rep, err := r.Load(ctx, tools, selector.LoadOptions{})
		if err != nil || rep.Embedded != 0 {
			b.Fatalf("reload: %+v, %v; want nothing embedded", rep, err)
		}
	}
}

// BenchmarkMemory reports the heap an index of 10,000 tools × 5 examples
// holds, against the raw size of its vectors (4 bytes a coordinate, 8 a
// sparse one) and texts.
func BenchmarkMemory(b *testing.B) {
	for b.Loop() {
		tools, _ := synth(10_000, 5, 3)
		st := openStore(b, filepath.Join(b.TempDir(), "mem.db"))
		ctx := context.Background()
		r := lexicalRouter(b, st)
		if _, err := r.Load(ctx, tools, selector.LoadOptions{}); err != nil {
			b.Fatal(err)
		}
		recs, err := r.Records(ctx)
		if err != nil {
			b.Fatal(err)
		}
		var raw int
		for _, rec := range recs {
			for _, v := range append([]habilis.Vector{rec.DescriptionVector, rec.Centroid, rec.DocumentVector}, rec.ExampleVectors...) {
				raw += 4*len(v.Dense) + 8*len(v.Indices)
			}
			raw += len(rec.Tool.Description) + len(rec.Tool.Name)
			for _, e := range rec.Tool.Examples {
				raw += len(e)
			}
		}
		r.Close()
		recs, tools, r = nil, nil, nil
		st.Close()
		// Twice: objects in a sync.Pool survive one collection.
		runtime.GC()
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		// Reopen: the index alone, built from the stored catalog.
		st2 := openStore(b, st.Path())
		r2 := lexicalRouter(b, st2)
		runtime.GC()
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(raw), "heap/raw")
		b.ReportMetric(float64(raw)/(1<<20), "raw-MiB")
		runtime.KeepAlive(r2)
		st2.Close()
	}
}

// BenchmarkOpen measures what a CLI selection costs beyond its query on a
// stored catalog (tools × 8 examples): opening the store read-only, the
// router over it, and the first selection. The 30,000-tool catalog is
// skipped with -short; HABILIS_BENCH_DIR keeps both between runs.
func BenchmarkOpen(b *testing.B) {
	for _, n := range []int{10_000, 30_000} {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			if n > 10_000 && testing.Short() {
				b.Skip("30,000 tools: run without -short")
			}
			dir := os.Getenv("HABILIS_BENCH_DIR")
			if dir == "" {
				dir = b.TempDir()
			}
			path := filepath.Join(dir, fmt.Sprintf("bench-open-%d-8.db", n))
			tools, qs := synth(n, 8, 1)
			st, err := boltstore.Open(path, boltstore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			r, err := selector.New(context.Background(), st, selector.Config{Embedder: lexical.New(lexical.Options{}), Reindex: true})
			if err == nil {
				_, err = r.Load(context.Background(), tools, selector.LoadOptions{})
				r.Close()
			}
			st.Close()
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			i := 0
			for b.Loop() {
				st, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
				if err != nil {
					b.Fatal(err)
				}
				r, err := selector.New(ctx, st, selector.Config{Embedder: lexical.New(lexical.Options{})})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := r.Select(ctx, qs[i%len(qs)], habilis.SelectOptions{}); err != nil {
					b.Fatal(err)
				}
				r.Close()
				st.Close()
				i++
			}
		})
	}
}

// BenchmarkDenseHeap reports the Go heap a router holds after loading a
// catalog of tools × 5 examples with a dense embedder of 384 dimensions
// (hashEmbedder: the figures depend on the vectors' size, not their
// meaning) beside the lexical one, as the CLI pairs a model with it; and
// the raw size of the tools' centroids; and, where the system tells
// (Linux), the store's pages resident in the process once loaded and
// after 100 selections in each mode, which the router reads where they
// lie in the store's memory map; and the size of the store's file beside that of the raw
// vectors (every example's and every centroid, as float32). The
// 100,000-tool catalog is skipped with -short.
func BenchmarkDenseHeap(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			if n > 10_000 && testing.Short() {
				b.Skip("100,000 tools: run without -short")
			}
			for b.Loop() {
				// The heap before the catalog is made: what the router
				// holds once the catalog is dropped.
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				mappedBefore := residentFile()
				tools, qs := synth(n, 5, 4)
				path := filepath.Join(b.TempDir(), "dense.db")
				st := openStore(b, path)
				ctx := context.Background()
				r, err := selector.New(ctx, st, selector.Config{Embedder: testutil.HashEmbedder{Dim: 384}, Lexical: lexical.New(lexical.Options{})})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := r.Load(ctx, tools, selector.LoadOptions{}); err != nil {
					b.Fatal(err)
				}
				tools = nil
				runtime.GC()
				runtime.GC()
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "heap-MiB")
				b.ReportMetric(float64(n*384*4)/(1<<20), "centroids-MiB")
				if mappedBefore >= 0 {
					b.ReportMetric(float64(residentFile()-mappedBefore)/(1<<20), "mapped-load-MiB")
				}
				for i := range 200 {
					mode := []habilis.Mode{habilis.ModeCentroid, habilis.ModeHybrid}[i%2]
					if _, err := r.Select(ctx, qs[i%len(qs)], habilis.SelectOptions{Mode: mode}); err != nil {
						b.Fatal(err)
					}
				}
				if mappedBefore >= 0 {
					b.ReportMetric(float64(residentFile()-mappedBefore)/(1<<20), "mapped-MiB")
				}
				r.Close()
				st.Close()
				fi, err := os.Stat(path)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(fi.Size())/(1<<20), "file-MiB")
				// The raw vectors: every example's and every centroid.
				b.ReportMetric(float64(n*6*384*4)/(1<<20), "raw-MiB")
			}
		})
	}
}

// residentFile returns the bytes of files mapped into the process that
// are resident (RssFile of /proc/self/status), or -1 where the system
// does not say.
func residentFile() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "RssFile:"); ok {
			var kb int64
			if _, err := fmt.Sscan(rest, &kb); err != nil {
				return -1
			}
			return kb << 10
		}
	}
	return -1
}

// BenchmarkDenseSelect measures one selection on one core (run with -cpu
// 1) in a catalog of tools × 5 examples embedded with 384 dimensions
// beside the lexical embedder, in each mode; and, as "floor", one pass
// summing a slab of the tools' centroids' size (tools × 384 float32): the
// memory bandwidth's bound on any exact search that reads every centroid.
// The 100,000-tool catalog is skipped with -short.
func BenchmarkDenseSelect(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			if n > 10_000 && testing.Short() {
				b.Skip("100,000 tools: run without -short")
			}
			b.Run("floor", func(b *testing.B) {
				// bytes.IndexByte reads with the widest vector loads the
				// processor has and finds nothing in a slab of ones.
				slab := bytes.Repeat([]byte{1}, n*384*4)
				b.SetBytes(int64(len(slab)))
				for b.Loop() {
					if bytes.IndexByte(slab, 0) >= 0 {
						b.Fatal("found a zero in a slab of ones")
					}
				}
			})
			tools, qs := synth(n, 5, 4)
			ctx := context.Background()
			st := openStore(b, filepath.Join(b.TempDir(), "dense.db"))
			r, err := selector.New(ctx, st, selector.Config{Embedder: testutil.HashEmbedder{Dim: 384}, Lexical: lexical.New(lexical.Options{})})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := r.Load(ctx, tools, selector.LoadOptions{}); err != nil {
				b.Fatal(err)
			}
			for _, mode := range []habilis.Mode{habilis.ModeCentroid, habilis.ModeHybrid} {
				b.Run(string(mode), func(b *testing.B) {
					i := 0
					for b.Loop() {
						if _, err := r.Select(ctx, qs[i%len(qs)], habilis.SelectOptions{Mode: mode}); err != nil {
							b.Fatal(err)
						}
						i++
					}
				})
			}
		})
	}
}
