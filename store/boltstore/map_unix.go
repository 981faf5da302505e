//go:build unix

package boltstore

import (
	"errors"
	"math"
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps size bytes of f read-only; unmap releases them.
func mapFile(f *os.File, size int64) (data []byte, unmap func(), err error) {
	if size <= 0 || size > math.MaxInt {
		return nil, nil, errors.New("cannot map the file")
	}
	data, err = unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return data, func() { unix.Munmap(data) }, nil
}
