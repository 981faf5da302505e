// Package storetest is the conformance suite every habilis.Store passes.
// A store's test calls Run with a Harness that opens fresh stores:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, storetest.Harness{Open: ..., Reopen: ...})
//	}
//
// The package also builds deterministic records (Record, Catalog, Generate,
// Meta) for other packages' tests and benchmarks.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/habilis-router/habilis"
)

// Harness opens the stores under test.
type Harness struct {
	// Open returns a new, empty store. The suite closes it; Close may be
	// called more than once. A harness whose backend is unreachable calls
	// t.Skip with a message saying how to run the suite.
	Open func(t *testing.T) habilis.Store
	// Reopen returns a store over the same data as closed, which the suite
	// has closed. Nil skips the persistence tests.
	Reopen func(t *testing.T, closed habilis.Store) habilis.Store
	// Share returns another store over the same data as open, while open
	// stays open, as another process would have it. The suite closes it.
	// Nil skips the tests of stores sharing a catalog.
	Share func(t *testing.T, open habilis.Store) habilis.Store
}

// Run runs the conformance suite against the stores h opens, each test in
// a subtest with a store of its own.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"EmptySnapshot", testEmptySnapshot},
		{"RoundTripDense", func(t *testing.T, h Harness) { testRoundTrip(t, h, false) }},
		{"RoundTripSparse", func(t *testing.T, h Harness) { testRoundTrip(t, h, true) }},
		{"SortedByName", testSortedByName},
		{"VersionIncrements", testVersionIncrements},
		{"Version", testVersion},
		{"PutReplacesTool", testPutReplacesTool},
		{"Replace", testReplace},
		{"ReplaceWithNothing", testReplaceWithNothing},
		{"Delete", testDelete},
		{"DeleteUnknown", testDeleteUnknown},
		{"Conflict", testConflict},
		{"InvalidBatch", testInvalidBatch},
		{"ConcurrentWriters", testConcurrentWriters},
		{"SharedStores", testSharedStores},
		{"LargeBatch", testLargeBatch},
		{"NoAliasing", testNoAliasing},
		{"CancelledContext", testCancelledContext},
		{"Closed", testClosed},
		{"Persistence", testPersistence},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, h) })
	}
}

// recordOpts compare records by content: a store may return nil where it
// was given an empty slice or map and the other way round. Vector kinds,
// which such a difference could change, are checked separately by
// checkKinds.
var recordOpts = cmp.Options{cmpopts.EquateEmpty()}

func open(t *testing.T, h Harness) habilis.Store {
	t.Helper()
	s := h.Open(t)
	t.Cleanup(func() { s.Close() })
	return s
}

// Snapshot returns s.Snapshot, ending the test on an error.
func Snapshot(t *testing.T, s habilis.Store) *habilis.Snapshot {
	t.Helper()
	snap, err := s.Snapshot(context.Background())
	if err != nil {
		t.Fatalf("Snapshot() error = %v", err)
	}
	return snap
}

func write(t *testing.T, s habilis.Store, b *habilis.Batch) habilis.CatalogMeta {
	t.Helper()
	m, err := s.Write(context.Background(), b)
	if err != nil {
		t.Fatalf("Write(base %d, %d puts, %d deletes) error = %v", b.BaseVersion, len(b.Put), len(b.Delete), err)
	}
	return m
}

// seed writes recs to an empty store and returns the resulting snapshot.
func seed(t *testing.T, s habilis.Store, recs []habilis.Record) *habilis.Snapshot {
	t.Helper()
	dim := 8
	if len(recs) > 0 && recs[0].DescriptionVector.IsSparse() {
		dim = 0
	}
	write(t, s, &habilis.Batch{Put: recs, Meta: Meta(dim, 1)})
	return Snapshot(t, s)
}

func names(recs []habilis.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Tool.Name
	}
	return out
}

func sortedByName(recs []habilis.Record) []habilis.Record {
	out := slices.Clone(recs)
	slices.SortFunc(out, func(a, b habilis.Record) int { return strings.Compare(a.Tool.Name, b.Tool.Name) })
	return out
}

// checkKinds fails when a vector came back as another kind (dense, sparse or
// zero) than it was written.
func checkKinds(t *testing.T, got, want []habilis.Record) {
	t.Helper()
	kind := func(v habilis.Vector) string {
		switch {
		case v.IsSparse():
			return "sparse"
		case v.IsZero():
			return "zero"
		}
		return "dense"
	}
	for i := range min(len(got), len(want)) {
		g, w := got[i], want[i]
		pairs := [][2]habilis.Vector{{g.DescriptionVector, w.DescriptionVector}, {g.Centroid, w.Centroid}, {g.DocumentVector, w.DocumentVector}}
		for j := range min(len(g.ExampleVectors), len(w.ExampleVectors)) {
			pairs = append(pairs, [2]habilis.Vector{g.ExampleVectors[j], w.ExampleVectors[j]})
		}
		for j, p := range pairs {
			if kind(p[0]) != kind(p[1]) {
				t.Errorf("record %q vector %d is %s, want %s", w.Tool.Name, j, kind(p[0]), kind(p[1]))
			}
		}
	}
}

// diffMany is cmp.Diff(want, got, recordOpts) for thousands of records,
// which cmp alone compares slowly: records are compared by their JSON
// encoding first (which, like recordOpts, does not tell nil from empty
// where it matters to no caller) and only those that differ by cmp.
func diffMany(want, got []habilis.Record) string {
	if diff := cmp.Diff(names(want), names(got)); diff != "" {
		return "names:\n" + diff
	}
	var out strings.Builder
	shown := 0
	for i := range want {
		wj, werr := json.Marshal(want[i])
		gj, gerr := json.Marshal(got[i])
		if werr == nil && gerr == nil && bytes.Equal(wj, gj) {
			continue
		}
		if diff := cmp.Diff(want[i], got[i], recordOpts); diff != "" {
			fmt.Fprintf(&out, "record %q:\n%s", want[i].Tool.Name, diff)
			if shown++; shown == 3 {
				out.WriteString("...\n")
				break
			}
		}
	}
	return out.String()
}

// checkUnchanged fails when the store's snapshot or version differs from
// before.
func checkUnchanged(t *testing.T, s habilis.Store, before *habilis.Snapshot) {
	t.Helper()
	after := Snapshot(t, s)
	if diff := cmp.Diff(before, after, recordOpts); diff != "" {
		t.Errorf("store changed by a failed write (-before +after):\n%s", diff)
	}
	checkVersion(t, s, before.Meta.Version)
}

// checkVersion fails unless the store's Version is want.
func checkVersion(t *testing.T, s habilis.Store, want uint64) {
	t.Helper()
	got, err := s.Version(context.Background())
	if err != nil || got != want {
		t.Errorf("Version() = %d, %v; want %d", got, err, want)
	}
}

func testEmptySnapshot(t *testing.T, h Harness) {
	s := open(t, h)
	snap := Snapshot(t, s)
	if snap.Meta.Version != 0 {
		t.Errorf("Snapshot().Meta.Version = %d, want 0", snap.Meta.Version)
	}
	if len(snap.Records) != 0 {
		t.Errorf("Snapshot().Records = %v, want none", names(snap.Records))
	}
}

func testRoundTrip(t *testing.T, h Harness, sparse bool) {
	s := open(t, h)
	dim := 8
	if sparse {
		dim = 0
	}
	// Tools without examples, with one (no radius), two and many, with and
	// without margins and executors (odd seeds have none).
	recs := []habilis.Record{
		Record("search_web", 5, sparse, 10),
		Record("get.weather", 0, sparse, 11),
		Record("send-email", 1, sparse, 12),
		Record("Calendar", 2, sparse, 13),
		Record("x", 12, sparse, 14),
	}
	meta := Meta(dim, 3)
	got := write(t, s, &habilis.Batch{Put: recs, Meta: meta})
	if got.Version != 1 {
		t.Errorf("Write().Version = %d, want 1", got.Version)
	}
	if got.UpdatedAt.IsZero() {
		t.Errorf("Write().UpdatedAt is zero, want the commit time")
	}
	want := meta
	want.Version, want.UpdatedAt = 1, got.UpdatedAt
	if diff := cmp.Diff(want, got, recordOpts); diff != "" {
		t.Errorf("Write() meta mismatch (-want +got):\n%s", diff)
	}

	snap := Snapshot(t, s)
	if diff := cmp.Diff(want, snap.Meta, recordOpts); diff != "" {
		t.Errorf("Snapshot().Meta mismatch (-want +got):\n%s", diff)
	}
	wantRecs := sortedByName(recs)
	if diff := cmp.Diff(wantRecs, snap.Records, recordOpts); diff != "" {
		t.Errorf("Snapshot().Records mismatch (-want +got):\n%s", diff)
	}
	checkKinds(t, snap.Records, wantRecs)
}

func testSortedByName(t *testing.T, h Harness) {
	s := open(t, h)
	in := []string{"zeta", "Alpha", "beta", "a.b", "a-b", "a_b", "A", "alpha", "b2", "b10"}
	var recs []habilis.Record
	for i, n := range in {
		recs = append(recs, Record(n, 2, false, int64(i)))
	}
	snap := seed(t, s, recs)
	want := slices.Sorted(slices.Values(in))
	if diff := cmp.Diff(want, names(snap.Records)); diff != "" {
		t.Errorf("Snapshot() names mismatch (-want +got):\n%s", diff)
	}
}

func testVersionIncrements(t *testing.T, h Harness) {
	s := open(t, h)
	var base uint64
	var last habilis.CatalogMeta
	for i := range 4 {
		m := write(t, s, &habilis.Batch{
			BaseVersion: base,
			Put:         []habilis.Record{Record(fmt.Sprintf("t%d", i), 2, false, int64(i))},
			Meta:        Meta(8, int64(i)),
		})
		if m.Version != base+1 {
			t.Errorf("write %d: Version = %d, want %d", i, m.Version, base+1)
		}
		if m.UpdatedAt.Before(last.UpdatedAt) {
			t.Errorf("write %d: UpdatedAt = %v, before the previous write's %v", i, m.UpdatedAt, last.UpdatedAt)
		}
		base, last = m.Version, m
	}
	// A batch with no puts and no deletes still commits: it replaces the
	// meta and bumps the version.
	meta := Meta(8, 99)
	m := write(t, s, &habilis.Batch{BaseVersion: base, Meta: meta})
	if m.Version != base+1 {
		t.Errorf("meta-only write: Version = %d, want %d", m.Version, base+1)
	}
	snap := Snapshot(t, s)
	meta.Version, meta.UpdatedAt = m.Version, m.UpdatedAt
	if diff := cmp.Diff(meta, snap.Meta, recordOpts); diff != "" {
		t.Errorf("Snapshot().Meta after meta-only write mismatch (-want +got):\n%s", diff)
	}
	if len(snap.Records) != 4 {
		t.Errorf("Snapshot() after meta-only write has %d records, want 4", len(snap.Records))
	}
}

// testVersion checks that Version follows the writes, as a snapshot's
// meta does, without a snapshot in between.
func testVersion(t *testing.T, h Harness) {
	s := open(t, h)
	checkVersion(t, s, 0)
	m := write(t, s, &habilis.Batch{Put: Catalog(3, 2, false, 1), Meta: Meta(8, 1)})
	checkVersion(t, s, m.Version)
	m = write(t, s, &habilis.Batch{BaseVersion: m.Version, Delete: []string{"tool-0001"}, Meta: Meta(8, 2)})
	checkVersion(t, s, m.Version)
	m = write(t, s, &habilis.Batch{BaseVersion: m.Version, Replace: true, Meta: Meta(8, 3)})
	checkVersion(t, s, m.Version)
	if snap := Snapshot(t, s); snap.Meta.Version != m.Version {
		t.Errorf("Snapshot().Meta.Version = %d, want %d as Version says", snap.Meta.Version, m.Version)
	}
}

func testPutReplacesTool(t *testing.T, h Harness) {
	for _, sparse := range []bool{false, true} {
		t.Run(fmt.Sprintf("sparse=%v", sparse), func(t *testing.T) {
			s := open(t, h)
			old := Record("tool", 6, sparse, 1)
			other := Record("other", 3, sparse, 2)
			snap := seed(t, s, []habilis.Record{old, other})

			// The new definition has fewer examples: the removed ones must
			// not survive, nor the old margin and executor.
			repl := Record("tool", 2, sparse, 3)
			repl.Tool.Description = "a new description"
			write(t, s, &habilis.Batch{BaseVersion: snap.Meta.Version, Put: []habilis.Record{repl}, Meta: snap.Meta})
			got := Snapshot(t, s)
			want := []habilis.Record{other, repl}
			if diff := cmp.Diff(want, got.Records, recordOpts); diff != "" {
				t.Errorf("Snapshot() after put of an existing tool mismatch (-want +got):\n%s", diff)
			}
			checkKinds(t, got.Records, want)

			// And back to more examples than ever.
			more := Record("tool", 9, sparse, 4)
			write(t, s, &habilis.Batch{BaseVersion: got.Meta.Version, Put: []habilis.Record{more}, Meta: snap.Meta})
			got = Snapshot(t, s)
			want = []habilis.Record{other, more}
			if diff := cmp.Diff(want, got.Records, recordOpts); diff != "" {
				t.Errorf("Snapshot() after second put mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func testReplace(t *testing.T, h Harness) {
	s := open(t, h)
	snap := seed(t, s, Catalog(4, 3, false, 1)) // tool-0000 .. tool-0003
	b1 := Record("tool-0001", 2, false, 50)
	n := Record("new", 3, false, 51)
	write(t, s, &habilis.Batch{BaseVersion: snap.Meta.Version, Replace: true, Put: []habilis.Record{b1, n}, Meta: snap.Meta})
	got := Snapshot(t, s)
	want := []habilis.Record{n, b1}
	if diff := cmp.Diff(want, got.Records, recordOpts); diff != "" {
		t.Errorf("Snapshot() after Replace mismatch (-want +got):\n%s", diff)
	}
}

func testReplaceWithNothing(t *testing.T, h Harness) {
	s := open(t, h)
	snap := seed(t, s, Catalog(3, 2, true, 1))
	m := write(t, s, &habilis.Batch{BaseVersion: snap.Meta.Version, Replace: true, Meta: snap.Meta})
	got := Snapshot(t, s)
	if len(got.Records) != 0 {
		t.Errorf("Snapshot() after Replace with no puts = %v, want no records", names(got.Records))
	}
	if got.Meta.Version != m.Version || m.Version != snap.Meta.Version+1 {
		t.Errorf("Snapshot().Meta.Version = %d (write returned %d), want %d", got.Meta.Version, m.Version, snap.Meta.Version+1)
	}
	// The emptied store accepts new tools again.
	r := Record("again", 2, true, 9)
	write(t, s, &habilis.Batch{BaseVersion: m.Version, Put: []habilis.Record{r}, Meta: snap.Meta})
	if diff := cmp.Diff([]habilis.Record{r}, Snapshot(t, s).Records, recordOpts); diff != "" {
		t.Errorf("Snapshot() after refill mismatch (-want +got):\n%s", diff)
	}
}

func testDelete(t *testing.T, h Harness) {
	s := open(t, h)
	recs := Catalog(4, 3, false, 1)
	snap := seed(t, s, recs)
	write(t, s, &habilis.Batch{BaseVersion: snap.Meta.Version, Delete: []string{"tool-0001", "tool-0003"}, Meta: snap.Meta})
	got := Snapshot(t, s)
	want := []habilis.Record{recs[0], recs[2]}
	if diff := cmp.Diff(want, got.Records, recordOpts); diff != "" {
		t.Errorf("Snapshot() after Delete mismatch (-want +got):\n%s", diff)
	}
	// A deleted name can be put again, with new examples only.
	again := Record("tool-0001", 1, false, 77)
	write(t, s, &habilis.Batch{BaseVersion: got.Meta.Version, Put: []habilis.Record{again}, Meta: snap.Meta})
	want = []habilis.Record{recs[0], again, recs[2]}
	if diff := cmp.Diff(want, Snapshot(t, s).Records, recordOpts); diff != "" {
		t.Errorf("Snapshot() after re-put mismatch (-want +got):\n%s", diff)
	}
}

func testDeleteUnknown(t *testing.T, h Harness) {
	s := open(t, h)
	snap := seed(t, s, Catalog(2, 2, false, 1))
	_, err := s.Write(context.Background(), &habilis.Batch{
		BaseVersion: snap.Meta.Version,
		Put:         []habilis.Record{Record("fresh", 2, false, 5)},
		Delete:      []string{"tool-0000", "nope"},
		Meta:        Meta(8, 2),
	})
	if !errors.Is(err, habilis.ErrInvalid) {
		t.Errorf("Write(delete unknown) error = %v, want %v", err, habilis.ErrInvalid)
	}
	checkUnchanged(t, s, snap)
}

func testConflict(t *testing.T, h Harness) {
	s := open(t, h)
	snap := seed(t, s, Catalog(2, 2, false, 1))
	for _, base := range []uint64{0, snap.Meta.Version + 1, 1 << 40} {
		_, err := s.Write(context.Background(), &habilis.Batch{
			BaseVersion: base,
			Replace:     true,
			Put:         []habilis.Record{Record("fresh", 2, false, 5)},
			Meta:        Meta(8, 2),
		})
		if !errors.Is(err, habilis.ErrConflict) {
			t.Errorf("Write(base %d, stored %d) error = %v, want %v", base, snap.Meta.Version, err, habilis.ErrConflict)
		}
	}
	checkUnchanged(t, s, snap)
}

func testInvalidBatch(t *testing.T, h Harness) {
	good := Record("good", 2, false, 1)
	noName := Record("", 2, false, 2)
	short := Record("short", 3, false, 3)
	short.ExampleVectors = short.ExampleVectors[:2]
	long := Record("long", 1, false, 4)
	long.ExampleVectors = append(long.ExampleVectors, long.ExampleVectors[0])
	badDoc := Record("bad-doc", 2, false, 5)
	badDoc.DocumentVector = habilis.Vector{Indices: []uint32{7, 3}, Values: []float32{0.6, 0.8}}
	tests := []struct {
		name  string
		batch habilis.Batch
	}{
		{"empty name", habilis.Batch{Put: []habilis.Record{good, noName}}},
		{"fewer vectors than examples", habilis.Batch{Put: []habilis.Record{good, short}}},
		{"more vectors than examples", habilis.Batch{Put: []habilis.Record{long, good}}},
		{"duplicate put", habilis.Batch{Put: []habilis.Record{good, Record("tool-0000", 1, false, 6), good}}},
		{"put and delete", habilis.Batch{Put: []habilis.Record{Record("tool-0000", 1, false, 6)}, Delete: []string{"tool-0000"}}},
		{"put and delete with replace", habilis.Batch{Replace: true, Put: []habilis.Record{Record("tool-0001", 1, false, 6)}, Delete: []string{"tool-0001"}}},
		{"delete empty name", habilis.Batch{Delete: []string{""}}},
		{"document vector indices not ascending", habilis.Batch{Put: []habilis.Record{good, badDoc}}},
	}
	s := open(t, h)
	snap := seed(t, s, Catalog(2, 2, false, 1))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.batch
			b.BaseVersion, b.Meta = snap.Meta.Version, Meta(8, 5)
			_, err := s.Write(context.Background(), &b)
			if !errors.Is(err, habilis.ErrInvalid) {
				t.Errorf("Write(%s) error = %v, want %v", tc.name, err, habilis.ErrInvalid)
			}
			checkUnchanged(t, s, snap)
		})
	}
}

func testConcurrentWriters(t *testing.T, h Harness) {
	s := open(t, h)
	snap := seed(t, s, Catalog(2, 2, false, 1))
	const writers = 8
	stores := make([]habilis.Store, writers)
	for i := range stores {
		stores[i] = s
	}
	winner := raceWriters(t, stores, snap)
	got := Snapshot(t, s)
	if got.Meta.Version != snap.Meta.Version+1 {
		t.Errorf("Snapshot().Meta.Version = %d, want %d", got.Meta.Version, snap.Meta.Version+1)
	}
	want := append(names(snap.Records), fmt.Sprintf("writer-%d", winner))
	slices.Sort(want)
	if diff := cmp.Diff(want, names(got.Records)); diff != "" {
		t.Errorf("Snapshot() names mismatch (-want +got):\n%s", diff)
	}
}

// testSharedStores writes through several stores over one catalog, as
// processes sharing it do: each sees the others' writes, and writers on
// one base, each through its own store, commit one at a time, the others
// getting ErrConflict.
func testSharedStores(t *testing.T, h Harness) {
	if h.Share == nil {
		t.Skip("harness cannot share a store")
	}
	s := open(t, h)
	snap := seed(t, s, Catalog(2, 2, false, 1))
	const writers = 4
	stores := make([]habilis.Store, writers)
	for i := range stores {
		stores[i] = h.Share(t, s)
		t.Cleanup(func() { stores[i].Close() })
		checkVersion(t, stores[i], snap.Meta.Version)
	}
	winner := raceWriters(t, stores, snap)
	want := append(names(snap.Records), fmt.Sprintf("writer-%d", winner))
	slices.Sort(want)
	for i, st := range append(stores, s) {
		checkVersion(t, st, snap.Meta.Version+1)
		if diff := cmp.Diff(want, names(Snapshot(t, st).Records)); diff != "" {
			t.Errorf("store %d: Snapshot() names mismatch (-want +got):\n%s", i, diff)
		}
	}
}

// raceWriters has writer i put the tool "writer-i" through stores[i], all
// at once on snap's version, and returns the one writer that committed;
// every other must get ErrConflict.
func raceWriters(t *testing.T, stores []habilis.Store, snap *habilis.Snapshot) int {
	t.Helper()
	errs := make([]error, len(stores))
	var wg sync.WaitGroup
	for i, st := range stores {
		wg.Go(func() {
			_, errs[i] = st.Write(context.Background(), &habilis.Batch{
				BaseVersion: snap.Meta.Version,
				Put:         []habilis.Record{Record(fmt.Sprintf("writer-%d", i), 2, false, int64(i))},
				Meta:        snap.Meta,
			})
		})
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("writers %d and %d both committed on base %d", winner, i, snap.Meta.Version)
		case err == nil:
			winner = i
		case !errors.Is(err, habilis.ErrConflict):
			t.Errorf("writer %d error = %v, want nil or %v", i, err, habilis.ErrConflict)
		}
	}
	if winner < 0 {
		t.Fatalf("no writer committed, errors: %v", errs)
	}
	return winner
}

func testLargeBatch(t *testing.T, h Harness) {
	s := open(t, h)
	const n = 3000
	recs := make([]habilis.Record, n)
	for i := range recs {
		recs[i] = Record(fmt.Sprintf("bulk-%05d", i), i%4, false, int64(i))
	}
	m := write(t, s, &habilis.Batch{Put: recs, Meta: Meta(8, 1)})
	if m.Version != 1 {
		t.Errorf("Write(%d tools).Version = %d, want 1", n, m.Version)
	}
	got := Snapshot(t, s)
	if len(got.Records) != n {
		t.Fatalf("Snapshot() has %d records, want %d", len(got.Records), n)
	}
	if diff := diffMany(recs, got.Records); diff != "" {
		t.Errorf("Snapshot() of a %d-tool batch mismatch (-want +got):\n%s", n, diff)
	}
	checkKinds(t, got.Records, recs)
}

func testNoAliasing(t *testing.T, h Harness) {
	s := open(t, h)
	r := Record("tool", 3, false, 1)
	pristine := Record("tool", 3, false, 1)
	b := &habilis.Batch{Put: []habilis.Record{r}, Meta: Meta(8, 1)}
	m := write(t, s, b)
	wantMeta := Meta(8, 1)
	wantMeta.Version, wantMeta.UpdatedAt = m.Version, m.UpdatedAt

	// Changing the batch after Write, or a snapshot after Snapshot, must
	// not change what the store returned or returns next.
	r.ExampleVectors[0].Dense[0] = 42
	r.Tool.Examples[0] = "changed"
	r.Tool.InputSchema[0] = '['
	b.Meta.EmbedderState[0]++
	b.Meta.LexicalState[0]++
	b.Meta.Calibration[0] = '['
	if diff := cmp.Diff(wantMeta, m, recordOpts); diff != "" {
		t.Errorf("Write() meta after mutating the batch mismatch (-want +got):\n%s", diff)
	}
	snap := Snapshot(t, s)
	snap.Records[0].DescriptionVector.Dense[0] = 42
	snap.Records[0].ExampleVectors[1].Dense[1] = 42
	snap.Records[0].Tool.Meta["owner"] = "changed"
	snap.Meta.Calibration[0] = '['

	got := Snapshot(t, s)
	if diff := cmp.Diff([]habilis.Record{pristine}, got.Records, recordOpts); diff != "" {
		t.Errorf("Snapshot() after mutating earlier results mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Meta(8, 1).Calibration, got.Meta.Calibration); diff != "" {
		t.Errorf("Snapshot().Meta.Calibration mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantMeta, got.Meta, recordOpts); diff != "" {
		t.Errorf("Snapshot().Meta after mutating earlier results mismatch (-want +got):\n%s", diff)
	}
}

func testCancelledContext(t *testing.T, h Harness) {
	s := open(t, h)
	snap := seed(t, s, Catalog(2, 2, false, 1))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Write(ctx, &habilis.Batch{
		BaseVersion: snap.Meta.Version,
		Put:         []habilis.Record{Record("fresh", 2, false, 5)},
		Meta:        snap.Meta,
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Write(cancelled context) error = %v, want %v", err, context.Canceled)
	}
	checkUnchanged(t, s, snap)
}

func testClosed(t *testing.T, h Harness) {
	s := open(t, h)
	seed(t, s, Catalog(2, 2, false, 1))
	if err := s.Close(); err != nil {
		t.Fatalf("Close() error = %v", err)
	}
	if _, err := s.Snapshot(context.Background()); !errors.Is(err, habilis.ErrClosed) {
		t.Errorf("Snapshot() after Close error = %v, want %v", err, habilis.ErrClosed)
	}
	if _, err := s.Version(context.Background()); !errors.Is(err, habilis.ErrClosed) {
		t.Errorf("Version() after Close error = %v, want %v", err, habilis.ErrClosed)
	}
	_, err := s.Write(context.Background(), &habilis.Batch{BaseVersion: 1, Put: []habilis.Record{Record("late", 1, false, 1)}})
	if !errors.Is(err, habilis.ErrClosed) {
		t.Errorf("Write() after Close error = %v, want %v", err, habilis.ErrClosed)
	}
	if err := s.Close(); err != nil && !errors.Is(err, habilis.ErrClosed) {
		t.Errorf("second Close() error = %v, want nil or %v", err, habilis.ErrClosed)
	}
}

func testPersistence(t *testing.T, h Harness) {
	if h.Reopen == nil {
		t.Skip("harness cannot reopen a store")
	}
	s := open(t, h)
	recs := append(Catalog(3, 4, false, 1), Record("empty", 0, false, 9))
	m := write(t, s, &habilis.Batch{Put: recs, Meta: Meta(8, 1)})
	m = write(t, s, &habilis.Batch{BaseVersion: m.Version, Delete: []string{"tool-0002"}, Meta: Meta(8, 2)})
	want := Snapshot(t, s)
	if err := s.Close(); err != nil {
		t.Fatalf("Close() error = %v", err)
	}
	r := h.Reopen(t, s)
	t.Cleanup(func() { r.Close() })
	got := Snapshot(t, r)
	if diff := cmp.Diff(want, got, recordOpts); diff != "" {
		t.Errorf("Snapshot() after reopen mismatch (-want +got):\n%s", diff)
	}
	if got.Meta.Version != m.Version {
		t.Errorf("Snapshot().Meta.Version after reopen = %d, want %d", got.Meta.Version, m.Version)
	}
	// The reopened store keeps counting from where it was.
	m2 := write(t, r, &habilis.Batch{BaseVersion: m.Version, Put: []habilis.Record{Record("later", 2, false, 3)}, Meta: Meta(8, 3)})
	if m2.Version != m.Version+1 {
		t.Errorf("Write() after reopen Version = %d, want %d", m2.Version, m.Version+1)
	}
}
