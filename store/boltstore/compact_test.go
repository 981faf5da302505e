package boltstore_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/store/boltstore"
	"github.com/habilis-router/habilis/store/storetest"
)

// TestCompactRefusals checks the compactions that must not happen and
// leave the store as it was, with no copy beside it: one while a writer
// holds the store (ErrUnavailable once the timeout passes), one of a
// store that is absent (naming it), one whose context is cancelled, and
// one whose check of the copy finds a problem (ErrDamaged).
func TestCompactRefusals(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "habilis.db")
	st := testutil.BoltStore(t, path)
	recs := storetest.Catalog(12, 3, true, 1)
	if _, err := st.Write(ctx, &habilis.Batch{Replace: true, Put: recs, Meta: storetest.Meta(0, 1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := boltstore.Compact(ctx, path, boltstore.CheckOptions{Timeout: 50e6}); !errors.Is(err, habilis.ErrUnavailable) {
		t.Errorf("Compact(store held by a writer) error = %v, want %v", err, habilis.ErrUnavailable)
	}
	st.Close()
	sound := readFile(t, path)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	refuse := func(*habilis.Snapshot) []string { return []string{"tool x: refused by the check"} }
	for _, tt := range []struct {
		name string
		ctx  context.Context
		path string
		opts boltstore.CheckOptions
		is   error
		says string
	}{
		{"absent", ctx, filepath.Join(dir, "absent.db"), boltstore.CheckOptions{}, os.ErrNotExist, "absent.db"},
		{"cancelled", cancelled, path, boltstore.CheckOptions{}, context.Canceled, path},
		{"copy refused by its check", ctx, path, boltstore.CheckOptions{Records: refuse}, habilis.ErrDamaged, "refused by the check"},
	} {
		rep, err := boltstore.Compact(tt.ctx, tt.path, tt.opts)
		if !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("Compact(%s) = %+v, %v; want an error wrapping %v saying %q", tt.name, rep, err, tt.is, tt.says)
		}
		if !bytes.Equal(readFile(t, path), sound) {
			t.Errorf("Compact(%s) changed the store", tt.name)
		}
		if _, err := os.Stat(path + ".compact"); !os.IsNotExist(err) {
			t.Errorf("Compact(%s) left its copy beside the store: %v", tt.name, err)
		}
	}
}

// TestCheckIndex checks that Check hands the stored index and its patch
// to CheckOptions.Index and lists what it finds in each, named as the
// index's or the patch's, and leaves the index alone without the option.
func TestCheckIndex(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "habilis.db")
	st := testutil.BoltStore(t, path)
	recs := storetest.Catalog(4, 2, true, 1)
	meta, err := st.Write(ctx, &habilis.Batch{Replace: true, Put: recs, Meta: storetest.Meta(0, 1), Index: []byte("the index")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Write(ctx, &habilis.Batch{BaseVersion: meta.Version, Put: recs[:1], Meta: meta, IndexPatch: []byte("a patch")}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	var seen []string
	check := func(data []byte) []string {
		seen = append(seen, string(data))
		return []string{"looked at " + string(data)}
	}
	rep, err := boltstore.Check(ctx, path, boltstore.CheckOptions{Index: check})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"index: looked at the index", "index patch: looked at a patch"}, rep.Problems); diff != "" {
		t.Errorf("Check problems (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"the index", "a patch"}, seen); diff != "" {
		t.Errorf("Check handed the index check (-want +got):\n%s", diff)
	}
	if rep, err := boltstore.Check(ctx, path, boltstore.CheckOptions{}); err != nil || !rep.Sound() {
		t.Errorf("Check without an index check = %+v, %v; want a sound store", rep, err)
	}
}
