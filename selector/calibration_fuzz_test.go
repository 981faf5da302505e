package selector_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/catalog"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/memstore"
)

// FuzzStoredCalibration opens a catalog whose stored calibration is
// whatever a damaged or hand-edited store holds, and checks that the
// router either refuses it or serves it, never panicking: selections in
// every mode, a tool's gates, collisions and a write.
func FuzzStoredCalibration(f *testing.F) {
	tools, err := catalog.Read("testdata/catalog.json")
	if err != nil {
		f.Fatal(err)
	}
	ctx := context.Background()
	st := memstore.New()
	cfg := selector.Config{Embedder: lexical.New(lexical.Options{})}
	r, err := selector.New(ctx, st, cfg)
	if err != nil {
		f.Fatal(err)
	}
	if _, err := r.Load(ctx, tools, selector.LoadOptions{}); err != nil {
		f.Fatal(err)
	}
	snap, err := st.Snapshot(ctx)
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(snap.Meta.Calibration))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"weights":{"centroid":-1,"description":1e30,"document":0,"example":2},"margin":-3,"noise_floor":2}`))
	f.Add([]byte(`{"prior":{"get_weather":1e38,"nope":-1},"background":{"send_email":{"mean":[1,2,3],"sd":[0,0,0]}},"collides":{"nope":["x"],"get_weather":["get_weather"]}}`))
	f.Add([]byte(`{"confidence":{"slope":1e38,"intercept":-1e38},"samples":-5,"threshold":1e38,"hybrid_threshold":-1e38}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, cal []byte) {
		if !json.Valid(cal) {
			return // the store keeps JSON: raw bytes cannot be stored
		}
		meta := snap.Meta
		meta.Calibration = cal
		st := memstore.New()
		if _, err := st.Write(ctx, &habilis.Batch{Replace: true, Put: snap.Records, Meta: meta}); err != nil {
			t.Fatal(err)
		}
		r, err := selector.New(ctx, st, cfg)
		if err != nil {
			return
		}
		defer r.Close()
		for _, mode := range []habilis.Mode{habilis.ModeHybrid, habilis.ModeCentroid, habilis.ModeDescription} {
			_, _ = r.Select(ctx, "will it rain in Paris tomorrow", habilis.SelectOptions{Mode: mode, K: 3, FailOpen: true, Pinned: []string{"lookup_word"}})
		}
		_, _ = r.Tool("get_weather")
		_, _ = r.Collisions(ctx, 0)
		_, _ = r.Delete(ctx, []string{"lookup_word"})
	})
}
