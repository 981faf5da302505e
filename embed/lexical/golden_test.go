package lexical

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/habilis-router/habilis"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.json for a new Algorithm")

// goldenFile ties Algorithm to the vectors it makes: a change of the
// tokeniser, hashing or weighting changes the digest, and the test then
// fails until Algorithm is bumped and the file rewritten with -update.
const goldenFile = "testdata/golden.json"

// golden is goldenFile's content.
type golden struct {
	Algorithm string `json:"algorithm"`
	// Digest is the SHA-256 of the fitted state and of every golden text's
	// document and query vectors (see outputDigest).
	Digest string `json:"digest"`
}

// goldenTexts cover each path of the tokeniser: ASCII words and
// camelCase, digits, punctuation, accents and other scripts, stemming,
// repeated words, and a long text.
var goldenTexts = []string{
	"What's the weather like in Paris today?",
	"getWeatherForecast for São Paulo, 3 days ahead",
	"Convert 250 GBP to ¥ and €: exchange-rates.json",
	"running runs runner ran; happily happiness",
	"東京の天気は？ Погода в Москве",
	"the the the the weather weather",
	"",
	"x",
}

// outputDigest returns the digest of what the embedder fitted to the test
// corpus makes of goldenTexts.
func outputDigest(t *testing.T) string {
	t.Helper()
	e, state := fit(t, Options{})
	var vs []habilis.Vector
	for _, p := range []habilis.Purpose{habilis.Document, habilis.Query} {
		vs = append(vs, embed(t, e, p, goldenTexts...)...)
	}
	return digest(state, vs)
}

// digest hashes a fitted state and vectors. Values are rounded to 1e-6 so
// that a platform's floating-point contraction does not change the digest,
// while any change of a feature or of a weight does.
func digest(state []byte, vs []habilis.Vector) string {
	h := sha256.New()
	h.Write(state)
	var buf [8]byte
	for _, v := range vs {
		binary.LittleEndian.PutUint64(buf[:], uint64(len(v.Indices)))
		h.Write(buf[:])
		for i, ix := range v.Indices {
			binary.LittleEndian.PutUint32(buf[:4], ix)
			binary.LittleEndian.PutUint32(buf[4:], uint32(int32(math.Round(float64(v.Values[i])*1e6))))
			h.Write(buf[:])
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestAlgorithmGolden fails when the embedder's output changes while
// Algorithm stays the same: stores written before the change would
// otherwise open without complaint and compare old vectors with new ones.
func TestAlgorithmGolden(t *testing.T) {
	got := golden{Algorithm: Algorithm, Digest: outputDigest(t)}
	data, err := os.ReadFile(goldenFile)
	if err != nil && !*update {
		t.Fatalf("read %s: %v (run go test -run TestAlgorithmGolden -update to create it)", goldenFile, err)
	}
	var want golden
	if err == nil {
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("%s: %v", goldenFile, err)
		}
	}
	if *update {
		if want.Algorithm == got.Algorithm && want.Digest != got.Digest {
			t.Fatalf("the output changed but Algorithm is still %q: bump Algorithm before updating %s", Algorithm, goldenFile)
		}
		out, _ := json.MarshalIndent(got, "", "  ")
		if err := os.MkdirAll(filepath.Dir(goldenFile), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenFile, append(out, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	switch {
	case want.Algorithm != got.Algorithm:
		t.Errorf("Algorithm is %q but %s was made by algorithm %q: if the output changed, run go test -run TestAlgorithmGolden -update", got.Algorithm, goldenFile, want.Algorithm)
	case want.Digest != got.Digest:
		t.Errorf("the embedder's output changed (digest %s, %s has %s) but Algorithm is still %q: bump Algorithm, so that stores of the old output are refused until reindexed, then run -update",
			got.Digest, goldenFile, want.Digest, Algorithm)
	}
}

// TestGoldenDigestSensitive checks that the digest sees a change of one
// vector value, of one feature or of the state: a digest blind to them
// would let the golden test pass whatever the embedder did.
func TestGoldenDigestSensitive(t *testing.T) {
	e, state := fit(t, Options{})
	base := embed(t, e, habilis.Query, goldenTexts...)
	want := digest(state, base)
	changes := map[string]func(vs []habilis.Vector, state []byte) ([]habilis.Vector, []byte){
		"a value by 1e-5": func(vs []habilis.Vector, state []byte) ([]habilis.Vector, []byte) {
			vs[0].Values[0] += 1e-5
			return vs, state
		},
		"a feature": func(vs []habilis.Vector, state []byte) ([]habilis.Vector, []byte) {
			vs[1].Indices[0]++
			return vs, state
		},
		"a vector's last feature dropped": func(vs []habilis.Vector, state []byte) ([]habilis.Vector, []byte) {
			n := len(vs[2].Indices) - 1
			vs[2].Indices, vs[2].Values = vs[2].Indices[:n], vs[2].Values[:n]
			return vs, state
		},
		"the state": func(vs []habilis.Vector, state []byte) ([]habilis.Vector, []byte) {
			return vs, append(state, 0)
		},
	}
	for name, change := range changes {
		vs := make([]habilis.Vector, len(base))
		for i, v := range base {
			vs[i] = v.Clone()
		}
		vs, st := change(vs, bytes.Clone(state))
		if got := digest(st, vs); got == want {
			t.Errorf("changing %s left the digest unchanged", name)
		}
	}
}
