package selector_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/boltstore"
	"github.com/habilis-router/habilis/store/memstore"
)

// storedConfigs are the two kinds of stored index: the lexical
// embedder's merged space, and a dense embedder's spaces beside the
// lexical documents.
var storedConfigs = []struct {
	name string
	cfg  func(*slog.Logger) selector.Config
}{
	{"lexical", func(l *slog.Logger) selector.Config {
		return selector.Config{Embedder: lexical.New(lexical.Options{}), Logger: l}
	}},
	{"dense", func(l *slog.Logger) selector.Config {
		return selector.Config{Embedder: testutil.HashEmbedder{Dim: 24}, Lexical: lexical.New(lexical.Options{}), Logger: l}
	}},
}

// view is what a router shows of a catalog: decisions in every mode,
// tools, gates and calibration.
type view struct {
	Decisions []*habilis.Decision
	Tools     []habilis.Tool
	Infos     []*selector.ToolInfo
	Cal       selector.Calibration
	Version   uint64
}

func viewOf(t *testing.T, r *selector.Router) view {
	t.Helper()
	ctx := context.Background()
	var v view
	for _, q := range []string{"please email alice that the report is ready", "is it going to rain in Madrid on Sunday",
		"compose a sonnet about autumn leaves", "convert 40 dollars"} {
		for _, m := range []habilis.Mode{habilis.ModeHybrid, habilis.ModeCentroid, habilis.ModeDescription} {
			d, err := r.Select(ctx, q, habilis.SelectOptions{Mode: m, K: 4, FailOpen: true, Pinned: []string{"lookup_word"}})
			if err != nil {
				t.Fatalf("Select(%q, %s): %v", q, m, err)
			}
			v.Decisions = append(v.Decisions, d)
		}
	}
	v.Tools = r.Tools()
	for _, tool := range v.Tools {
		info, err := r.Tool(tool.Name)
		if err != nil {
			t.Fatal(err)
		}
		v.Infos = append(v.Infos, info)
	}
	v.Cal, v.Version = r.Calibration(), r.Version()
	return v
}

// next is v as of the next catalog version, with nothing else changed.
func (v *view) next() {
	v.Version++
	for _, d := range v.Decisions {
		d.CatalogVersion++
	}
}

// TestStoredIndex checks that the router that wrote a catalog, and one
// opened over its store afterwards, writable or read-only, both serving
// the stored index, show exactly what a router with the index built in
// memory shows.
func TestStoredIndex(t *testing.T) {
	for _, sc := range storedConfigs {
		t.Run(sc.name, func(t *testing.T) {
			// The index built in memory, over a store that keeps none.
			mem, err := selector.New(context.Background(), memstore.New(), sc.cfg(nil))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := mem.Load(context.Background(), testCatalog(t), selector.LoadOptions{}); err != nil {
				t.Fatal(err)
			}
			want := viewOf(t, mem)
			path := filepath.Join(t.TempDir(), "habilis.db")
			st := openStore(t, path)
			r, err := selector.New(context.Background(), st, sc.cfg(nil))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Load(context.Background(), testCatalog(t), selector.LoadOptions{}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, viewOf(t, r)); diff != "" {
				t.Errorf("the router that wrote the index differs from one built in memory (-memory +written):\n%s", diff)
			}
			r.Close()
			st.Close()
			for _, ro := range []bool{false, true} {
				var logs bytes.Buffer
				st, err := boltstore.Open(path, boltstore.Options{ReadOnly: ro})
				if err != nil {
					t.Fatal(err)
				}
				r, err := selector.New(context.Background(), st, sc.cfg(slog.New(slog.NewTextHandler(&logs, nil))))
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, viewOf(t, r)); diff != "" {
					t.Errorf("read-only %v: the reopened router differs (-memory +reopened):\n%s", ro, diff)
				}
				if logs.Len() > 0 {
					t.Errorf("read-only %v: the stored index was not used:\n%s", ro, logs.String())
				}
				r.Close()
				st.Close()
			}
		})
	}
}

// TestStoreWithoutIndex checks a store whose last write stored no index
// (an earlier release's): the router says so, builds the index from the
// records and answers alike, and the next load stores the index even
// though the catalog is unchanged.
func TestStoreWithoutIndex(t *testing.T) {
	ctx := context.Background()
	r, st := loaded(t)
	want := viewOf(t, r)
	r.Close()
	snap, err := st.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A write without an index, as a release before indexes were stored
	// made.
	if _, err := st.Write(ctx, &habilis.Batch{BaseVersion: snap.Meta.Version, Meta: snap.Meta}); err != nil {
		t.Fatal(err)
	}
	want.next()
	var logs bytes.Buffer
	cfg := selector.Config{Embedder: lexical.New(lexical.Options{}), Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	r, err = selector.New(ctx, st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "holds no index") {
		t.Errorf("opening a store without an index logged %q, want a line saying it holds none", logs.String())
	}
	if diff := cmp.Diff(want, viewOf(t, r)); diff != "" {
		t.Errorf("router over a store without an index differs (-before +after):\n%s", diff)
	}
	rep, err := r.Load(ctx, testCatalog(t), selector.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Version != want.Version+1 || rep.Embedded != 0 || len(rep.Added)+len(rep.Updated)+len(rep.Removed) != 0 {
		t.Errorf("load of the unchanged catalog = %+v, want version %d with nothing embedded or changed", rep, want.Version+1)
	}
	r.Close()
	logs.Reset()
	r, err = selector.New(ctx, st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if logs.Len() > 0 {
		t.Errorf("after the load, the stored index was not used:\n%s", logs.String())
	}
	want.next()
	if diff := cmp.Diff(want, viewOf(t, r)); diff != "" {
		t.Errorf("router over the stored index differs (-before +after):\n%s", diff)
	}
}

// TestStoreClosesAfterRouter checks that closing a store whose index a
// router still reads in place, the router's own write's or one it
// opened, writable or read-only, leaves the file open (and locked, where
// the store reads in place: everywhere but 32-bit systems and Windows) until
// the router is closed, and that the router then refuses selections
// instead of reading unmapped memory.
func TestStoreClosesAfterRouter(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "habilis.db")
	for _, tc := range []struct {
		name string
		load bool
		opts boltstore.Options
	}{{"written", true, boltstore.Options{}}, {"writable", false, boltstore.Options{}}, {"read-only", false, boltstore.Options{ReadOnly: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := boltstore.Open(path, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			r := lexicalRouter(t, st)
			if tc.load {
				if _, err := r.Load(ctx, testCatalog(t), selector.LoadOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			// A writable store on a 32-bit system or Windows copies the
			// index out, and lets the file go.
			if st.IndexInPlace() {
				if _, err := boltstore.Open(path, boltstore.Options{Timeout: time.Millisecond}); !errors.Is(err, habilis.ErrUnavailable) {
					t.Errorf("Open while the router reads the index in place: %v, want ErrUnavailable", err)
				}
			}
			if _, err := r.Select(ctx, "send an email to bob", habilis.SelectOptions{}); err != nil {
				t.Errorf("Select after the store's Close, before the router's: %v", err)
			}
			r.Close()
			if _, err := r.Select(ctx, "send an email to bob", habilis.SelectOptions{}); err == nil {
				t.Error("Select after the router's Close: no error")
			}
			again, err := boltstore.Open(path, boltstore.Options{Timeout: time.Millisecond})
			if err != nil {
				t.Fatalf("Open after the router's Close: %v", err)
			}
			again.Close()
		})
	}
}

// TestStoredIndexWithExampleWeight checks a catalog whose calibration
// weights the nearest example, which a stored index cannot serve alone:
// the router builds the index from the records, and reloading the
// unchanged catalog still writes nothing.
func TestStoredIndexWithExampleWeight(t *testing.T) {
	ctx := context.Background()
	r, st := loaded(t)
	cal := r.Calibration()
	cal.Weights.Example = 0.2
	if _, err := r.SetCalibration(ctx, cal); err != nil {
		t.Fatal(err)
	}
	want := viewOf(t, r)
	r.Close()
	r = lexicalRouter(t, st)
	defer r.Close()
	if diff := cmp.Diff(want, viewOf(t, r)); diff != "" {
		t.Errorf("reopened router differs (-before +after):\n%s", diff)
	}
	rep, err := r.Load(ctx, testCatalog(t), selector.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Version != want.Version {
		t.Errorf("reloading the unchanged catalog wrote version %d, want it to stay at %d", rep.Version, want.Version)
	}
}
