package boltstore

import (
	"testing"

	bolt "go.etcd.io/bbolt"
)

// WalkFile exposes the page walk to the benchmarks.
func WalkFile(path string) ([]string, error) {
	_, problems, err := walkFile(path, 1)
	return problems, err
}

// WriteFormat1 writes a format 1 store, as a release of that format would.
var WriteFormat1 = writeFormat1

// SetChunk makes writes of more than n tools to s staged, n a transaction.
func SetChunk(s *Store, n int) { s.chunkSize = n }

// HeldVectors counts the vectors the tool values of the store at path
// leave to its index (kind 6).
func HeldVectors(t testing.TB, path string) int {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var need sizes
	err = db.View(func(tx *bolt.Tx) error {
		tools, _ := catalogBuckets(tx)
		need, _, err = measure(storedFormat(tx), tools)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return need.held
}

// HighWater returns the bytes of s's file below its high-water mark, the
// pages in use or free.
func HighWater(t testing.TB, s *Store) int64 {
	t.Helper()
	var size int64
	if err := s.db.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil }); err != nil {
		t.Fatal(err)
	}
	return size
}

// StoredExampleBytes returns the bytes of the examples values of the store at
// path, and how many examples the tools say they have.
func StoredExampleBytes(t testing.TB, path string) (bytes, examples int) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		tools, ex := catalogBuckets(tx)
		need, _, err := measure(storedFormat(tx), tools)
		examples = need.examples
		ex.ForEach(func(_, v []byte) error {
			bytes += len(v)
			return nil
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return bytes, examples
}
