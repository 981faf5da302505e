package storetest

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/vec"
)

// Shape says what vectors generated records carry.
type Shape struct {
	// Dim is the dense dimension; 0 makes sparse vectors instead.
	Dim int
	// NonZeros is the number of coordinates of each sparse example vector
	// (centroids have more, being means); 0 means 6.
	NonZeros int
}

// sparseSpace is the index range of generated sparse vectors, wide like a
// hashed vocabulary so that random vectors rarely share coordinates.
const sparseSpace = 1 << 20

// Record returns a deterministic record named name with nExamples examples
// and unit vectors: dense of dimension 8, or sparse with 6 nonzeros. The
// same arguments always give the same record, and every field a store keeps
// is set, so round trips through a store can be compared whole.
func Record(name string, nExamples int, sparse bool, seed int64) habilis.Record {
	if sparse {
		return Generate(name, nExamples, Shape{}, seed)
	}
	return Generate(name, nExamples, Shape{Dim: 8}, seed)
}

// Catalog returns n records named "tool-0000", "tool-0001", ... each with
// nExamples examples, sorted by name as a snapshot returns them.
func Catalog(n, nExamples int, sparse bool, seed int64) []habilis.Record {
	recs := make([]habilis.Record, n)
	for i := range recs {
		recs[i] = Record(fmt.Sprintf("tool-%04d", i), nExamples, sparse, seed+int64(i))
	}
	return recs
}

// Generate returns a deterministic record like Record with vectors of shape
// s. Benchmarks use it to build catalogs of realistic size.
func Generate(name string, nExamples int, s Shape, seed int64) habilis.Record {
	h := fnv.New64a()
	h.Write([]byte(name))
	rng := rand.New(rand.NewPCG(uint64(seed), h.Sum64()))

	newVec := func() habilis.Vector {
		if s.Dim > 0 {
			return denseUnit(rng, s.Dim)
		}
		nz := s.NonZeros
		if nz == 0 {
			nz = 6
		}
		return sparseUnit(rng, nz)
	}

	tool := habilis.Tool{
		Name:        name,
		Description: fmt.Sprintf("Does %s things for seed %d.", name, seed),
		InputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"q%d":{"type":"string","description":"what to look up"}},"required":["q%d"]}`, seed%7, seed%7)),
		Meta:        map[string]string{"owner": "team-" + name, "seed": fmt.Sprint(seed)},
	}
	if seed%2 == 0 {
		m := float32(seed%5) / 100
		tool.Margin = &m
		tool.Executor = json.RawMessage(fmt.Sprintf(`{"http":{"url":"http://localhost:8080/%s","method":"POST"}}`, name))
	}
	rec := habilis.Record{
		DescriptionVector: newVec(),
		Margin:            0.05,
	}
	if tool.Margin != nil {
		rec.Margin = *tool.Margin
	}
	for i := range nExamples {
		tool.Examples = append(tool.Examples, fmt.Sprintf("please %s request number %d (seed %d)", name, i, seed))
		rec.ExampleVectors = append(rec.ExampleVectors, newVec())
	}
	rec.Tool = tool
	sum := fnv.New128a()
	b, _ := json.Marshal(tool)
	sum.Write(b)
	rec.Hash = hex.EncodeToString(sum.Sum(nil))

	if nExamples > 0 {
		rec.Centroid = centroid(rec.ExampleVectors)
	}
	// The lexical document vector is sparse whatever the main embedder.
	rec.DocumentVector = sparseUnit(rand.New(rand.NewPCG(uint64(seed), 11)), 9)
	if nExamples >= 2 {
		rec.HasRadius = true
		rec.Radius = float32(math.Inf(1))
		for i, v := range rec.ExampleVectors {
			if d := dot(v, rec.Centroid); d < rec.Radius {
				rec.Radius = d
				rec.RadiusExample = tool.Examples[i]
			}
		}
	}
	return rec
}

// Meta returns a deterministic catalog meta for a catalog of dense (dimension
// dim) or, when dim is 0, sparse vectors, with an embedder state and a
// calibration so that every field a store keeps is set.
func Meta(dim int, seed int64) habilis.CatalogMeta {
	info := habilis.EmbedderInfo{Kind: "lexical", Version: fmt.Sprintf("v%d", seed%3+1)}
	if dim > 0 {
		info = habilis.EmbedderInfo{Kind: "ollama", Model: "nomic-embed-text", Dim: dim, Version: "1"}
	}
	state := make([]byte, 64)
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	for i := range state {
		state[i] = byte(rng.UintN(256)) // includes zero bytes and invalid UTF-8
	}
	lexState := make([]byte, 32)
	for i := range lexState {
		lexState[i] = byte(rng.UintN(256))
	}
	return habilis.CatalogMeta{
		Embedder:      info,
		EmbedderState: state,
		Lexical:       habilis.EmbedderInfo{Kind: "lexical", Version: fmt.Sprintf("1-%d", seed)},
		LexicalState:  lexState,
		Calibration:   json.RawMessage(fmt.Sprintf(`{"margin":0.05,"threshold":0.4,"seed":%d}`, seed)),
	}
}

func denseUnit(rng *rand.Rand, dim int) habilis.Vector {
	d := make([]float32, dim)
	var n float64
	for i := range d {
		x := rng.NormFloat64()
		d[i] = float32(x)
		n += x * x
	}
	n = math.Sqrt(n)
	for i := range d {
		d[i] = float32(float64(d[i]) / n)
	}
	return habilis.Vector{Dense: d}
}

func sparseUnit(rng *rand.Rand, nz int) habilis.Vector {
	set := make(map[uint32]bool, nz)
	idx := make([]uint32, 0, nz)
	for len(idx) < nz {
		i := rng.Uint32N(sparseSpace)
		if !set[i] {
			set[i] = true
			idx = append(idx, i)
		}
	}
	slices.Sort(idx)
	val := make([]float32, nz)
	var n float64
	for i := range val {
		x := 0.1 + rng.Float64()
		val[i] = float32(x)
		n += x * x
	}
	n = math.Sqrt(n)
	for i := range val {
		val[i] = float32(float64(val[i]) / n)
	}
	return habilis.Vector{Indices: idx, Values: val}
}

// centroid is the normalised mean of vs as the selector computes it.
func centroid(vs []habilis.Vector) habilis.Vector { return vec.MeanVectors(vs) }

// dot is a·b as the selector computes it.
func dot(a, b habilis.Vector) float32 { return vec.DotVectors(a, b) }

// Embedder and Lexical pick a catalog meta's embedder info and its paired
// lexical one, for SetAlgorithm.
func Embedder(m *habilis.CatalogMeta) *habilis.EmbedderInfo { return &m.Embedder }

func Lexical(m *habilis.CatalogMeta) *habilis.EmbedderInfo { return &m.Lexical }

// SetAlgorithm rewrites the algorithm of the embedder info that field
// picks in st's meta, keeping its fitted state, as a store written by a
// release with another algorithm would hold it.
func SetAlgorithm(tb testing.TB, st habilis.Store, field func(*habilis.CatalogMeta) *habilis.EmbedderInfo, algorithm string) {
	tb.Helper()
	ctx := context.Background()
	snap, err := st.Snapshot(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	meta := snap.Meta
	info := field(&meta)
	_, state, _ := strings.Cut(info.Version, "-")
	info.Version = algorithm + "-" + state
	if _, err := st.Write(ctx, &habilis.Batch{BaseVersion: meta.Version, Meta: meta}); err != nil {
		tb.Fatal(err)
	}
}
