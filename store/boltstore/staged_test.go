package boltstore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/store/boltstore"
	"github.com/habilis-router/habilis/store/storetest"
	bolt "go.etcd.io/bbolt"
)

// bucketNames lists the top-level buckets of the file at path.
func bucketNames(t *testing.T, path string) []string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var names []string
	db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			names = append(names, string(name))
			return nil
		})
	})
	return names
}

// countdown is a context whose Err reports it cancelled from its n-th
// call on: a write cancelled between two of its transactions.
type countdown struct {
	context.Context
	n int
}

func (c *countdown) Err() error {
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}

// TestStagedWrites writes catalogs larger than a chunk, which are staged,
// and checks each reads back whole, with the buckets of the last staged
// write alone in the file, and that small writes then go to those.
func TestStagedWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "habilis.db")
	s := testutil.BoltStore(t, path)
	boltstore.SetChunk(s, 3)
	meta := storetest.Meta(8, 1)
	first := append(storetest.Catalog(8, 2, false, 1), storetest.Record("bare", 0, true, 2))
	second := storetest.Catalog(7, 3, true, 3)
	steps := []struct {
		name    string
		b       habilis.Batch
		want    []habilis.Record
		buckets []string
	}{
		{"fill an empty store", habilis.Batch{Put: first, Meta: meta}, first, []string{"examples~1", "tools~1"}},
		{"replace", habilis.Batch{BaseVersion: 1, Replace: true, Put: second, Meta: meta}, second, []string{"examples~2", "tools~2"}},
		{"merge", habilis.Batch{BaseVersion: 2, Put: first[:1], Delete: []string{"tool-0002"}, Meta: meta},
			append([]habilis.Record{first[0], second[1]}, second[3:]...), []string{"examples~2", "tools~2"}},
		{"replace with few", habilis.Batch{BaseVersion: 3, Replace: true, Put: first[:2], Meta: meta}, first[:2], []string{"examples~2", "tools~2"}},
	}
	for _, st := range steps {
		if _, err := s.Write(ctx, &st.b); err != nil {
			t.Fatalf("%s: Write() error = %v", st.name, err)
		}
		if diff := cmp.Diff(byName(st.want), storetest.Snapshot(t, s).Records); diff != "" {
			t.Errorf("%s: Snapshot() mismatch (-want +got):\n%s", st.name, diff)
		}
		s.Close()
		var catalog []string
		for _, n := range bucketNames(t, path) {
			if strings.HasPrefix(n, "tools") || strings.HasPrefix(n, "examples") {
				catalog = append(catalog, n)
			}
		}
		if !slices.Equal(catalog, st.buckets) {
			t.Errorf("%s: catalog buckets %v, want %v", st.name, catalog, st.buckets)
		}
		if rep, err := boltstore.Check(ctx, path, boltstore.CheckOptions{Records: checkGenerated}); err != nil || !rep.Sound() {
			t.Errorf("%s: Check() = %+v, %v; want sound", st.name, rep, err)
		}
		s = testutil.BoltStore(t, path)
		boltstore.SetChunk(s, 3)
	}
	s.Close()
}

// TestStagedWriteFails checks that a staged write that fails at any of its
// transactions leaves the catalog as it was and no staged buckets, and
// that buckets a crash left are ignored, then dropped by the next staged
// write.
func TestStagedWriteFails(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "habilis.db")
	s := testutil.BoltStore(t, path)
	defer s.Close()
	boltstore.SetChunk(s, 3)
	meta := storetest.Meta(8, 1)
	recs := storetest.Catalog(5, 2, false, 1)
	if _, err := s.Write(ctx, &habilis.Batch{Put: recs, Meta: meta}); err != nil {
		t.Fatal(err)
	}
	want := storetest.Snapshot(t, s)
	next := storetest.Catalog(10, 2, true, 2)
	// Write checks the context once, then once a chunk (four of them).
	for calls := 1; calls <= 4; calls++ {
		_, err := s.Write(&countdown{ctx, calls}, &habilis.Batch{BaseVersion: 1, Replace: true, Put: next, Meta: meta})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Write(cancelled after %d checks) error = %v, want %v", calls, err, context.Canceled)
		}
		if diff := cmp.Diff(want, storetest.Snapshot(t, s)); diff != "" {
			t.Errorf("Snapshot() after a failed staged write mismatch (-want +got):\n%s", diff)
		}
	}
	if _, err := s.Write(ctx, &habilis.Batch{BaseVersion: 7, Replace: true, Put: next, Meta: meta}); !errors.Is(err, habilis.ErrConflict) {
		t.Errorf("Write(stale base) error = %v, want %v", err, habilis.ErrConflict)
	}
	s.Close()
	if names := bucketNames(t, path); slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, "~2") }) {
		t.Errorf("buckets after failed staged writes = %v, want none of version 2", names)
	}

	// What a crash between two transactions leaves: buckets of a write
	// that never committed.
	boltUpdate(t, path, func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("tools~2"))
		if err != nil {
			return err
		}
		if err := b.Put([]byte("ghost"), []byte("half a write")); err != nil {
			return err
		}
		_, err = tx.CreateBucket([]byte("examples~2"))
		return err
	})
	s = testutil.BoltStore(t, path)
	boltstore.SetChunk(s, 3)
	if diff := cmp.Diff(want, storetest.Snapshot(t, s)); diff != "" {
		t.Errorf("Snapshot() beside a crashed staged write mismatch (-want +got):\n%s", diff)
	}
	if _, err := s.Write(ctx, &habilis.Batch{BaseVersion: 1, Replace: true, Put: next, Meta: meta}); err != nil {
		t.Fatalf("Write() after a crashed staged write error = %v", err)
	}
	if diff := cmp.Diff(byName(next), storetest.Snapshot(t, s).Records); diff != "" {
		t.Errorf("Snapshot() mismatch (-want +got):\n%s", diff)
	}
	s.Close()
	for _, n := range bucketNames(t, path) {
		if strings.HasPrefix(n, "tools") && n != "tools~2" || strings.HasPrefix(n, "examples") && n != "examples~2" {
			t.Errorf("bucket %q left beside the catalog's", n)
		}
	}
}

// TestStagedBucketsLost checks that a meta naming buckets the file does
// not hold is damage.
func TestStagedBucketsLost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "habilis.db")
	s := testutil.BoltStore(t, path)
	boltstore.SetChunk(s, 2)
	if _, err := s.Write(context.Background(), &habilis.Batch{Put: storetest.Catalog(5, 2, false, 1)}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	boltUpdate(t, path, func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("buckets"), []byte("~9"))
	})
	for _, ro := range []bool{true, false} {
		_, err := boltstore.Open(path, boltstore.Options{ReadOnly: ro})
		if !errors.Is(err, habilis.ErrDamaged) {
			t.Errorf("Open(meta naming lost buckets, read-only %v) error = %v, want %v", ro, err, habilis.ErrDamaged)
		}
	}
}

// TestStagedMetaLost checks that a staged store that lost its meta bucket
// is damaged, not foreign.
func TestStagedMetaLost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "habilis.db")
	s := testutil.BoltStore(t, path)
	boltstore.SetChunk(s, 2)
	if _, err := s.Write(context.Background(), &habilis.Batch{Put: storetest.Catalog(5, 2, false, 1)}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	boltUpdate(t, path, func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("meta")) })
	if _, err := boltstore.Open(path, boltstore.Options{ReadOnly: true}); !errors.Is(err, habilis.ErrDamaged) {
		t.Errorf("Open(staged store without meta) error = %v, want %v", err, habilis.ErrDamaged)
	}
}

// TestStagedWriteReaders takes snapshots while staged writes replace the
// catalog: each is one catalog or the other, whole.
func TestStagedWriteReaders(t *testing.T) {
	ctx := context.Background()
	s := testutil.BoltStore(t, filepath.Join(t.TempDir(), "habilis.db"))
	defer s.Close()
	boltstore.SetChunk(s, 2)
	catalogs := [][]habilis.Record{byName(storetest.Catalog(5, 2, false, 1)), byName(storetest.Catalog(9, 1, true, 2))}
	if _, err := s.Write(ctx, &habilis.Batch{Put: catalogs[0]}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	errs := make(chan string, 1)
	go func() {
		defer close(errs)
		for {
			select {
			case <-done:
				return
			default:
			}
			snap, err := s.Snapshot(ctx)
			if err != nil {
				errs <- err.Error()
				return
			}
			if !cmp.Equal(snap.Records, catalogs[0]) && !cmp.Equal(snap.Records, catalogs[1]) {
				errs <- fmt.Sprintf("snapshot of version %d holds %d tools, neither catalog", snap.Meta.Version, len(snap.Records))
				return
			}
		}
	}()
	for v := range 10 {
		if _, err := s.Write(ctx, &habilis.Batch{BaseVersion: uint64(v + 1), Replace: true, Put: catalogs[(v+1)%2]}); err != nil {
			t.Fatalf("Write() error = %v", err)
		}
	}
	close(done)
	for e := range errs {
		t.Error(e)
	}
}
