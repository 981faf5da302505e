package qdranttest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/qdrant/go-client/qdrant"
)

// Catalog returns a catalog name that no other test uses, prefix followed
// by random hex, and deletes the collections a store made for it in the
// real Qdrant at host:port (those named habilis_NAME_…) when the test
// ends.
func Catalog(tb testing.TB, host string, port int, prefix string) string {
	tb.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	name := prefix + hex.EncodeToString(b)
	tb.Cleanup(func() {
		c, err := qdrant.NewClient(&qdrant.Config{Host: host, Port: port, SkipCompatibilityCheck: true})
		if err != nil {
			tb.Errorf("cleanup: %v", err)
			return
		}
		defer c.Close()
		ctx := context.Background()
		all, err := c.ListCollections(ctx)
		if err != nil {
			tb.Errorf("cleanup: list collections: %v", err)
			return
		}
		for _, coll := range all {
			if strings.HasPrefix(coll, "habilis_"+name+"_") {
				if err := c.DeleteCollection(ctx, coll); err != nil {
					tb.Errorf("cleanup: delete %s: %v", coll, err)
				}
			}
		}
	})
	return name
}
