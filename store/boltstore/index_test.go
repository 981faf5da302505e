package boltstore_test

import (
	"context"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/store/boltstore"
)

// TestIndexPatch checks what a write's Index and IndexPatch leave stored,
// and that a read-only store hands both out 8-byte aligned, as the
// selector reads them in place.
func TestIndexPatch(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "habilis.db")
	s := testutil.BoltStore(t, path)
	rec := func(name string) habilis.Record {
		return habilis.Record{Tool: habilis.Tool{Name: name}, Hash: name}
	}
	steps := []struct {
		name                string
		batch               habilis.Batch
		wantData, wantPatch string
	}{
		{"an index", habilis.Batch{Put: []habilis.Record{rec("a")}, Index: []byte("index one")}, "index one", ""},
		{"a patch", habilis.Batch{Put: []habilis.Record{rec("b")}, IndexPatch: []byte("patch one")}, "index one", "patch one"},
		{"another patch", habilis.Batch{Delete: []string{"b"}, IndexPatch: []byte("patch two")}, "index one", "patch two"},
		{"an index again", habilis.Batch{Put: []habilis.Record{rec("c")}, Index: []byte("index two")}, "index two", ""},
		{"neither", habilis.Batch{Put: []habilis.Record{rec("d")}}, "", ""},
		{"a patch of no index", habilis.Batch{Put: []habilis.Record{rec("e")}, IndexPatch: []byte("patch three")}, "", ""},
	}
	for i, step := range steps {
		step.batch.BaseVersion = uint64(i)
		if _, err := s.Write(ctx, &step.batch); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		si, err := s.Index(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := []string{string(si.Data), string(si.Patch)}
		si.Release()
		if want := []string{step.wantData, step.wantPatch}; !cmp.Equal(got, want) {
			t.Errorf("after %s: index and patch %q, want %q", step.name, got, want)
		}
	}
	if _, err := s.Write(ctx, &habilis.Batch{BaseVersion: uint64(len(steps)), Put: []habilis.Record{rec("f")}, Index: []byte("index three")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, &habilis.Batch{BaseVersion: uint64(len(steps) + 1), Put: []habilis.Record{rec("g")}, IndexPatch: []byte("patch four")}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	ro, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	si, err := ro.Index(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer si.Release()
	if string(si.Data) != "index three" || string(si.Patch) != "patch four" {
		t.Fatalf("read-only: index and patch %q and %q, want %q and %q", si.Data, si.Patch, "index three", "patch four")
	}
	for name, b := range map[string][]byte{"index": si.Data, "patch": si.Patch} {
		if addr := uintptr(unsafe.Pointer(unsafe.SliceData(b))); addr%8 != 0 {
			t.Errorf("read-only: the %s lies at %#x, not 8-byte aligned", name, addr)
		}
	}
}
