package boltstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/habilis-router/habilis"
	bolt "go.etcd.io/bbolt"
)

// CompactReport is what Compact did.
type CompactReport struct {
	Path string `json:"path"`
	// Before and After are the file's sizes in bytes.
	Before int64 `json:"bytes_before"`
	After  int64 `json:"bytes_after"`
}

// compactTxSize is how many bytes of keys and values one transaction of a
// compaction copies before it commits, bounding its memory.
const compactTxSize = 64 << 20

// compactAlloc is the step by which the copy grows.
const compactAlloc = 1 << 20

// Compact rewrites the store in the file at path without its free pages:
// bbolt never gives a file's pages back, so a store that a migration, a
// deleted catalog or a staged write has left mostly free keeps its size
// until compacted. It copies every bucket and key into a new file beside
// path (path + ".compact"), pages full, checks the copy's structure and
// puts it in path's place; the store is unchanged if anything fails.
//
// The copy is checked as Check checks a store, with opts (its Records
// and Index checks included) before it replaces the store, so a damaged
// store is refused (ErrDamaged) rather than compacted. Compact holds the
// store's lock throughout, so no writer can change it meanwhile: a writer
// holding it (habilis serve) makes it return ErrUnavailable after
// opts.Timeout.
func Compact(ctx context.Context, path string, opts CheckOptions) (*CompactReport, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("store %s: compact: %w", path, err)
	}
	if err := notAStore(fi); err != nil {
		// Open would take an empty file for a new store and write one.
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	src, err := Open(path, Options{Timeout: opts.Timeout})
	if err != nil {
		return nil, err
	}
	defer src.Close()
	tmp := path + ".compact"
	if err := compactInto(ctx, src.db, tmp); err != nil {
		os.Remove(tmp)
		return nil, fmt.Errorf("store %s: compact: %w", path, err)
	}
	// The copy is checked as `store check` checks a store: damage inside
	// a value, which the page walk of Open cannot see, is copied as it is.
	opts.Limit = 1
	rep, err := Check(ctx, tmp, opts)
	if err == nil && !rep.Sound() {
		err = fmt.Errorf("%s: %w", rep.Problems[0], habilis.ErrDamaged)
	}
	if err != nil {
		os.Remove(tmp)
		return nil, fmt.Errorf("store %s: compact: the store does not read whole: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return nil, fmt.Errorf("store %s: compact: %w", path, err)
	}
	syncDir(filepath.Dir(path))
	after, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("store %s: compact: %w", path, err)
	}
	return &CompactReport{Path: path, Before: fi.Size(), After: after.Size()}, nil
}

// compactInto copies src into a new bbolt file at tmp, in the store's page
// size, and closes it.
func compactInto(ctx context.Context, src *bolt.DB, tmp string) error {
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	dst, err := boltOpen(tmp, &bolt.Options{PageSize: pageSize, InitialMmapSize: initialMmapSize()})
	if err != nil {
		return err
	}
	// bbolt grows a file by 16 MiB at a time by default, which would leave
	// a small store's copy mostly empty again.
	dst.AllocSize = compactAlloc
	err = guard(func() error { return bolt.Compact(dst, src, compactTxSize) })
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = ctx.Err()
	}
	return err
}

// syncDir flushes a directory's entries, so that a rename in it survives a
// crash; where a directory cannot be synced the rename stands as the
// system keeps it.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
