package selector

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/layout"
	"github.com/habilis-router/habilis/internal/vec"
)

// TestStoredWideRows checks that an index whose sparse spaces keep their
// postings' rows as int32 words, as indexes stored before packed rows
// do, selects as the packed one does and gives a store the same rows.
func TestStoredWideRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	recs, emb := lexicalRecords(t, rng, 80)
	e := embedders{emb: emb} // spaces of their own, not merged
	meta := habilis.CatalogMeta{Version: 4, Embedder: emb.Info()}
	ix, err := buildIndex(meta, Calibration{Weights: defaultWeights}, e, recs, nil)
	if err != nil {
		t.Fatal(err)
	}
	secs, err := indexSections(ix)
	if err != nil {
		t.Fatal(err)
	}
	packed := assemble(ix, meta.Version, secs)
	old := assemble(ix, meta.Version, widen(t, secs))
	var want [][]habilis.Vector
	for which, data := range [][]byte{packed, old} {
		got, err := decodeIndex(data, meta, e)
		if err != nil {
			t.Fatal(err)
		}
		checkSameSelections(t, []string{"the packed index", "the int32 rows' index"}[which], ix, got)
		l, err := layout.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := layout.ReadRows(l)
		if err != nil {
			t.Fatal(err)
		}
		var vs []habilis.Vector
		for i := range recs {
			for sig := range 3 {
				vs = append(vs, rows.Vector(i, sig))
			}
		}
		want = append(want, vs)
	}
	if diff := cmp.Diff(want[0], want[1]); diff != "" {
		t.Errorf("rows of the wide index differ from the packed one's (-packed +wide):\n%s", diff)
	}
}

// widen returns secs with each space's rows as int32 words, and its run
// checksums over them, as indexes stored before packed rows hold them.
func widen(t *testing.T, secs []section) []section {
	t.Helper()
	byID := map[uint32]int{}
	for i, s := range secs {
		byID[s.id] = i
	}
	wide := 0
	for i, s := range secs {
		if s.id < secCent || (s.id-secCent)%8 != layout.SpRows24 {
			continue
		}
		base := s.id - layout.SpRows24
		rows := make([]int32, (len(s.data)-1)/3)
		for j := range rows {
			rows[j] = int32(binary.LittleEndian.Uint32(s.data[3*j:]) & (layout.MaxPacked - 1))
		}
		offsets, err := vec.View[int32](secs[byID[base+spOffsets]].data)
		if err != nil {
			t.Fatal(err)
		}
		vals, err := vec.View[float32](secs[byID[base+spVals]].data)
		if err != nil {
			t.Fatal(err)
		}
		sums := make([]uint32, len(offsets)-1)
		for k := range sums {
			lo, hi := offsets[k], offsets[k+1]
			sums[k] = crc32.Update(crc32.Checksum(vec.Bytes(rows[lo:hi]), castagnoli), castagnoli, vec.Bytes(vals[lo:hi]))
		}
		secs[i] = section{base + spRows, vec.Bytes(rows)}
		secs[byID[base+spRunSums]] = section{base + spRunSums, vec.Bytes(sums)}
		wide++
	}
	if wide == 0 {
		t.Fatal("no space of the index packs its rows")
	}
	return secs
}

// TestAddRunPacked checks that a run of packed rows adds to the same
// sums, to the bit, as the run of the same rows as int32 words, for runs
// of every length around the four rows read at a time, anywhere in the
// rows.
func TestAddRunPacked(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const n = 1 << 20 // rows that need all three bytes
	rows := make([]int32, 40)
	for j := range rows {
		rows[j] = int32(rng.IntN(n))
	}
	vals := make([]float32, len(rows))
	for j := range vals {
		vals[j] = rng.Float32()
	}
	packed := layout.PackRows(len(rows), n, func(at func(int, int32)) {
		for j, r := range rows {
			at(j, r)
		}
	})
	wide := layout.PostingRows{Wide: rows}
	got, want := make([]float32, n), make([]float32, n)
	for lo := range 5 {
		for hi := lo; hi <= len(rows); hi++ {
			clear(got)
			clear(want)
			addRun(got, packed, lo, hi, 0.37, vals[lo:hi])
			addRun(want, wide, lo, hi, 0.37, vals[lo:hi])
			for _, r := range rows {
				if math.Float32bits(got[r]) != math.Float32bits(want[r]) {
					t.Fatalf("run [%d, %d): row %d sums %v packed, %v wide", lo, hi, r, got[r], want[r])
				}
			}
		}
	}
}
