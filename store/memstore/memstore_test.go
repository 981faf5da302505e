package memstore_test

import (
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/store/memstore"
	"github.com/habilis-router/habilis/store/storetest"
)

// TestConformance runs the store conformance suite against the in-memory
// store. It keeps nothing across a close, so the persistence tests are
// skipped.
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Open: func(t *testing.T) habilis.Store { return memstore.New() },
	})
}
