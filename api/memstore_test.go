package api

import (
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/store/storetest"
)

// TestMemStoreConformance runs the store conformance suite against the
// in-memory store of inline Prefilter catalogs. It keeps nothing across a
// close, so the persistence tests are skipped.
func TestMemStoreConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Open: func(t *testing.T) habilis.Store { return newMemStore() },
	})
}
