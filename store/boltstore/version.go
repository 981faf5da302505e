package boltstore

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/habilis-router/habilis"
	bolt "go.etcd.io/bbolt"
)

// Version returns the version of the last committed write. It reads the
// first eight bytes of the catalog meta (appendMeta writes the version
// first), not the embedder states and calibration after them, so a
// router polling it costs a read transaction and no allocation of the
// meta.
func (s *Store) Version(ctx context.Context) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("store %s: version: %w", s.path, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, fmt.Errorf("store %s: version: %w", s.path, habilis.ErrClosed)
	}
	var v uint64
	err := guard(func() error {
		return s.db.View(func(tx *bolt.Tx) error {
			var err error
			v, err = readVersion(tx)
			return err
		})
	})
	if err != nil {
		return 0, s.opError("version", err)
	}
	return v, nil
}

// readVersion returns the version of the catalog meta in tx, 0 for a
// store never written.
func readVersion(tx *bolt.Tx) (uint64, error) {
	mb := tx.Bucket([]byte(bucketMeta))
	if mb == nil {
		return 0, nil
	}
	v := mb.Get([]byte(keyCatalog))
	if v == nil {
		return 0, nil
	}
	if len(v) < 8 {
		return 0, fmt.Errorf("catalog meta: %w", errCorrupt)
	}
	return binary.LittleEndian.Uint64(v), nil
}
