package boltstore

// WalkFile exposes the page walk to the benchmarks.
func WalkFile(path string) ([]string, error) {
	_, problems, err := walkFile(path, 1)
	return problems, err
}
