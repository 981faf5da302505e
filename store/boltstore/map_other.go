//go:build !unix

package boltstore

import (
	"errors"
	"os"
)

// mapFile does not map files here: the walk reads them instead.
func mapFile(*os.File, int64) ([]byte, func(), error) {
	return nil, nil, errors.New("no memory maps")
}
