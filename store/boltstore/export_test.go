package boltstore

// WalkFile exposes the page walk to the benchmarks.
func WalkFile(path string) ([]string, error) {
	_, problems, err := walkFile(path, 1)
	return problems, err
}

// WriteFormat1 writes a format 1 store, as a release of that format would.
var WriteFormat1 = writeFormat1

// SetChunk makes writes of more than n tools to s staged, n a transaction.
func SetChunk(s *Store, n int) { s.chunkSize = n }
