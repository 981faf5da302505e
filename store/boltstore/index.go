package boltstore

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"github.com/habilis-router/habilis"
	bolt "go.etcd.io/bbolt"
)

// The selector's index lives in its own bucket under one key, replaced by
// every write that stores an index, and the patch the writes since add to
// it in another bucket under the same key (see writeIndex): alone in a
// bucket under an 8-byte key, a value starts 8-byte aligned in its page,
// so that the selector reads its arrays in place.
const (
	bucketIndex = "index"
	bucketPatch = "index-patch"
	keyIndex    = "selector"
)

var _ habilis.IndexStore = (*Store)(nil)

// views counts the indexes handed out in place (Index on a read-only
// store), each holding a read transaction; Close waits for none of them
// but leaves closing the file to the last one released, since unmapping
// it under a reader would take the reader's memory away.
type views struct {
	mu      sync.Mutex
	open    int
	closing bool
}

// Index returns the catalog meta with the index the last write stored,
// read where it lies in the memory map, inside a read transaction that
// Release ends. On a read-only store nothing can write to the file
// meanwhile (this process opened it read-only, and bbolt's file lock
// keeps writers of other processes out). On a writable store the
// transaction keeps the pages it reads from being reused by the writes
// meanwhile, which write elsewhere; the pages a write frees are reused
// once every transaction older than it has ended, so a router that
// releases the index it retires lets the file's free pages serve again;
// one that never does (a second router over the store that does not
// follow its writes) keeps every page the writes since have freed of
// those it could see, and the file grows by them.
// A write of this process that outgrew the memory map would remap it,
// which waits for every open read transaction, so a writable store reads
// in place only where it maps more than it lets the file grow to
// (inPlaceMapSize); elsewhere (32-bit systems, Windows) it copies the
// index out.
func (s *Store) Index(ctx context.Context) (*habilis.StoredIndex, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store %s: index: %w", s.path, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, fmt.Errorf("store %s: index: %w", s.path, habilis.ErrClosed)
	}
	var tx *bolt.Tx
	var meta habilis.CatalogMeta
	var data, patch []byte
	err := guard(func() error {
		var err error
		if tx, err = s.db.Begin(false); err != nil {
			return err
		}
		if meta, err = readMeta(tx); err != nil {
			tx.Rollback()
			return err
		}
		if b := tx.Bucket([]byte(bucketIndex)); b != nil {
			data = b.Get([]byte(keyIndex))
		}
		if b := tx.Bucket([]byte(bucketPatch)); b != nil && data != nil {
			patch = b.Get([]byte(keyIndex))
		}
		return nil
	})
	if err != nil {
		return nil, s.opError("index", err)
	}
	if (!s.readOnly && !s.inPlace) || data == nil {
		data, patch = bytes.Clone(data), bytes.Clone(patch)
		tx.Rollback()
		return &habilis.StoredIndex{Meta: meta, Data: data, Patch: patch, Release: func() {}}, nil
	}
	s.views.mu.Lock()
	s.views.open++
	s.views.mu.Unlock()
	release := sync.OnceFunc(func() {
		tx.Rollback()
		s.views.mu.Lock()
		defer s.views.mu.Unlock()
		s.views.open--
		if s.views.open == 0 && s.views.closing {
			s.db.Close()
		}
	})
	return &habilis.StoredIndex{Meta: meta, Data: data, Patch: patch, Release: release}, nil
}

// IndexInPlace reports whether Index reads the index where it lies
// rather than copying it out.
func (s *Store) IndexInPlace() bool { return s.readOnly || s.inPlace }

// closeDB closes the file now, or leaves it to the last index released.
func (s *Store) closeDB() error {
	s.views.mu.Lock()
	defer s.views.mu.Unlock()
	if s.views.open > 0 {
		s.views.closing = true
		return nil
	}
	return s.db.Close()
}

// writeIndex stores the batch's index in tx (dropping any patch), or its
// patch beside the stored index, or drops both when the batch has
// neither: an index always describes the catalog beside it. An index too
// large for one bbolt value is not stored; routers then build it from the
// records, as they do for a patch without the index it patches.
func writeIndex(tx *bolt.Tx, index, patch []byte) error {
	b, err := tx.CreateBucketIfNotExists([]byte(bucketIndex))
	if err != nil {
		return fmt.Errorf("index: %w", err)
	}
	pb, err := tx.CreateBucketIfNotExists([]byte(bucketPatch))
	if err != nil {
		return fmt.Errorf("index patch: %w", err)
	}
	if index == nil && len(patch) > 0 && len(patch) <= bolt.MaxValueSize && b.Get([]byte(keyIndex)) != nil {
		if err := pb.Put([]byte(keyIndex), patch); err != nil {
			return fmt.Errorf("index patch: %w", err)
		}
		return nil
	}
	if err := pb.Delete([]byte(keyIndex)); err != nil {
		return fmt.Errorf("index patch: %w", err)
	}
	if len(index) == 0 || len(index) > bolt.MaxValueSize {
		if err := b.Delete([]byte(keyIndex)); err != nil {
			return fmt.Errorf("index: %w", err)
		}
		return nil
	}
	if err := b.Put([]byte(keyIndex), index); err != nil {
		return fmt.Errorf("index: %w", err)
	}
	return nil
}
