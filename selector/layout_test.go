package selector

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/layout"
)

// storedIndex returns an index over n random lexical tools, its layout,
// and the embedders to decode it with.
func storedIndex(t testing.TB, n int) (*index, []byte, embedders) {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 6))
	recs, emb := lexicalRecords(t, rng, n)
	e := embedders{emb: emb, lex: emb, sameLex: true}
	meta := habilis.CatalogMeta{Version: 7, Embedder: emb.Info()}
	cal := Calibration{Weights: defaultWeights, HybridThreshold: 0.2, DescriptionThreshold: 0.1,
		Prior: map[string]float32{recs[1].Tool.Name: 0.5}, Collides: map[string][]string{recs[0].Tool.Name: {recs[2].Tool.Name}},
		Background: map[string]Background{recs[3].Tool.Name: {Mean: [3]float32{0.1, 0.2, 0.3}, SD: [3]float32{1, 1, 1}}}}
	ix, err := buildIndex(meta, cal, e, recs, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := encodeIndex(ix, meta.Version)
	if err != nil {
		t.Fatal(err)
	}
	return ix, data, e
}

// queries returns texts of the index's own tools, to select with.
func queries(ix *index) []string {
	var qs []string
	for i := range min(len(ix.tools), 8) {
		d, _ := ix.defs.def(i)
		qs = append(qs, d.Tool.Description)
	}
	return qs
}

// checkSameSelections checks that index got, decoded from a stored
// layout (named by from in failures), decides every query of queries(ix)
// in every mode as ix, the index it was stored from, does.
func checkSameSelections(t *testing.T, from string, ix, got *index) {
	t.Helper()
	for _, q := range queries(ix) {
		for _, m := range []habilis.Mode{habilis.ModeHybrid, habilis.ModeCentroid, habilis.ModeDescription} {
			opts := habilis.SelectOptions{Mode: m, K: 5, FailOpen: true}
			want, _, err := ix.selectQuery(context.Background(), q, opts)
			if err != nil {
				t.Fatal(err)
			}
			d, _, err := got.selectQuery(context.Background(), q, opts)
			if err != nil {
				t.Fatalf("Select(%q, %s) from %s: %v", q, m, from, err)
			}
			if !sameDecision(want, d) {
				t.Errorf("Select(%q, %s) from %s = %+v, want %+v", q, m, from, d, want)
			}
		}
	}
}

func TestLayoutRoundTrip(t *testing.T) {
	ix, data, e := storedIndex(t, 60)
	got, err := decodeIndex(data, ix.meta, e)
	if err != nil {
		t.Fatal(err)
	}
	checkSameSelections(t, "the layout", ix, got)
	for _, tc := range []struct {
		name string
		meta habilis.CatalogMeta
		emb  embedders
	}{
		{"another catalog version", habilis.CatalogMeta{Version: 8, Embedder: ix.meta.Embedder}, e},
		{"a dense embedder", habilis.CatalogMeta{Version: 7, Embedder: habilis.EmbedderInfo{Kind: "x", Dim: 8}}, e},
		{"another lexical embedder", ix.meta, embedders{emb: e.emb}},
	} {
		if _, err := decodeIndex(data, tc.meta, tc.emb); !errors.Is(err, errLayout) {
			t.Errorf("decodeIndex for %s: %v, want an error wrapping errLayout", tc.name, err)
		}
	}
	old := append([]byte(nil), data...)
	old[8] = layoutVersion + 1
	if _, err := decodeIndex(old, ix.meta, e); !errors.Is(err, errLayout) {
		t.Errorf("decodeIndex of another layout version: %v, want an error wrapping errLayout", err)
	}
}

func sameDecision(a, b *habilis.Decision) bool {
	if a.Abstained != b.Abstained || a.Ambiguous != b.Ambiguous || a.Reason != b.Reason || len(a.Matches) != len(b.Matches) {
		return false
	}
	for i := range a.Matches {
		x, y := a.Matches[i], b.Matches[i]
		if x.Tool != y.Tool || x.Score != y.Score || x.Gate != y.Gate || x.Passed != y.Passed || len(x.CollidesWith) != len(y.CollidesWith) {
			return false
		}
	}
	return true
}

// TestLayoutDamage overwrites the stored layout at offsets across it and
// checks that decoding and selecting never panic: damage is refused on
// open, or fails the selection that reaches it, or (in a weight) moves a
// score. Damage in the header, table or an eagerly checked section must
// be refused on open.
func TestLayoutDamage(t *testing.T) {
	ix, data, e := storedIndex(t, 40)
	l, err := parseLayout(data)
	if err != nil {
		t.Fatal(err)
	}
	// eager[k] reports a byte that opening checks.
	eager := make([]bool, len(data))
	for k := range headerSize + entrySize*len(l.Secs) {
		eager[k] = true
	}
	for id, s := range l.Secs {
		if !layout.Lazy(id) && len(s) > 0 {
			start := uintptrOffset(data, s)
			for k := range s {
				eager[start+k] = true
			}
		}
	}
	qs := queries(ix)
	refused, failed := 0, 0
	for off := 0; off < len(data); off += 1 + off/40 {
		bad := append([]byte(nil), data...)
		for k := off; k < min(off+8, len(bad)); k++ {
			bad[k] ^= 0xa5
		}
		got, err := decodeIndex(bad, ix.meta, e)
		if err != nil {
			refused++
			continue
		}
		if eager[off] {
			t.Errorf("damage at %d, which opening checks, was not refused", off)
		}
		for _, q := range qs {
			for _, m := range []habilis.Mode{habilis.ModeHybrid, habilis.ModeCentroid, habilis.ModeDescription} {
				if _, _, err := got.selectQuery(context.Background(), q, habilis.SelectOptions{Mode: m, FailOpen: true}); err != nil {
					failed++
				}
			}
		}
		for i := range got.tools {
			got.defs.def(i)
		}
	}
	if refused == 0 || failed == 0 {
		t.Errorf("of the damaged layouts, %d were refused on open and %d selections failed: want some of each", refused, failed)
	}
}

// uintptrOffset returns where s starts in data.
func uintptrOffset(data, s []byte) int {
	for i := range data {
		if &data[i] == &s[0] {
			return i
		}
	}
	return len(data)
}

// FuzzDecodeIndex checks that no bytes make decoding a stored index, or
// selecting with what it decodes, panic.
func FuzzDecodeIndex(f *testing.F) {
	ix, data, e := storedIndex(f, 12)
	f.Add(data)
	f.Add(data[:headerSize])
	qs := queries(ix)
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeIndex(b, ix.meta, e)
		if err != nil {
			return
		}
		for _, q := range qs {
			got.selectQuery(context.Background(), q, habilis.SelectOptions{FailOpen: true})
		}
		for i := range got.tools {
			got.defs.def(i)
		}
	})
}

// TestLayoutRows checks that the rows internal/layout reads from a stored
// index, and their digests, are the vectors of the records the index was
// built from, which a store leaves to it (boltstore's format 3).
func TestLayoutRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	recs, emb := lexicalRecords(t, rng, 50)
	meta := habilis.CatalogMeta{Version: 3, Embedder: emb.Info()}
	ix, err := buildIndex(meta, Calibration{Weights: defaultWeights}, embedders{emb: emb, lex: emb, sameLex: true}, recs, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := encodeIndex(ix, meta.Version)
	if err != nil {
		t.Fatal(err)
	}
	l, err := layout.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := layout.ReadRows(l)
	if err != nil {
		t.Fatal(err)
	}
	digests, err := layout.Digests(l)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs { // sorted by name, as the index's rows
		r := &recs[i]
		for sig, v := range map[int]habilis.Vector{layout.Cent: r.Centroid, layout.Desc: r.DescriptionVector, layout.Doc: r.DocumentVector} {
			if diff := cmp.Diff(v, rows.Vector(i, sig), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("tool %q, signal %d: row mismatch (-record +row):\n%s", r.Tool.Name, sig, diff)
			}
			if d := layout.Digest(v); d != digests[i][sig] {
				t.Errorf("tool %q, signal %d: digest %x, the row's %x", r.Tool.Name, sig, d, digests[i][sig])
			}
		}
	}
}

// TestEncodeIndexProcs checks that an index encodes to the same bytes,
// and its rows to the same digests, on any number of cores: sections are
// summed and copied, definitions encoded and digests added up on every
// core.
func TestEncodeIndexProcs(t *testing.T) {
	ix, _, _ := storedIndex(t, 300)
	var want []byte
	var wantDigests [][3]uint64
	for _, procs := range []int{1, 2, 3, 8} {
		old := runtime.GOMAXPROCS(procs)
		data, err := encodeIndex(ix, 9)
		if err != nil {
			t.Fatal(err)
		}
		l, err := layout.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		digests, err := layout.Digests(l)
		runtime.GOMAXPROCS(old)
		if err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want, wantDigests = data, digests
			continue
		}
		if !bytes.Equal(data, want) {
			t.Errorf("GOMAXPROCS %d: the encoded index differs from the one encoded on one core", procs)
		}
		if diff := cmp.Diff(wantDigests, digests); diff != "" {
			t.Errorf("GOMAXPROCS %d: digests differ from one core's (-one +%d):\n%s", procs, procs, diff)
		}
	}
}

// FuzzLayoutRows checks that reading the rows of damaged stored indexes
// returns an error or rows, never panics.
func FuzzLayoutRows(f *testing.F) {
	_, data, _ := storedIndex(f, 12)
	f.Add(data, 0, byte(0))
	f.Fuzz(func(t *testing.T, data []byte, at int, x byte) {
		if len(data) > 0 {
			data[(at%len(data)+len(data))%len(data)] ^= x
		}
		l, err := layout.Parse(data)
		if err != nil {
			return
		}
		if _, err := l.Names(); err != nil {
			return
		}
		layout.ReadRows(l)
		layout.Digests(l)
	})
}
