package boltstore

import (
	"context"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/par"
	bolt "go.etcd.io/bbolt"
)

// stageChunk is how many tools each transaction of a staged write puts.
//
// A write holds every key and value it puts, and bbolt a copy of each page
// it dirtied, until it commits: a catalog of 30,000 tools took 730 MB more
// to write in one transaction (the values encoded, 240 MB, the pages, 490
// MB). A write of more than stageChunk tools that replaces the catalog or
// fills an empty store is therefore staged: one transaction creates new, empty tools and examples
// buckets; one a chunk of stageChunk tools fills them, each reusing the
// memory of the one before (the arena's blocks; bbolt's pool of pages);
// the last deletes the old buckets, names the new ones in the meta
// (keyBuckets) and writes the catalog meta and the index. Readers read the
// buckets the meta names, so until that last commit they read the old
// catalog whole, and a crash before it leaves the old catalog as it was:
// the write is all or nothing as a single transaction is. The buckets a
// staged write left behind (a crash, a failed cleanup) are deleted by the
// next staged write. Writes are serialised (Store.writeMu) and bbolt's
// file lock keeps writers of other processes out for the store's life, so
// no other write comes between the transactions.
const stageChunk = 1024

// stagedPrefix separates a staged bucket's name from its suffix.
const stagedPrefix = "~"

func (s *Store) chunk() int {
	if s.chunkSize > 0 {
		return s.chunkSize
	}
	return stageChunk
}

// empty reports whether the store holds no tool (or cannot be read, which
// the write then reports).
func (s *Store) empty() bool {
	empty := false
	guard(func() error {
		return s.db.View(func(tx *bolt.Tx) error {
			if tools, _ := catalogBuckets(tx); tools != nil {
				k, _ := tools.Cursor().First()
				empty = k == nil
			}
			return nil
		})
	})
	return empty
}

// writeStaged commits a batch that replaces the catalog, or fills an empty
// one, in several transactions (see stageChunk).
func (s *Store) writeStaged(ctx context.Context, b *habilis.Batch) (habilis.CatalogMeta, error) {
	// Memory the caller has just dropped (a load's working state) is
	// garbage the collector has not found yet: collected first, the
	// chunks reuse it rather than grow the process (docs/benchmarks.md).
	debug.FreeOSMemory()
	var suffix string
	err := s.update(func(tx *bolt.Tx) error {
		var err error
		suffix, err = stage(tx, b)
		return err
	})
	if err != nil {
		return habilis.CatalogMeta{}, err
	}
	meta, err := s.fillStaged(ctx, b, suffix)
	if err != nil {
		// Best effort: a staged write that fails deletes what it staged
		// when the next staged write does not.
		s.update(func(tx *bolt.Tx) error { return dropStaged(tx, "") })
		return habilis.CatalogMeta{}, err
	}
	return meta, nil
}

// update runs fn in a write transaction, guarded.
func (s *Store) update(fn func(tx *bolt.Tx) error) error {
	return guard(func() error { return s.db.Update(fn) })
}

// fillStaged puts the batch's tools in the buckets of suffix, a chunk a
// transaction, then makes them the catalog.
func (s *Store) fillStaged(ctx context.Context, b *habilis.Batch, suffix string) (habilis.CatalogMeta, error) {
	order := nameOrder(b.Put)
	var parts [][]int
	for start := 0; start < len(order); start += s.chunk() {
		parts = append(parts, order[start:min(start+s.chunk(), len(order))])
	}
	// Two encoders take turns, so that a chunk is encoded while the one
	// before it commits, which bbolt does on one core; each is reset once
	// its chunk has committed (or rolled back), when bbolt holds none of
	// its values.
	hold := newHolder(b.Index)
	encs := [2]chunkEncoder{{hold: hold}, {hold: hold}}
	encoded := make(chan []encodedTool, 1)
	encode := func(k int) { encoded <- encs[k%2].encode(b.Put, parts[k]) }
	if len(parts) > 0 {
		go encode(0)
	}
	for k := range parts {
		part := <-encoded
		if k+1 < len(parts) {
			go encode(k + 1)
		}
		err := ctx.Err()
		if err == nil {
			err = s.putChunk(part, suffix)
		}
		encs[k%2].reset()
		if err != nil {
			if k+1 < len(parts) {
				<-encoded // the next chunk's encoding ends before the write does
			}
			return habilis.CatalogMeta{}, err
		}
	}
	var meta habilis.CatalogMeta
	err := s.update(func(tx *bolt.Tx) error {
		var err error
		meta, err = commitStaged(tx, b, suffix)
		return err
	})
	return meta, err
}

// putChunk puts one chunk's encoded tools in the buckets of suffix, in one
// transaction.
func (s *Store) putChunk(part []encodedTool, suffix string) error {
	return s.update(func(tx *bolt.Tx) error {
		tools, examples := tx.Bucket([]byte(bucketTools+suffix)), tx.Bucket([]byte(bucketExamples+suffix))
		if tools == nil || examples == nil {
			return fmt.Errorf("the buckets of the staged write were lost: %w", errCorrupt)
		}
		tools.FillPercent, examples.FillPercent = 1, 1 // appended in name order
		for _, t := range part {
			if err := t.put(tools, examples); err != nil {
				return fmt.Errorf("put %q: %w", t.key, err)
			}
		}
		return nil
	})
}

// chunkEncoder encodes the tools of a staged write's chunks on every
// core, each worker into an arena of its own, so that the transaction
// only puts them: the encoding was a third of a 2,000-tool load's write
// (docs/benchmarks.md).
type chunkEncoder struct {
	arenas   []arena
	encoders []encoder
	// hold is the index the write stores (encoder.hold).
	hold *holder
}

// encodedTool is a tool of a chunk as putTool stores it: its key and its
// values in the tools and examples buckets (nil for a tool without
// examples).
type encodedTool struct {
	key, tool, examples []byte
}

// encode returns the records of recs at part encoded, in part's order;
// they stay valid until reset.
func (c *chunkEncoder) encode(recs []habilis.Record, part []int) []encodedTool {
	if nw := par.Workers(len(part)); len(c.arenas) < nw {
		c.arenas, c.encoders = make([]arena, nw), make([]encoder, nw)
		for i := range c.encoders {
			c.encoders[i].hold = c.hold
		}
	}
	out := make([]encodedTool, len(part))
	par.For(len(part), func(w, k int) {
		a, e, r := &c.arenas[w], &c.encoders[w], &recs[part[k]]
		out[k].key = a.copy([]byte(r.Tool.Name))
		e.setTerms(r)
		out[k].tool = a.encode(func(b []byte) []byte { return e.tool(b, r) })
		if len(r.Tool.Examples) > 0 {
			out[k].examples = a.encode(func(b []byte) []byte { return e.examples(b, r) })
		}
	})
	return out
}

// reset frees the arenas for the next chunk.
func (c *chunkEncoder) reset() {
	for w := range c.arenas {
		c.arenas[w].reset()
	}
}

// put stores t, replacing the tool of its name, as putTool does.
func (t *encodedTool) put(tools, examples *bolt.Bucket) error {
	if err := tools.Put(t.key, t.tool); err != nil {
		return err
	}
	if t.examples == nil {
		return examples.Delete(t.key)
	}
	return examples.Put(t.key, t.examples)
}

// stage checks the batch against the store as write does, deletes what
// earlier staged writes left, and creates the empty buckets of this one,
// whose suffix it returns.
func stage(tx *bolt.Tx, b *habilis.Batch) (string, error) {
	if err := checkFormat(tx); err != nil {
		return "", err
	}
	stored, err := readMeta(tx)
	if err != nil {
		return "", err
	}
	if stored.Version != b.BaseVersion {
		return "", fmt.Errorf("batch based on version %d, store is at %d: %w", b.BaseVersion, stored.Version, habilis.ErrConflict)
	}
	tools, _ := catalogBuckets(tx)
	if k, _ := tools.Cursor().First(); k != nil && !b.Replace {
		return "", fmt.Errorf("a staged write must replace the catalog or fill an empty one: %w", habilis.ErrInvalid)
	}
	for _, name := range b.Delete {
		if tools.Get([]byte(name)) == nil {
			return "", fmt.Errorf("delete %q: no such tool: %w", name, habilis.ErrInvalid)
		}
	}
	// The version this write commits: no other bucket has its name, since
	// versions only grow.
	suffix := stagedPrefix + strconv.FormatUint(stored.Version+1, 10)
	if err := dropStaged(tx, suffix); err != nil {
		return "", err
	}
	for _, name := range []string{bucketTools + suffix, bucketExamples + suffix} {
		if _, err := tx.CreateBucket([]byte(name)); err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
	}
	return suffix, nil
}

// dropStaged deletes the buckets of staged writes but the catalog's, the
// buckets of suffix among them.
func dropStaged(tx *bolt.Tx, suffix string) error {
	tools, examples := catalogNames(tx)
	var drop []string
	err := tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		n := string(name)
		staged := strings.HasPrefix(n, bucketTools+stagedPrefix) || strings.HasPrefix(n, bucketExamples+stagedPrefix)
		if staged && n != tools && n != examples {
			drop = append(drop, n)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, n := range drop {
		if err := tx.DeleteBucket([]byte(n)); err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
	}
	return nil
}

// commitStaged makes the buckets of suffix the catalog, in place of the
// current ones, and writes the batch's meta and index.
func commitStaged(tx *bolt.Tx, b *habilis.Batch, suffix string) (habilis.CatalogMeta, error) {
	if err := checkFormat(tx); err != nil {
		return habilis.CatalogMeta{}, err
	}
	stored, err := readMeta(tx)
	if err != nil {
		return habilis.CatalogMeta{}, err
	}
	if stored.Version != b.BaseVersion {
		return habilis.CatalogMeta{}, fmt.Errorf("batch based on version %d, store is at %d: %w", b.BaseVersion, stored.Version, habilis.ErrConflict)
	}
	tools, examples := catalogNames(tx)
	for _, name := range []string{tools, examples} {
		if err := tx.DeleteBucket([]byte(name)); err != nil {
			return habilis.CatalogMeta{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	mb := tx.Bucket([]byte(bucketMeta))
	if err := mb.Put([]byte(keyBuckets), []byte(suffix)); err != nil {
		return habilis.CatalogMeta{}, err
	}
	if err := mb.Put([]byte(keyFormat), binaryFormat()); err != nil {
		return habilis.CatalogMeta{}, err
	}
	return commitMeta(tx, b, stored)
}
