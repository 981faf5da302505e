package qdranttest

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/qdrant/go-client/qdrant"
)

// TestCatalog checks that Catalog's names differ and that the collections
// of its catalog, and only those, go when the test ends.
func TestCatalog(t *testing.T) {
	f := Start(t)
	c, err := qdrant.NewClient(&qdrant.Config{Host: f.Host(), Port: f.Port(), SkipCompatibilityCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	create := func(name string) {
		t.Helper()
		err := c.CreateCollection(ctx, &qdrant.CreateCollection{
			CollectionName: name,
			VectorsConfig:  qdrant.NewVectorsConfig(&qdrant.VectorParams{Size: 2, Distance: qdrant.Distance_Cosine}),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var name, other string
	t.Run("test", func(t *testing.T) {
		name = Catalog(t, f.Host(), f.Port(), "cli-")
		other = Catalog(t, f.Host(), f.Port(), "cli-")
		if !strings.HasPrefix(name, "cli-") || name == other {
			t.Fatalf("Catalog() = %q then %q, want two names starting cli-", name, other)
		}
		create("habilis_" + name + "_tools")
		create("habilis_" + name + "_examples")
		create("habilis_" + name + "x_tools")
		create("habilis_elsewhere_tools")
	})
	got := f.Collections()
	slices.Sort(got)
	want := []string{"habilis_" + name + "x_tools", "habilis_elsewhere_tools"}
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("collections after the test (-want +got):\n%s", diff)
	}
}
