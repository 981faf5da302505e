package selector_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/selector"
)

// refusedWrite is a write the router must refuse, and what its error
// wraps and says.
type refusedWrite struct {
	name  string
	write func(ctx context.Context, r *selector.Router) (*selector.LoadReport, error)
	is    error
	says  string
}

// refusedWrites are writes to a catalog holding the test catalog's tools.
func refusedWrites(tools []habilis.Tool) []refusedWrite {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	load := func(tools []habilis.Tool, merge bool) func(ctx context.Context, r *selector.Router) (*selector.LoadReport, error) {
		return func(ctx context.Context, r *selector.Router) (*selector.LoadReport, error) {
			return r.Load(ctx, tools, selector.LoadOptions{Merge: merge})
		}
	}
	del := func(names ...string) func(ctx context.Context, r *selector.Router) (*selector.LoadReport, error) {
		return func(ctx context.Context, r *selector.Router) (*selector.LoadReport, error) {
			return r.Delete(ctx, names)
		}
	}
	changed := tools[2]
	changed.Description = "Send an email, changed."
	return []refusedWrite{
		{"a tool twice", load([]habilis.Tool{tools[0], tools[0]}, false), habilis.ErrInvalid, `tool "get_weather" is given twice`},
		{"a tool twice, merging", load([]habilis.Tool{tools[1], tools[1]}, true), habilis.ErrInvalid, `tool "weather_forecast" is given twice`},
		{"a tool without a name", load([]habilis.Tool{changed, {Description: "no name"}}, true), habilis.ErrInvalid, "without a name"},
		{"deleting an unknown tool", del("send_email", "nope"), habilis.ErrNotFound, `"nope"`},
		{"a cancelled load", func(_ context.Context, r *selector.Router) (*selector.LoadReport, error) {
			return r.Load(cancelled, []habilis.Tool{changed}, selector.LoadOptions{Merge: true})
		}, context.Canceled, ""},
		{"a cancelled delete", func(_ context.Context, r *selector.Router) (*selector.LoadReport, error) {
			return r.Delete(cancelled, []string{"send_email"})
		}, context.Canceled, ""},
	}
}

// bigCatalog is the test catalog and enough other tools that merging
// writes and deletes patch the stored index instead of writing it whole.
func bigCatalog(t *testing.T) []habilis.Tool {
	tools := testCatalog(t)
	for i := range 520 {
		name := fmt.Sprintf("svc%d_archive_item_%d", i%13, i)
		tools = append(tools, habilis.Tool{Name: name, Description: fmt.Sprintf("Archive item %d of service %d.", i, i%13),
			Examples: []string{fmt.Sprintf("archive item %d in service %d", i, i%13), fmt.Sprintf("please store away record %d", i)}})
	}
	return tools
}

// TestRefusedWritesChangeNothing makes writes the router must refuse, to
// a small catalog and to one whose merges and deletes are patches, and
// checks that each says why, naming the tool, and leaves the catalog as
// it was: what the router shows and what the store holds.
func TestRefusedWritesChangeNothing(t *testing.T) {
	for _, big := range []bool{false, true} {
		r, st := open(t)
		tools := testCatalog(t)
		all := tools
		if big {
			all = bigCatalog(t)
		}
		if _, err := r.Load(t.Context(), all, selector.LoadOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, tt := range refusedWrites(tools) {
			before := viewOf(t, r)
			snap := snapshotVersion(t, st)
			rep, err := tt.write(t.Context(), r)
			if !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("%s (%d tools): %+v, %v; want an error wrapping %v saying %q", tt.name, len(all), rep, err, tt.is, tt.says)
			}
			if diff := cmp.Diff(before, viewOf(t, r)); diff != "" {
				t.Errorf("%s (%d tools) changed what the router shows (-before +after):\n%s", tt.name, len(all), diff)
			}
			if v := snapshotVersion(t, st); v != snap {
				t.Errorf("%s (%d tools): the store went from version %d to %d", tt.name, len(all), snap, v)
			}
		}
		if _, err := r.Delete(t.Context(), []string{"send_email"}); err != nil {
			t.Fatal(err)
		}
		si, err := st.Index(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if (si.Patch != nil) != big {
			t.Errorf("%d tools: a delete stored a patch: %v; want one only for the big catalog", len(all), si.Patch != nil)
		}
		si.Release()
	}
}

func snapshotVersion(t *testing.T, st habilis.Store) uint64 {
	t.Helper()
	snap, err := st.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return snap.Meta.Version
}

// TestDeleteNamedTwice checks that a delete naming a tool twice deletes
// it once, reported once and by name, whether the write is whole or a
// patch: a patched one handed both names to the store, which refused the
// batch, and reported the names in the order given.
func TestDeleteNamedTwice(t *testing.T) {
	for _, all := range [][]habilis.Tool{testCatalog(t), bigCatalog(t)} {
		r, _ := open(t)
		if _, err := r.Load(t.Context(), all, selector.LoadOptions{}); err != nil {
			t.Fatal(err)
		}
		rep, err := r.Delete(t.Context(), []string{"send_email", "lookup_word", "send_email"})
		if err != nil {
			t.Fatalf("Delete of a tool named twice, %d tools: %v", len(all), err)
		}
		if diff := cmp.Diff([]string{"lookup_word", "send_email"}, rep.Removed); diff != "" || len(r.Tools()) != len(all)-2 {
			t.Errorf("Delete of a tool named twice, %d tools: %d left, removed (-want +got):\n%s", len(all), len(r.Tools()), diff)
		}
	}
}
