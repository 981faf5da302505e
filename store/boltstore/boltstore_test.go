package boltstore_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/store/boltstore"
	"github.com/habilis-router/habilis/store/storetest"
	bolt "go.etcd.io/bbolt"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Open: func(t *testing.T) habilis.Store {
			return testutil.BoltStore(t, filepath.Join(t.TempDir(), "habilis.db"))
		},
		Reopen: func(t *testing.T, closed habilis.Store) habilis.Store {
			return testutil.BoltStore(t, closed.(*boltstore.Store).Path())
		},
	})
}

// TestExactRoundTrip checks what the portable suite leaves to each store:
// raw JSON comes back byte for byte, whitespace and all, and empty values
// keep their nil-ness.
func TestExactRoundTrip(t *testing.T) {
	s := testutil.BoltStore(t, filepath.Join(t.TempDir(), "habilis.db"))
	zero := float32(0)
	recs := []habilis.Record{
		{
			Tool: habilis.Tool{
				Name:        "a",
				Description: "spaced <json> & friends",
				Examples:    []string{"", "ünïcödé \x00 bytes"},
				InputSchema: json.RawMessage("{ \"type\" :\n\t\"object\" }"),
				Margin:      &zero,
				Executor:    json.RawMessage{},
				Meta:        map[string]string{},
			},
			DescriptionVector: habilis.Vector{Dense: []float32{}},
			ExampleVectors: []habilis.Vector{
				{Indices: []uint32{}, Values: []float32{}},
				{Indices: []uint32{0, 1 << 31, 1<<32 - 1}, Values: []float32{-0.5, 0, 1e-30}},
			},
			HasRadius: true,
			Radius:    -1,
		},
		{
			Tool:              habilis.Tool{Name: "b"},
			DescriptionVector: habilis.Vector{Dense: []float32{1}},
		},
	}
	meta := habilis.CatalogMeta{
		Embedder:      habilis.EmbedderInfo{Kind: "lexical", Dim: -1},
		EmbedderState: []byte{},
		Calibration:   json.RawMessage(" [1, 2]\n"),
	}
	m, err := s.Write(context.Background(), &habilis.Batch{Put: recs, Meta: meta})
	if err != nil {
		t.Fatalf("Write() error = %v", err)
	}
	if m.UpdatedAt.Location() != time.UTC {
		t.Errorf("Write().UpdatedAt = %v, want UTC", m.UpdatedAt)
	}
	meta.Version, meta.UpdatedAt = 1, m.UpdatedAt
	want := &habilis.Snapshot{Meta: meta, Records: recs}
	if diff := cmp.Diff(want, storetest.Snapshot(t, s)); diff != "" {
		t.Errorf("Snapshot() mismatch (-want +got):\n%s", diff)
	}
}

func TestInvalidVectors(t *testing.T) {
	tests := []struct {
		name string
		v    habilis.Vector
	}{
		{"dense and sparse", habilis.Vector{Dense: []float32{1}, Indices: []uint32{1}, Values: []float32{1}}},
		{"fewer values", habilis.Vector{Indices: []uint32{1, 2}, Values: []float32{1}}},
		{"values without indices", habilis.Vector{Values: []float32{1}}},
		{"unsorted indices", habilis.Vector{Indices: []uint32{2, 1}, Values: []float32{1, 1}}},
		{"repeated index", habilis.Vector{Indices: []uint32{2, 2}, Values: []float32{1, 1}}},
	}
	s := testutil.BoltStore(t, filepath.Join(t.TempDir(), "habilis.db"))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := storetest.Record("t", 1, true, 1)
			r.ExampleVectors[0] = tc.v
			_, err := s.Write(context.Background(), &habilis.Batch{Put: []habilis.Record{r}})
			if !errors.Is(err, habilis.ErrInvalid) {
				t.Errorf("Write(%s) error = %v, want %v", tc.name, err, habilis.ErrInvalid)
			}
		})
	}
	if snap := storetest.Snapshot(t, s); snap.Meta.Version != 0 || len(snap.Records) != 0 {
		t.Errorf("Snapshot() after invalid writes = version %d, %d records, want empty", snap.Meta.Version, len(snap.Records))
	}
}

func TestOpenForeignFiles(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
		want  string
	}{
		{
			name: "text file",
			setup: func(t *testing.T, path string) {
				writeFile(t, path, []byte("this is not a database\n"))
			},
			want: "not a habilis store (not a bbolt file",
		},
		{name: "random page", setup: writeGarbage, want: "not a habilis store (not a bbolt file)"},
		{name: "other bolt database", setup: writeAccounts, want: `not a habilis store (a bbolt file without habilis' buckets: it has bucket "accounts")`},
		{
			name: "meta without format",
			setup: func(t *testing.T, path string) {
				boltUpdate(t, path, func(tx *bolt.Tx) error {
					_, err := tx.CreateBucket([]byte("meta"))
					return err
				})
			},
			want: "no format version",
		},
		{
			name: "newer format",
			setup: func(t *testing.T, path string) {
				testutil.BoltStore(t, path).Close()
				setFormat(t, path, 5)
			},
			want: "format version 5 is newer than the supported 4",
		},
		{
			name: "format zero",
			setup: func(t *testing.T, path string) {
				testutil.BoltStore(t, path).Close()
				setFormat(t, path, 0)
			},
			want: "format version 0",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "habilis.db")
			tc.setup(t, path)
			before := readFile(t, path)
			for _, ro := range []bool{false, true} {
				s, err := boltstore.Open(path, boltstore.Options{ReadOnly: ro})
				if err == nil {
					s.Close()
				}
				if !errors.Is(err, habilis.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("Open(%s, ReadOnly %v) error = %v, want %v containing %q", tc.name, ro, err, habilis.ErrInvalid, tc.want)
				}
			}
			// Check says the same, naming the file: such a file holds
			// nothing to be damaged.
			rep, err := boltstore.Check(context.Background(), path, boltstore.CheckOptions{})
			if !errors.Is(err, habilis.ErrInvalid) || !strings.Contains(err.Error(), "store "+path+": ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check(%s) = %+v, %v; want %v naming the file, containing %q", tc.name, rep, err, habilis.ErrInvalid, tc.want)
			}
			if !bytes.Equal(readFile(t, path), before) {
				t.Errorf("Open(%s) changed the file it refused", tc.name)
			}
		})
	}
}

func TestOpenDirectory(t *testing.T) {
	dir := t.TempDir()
	for _, ro := range []bool{false, true} {
		_, err := boltstore.Open(dir, boltstore.Options{ReadOnly: ro})
		if want := "store " + dir + ": a directory, not a habilis store"; !errors.Is(err, habilis.ErrInvalid) || err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Open(a directory, ReadOnly %v) error = %v, want %v starting %q", ro, err, habilis.ErrInvalid, want)
		}
	}
}

// TestOpenInMissingDirectory: a store is opened for writing in a directory
// that does not exist: the error names the directory (bbolt said only
// "open PATH: no such file or directory"), and nothing is created.
func TestOpenInMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "absent")
	path := filepath.Join(dir, "habilis.db")
	_, err := boltstore.Open(path, boltstore.Options{})
	if want := "store " + path + ": directory " + dir + " does not exist"; !errors.Is(err, habilis.ErrNotFound) || err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Open(in a missing directory) error = %v, want %v starting %q", err, habilis.ErrNotFound, want)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(in a missing directory) left %s: %v", dir, err)
	}
}

// writeGarbage writes four pages of bytes that are no bbolt file.
func writeGarbage(t *testing.T, path string) {
	b := make([]byte, 16384)
	for i := range b {
		b[i] = byte(i*7 + i/13)
	}
	writeFile(t, path, b)
}

// writeAccounts writes a bbolt database that is not a habilis store.
func writeAccounts(t *testing.T, path string) {
	boltUpdate(t, path, func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("accounts"))
		if err != nil {
			return err
		}
		return b.Put([]byte("alice"), []byte("100"))
	})
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := boltstore.Open(filepath.Join(dir, "missing", "habilis.db"), boltstore.Options{}); err == nil {
		t.Errorf("Open(in a missing directory) error = nil, want an error")
	}
	_, err := boltstore.Open(filepath.Join(dir, "absent.db"), boltstore.Options{ReadOnly: true})
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(absent file, ReadOnly) error = %v, want %v", err, os.ErrNotExist)
	}
}

func TestLockContention(t *testing.T) {
	path := filepath.Join(t.TempDir(), "habilis.db")
	first := testutil.BoltStore(t, path)

	_, err := boltstore.Open(path, boltstore.Options{Timeout: 50e6})
	if !errors.Is(err, habilis.ErrUnavailable) {
		t.Fatalf("second Open(%q) error = %v, want %v", path, err, habilis.ErrUnavailable)
	}
	want := "store " + path + ": in use by another process"
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("second Open(%q) error = %q, want it to start with %q", path, err, want)
	}
	// A reader must wait for the writer too.
	if _, err := boltstore.Open(path, boltstore.Options{Timeout: 50e6, ReadOnly: true}); !errors.Is(err, habilis.ErrUnavailable) {
		t.Errorf("read-only Open(%q) while open error = %v, want %v", path, err, habilis.ErrUnavailable)
	}

	// Once the first store is closed, the file opens again.
	if err := first.Close(); err != nil {
		t.Fatalf("Close() error = %v", err)
	}
	testutil.BoltStore(t, path)
}

func TestReadOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "habilis.db")
	s := testutil.BoltStore(t, path)
	recs := storetest.Catalog(3, 2, false, 1)
	if _, err := s.Write(context.Background(), &habilis.Batch{Put: recs}); err != nil {
		t.Fatalf("Write() error = %v", err)
	}
	want := storetest.Snapshot(t, s)
	s.Close()
	before := readFile(t, path)

	var readers []*boltstore.Store
	for range 2 { // read-only stores share the file
		r, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("Open(ReadOnly) error = %v", err)
		}
		t.Cleanup(func() { r.Close() })
		readers = append(readers, r)
	}
	for i, r := range readers {
		if diff := cmp.Diff(want, storetest.Snapshot(t, r)); diff != "" {
			t.Errorf("reader %d Snapshot() mismatch (-want +got):\n%s", i, diff)
		}
	}
	_, err := readers[0].Write(context.Background(), &habilis.Batch{BaseVersion: 1, Delete: []string{"tool-0000"}})
	if !errors.Is(err, habilis.ErrReadOnly) || errors.Is(err, habilis.ErrInvalid) || !strings.Contains(err.Error(), path) {
		t.Errorf("Write() on a read-only store error = %v, want %v (the request is sound) naming %s", err, habilis.ErrReadOnly, path)
	}
	for _, r := range readers {
		r.Close()
	}
	if !bytes.Equal(readFile(t, path), before) {
		t.Errorf("read-only stores changed the file")
	}
}

// TestFailedWriteLeavesFile checks that failed writes of every kind leave
// the catalog as it was, also after reopening the file.
func TestFailedWriteLeavesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "habilis.db")
	s := testutil.BoltStore(t, path)
	if _, err := s.Write(context.Background(), &habilis.Batch{Put: storetest.Catalog(20, 3, false, 1), Meta: storetest.Meta(8, 1)}); err != nil {
		t.Fatalf("Write() error = %v", err)
	}
	want := storetest.Snapshot(t, s)
	before := readFile(t, path)
	big := storetest.Catalog(500, 4, false, 100) // tool-0000 .. tool-0499, replacing the first 20
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	failures := []struct {
		name  string
		ctx   context.Context
		batch habilis.Batch
		want  error
	}{
		{"conflict", context.Background(), habilis.Batch{BaseVersion: 7, Replace: true, Put: big}, habilis.ErrConflict},
		{"unknown delete", context.Background(), habilis.Batch{BaseVersion: 1, Replace: true, Put: big, Delete: []string{"zzz"}}, habilis.ErrInvalid},
		{"invalid last record", context.Background(), habilis.Batch{BaseVersion: 1, Put: append(big[:len(big):len(big)], habilis.Record{})}, habilis.ErrInvalid},
		{"cancelled", ctx, habilis.Batch{BaseVersion: 1, Replace: true, Put: big}, context.Canceled},
	}
	for _, f := range failures {
		if _, err := s.Write(f.ctx, &f.batch); !errors.Is(err, f.want) {
			t.Errorf("Write(%s) error = %v, want %v", f.name, err, f.want)
		}
		if diff := cmp.Diff(want, storetest.Snapshot(t, s)); diff != "" {
			t.Errorf("Snapshot() after failed Write(%s) mismatch (-want +got):\n%s", f.name, diff)
		}
		if !bytes.Equal(readFile(t, path), before) {
			t.Errorf("failed Write(%s) changed the file", f.name)
		}
	}
	s.Close()
	if diff := cmp.Diff(want, storetest.Snapshot(t, testutil.BoltStore(t, path))); diff != "" {
		t.Errorf("Snapshot() after reopen mismatch (-want +got):\n%s", diff)
	}
}

// TestCorruptValues damages stored values in every bucket and checks that
// Snapshot reports an error instead of panicking or returning garbage.
func TestCorruptValues(t *testing.T) {
	path, recs := corruptible(t)
	pristine := readFile(t, path)

	// One value of each kind: the catalog meta, a dense and a sparse tool,
	// a dense and a sparse example.
	type value struct {
		bucket []string
		key    []byte
	}
	values := []value{
		{[]string{"meta"}, []byte("catalog")},
		{[]string{"tools"}, []byte("tool-0001")},
		{[]string{"tools"}, []byte("sparse")},
		{[]string{"examples"}, []byte("tool-0001")},
		{[]string{"examples"}, []byte("sparse")},
	}

	damages := []struct {
		name string
		fn   func(v []byte) []byte
	}{
		{"empty", func([]byte) []byte { return []byte{} }},
		{"truncated", func(v []byte) []byte { return v[:len(v)/2] }},
		{"one byte short", func(v []byte) []byte { return v[:len(v)-1] }},
		{"trailing byte", func(v []byte) []byte { return append(v, 0) }},
		{"huge count", func(v []byte) []byte {
			return append(append([]byte{}, v[:1]...), append(binary.AppendUvarint(nil, 1<<40), v[1:]...)...)
		}},
		{"all ones", func(v []byte) []byte { return bytes.Repeat([]byte{0xff}, len(v)) }},
	}
	for _, val := range values {
		for _, d := range damages {
			name := strings.Join(val.bucket, "/") + "/" + fmt.Sprintf("%x", val.key) + "/" + d.name
			t.Run(name, func(t *testing.T) {
				writeFile(t, path, pristine)
				boltUpdate(t, path, func(tx *bolt.Tx) error {
					b := tx.Bucket([]byte(val.bucket[0]))
					for _, n := range val.bucket[1:] {
						b = b.Bucket([]byte(n))
					}
					return b.Put(val.key, d.fn(bytes.Clone(b.Get(val.key))))
				})
				s, err := boltstore.Open(path, boltstore.Options{})
				if err != nil {
					t.Fatalf("Open() error = %v", err)
				}
				defer s.Close()
				if snap, err := s.Snapshot(context.Background()); err == nil {
					// Some damage decodes as other valid data (all ones in
					// a float); it must still be a whole, consistent
					// catalog.
					if len(snap.Records) != len(recs) {
						t.Errorf("Snapshot() of damaged file = %d records, want an error or %d", len(snap.Records), len(recs))
					}
				} else if !strings.Contains(err.Error(), "corrupt data") {
					t.Errorf("Snapshot() of damaged file error = %v, want corrupt data", err)
				}
			})
		}
	}
}

// corruptible writes a store of three dense tools and one sparse one,
// named "sparse", and returns its path and records.
func corruptible(t *testing.T) (string, []habilis.Record) {
	path := filepath.Join(t.TempDir(), "habilis.db")
	s := testutil.BoltStore(t, path)
	recs := append(storetest.Catalog(3, 3, false, 1), storetest.Catalog(2, 2, true, 9)[1])
	recs[3].Tool.Name = "sparse"
	if _, err := s.Write(context.Background(), &habilis.Batch{Put: recs, Meta: storetest.Meta(8, 1)}); err != nil {
		t.Fatalf("Write() error = %v", err)
	}
	s.Close()
	return path, recs
}

// TestCorruptExamples removes, moves and shortens a tool's examples and
// checks that Snapshot reports the damage.
func TestCorruptExamples(t *testing.T) {
	path, _ := corruptible(t)
	pristine := readFile(t, path)
	structural := []struct {
		name string
		fn   func(tx *bolt.Tx) error
	}{
		{"examples missing", func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("examples")).Delete([]byte("tool-0001"))
		}},
		{"examples in a bucket", func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte("examples"))
			if err := b.Delete([]byte("tool-0001")); err != nil {
				return err
			}
			_, err := b.CreateBucket([]byte("tool-0001"))
			return err
		}},
		{"examples of a tool not stored", func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte("examples"))
			return b.Put([]byte("tool-0000x"), bytes.Clone(b.Get([]byte("tool-0001"))))
		}},
		{"one example fewer", func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte("examples"))
			v := bytes.Clone(b.Get([]byte("tool-0001")))
			return b.Put([]byte("tool-0001"), v[:len(v)*2/3])
		}},
	}
	for _, tc := range structural {
		t.Run(tc.name, func(t *testing.T) {
			writeFile(t, path, pristine)
			boltUpdate(t, path, tc.fn)
			s, err := boltstore.Open(path, boltstore.Options{})
			if err != nil {
				t.Fatalf("Open() error = %v", err)
			}
			defer s.Close()
			if _, err := s.Snapshot(context.Background()); err == nil || !strings.Contains(err.Error(), "corrupt data") {
				t.Errorf("Snapshot() with %s error = %v, want corrupt data", tc.name, err)
			}
		})
	}
}

func TestSnapshotCancelled(t *testing.T) {
	s := testutil.BoltStore(t, filepath.Join(t.TempDir(), "habilis.db"))
	if _, err := s.Write(context.Background(), &habilis.Batch{Put: storetest.Catalog(3, 2, false, 1)}); err != nil {
		t.Fatalf("Write() error = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if snap, err := s.Snapshot(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Snapshot(cancelled) = %v, %v, want error %v", snap, err, context.Canceled)
	}
}

func TestCloseIdempotent(t *testing.T) {
	s := testutil.BoltStore(t, filepath.Join(t.TempDir(), "habilis.db"))
	for i := range 3 {
		if err := s.Close(); err != nil {
			t.Errorf("Close() #%d error = %v, want nil", i+1, err)
		}
	}
	if _, err := s.Snapshot(context.Background()); !errors.Is(err, habilis.ErrClosed) {
		t.Errorf("Snapshot() after Close error = %v, want %v", err, habilis.ErrClosed)
	}
}

func TestSnapshotSlabs(t *testing.T) {
	s := testutil.BoltStore(t, filepath.Join(t.TempDir(), "habilis.db"))
	recs := storetest.Catalog(50, 4, false, 1)
	if _, err := s.Write(context.Background(), &habilis.Batch{Put: recs}); err != nil {
		t.Fatalf("Write() error = %v", err)
	}
	snap := storetest.Snapshot(t, s)
	// Every vector's coordinates (dense ones, and the values of the sparse
	// document vector) lie in one backing array, in order, without gaps:
	// the next vector starts where the previous one ends.
	var prev []float32
	for _, r := range snap.Records {
		vs := append([]habilis.Vector{r.DescriptionVector, r.Centroid, r.DocumentVector}, r.ExampleVectors...)
		for _, v := range vs {
			data := v.Dense
			if v.IsSparse() {
				data = v.Values
			}
			if cap(data) != len(data) {
				t.Fatalf("record %q: vector cap %d, len %d: appending would overwrite its neighbour", r.Tool.Name, cap(data), len(data))
			}
			if prev != nil && unsafe.Add(unsafe.Pointer(unsafe.SliceData(prev)), 4*len(prev)) != unsafe.Pointer(unsafe.SliceData(data)) {
				t.Fatalf("record %q: vectors are not contiguous", r.Tool.Name)
			}
			prev = data
		}
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func boltUpdate(t *testing.T, path string, fn func(*bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoSync: true}) // test setup need not survive a crash
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}

func setFormat(t *testing.T, path string, v uint32) {
	t.Helper()
	boltUpdate(t, path, func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("format"), binary.BigEndian.AppendUint32(nil, v))
	})
}

// TestSnapshotSharedTerms reads a catalog whose decoded vectors are larger
// than the file, as format 2 makes them when many vectors share a tool's
// terms: each index is stored once a tool, and decoded once a vector.
func TestSnapshotSharedTerms(t *testing.T) {
	const terms = 2000
	vector := func(seed int) habilis.Vector {
		v := habilis.Vector{Indices: make([]uint32, terms), Values: make([]float32, terms)}
		for i := range terms {
			v.Indices[i], v.Values[i] = uint32(3*i+seed%3), float32(1+(i+seed)%7)/float32(terms)
		}
		return v
	}
	var recs []habilis.Record
	for k := range 20 {
		r := storetest.Record(fmt.Sprintf("tool-%02d", k), 10, true, int64(k))
		r.DescriptionVector, r.Centroid, r.DocumentVector = vector(k), vector(k), vector(k)
		for e := range r.ExampleVectors {
			r.ExampleVectors[e] = vector(k)
		}
		recs = append(recs, r)
	}
	path := filepath.Join(t.TempDir(), "habilis.db")
	s := testutil.BoltStore(t, path)
	if _, err := s.Write(context.Background(), &habilis.Batch{Put: recs}); err != nil {
		t.Fatalf("Write() error = %v", err)
	}
	if diff := cmp.Diff(recs, storetest.Snapshot(t, s).Records); diff != "" {
		t.Errorf("Snapshot() mismatch (-want +got):\n%s", diff)
	}
	s.Close()
	if hw := testutil.HighWater(t, path); hw > int64(20*13*terms*8) {
		t.Fatalf("file of %d bytes in use, want fewer than the decoded vectors' %d", hw, 20*13*terms*8)
	}
	if rep, err := boltstore.Check(context.Background(), path, boltstore.CheckOptions{}); err != nil || !rep.Sound() {
		t.Errorf("Check() = %+v, %v; want sound", rep, err)
	}
}
