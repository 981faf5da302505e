package testutil

import (
	"context"
	"hash/fnv"
	"math"
	"strings"

	"github.com/habilis-router/habilis"
)

// HashEmbedder is a dense embedder for tests, standing in for a model:
// each word is a pseudo-random direction of Dim dimensions (from its
// FNV-1a hash through xorshift), a text the normalised sum of its words'.
// Texts sharing words score higher, as with a model, and no server is
// needed.
type HashEmbedder struct{ Dim int }

// Info reports kind "test", model "hash" and the dimension.
func (e HashEmbedder) Info() habilis.EmbedderInfo {
	return habilis.EmbedderInfo{Kind: "test", Model: "hash", Dim: e.Dim}
}

// Embed returns one unit vector a text (zero for a text without words).
func (e HashEmbedder) Embed(_ context.Context, texts []string, _ habilis.Purpose) ([]habilis.Vector, error) {
	out := make([]habilis.Vector, len(texts))
	for i, text := range texts {
		v := make([]float32, e.Dim)
		for _, w := range strings.Fields(strings.ToLower(text)) {
			h := fnv.New64a()
			h.Write([]byte(w))
			x := h.Sum64()
			for d := range v {
				x ^= x << 13
				x ^= x >> 7
				x ^= x << 17
				v[d] += float32(int64(x%2001)-1000) / 1000
			}
		}
		out[i] = unit(v)
	}
	return out, nil
}

// WordEmbedder is a dense embedder for tests whose vector of a text is its
// words, each hashed (FNV-1a) into one of Dim dimensions, with 0.1 more on
// the first so that no vector is zero, normalised: texts that share words
// are similar. A word found in Synonyms counts as the word it maps to, so
// that, as with a real model, a request can match a tool in other words.
type WordEmbedder struct {
	Dim      int
	Synonyms map[string]string
}

// Info reports kind "test", model "words" and the dimension.
func (e WordEmbedder) Info() habilis.EmbedderInfo {
	return habilis.EmbedderInfo{Kind: "test", Model: "words", Dim: e.Dim}
}

// Embed returns one unit vector a text.
func (e WordEmbedder) Embed(_ context.Context, texts []string, _ habilis.Purpose) ([]habilis.Vector, error) {
	out := make([]habilis.Vector, len(texts))
	for i, t := range texts {
		v := make([]float32, e.Dim)
		for _, w := range strings.Fields(strings.ToLower(t)) {
			w = strings.Trim(w, "?.,!'\"")
			if s, ok := e.Synonyms[w]; ok {
				w = s
			}
			h := fnv.New32a()
			h.Write([]byte(w))
			v[h.Sum32()%uint32(e.Dim)]++
		}
		v[0] += 0.1
		out[i] = unit(v)
	}
	return out, nil
}

// unit returns v scaled to length 1 (v itself when it is zero) as a dense
// vector.
func unit(v []float32) habilis.Vector {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	for j := range v {
		v[j] /= float32(math.Sqrt(max(n, 1e-12)))
	}
	return habilis.Vector{Dense: v}
}
