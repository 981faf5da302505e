package main

import (
	"context"
	"os"
	"path/filepath"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/eval"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/boltstore"
)

// fitReport is what fitting changed.
type fitReport = eval.FitReport

// fitRouter learns r's calibration from labelled queries and stores it. Its
// trial catalogs live in a throwaway store in a temporary directory.
func fitRouter(ctx context.Context, r *selector.Router, qs []eval.Query, noExamples bool) (*fitReport, error) {
	return eval.Fit(ctx, r, qs, eval.FitOptions{NoExamples: noExamples, Scratch: scratchStore})
}

// scratchStore opens an empty embedded store in a new temporary directory
// and returns a function that closes and removes it.
func scratchStore(context.Context) (habilis.Store, func(), error) {
	dir, err := os.MkdirTemp("", "habilis-fit-")
	if err != nil {
		return nil, nil, err
	}
	st, err := boltstore.Open(filepath.Join(dir, "scratch.db"), boltstore.Options{})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return st, func() { st.Close(); os.RemoveAll(dir) }, nil
}
