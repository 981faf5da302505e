package selector_test

import (
	"context"
	"strings"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/selector"
)

// TestCheckSnapshot damages one field of a stored catalog at a time and
// checks that CheckSnapshot names it, and that the catalog as written is
// sound.
func TestCheckSnapshot(t *testing.T) {
	_, st := loaded(t)
	snap, err := st.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if p := selector.CheckSnapshot(snap); len(p) != 0 {
		t.Fatalf("CheckSnapshot(catalog as written) = %q, want nothing", p)
	}
	// Each damage edits the first record with examples.
	first := 0
	for len(snap.Records[first].Tool.Examples) < 2 {
		first++
	}
	tests := []struct {
		name   string
		damage func(r *habilis.Record, m *habilis.CatalogMeta)
		want   string
	}{
		{"description text", func(r *habilis.Record, _ *habilis.CatalogMeta) { r.Tool.Description += "x" }, "does not match its hash"},
		{"example text", func(r *habilis.Record, _ *habilis.CatalogMeta) { r.Tool.Examples[0] = "y" + r.Tool.Examples[0][1:] }, "does not match its hash"},
		{"scaled description vector", func(r *habilis.Record, _ *habilis.CatalogMeta) { scale(r.DescriptionVector, 0.5) }, "description vector has norm 0.5"},
		{"zeroed example coordinate", func(r *habilis.Record, _ *habilis.CatalogMeta) { r.ExampleVectors[1].Values[0] = 0 }, "example 1's vector has norm"},
		{"unsorted indices", func(r *habilis.Record, _ *habilis.CatalogMeta) {
			v := &r.DocumentVector
			v.Indices[0], v.Indices[1] = v.Indices[1], v.Indices[0]
		}, "document vector vector indices not strictly ascending"},
		{"centroid of other examples", func(r *habilis.Record, _ *habilis.CatalogMeta) {
			r.ExampleVectors[0], r.ExampleVectors[1] = r.DescriptionVector, r.DescriptionVector
		}, "centroid is not the mean"},
		{"radius", func(r *habilis.Record, _ *habilis.CatalogMeta) { r.Radius -= 0.1 }, "radius"},
		{"calibration", func(_ *habilis.Record, m *habilis.CatalogMeta) { m.Calibration = []byte("{") }, "stored calibration"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap, err := st.Snapshot(context.Background()) // a copy of its own
			if err != nil {
				t.Fatal(err)
			}
			tc.damage(&snap.Records[first], &snap.Meta)
			got := selector.CheckSnapshot(snap)
			if len(got) == 0 || !strings.Contains(strings.Join(got, "\n"), tc.want) {
				t.Errorf("CheckSnapshot(%s) = %q, want a problem saying %q", tc.name, got, tc.want)
			}
		})
	}
}

func scale(v habilis.Vector, f float32) {
	for i := range v.Dense {
		v.Dense[i] *= f
	}
	for i := range v.Values {
		v.Values[i] *= f
	}
}
