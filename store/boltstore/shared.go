package boltstore

import (
	"context"
	"fmt"
	"sync"

	"github.com/habilis-router/habilis"
)

// Shared is a store over a bbolt file that other processes use too. bbolt
// locks the file for as long as it is open (shared for readers, exclusive
// for a writer), so a Store held open by a server keeps `habilis load` out,
// and a reader holding it keeps every writer out. Shared holds the file
// only for the length of each call: every Snapshot, Version and Write
// opens it, runs one transaction and closes it, waiting up to
// Options.Timeout for another process's lock. Between calls any process
// may open the file: a server following the catalog (polling Version) and
// a CLI loading a new one, or several servers on one machine writing it.
// Write checks BaseVersion inside its transaction, so writers in different
// processes conflict (ErrConflict) rather than overwrite each other.
//
// Each call pays for opening the file, tens of microseconds, which a
// server polling every two seconds does not notice (BenchmarkVersion;
// docs/benchmarks.md, Following the store).
type Shared struct {
	path string
	opts Options

	// mu guards closed; calls hold it shared for their whole length, so
	// Close waits for them.
	mu     sync.RWMutex
	closed bool
	walked walked
}

var _ habilis.Store = (*Shared)(nil)

// OpenShared checks that the file at path holds a habilis store, creating
// it unless opts.ReadOnly, and returns a Shared store over it that holds
// the file only during calls. It returns what Open returns.
func OpenShared(path string, opts Options) (*Shared, error) {
	s := &Shared{path: path, opts: opts}
	// The walk of this open is remembered, so the first call does not walk
	// the file again.
	st, err := open(path, opts, &s.walked)
	if err != nil {
		return nil, err
	}
	if err := st.Close(); err != nil {
		return nil, err
	}
	return s, nil
}

// Path returns the file the store is over.
func (s *Shared) Path() string { return s.path }

// do opens the file, read-only unless write, and runs f on it.
func (s *Shared) do(op string, write bool, f func(*Store) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return fmt.Errorf("store %s: %s: %w", s.path, op, habilis.ErrClosed)
	}
	opts := s.opts
	opts.ReadOnly = opts.ReadOnly || !write
	st, err := open(s.path, opts, &s.walked)
	if err != nil {
		return err
	}
	err = f(st)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	return err
}

// Snapshot returns the catalog as of the last committed write.
func (s *Shared) Snapshot(ctx context.Context) (*habilis.Snapshot, error) {
	var snap *habilis.Snapshot
	err := s.do("snapshot", false, func(st *Store) error {
		var err error
		snap, err = st.Snapshot(ctx)
		return err
	})
	return snap, err
}

// Version returns the version of the last committed write.
func (s *Shared) Version(ctx context.Context) (uint64, error) {
	var v uint64
	err := s.do("version", false, func(st *Store) error {
		var err error
		v, err = st.Version(ctx)
		return err
	})
	return v, err
}

// Write commits b in one transaction: all of it or, on any error, nothing.
func (s *Shared) Write(ctx context.Context, b *habilis.Batch) (habilis.CatalogMeta, error) {
	if s.opts.ReadOnly {
		return habilis.CatalogMeta{}, fmt.Errorf("store %s: write: %w", s.path, habilis.ErrReadOnly)
	}
	var meta habilis.CatalogMeta
	err := s.do("write", true, func(st *Store) error {
		var err error
		meta, err = st.Write(ctx, b)
		return err
	})
	return meta, err
}

// Close marks the store closed; it holds nothing else. Further calls
// return ErrClosed.
func (s *Shared) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}
