package selector

import (
	"bytes"
	"fmt"
	"math"

	"github.com/habilis-router/habilis"
)

// unitTolerance is how far a stored vector's squared norm may be from 1:
// float32 normalisation leaves errors near 1e-6, damage far more.
const unitTolerance = 1e-3

// CheckSnapshot checks what a stored catalog's records mean, as this
// package wrote them, and returns one line per problem: each tool's hash
// is its definition's (so damage to its stored text shows), every vector
// is unit length or zero (embedders normalise, centroids are normalised
// means), dense vectors have the embedder's dimension, each centroid and
// radius follow from the tool's example vectors, and the calibration
// decodes. Stores keep values without checksums, so this is what finds
// damage inside a value that still decodes; a flipped low bit of a
// coordinate or a flipped sign stays unseen.
func CheckSnapshot(snap *habilis.Snapshot) []string {
	var out []string
	if _, err := decodeCalibration(snap.Meta.Calibration); err != nil && snap.Meta.Version > 0 {
		out = append(out, err.Error())
	}
	for i := range snap.Records {
		out = append(out, checkRecord(&snap.Records[i], snap.Meta.Embedder.Dim)...)
	}
	return out
}

// CheckStates restores with lex, the lexical embedder, the fitted states
// of the embedders that wrote meta's catalog, as opening the catalog does:
// a state that does not restore (its checksum fails) makes every command
// on the store fail, and nothing CheckSnapshot reads shows it. A state of
// another embedder than lex, or of another version of its algorithm,
// which opening refuses as a mismatch before reading it, is not checked.
func CheckStates(meta habilis.CatalogMeta, lex habilis.CorpusEmbedder) []string {
	var out []string
	for _, s := range []struct {
		what  string
		info  habilis.EmbedderInfo
		state []byte
	}{{"embedder state", meta.Embedder, meta.EmbedderState}, {"lexical embedder state", meta.Lexical, meta.LexicalState}} {
		if s.state == nil || !s.info.Space(lex.Info()) || (s.what != "embedder state" && bytes.Equal(s.state, meta.EmbedderState)) {
			continue // unchecked, or the main embedder's, checked above
		}
		if _, err := lex.Restore(s.state); err != nil {
			out = append(out, fmt.Sprintf("the stored %s does not decode (%v)", s.what, err))
		}
	}
	return out
}

// checkRecord returns the problems of one record.
func checkRecord(rec *habilis.Record, dim int) []string {
	var out []string
	name := rec.Tool.Name
	if h := rec.Tool.Hash(); h != rec.Hash {
		out = append(out, fmt.Sprintf("tool %q: its definition does not match its hash: stored text damaged", name))
	}
	vectors := []struct {
		what string
		v    habilis.Vector
	}{{"description vector", rec.DescriptionVector}, {"centroid", rec.Centroid}, {"document vector", rec.DocumentVector}}
	for k, v := range rec.ExampleVectors {
		vectors = append(vectors, struct {
			what string
			v    habilis.Vector
		}{fmt.Sprintf("example %d's vector", k), v})
	}
	for _, x := range vectors {
		if p := checkVector(x.v, dim, x.what != "document vector"); p != "" {
			out = append(out, fmt.Sprintf("tool %q: %s %s", name, x.what, p))
		}
	}
	if len(out) > 0 {
		return out // the checks below need sound vectors
	}
	want := *rec
	shape(&want)
	if !rec.Centroid.IsZero() && dot(rec.Centroid, want.Centroid) < 1-unitTolerance {
		out = append(out, fmt.Sprintf("tool %q: the centroid is not the mean of the example vectors: stored vectors damaged", name))
	}
	if rec.HasRadius != want.HasRadius || math.Abs(float64(rec.Radius-want.Radius)) > unitTolerance {
		out = append(out, fmt.Sprintf("tool %q: radius %.4f, but its examples give %.4f: stored vectors damaged", name, rec.Radius, want.Radius))
	}
	return out
}

// checkVector says what is wrong with v, or "". Dense vectors of the main
// embedder must have its dimension, when known (dense says whether v is
// one of its vectors, not the lexical document vector).
func checkVector(v habilis.Vector, dim int, dense bool) string {
	if err := v.Validate(); err != nil {
		return err.Error()
	}
	if dense && dim > 0 && v.Dense != nil && len(v.Dense) != dim {
		return fmt.Sprintf("has dimension %d, not the embedder's %d", len(v.Dense), dim)
	}
	if v.IsZero() {
		return ""
	}
	xs := v.Dense
	if xs == nil {
		xs = v.Values
	}
	var ss float64
	for _, x := range xs {
		ss += float64(x) * float64(x)
	}
	if math.IsNaN(ss) || math.Abs(ss-1) > unitTolerance {
		return fmt.Sprintf("has norm %.4g, not 1: stored vectors damaged", math.Sqrt(ss))
	}
	return ""
}
