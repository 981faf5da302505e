package selector_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/boltstore"
)

// reopened closes r and st and opens the store's file again with a new
// router, as each habilis command does.
func reopened(t *testing.T, r *selector.Router, st *boltstore.Store, path string, cfg selector.Config) (*selector.Router, *boltstore.Store) {
	t.Helper()
	r.Close()
	st.Close()
	st = openStore(t, path)
	r, err := selector.New(context.Background(), st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r, st
}

// historyStep is one write of TestStoredHistory and what it reports.
type historyStep struct {
	name  string
	write func(r *selector.Router) (*selector.LoadReport, error)
	want  selector.LoadReport
}

// historySteps updates get_weather in tools, removes send_email, adds it
// again and puts get_weather back as it was.
func historySteps(tools []habilis.Tool) []historyStep {
	ctx := context.Background()
	weather := tools[slices.IndexFunc(tools, func(x habilis.Tool) bool { return x.Name == "get_weather" })]
	email := tools[slices.IndexFunc(tools, func(x habilis.Tool) bool { return x.Name == "send_email" })]
	changed := weather
	changed.Description = "Current weather and air quality for a city."
	changed.Examples = append(slices.Clone(weather.Examples), "how polluted is the air in Delhi today")
	merge := func(t habilis.Tool) func(r *selector.Router) (*selector.LoadReport, error) {
		return func(r *selector.Router) (*selector.LoadReport, error) {
			return r.Load(ctx, []habilis.Tool{t}, selector.LoadOptions{Merge: true})
		}
	}
	return []historyStep{
		{"update", merge(changed), selector.LoadReport{Updated: []string{"get_weather"}}},
		{"remove", func(r *selector.Router) (*selector.LoadReport, error) { return r.Delete(ctx, []string{"send_email"}) },
			selector.LoadReport{Removed: []string{"send_email"}}},
		{"add again", merge(email), selector.LoadReport{Added: []string{"send_email"}}},
		{"restore", merge(weather), selector.LoadReport{Updated: []string{"get_weather"}}},
	}
}

// TestStoredHistory updates a tool, removes one, adds it again and puts
// the first back, each a merging write of a router that opened the store
// anew, and checks after each that a router reopening the file shows what
// the writer showed (decisions, tools, gates, calibration, version), and
// at the end that the catalog is as first loaded: the history of writes
// leaves nothing behind.
func TestStoredHistory(t *testing.T) {
	for _, sc := range storedConfigs {
		t.Run(sc.name, func(t *testing.T) {
			ctx := context.Background()
			cfg := sc.cfg(nil)
			path := filepath.Join(t.TempDir(), "habilis.db")
			st := openStore(t, path)
			r, err := selector.New(ctx, st, cfg)
			if err != nil {
				t.Fatal(err)
			}
			tools := testCatalog(t)
			if _, err := r.Load(ctx, tools, selector.LoadOptions{}); err != nil {
				t.Fatal(err)
			}
			first := viewOf(t, r)
			steps := historySteps(tools)
			for _, step := range steps {
				r, st = reopened(t, r, st, path, cfg)
				rep, err := step.write(r)
				if err != nil {
					t.Fatalf("%s: %v", step.name, err)
				}
				got := selector.LoadReport{Added: rep.Added, Updated: rep.Updated, Removed: rep.Removed}
				if diff := cmp.Diff(step.want, got); diff != "" {
					t.Errorf("%s: report (-want +got):\n%s", step.name, diff)
				}
				live := viewOf(t, r)
				r, st = reopened(t, r, st, path, cfg)
				if diff := cmp.Diff(live, viewOf(t, r)); diff != "" {
					t.Errorf("%s: the reopened catalog differs from the writer's (-writer +reopened):\n%s", step.name, diff)
				}
			}
			if _, err := r.Select(ctx, "weather", habilis.SelectOptions{Denied: []string{"nope"}}); !errors.Is(err, habilis.ErrNotFound) {
				t.Errorf("Select denying an unknown tool after the writes: %v, want ErrNotFound", err)
			}
			want := first
			for range steps {
				want.next()
			}
			if diff := cmp.Diff(want, viewOf(t, r)); diff != "" {
				t.Errorf("after the writes, the catalog differs from the one first loaded (-first +last):\n%s", diff)
			}
			r.Close()
		})
	}
}
