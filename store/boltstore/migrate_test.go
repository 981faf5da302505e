package boltstore_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/store/boltstore"
	"github.com/habilis-router/habilis/store/storetest"
	bolt "go.etcd.io/bbolt"
)

// format1Catalog is a catalog of dense and sparse tools, one without
// examples, and its meta at version 4.
func format1Catalog() ([]habilis.Record, habilis.CatalogMeta) {
	recs := storetest.Catalog(20, 3, false, 1)
	for i := range 5 {
		recs = append(recs, storetest.Generate("sparse-"+string(rune('a'+i)), 4, storetest.Shape{NonZeros: 40}, int64(i)))
	}
	recs = append(recs, storetest.Record("bare", 0, true, 7))
	meta := storetest.Meta(8, 1)
	meta.Version = 4
	return recs, meta
}

func storedFormat(t *testing.T, path string) uint32 {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var f uint32
	db.View(func(tx *bolt.Tx) error {
		f = binary.BigEndian.Uint32(tx.Bucket([]byte("meta")).Get([]byte("format")))
		return nil
	})
	return f
}

func byName(recs []habilis.Record) []habilis.Record {
	recs = slices.Clone(recs)
	slices.SortFunc(recs, func(a, b habilis.Record) int { return strings.Compare(a.Tool.Name, b.Tool.Name) })
	return recs
}

// TestFormat1 reads a store of format 1 as it was written, and checks
// that a write which does not replace the catalog rewrites it in format 4
// with the write applied, showing its progress.
func TestFormat1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "habilis.db")
	recs, meta := format1Catalog()
	boltstore.WriteFormat1(t, path, recs, meta)
	for _, ro := range []bool{true, false} {
		s, err := boltstore.Open(path, boltstore.Options{ReadOnly: ro})
		if err != nil {
			t.Fatalf("Open(format 1, read-only %v) error = %v", ro, err)
		}
		snap := storetest.Snapshot(t, s)
		s.Close()
		if diff := cmp.Diff(byName(recs), snap.Records); diff != "" || snap.Meta.Version != 4 {
			t.Errorf("Snapshot(format 1, read-only %v) = version %d, records mismatch (-want +got):\n%s", ro, snap.Meta.Version, diff)
		}
	}
	if rep, err := boltstore.Check(ctx, path, boltstore.CheckOptions{Records: checkGenerated}); err != nil || !rep.Sound() || rep.Tools != len(recs) {
		t.Errorf("Check(format 1) = %+v, %v; want sound, %d tools", rep, err, len(recs))
	}

	var calls [][2]int
	s, err := boltstore.Open(path, boltstore.Options{Progress: func(done, total int) { calls = append(calls, [2]int{done, total}) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	changed := storetest.Record("tool-0003", 2, true, 99)
	added := storetest.Record("added", 5, true, 98)
	b := &habilis.Batch{BaseVersion: 4, Put: []habilis.Record{changed, added}, Delete: []string{"tool-0007"}, Meta: meta}
	if _, err := s.Write(ctx, b); err != nil {
		t.Fatalf("Write(format 1) error = %v", err)
	}
	var want []habilis.Record
	for _, r := range recs {
		switch r.Tool.Name {
		case "tool-0003":
			want = append(want, changed)
		case "tool-0007":
		default:
			want = append(want, r)
		}
	}
	want = byName(append(want, added))
	snap := storetest.Snapshot(t, s)
	if diff := cmp.Diff(want, snap.Records); diff != "" || snap.Meta.Version != 5 {
		t.Errorf("Snapshot() after a write to format 1 = version %d, records mismatch (-want +got):\n%s", snap.Meta.Version, diff)
	}
	if len(calls) == 0 || calls[len(calls)-1] != [2]int{len(recs), len(recs)} {
		t.Errorf("Progress calls = %v, want the last %d of %d", calls, len(recs), len(recs))
	}
	s.Close()
	if f := storedFormat(t, path); f != 4 {
		t.Errorf("format after a write = %d, want 4", f)
	}
	if rep, err := boltstore.Check(ctx, path, boltstore.CheckOptions{Records: checkGenerated}); err != nil || !rep.Sound() {
		t.Errorf("Check(migrated) = %+v, %v; want sound", rep, err)
	}
}

// TestFormat1Replace checks that a write replacing a format 1 catalog
// leaves a format 4 store of its tools alone.
func TestFormat1Replace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "habilis.db")
	recs, meta := format1Catalog()
	boltstore.WriteFormat1(t, path, recs, meta)
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	put := storetest.Catalog(3, 2, true, 5)
	if _, err := s.Write(context.Background(), &habilis.Batch{BaseVersion: 4, Replace: true, Put: put, Meta: meta}); err != nil {
		t.Fatalf("Write(Replace) error = %v", err)
	}
	if diff := cmp.Diff(byName(put), storetest.Snapshot(t, s).Records); diff != "" {
		t.Errorf("Snapshot() after Replace mismatch (-want +got):\n%s", diff)
	}
	s.Close()
	if f := storedFormat(t, path); f != 4 {
		t.Errorf("format after a write = %d, want 4", f)
	}
}

// TestFormat1Damaged checks that a migration finding damage fails the
// write, which changes nothing.
func TestFormat1Damaged(t *testing.T) {
	damages := []struct {
		name string
		fn   func(tx *bolt.Tx) error
	}{
		{"examples of a tool not stored", func(tx *bolt.Tx) error {
			_, err := tx.Bucket([]byte("examples")).CreateBucket([]byte("tool-0000x"))
			return err
		}},
		{"example missing", func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("examples")).Bucket([]byte("tool-0001")).Delete(binary.BigEndian.AppendUint32(nil, 1))
		}},
		{"tool value cut short", func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte("tools"))
			v := bytes.Clone(b.Get([]byte("tool-0002")))
			return b.Put([]byte("tool-0002"), v[:len(v)/2])
		}},
	}
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "habilis.db")
			recs, meta := format1Catalog()
			boltstore.WriteFormat1(t, path, recs, meta)
			boltUpdate(t, path, d.fn)
			before := readFile(t, path)
			s, err := boltstore.Open(path, boltstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			b := &habilis.Batch{BaseVersion: 4, Put: []habilis.Record{storetest.Record("added", 1, true, 3)}, Meta: meta}
			_, err = s.Write(context.Background(), b)
			s.Close()
			if !errors.Is(err, habilis.ErrDamaged) || !strings.Contains(err.Error(), "migrating format 1") {
				t.Errorf("Write(%s) error = %v, want %v from the migration", d.name, err, habilis.ErrDamaged)
			}
			if !bytes.Equal(readFile(t, path), before) {
				t.Errorf("failed Write(%s) changed the file", d.name)
			}
		})
	}
}
