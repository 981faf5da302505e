package boltstore

import (
	"encoding/binary"
	"maps"
	"slices"
	"testing"

	"github.com/habilis-router/habilis"
	bolt "go.etcd.io/bbolt"
)

// The encoders of format 1, which this package no longer writes but still
// reads: for tests of reading and migrating format 1 files.

func appendTool1(b []byte, r *habilis.Record) []byte {
	t := &r.Tool
	b = appendStr(b, t.Description)
	b = appendOptBytes(b, t.InputSchema)
	if t.Margin == nil {
		b = append(b, 0)
	} else {
		b = appendF32(append(b, 1), *t.Margin)
	}
	b = appendOptBytes(b, t.Executor)
	if t.Meta == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		b = appendUvarint(b, len(t.Meta))
		for _, k := range slices.Sorted(maps.Keys(t.Meta)) {
			b = appendStr(b, k)
			b = appendStr(b, t.Meta[k])
		}
	}
	b = appendStr(b, r.Hash)
	b = appendVector(b, r.DescriptionVector)
	b = appendVector(b, r.Centroid)
	b = appendVector(b, r.DocumentVector)
	b = appendF32(b, r.Radius)
	b = appendBool(b, r.HasRadius)
	b = appendStr(b, r.RadiusExample)
	b = appendF32(b, r.Margin)
	return appendSummary(b, r)
}

func appendExample1(b []byte, text string, v habilis.Vector) []byte {
	return appendVector(appendStr(b, text), v)
}

// writeFormat1 writes a format 1 store of recs and meta (whose Version it
// keeps) at path, as a release of that format would have, replacing the
// catalog a file there holds.
func writeFormat1(t testing.TB, path string, recs []habilis.Record, meta habilis.CatalogMeta) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range []string{bucketMeta, bucketTools, bucketExamples} {
			if tx.Bucket([]byte(name)) != nil {
				if err := tx.DeleteBucket([]byte(name)); err != nil {
					return err
				}
			}
		}
		mb, err := tx.CreateBucket([]byte(bucketMeta))
		if err != nil {
			return err
		}
		if err := mb.Put([]byte(keyFormat), binary.BigEndian.AppendUint32(nil, 1)); err != nil {
			return err
		}
		if err := mb.Put([]byte(keyCatalog), appendMeta(nil, meta)); err != nil {
			return err
		}
		tools, err := tx.CreateBucket([]byte(bucketTools))
		if err != nil {
			return err
		}
		examples, err := tx.CreateBucket([]byte(bucketExamples))
		if err != nil {
			return err
		}
		for i := range recs {
			r := &recs[i]
			if err := tools.Put([]byte(r.Tool.Name), appendTool1(nil, r)); err != nil {
				return err
			}
			if len(r.Tool.Examples) == 0 {
				continue
			}
			eb, err := examples.CreateBucket([]byte(r.Tool.Name))
			if err != nil {
				return err
			}
			for j, text := range r.Tool.Examples {
				if err := eb.Put(binary.BigEndian.AppendUint32(nil, uint32(j)), appendExample1(nil, text, r.ExampleVectors[j])); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
