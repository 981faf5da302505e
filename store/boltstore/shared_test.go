package boltstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/store/boltstore"
	"github.com/habilis-router/habilis/store/storetest"
)

func openShared(t *testing.T, path string, opts boltstore.Options) *boltstore.Shared {
	t.Helper()
	s, err := boltstore.OpenShared(path, opts)
	if err != nil {
		t.Fatalf("OpenShared(%q) error = %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSharedConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Open: func(t *testing.T) habilis.Store {
			return openShared(t, filepath.Join(t.TempDir(), "habilis.db"), boltstore.Options{})
		},
		Reopen: func(t *testing.T, closed habilis.Store) habilis.Store {
			return openShared(t, closed.(*boltstore.Shared).Path(), boltstore.Options{})
		},
		Share: func(t *testing.T, open habilis.Store) habilis.Store {
			return openShared(t, open.(*boltstore.Shared).Path(), boltstore.Options{})
		},
	})
}

// TestSharedReleasesFile checks that a Shared store leaves the file to
// other processes between its calls, and waits for them during one.
func TestSharedReleasesFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "habilis.db")
	shared := openShared(t, path, boltstore.Options{Timeout: 50 * time.Millisecond})
	follower := openShared(t, path, boltstore.Options{ReadOnly: true, Timeout: 50 * time.Millisecond})

	// Another process (habilis load) takes the file for writing between
	// the Shared stores' calls.
	other, err := boltstore.Open(path, boltstore.Options{Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open beside Shared stores: %v", err)
	}
	m, err := other.Write(ctx, &habilis.Batch{Put: storetest.Catalog(2, 2, false, 1), Meta: storetest.Meta(8, 1)})
	if err != nil {
		t.Fatal(err)
	}
	// While it holds the file, their calls wait and then give up.
	if _, err := follower.Version(ctx); !errors.Is(err, habilis.ErrUnavailable) {
		t.Errorf("Version() while another process holds the file: error = %v, want ErrUnavailable", err)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if v, err := follower.Version(ctx); err != nil || v != m.Version {
		t.Errorf("Version() after the other process closed the file = %d, %v; want %d", v, err, m.Version)
	}
	m2, err := shared.Write(ctx, &habilis.Batch{BaseVersion: m.Version, Delete: []string{"tool-0000"}, Meta: storetest.Meta(8, 2)})
	if err != nil {
		t.Fatal(err)
	}
	if snap := storetest.Snapshot(t, follower); snap.Meta.Version != m2.Version || len(snap.Records) != 1 {
		t.Errorf("follower's Snapshot() = version %d, %d tools; want %d, 1", snap.Meta.Version, len(snap.Records), m2.Version)
	}
	if _, err := follower.Write(ctx, &habilis.Batch{BaseVersion: m2.Version, Meta: storetest.Meta(8, 3)}); !errors.Is(err, habilis.ErrReadOnly) {
		t.Errorf("Write() through a read-only Shared store: error = %v, want %v", err, habilis.ErrReadOnly)
	}
}

// BenchmarkVersion reads the version of a 1,000-tool catalog through a
// Store, which holds the file open, and through a Shared one, which opens
// it for each call: what following a store costs per check.
func BenchmarkVersion(b *testing.B) {
	path := filepath.Join(b.TempDir(), "habilis.db")
	st, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := st.Write(ctx, &habilis.Batch{Put: storetest.Catalog(1000, 5, true, 1), Meta: storetest.Meta(0, 1)}); err != nil {
		b.Fatal(err)
	}
	b.Run("store", func(b *testing.B) {
		for b.Loop() {
			if _, err := st.Version(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	st.Close()
	shared, err := boltstore.OpenShared(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer shared.Close()
	b.Run("shared", func(b *testing.B) {
		for b.Loop() {
			if _, err := shared.Version(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}
