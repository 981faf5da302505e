package boltstore

import (
	"context"
	"fmt"

	"github.com/habilis-router/habilis"
	bolt "go.etcd.io/bbolt"
)

// migrateEvery is how many tools a migration rewrites between calls of its
// progress function and checks of its context.
const migrateEvery = 256

// migrate rewrites the format 1 catalog in tx in the current format: each tool is
// decoded with its examples, on its own, and encoded again, then both
// buckets are replaced. It runs inside the transaction of the write that
// found the old format, so the file holds the old catalog or the new
// write, never half a migration; a write that replaces the whole catalog
// skips it (write). Memory: the catalog encoded anew, about the size of
// its records in the file, held until commit as every write's values are.
func migrate(ctx context.Context, tx *bolt.Tx, progress func(done, total int)) error {
	tools, examples := catalogBuckets(tx)
	total := tools.Stats().KeyN
	report := func(done int) {
		if progress != nil {
			progress(done, total)
		}
	}
	type value struct{ key, tool, examples []byte }
	values := make([]value, 0, total)
	var a arena
	var e encoder
	c := tools.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(values)%migrateEvery == 0 {
			report(len(values))
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if v == nil {
			return fmt.Errorf("migrating format 1: tool %q: a bucket, not a value: %w", k, errCorrupt)
		}
		rec, err := decodeRecord(1, examples, k, v, nil)
		if err != nil {
			return fmt.Errorf("migrating format 1: tool %q: %w", k, err)
		}
		e.setTerms(&rec)
		val := value{key: a.copy(k), tool: a.encode(func(b []byte) []byte { return e.tool(b, &rec) })}
		if len(rec.Tool.Examples) > 0 {
			val.examples = a.encode(func(b []byte) []byte { return e.examples(b, &rec) })
		}
		values = append(values, val)
	}
	if err := orphans(examples, values, func(v value) bool { return v.examples != nil }); err != nil {
		return fmt.Errorf("migrating format 1: %w", err)
	}
	if err := resetBuckets(tx); err != nil {
		return fmt.Errorf("migrating format 1: %w", err)
	}
	tools, examples = catalogBuckets(tx)
	tools.FillPercent, examples.FillPercent = 1, 1 // appended in name order
	for _, v := range values {
		if err := tools.Put(v.key, v.tool); err != nil {
			return fmt.Errorf("migrating format 1: tool %q: %w", v.key, err)
		}
		if v.examples == nil {
			continue
		}
		if err := examples.Put(v.key, v.examples); err != nil {
			return fmt.Errorf("migrating format 1: tool %q: %w", v.key, err)
		}
	}
	report(total)
	return nil
}

// decodeRecord decodes tool k, whose value is v, with its examples, as a
// snapshot of that tool alone would, into slabs of its own. It fails when
// the examples are not all there as the tool's summary counts them, or
// when some are stored for a tool of none.
//
// held gives the vectors the records leave to the stored index.
func decodeRecord(format int, examples *bolt.Bucket, k, v []byte, held *heldRows) (habilis.Record, error) {
	var scratch habilis.Record
	m := &slabs{measuring: true, format: format}
	if _, err := m.tool(v, &scratch); err != nil {
		return habilis.Record{}, err
	}
	m.strFrom(k, &scratch.Tool.Name)
	s := newSlabs(format, m.need)
	s.held, s.name = held, k
	var rec habilis.Record
	s.strFrom(k, &rec.Tool.Name)
	sum, err := s.tool(v, &rec)
	if err != nil {
		return habilis.Record{}, err
	}
	stored := examples.Get(k) != nil || examples.Bucket(k) != nil
	switch {
	case sum.count == 0 && stored:
		return habilis.Record{}, fmt.Errorf("examples stored for a tool of none: %w", errCorrupt)
	case sum.count > len(s.examples):
		return habilis.Record{}, fmt.Errorf("examples: %w", errCorrupt)
	case sum.count > 0:
		texts, vecs := s.examples[:sum.count], s.vectors[:sum.count]
		if err := readExamples(s, examples, k, examples.Get(k), texts, vecs); err != nil {
			return habilis.Record{}, fmt.Errorf("examples: %w", err)
		}
		rec.Tool.Examples, rec.ExampleVectors = texts, vecs
	}
	if len(s.floats) != cap(s.floats) || len(s.indices) != cap(s.indices) || s.text.Len() != m.need.text {
		return habilis.Record{}, fmt.Errorf("examples do not match the tool's summary of them: %w", errCorrupt)
	}
	s.finish()
	return rec, nil
}

// orphans fails when the examples bucket holds more keys than the tools
// with examples (has), which decodeRecord found each with its own: some
// examples belong to no tool.
func orphans[V any](examples *bolt.Bucket, values []V, has func(V) bool) error {
	want := 0
	for _, v := range values {
		if has(v) {
			want++
		}
	}
	n := 0
	c := examples.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		n++
	}
	if n != want {
		return fmt.Errorf("examples stored for %d tools, %d tools have examples: %w", n, want, errCorrupt)
	}
	return nil
}
