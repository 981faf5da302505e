package qdrantstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/store/qdrantstore/qdranttest"
	"github.com/habilis-router/habilis/store/storetest"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// uniqueCatalog returns a catalog name no other test uses.
func uniqueCatalog() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "test-" + hex.EncodeToString(b)
}

// harness opens stores on fresh catalogs of the Qdrant at base.
func harness(base Config) storetest.Harness {
	return storetest.Harness{
		Open: func(t *testing.T) habilis.Store {
			cfg := base
			cfg.Catalog = uniqueCatalog()
			s, err := Open(context.Background(), cfg)
			if err != nil {
				t.Fatalf("Open(%s) error = %v", cfg.addr(), err)
			}
			t.Cleanup(func() { purge(t, cfg) })
			return s
		},
		Reopen: func(t *testing.T, closed habilis.Store) habilis.Store {
			s, err := Open(context.Background(), closed.(*Store).cfg)
			if err != nil {
				t.Fatalf("Open() again error = %v", err)
			}
			return s
		},
		Share: func(t *testing.T, open habilis.Store) habilis.Store {
			s, err := Open(context.Background(), open.(*Store).cfg)
			if err != nil {
				t.Fatalf("Open() beside another store error = %v", err)
			}
			return s
		},
	}
}

// purge deletes every collection of cfg's catalog (their aliases go with
// them).
func purge(t *testing.T, cfg Config) {
	t.Helper()
	s, err := Open(context.Background(), cfg)
	if err != nil {
		t.Errorf("purge: %v", err)
		return
	}
	defer s.Close()
	ctx := context.Background()
	all, err := s.client.ListCollections(ctx)
	if err != nil {
		t.Errorf("purge: list collections: %v", err)
		return
	}
	for _, c := range all {
		if strings.HasPrefix(c, s.names.prefix) {
			if err := s.client.DeleteCollection(ctx, c); err != nil {
				t.Errorf("purge: delete %s: %v", c, err)
			}
		}
	}
}

// openOther opens a second store on s's catalog, as another process
// would, closed when the test ends.
func openOther(t *testing.T, s *Store) *Store {
	t.Helper()
	other, err := Open(context.Background(), s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	return other
}

// TestConformance runs the store suite against a real Qdrant.
func TestConformance(t *testing.T) {
	addr := os.Getenv("HABILIS_QDRANT_ADDR")
	if addr == "" {
		t.Skip("set HABILIS_QDRANT_ADDR=localhost:6334 to run against Qdrant (docker compose up qdrant)")
	}
	cfg, err := ParseAddr(addr)
	if err != nil {
		t.Fatalf("HABILIS_QDRANT_ADDR: %v", err)
	}
	for _, layout := range []Layout{LayoutPerTool, LayoutShared} {
		t.Run(string(layout), func(t *testing.T) {
			cfg.Layout = layout
			storetest.Run(t, harness(cfg))
		})
	}
}

// TestConformanceFake runs the store suite against the in-memory fake,
// which exercises the request sequences in every test run.
func TestConformanceFake(t *testing.T) {
	for _, layout := range []Layout{LayoutPerTool, LayoutShared} {
		t.Run(string(layout), func(t *testing.T) {
			if testing.Short() && layout == LayoutPerTool {
				// Its LargeBatch test makes some 2,000 collections.
				t.Skip("the per-tool layout's suite takes a while; run without -short")
			}
			_, cfg := startFake(t)
			cfg.Layout = layout
			storetest.Run(t, harness(cfg))
		})
	}
}

func TestOpenUnreachable(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := lis.Addr().(*net.TCPAddr).Port
	lis.Close() // a closed loopback port refuses connections at once

	s, err := Open(context.Background(), Config{Host: "127.0.0.1", Port: port})
	if err == nil {
		s.Close()
		t.Fatalf("Open(closed port) succeeded")
	}
	if !errors.Is(err, habilis.ErrUnavailable) {
		t.Errorf("Open(closed port) error = %v, want ErrUnavailable", err)
	}
	if want := fmt.Sprintf("connect to qdrant at 127.0.0.1:%d: ", port); !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Open(closed port) error = %q, want it to start with %q", err, want)
	}
}

func TestOpenInvalidConfig(t *testing.T) {
	_, err := Open(context.Background(), Config{Catalog: "no_underscores"})
	if !errors.Is(err, habilis.ErrInvalid) {
		t.Errorf("Open(bad catalog) error = %v, want ErrInvalid", err)
	}
}

// startFake serves a fake Qdrant and returns it with a Config pointing at
// it.
func startFake(t *testing.T) (*qdranttest.Server, Config) { return startFakeB(t) }

func startFakeB(tb testing.TB) (*qdranttest.Server, Config) {
	f := qdranttest.Start(tb)
	return f, Config{Host: f.Host(), Port: f.Port()}
}

// openFake opens a store on a fake Qdrant.
func openFake(t *testing.T, layout Layout) (*qdranttest.Server, *Store) {
	t.Helper()
	f, cfg := startFake(t)
	cfg.Layout = layout
	cfg.Catalog = "shop"
	cfg.BatchSize = 4 // several pages and batches even for small catalogs
	s, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return f, s
}

func TestWriteLayoutInQdrant(t *testing.T) {
	for _, layout := range []Layout{LayoutPerTool, LayoutShared} {
		t.Run(string(layout), func(t *testing.T) {
			f, s := openFake(t, layout)
			ctx := context.Background()
			recs := []habilis.Record{storetest.Record("a.b", 3, false, 1), storetest.Record("empty", 0, false, 2)}
			m1, err := s.Write(ctx, &habilis.Batch{Put: recs, Meta: storetest.Meta(8, 1)})
			if err != nil {
				t.Fatal(err)
			}
			aliases := f.Aliases()
			g1 := strings.TrimSuffix(strings.TrimPrefix(aliases["habilis_shop_tools"], "habilis_shop_"), "_tools")
			if _, g, ok := s.names.parseCollection(aliases["habilis_shop_tools"]); !ok || g != g1 || !strings.HasPrefix(g1, "v1_") {
				t.Fatalf("tools alias points at %q, want a version 1 collection", aliases["habilis_shop_tools"])
			}
			want := s.names.plan(g1, layout, recs, 8, false).aliases
			if diff := cmp.Diff(want, aliases); diff != "" {
				t.Errorf("aliases after the first write mismatch (-want +got):\n%s", diff)
			}
			wantCollections := []string{"habilis_shop_commits"}
			for _, c := range want {
				wantCollections = append(wantCollections, c)
			}
			if diff := cmp.Diff(wantCollections, f.Collections(), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("collections mismatch (-want +got):\n%s", diff)
			}
			if layout == LayoutShared {
				idx := f.Indexes(aliases["habilis_shop_examples"])
				if diff := cmp.Diff([]string{"tool:tenant"}, idx); diff != "" {
					t.Errorf("shared examples indexes mismatch (-want +got):\n%s", diff)
				}
			}

			// The second write replaces every collection and drops the old ones.
			_, err = s.Write(ctx, &habilis.Batch{BaseVersion: m1.Version, Delete: []string{"a.b"}, Meta: storetest.Meta(8, 1)})
			if err != nil {
				t.Fatal(err)
			}
			aliases = f.Aliases()
			for _, c := range f.Collections() {
				if strings.Contains(c, g1) {
					t.Errorf("collection %s of version 1 survived version 2", c)
				}
			}
			if _, ok := aliases[s.names.toolExamplesAlias("a.b")]; ok {
				t.Errorf("deleted tool's alias survived")
			}
			// Every collection but the ledger has its alias.
			if len(aliases) != len(f.Collections())-1 {
				t.Errorf("%d aliases for %d collections and the ledger: %v", len(aliases), len(f.Collections())-1, aliases)
			}
		})
	}
}

// TestFailedWriteLeavesNoTrace fails each step of a write before its
// commit, the commit included: the catalog, its collections and aliases
// stay as they were.
func TestFailedWriteLeavesNoTrace(t *testing.T) {
	for _, failing := range []string{"Create", "CreateFieldIndex", "Upsert", "commit"} {
		t.Run(failing, func(t *testing.T) {
			f, s := openFake(t, LayoutShared)
			ctx := context.Background()
			w := writeFirst(t, f, s)
			var calls atomic.Int32
			f.SetHook(func(method, collection string) error {
				if failing == "commit" {
					if method == "Upsert" && collection == s.names.commitsCollection() {
						return status.Error(codes.Internal, "injected failure")
					}
					return nil
				}
				// Fail the second call of the method, once some of the new
				// version exists.
				if method == failing {
					if calls.Add(1) == 2 || failing != "Create" && failing != "Upsert" {
						return status.Error(codes.Internal, "injected failure")
					}
				}
				return nil
			})
			_, err := s.Write(ctx, &habilis.Batch{BaseVersion: w.version, Put: []habilis.Record{storetest.Record("new", 9, false, 2)}, Meta: storetest.Meta(8, 2)})
			f.SetHook(nil)
			if err == nil || !strings.Contains(err.Error(), "injected failure") {
				t.Fatalf("Write with failing %s: error = %v, want the injected failure", failing, err)
			}
			checkUnchanged(t, f, s, "the failed write", w)
		})
	}
}

// TestFailedPublishKeepsAliases fails the alias switch after a commit: the
// write has committed and habilis reads the new version, while the aliases
// keep naming the previous one, whose collections stay, until the next
// write points them.
func TestFailedPublishKeepsAliases(t *testing.T) {
	for _, failing := range []string{"ListAliases", "UpdateAliases"} {
		t.Run(failing, func(t *testing.T) {
			f, s := openFake(t, LayoutShared)
			ctx := context.Background()
			w := writeFirst(t, f, s)
			f.SetHook(func(method, collection string) error {
				if method == failing {
					return status.Error(codes.Internal, "injected failure")
				}
				return nil
			})
			m, err := s.Write(ctx, &habilis.Batch{BaseVersion: w.version, Put: []habilis.Record{storetest.Record("new", 9, false, 2)}, Meta: storetest.Meta(8, 2)})
			f.SetHook(nil)
			if err != nil {
				t.Fatalf("Write with failing %s: %v, want the commit to stand", failing, err)
			}
			if snap, err := s.Snapshot(ctx); err != nil || snap.Meta.Version != m.Version || len(snap.Records) != len(w.snap.Records)+1 {
				t.Fatalf("Snapshot() after the commit = %v; want version %d with the new tool", err, m.Version)
			}
			if diff := cmp.Diff(w.aliases, f.Aliases()); diff != "" {
				t.Errorf("aliases after a failed switch mismatch (-before +after):\n%s", diff)
			}
			for _, c := range w.collections {
				if !slices.Contains(f.Collections(), c) {
					t.Errorf("collection %s, which the aliases name, was dropped", c)
				}
			}

			m, err = s.Write(ctx, &habilis.Batch{BaseVersion: m.Version, Delete: []string{"new"}, Meta: storetest.Meta(8, 3)})
			if err != nil {
				t.Fatal(err)
			}
			for a, c := range f.Aliases() {
				if v, _, ok := s.names.parseCollection(c); !ok || v != m.Version {
					t.Errorf("alias %s names %s after the next write, want a collection of version %d", a, c, m.Version)
				}
			}
			if n := len(f.Collections()); n != len(w.collections) {
				t.Errorf("%d collections after the next write, want %d: %v", n, len(w.collections), f.Collections())
			}
		})
	}
}

// TestCommitOutcomeUnknown makes Qdrant unreachable from the commit on: the
// write cannot tell whether it committed, says so, and leaves what it built;
// the next write drops it.
func TestCommitOutcomeUnknown(t *testing.T) {
	f, s := openFake(t, LayoutShared)
	ctx := context.Background()
	w := writeFirst(t, f, s)
	var down atomic.Bool
	f.SetHook(func(method, collection string) error {
		if method == "Upsert" && collection == s.names.commitsCollection() {
			down.Store(true)
		}
		if down.Load() {
			return status.Error(codes.Unavailable, "injected: down")
		}
		return nil
	})
	_, err := s.Write(ctx, &habilis.Batch{BaseVersion: w.version, Put: []habilis.Record{storetest.Record("new", 9, false, 2)}, Meta: storetest.Meta(8, 2)})
	f.SetHook(nil)
	if !errors.Is(err, habilis.ErrUnavailable) || !strings.Contains(err.Error(), "outcome is unknown") {
		t.Fatalf("Write with Qdrant gone at the commit: error = %v, want ErrUnavailable saying the outcome is unknown", err)
	}
	if len(f.Collections()) <= len(w.collections) {
		t.Errorf("the write dropped what it built although it may have committed")
	}
	// It had not: the catalog is as it was, and the next write cleans up.
	if snap, err := s.Snapshot(ctx); err != nil || snap.Meta.Version != w.version {
		t.Fatalf("Snapshot() = %v, want version %d", err, w.version)
	}
	m, err := s.Write(ctx, &habilis.Batch{BaseVersion: w.version, Put: []habilis.Record{storetest.Record("again", 2, false, 3)}, Meta: storetest.Meta(8, 3)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range f.Collections() {
		if v, _, ok := s.names.parseCollection(c); ok && v != m.Version {
			t.Errorf("collection %s left after the next write", c)
		}
	}
}

func TestRetriesUnavailable(t *testing.T) {
	f, s := openFake(t, LayoutPerTool)
	var failures atomic.Int32
	f.SetHook(func(method, collection string) error {
		if method == "Upsert" && failures.Load() < 2 {
			failures.Add(1)
			return status.Error(codes.Unavailable, "injected: try again")
		}
		return nil
	})
	recs := storetest.Catalog(2, 2, false, 1)
	if _, err := s.Write(context.Background(), &habilis.Batch{Put: recs, Meta: storetest.Meta(8, 1)}); err != nil {
		t.Fatalf("Write with two transient failures: %v", err)
	}
	if n := failures.Load(); n != 2 {
		t.Errorf("injected %d failures, want 2", n)
	}

	// Unavailable for longer than the retries last is ErrUnavailable.
	f.SetHook(func(method, collection string) error { return status.Error(codes.Unavailable, "injected: down") })
	_, err := s.Snapshot(context.Background())
	f.SetHook(nil)
	if !errors.Is(err, habilis.ErrUnavailable) {
		t.Errorf("Snapshot with Qdrant down: error = %v, want ErrUnavailable", err)
	}
}

// TestReplaceReadsNoRecords checks that a replacing write reads the live
// version only, not the records it replaces.
func TestReplaceReadsNoRecords(t *testing.T) {
	f, s := openFake(t, LayoutPerTool)
	ctx := context.Background()
	m, err := s.Write(ctx, &habilis.Batch{Put: storetest.Catalog(3, 2, false, 1), Meta: storetest.Meta(8, 1)})
	if err != nil {
		t.Fatal(err)
	}
	var scrolls atomic.Int32
	f.SetHook(func(method, collection string) error {
		if method == "Scroll" && collection != s.names.commitsCollection() {
			scrolls.Add(1)
		}
		return nil
	})
	recs := storetest.Catalog(2, 3, false, 7)
	_, err = s.Write(ctx, &habilis.Batch{BaseVersion: m.Version, Replace: true, Put: recs, Meta: storetest.Meta(8, 2)})
	f.SetHook(nil)
	if err != nil {
		t.Fatalf("Write(replace) error = %v", err)
	}
	if n := scrolls.Load(); n != 0 {
		t.Errorf("Write(replace) scrolled %d times, want 0", n)
	}
	snap, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(recs, snap.Records); diff != "" {
		t.Errorf("Snapshot() after Write(replace) mismatch (-want +got):\n%s", diff)
	}
}

func TestConcurrentWriterDetected(t *testing.T) {
	f, s := openFake(t, LayoutPerTool)
	ctx := context.Background()
	m, err := s.Write(ctx, &habilis.Batch{Put: storetest.Catalog(2, 2, false, 1), Meta: storetest.Meta(8, 1)})
	if err != nil {
		t.Fatal(err)
	}
	// Another process's store on the same catalog commits while s builds.
	other := openOther(t, s)
	var once atomic.Bool
	f.SetHook(func(method, collection string) error {
		if method == "Upsert" && once.CompareAndSwap(false, true) {
			if _, err := other.Write(ctx, &habilis.Batch{BaseVersion: m.Version, Put: []habilis.Record{storetest.Record("theirs", 2, false, 3)}, Meta: storetest.Meta(8, 3)}); err != nil {
				t.Errorf("other Write: %v", err)
			}
		}
		return nil
	})
	_, err = s.Write(ctx, &habilis.Batch{BaseVersion: m.Version, Put: []habilis.Record{storetest.Record("mine", 2, false, 4)}, Meta: storetest.Meta(8, 4)})
	f.SetHook(nil)
	if !errors.Is(err, habilis.ErrConflict) {
		t.Fatalf("Write racing another writer: error = %v, want ErrConflict", err)
	}
	snap, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range snap.Records {
		names = append(names, r.Tool.Name)
	}
	if diff := cmp.Diff([]string{"theirs", "tool-0000", "tool-0001"}, names); diff != "" {
		t.Errorf("tools after the race mismatch (-want +got):\n%s", diff)
	}
	for _, c := range f.Collections() {
		if _, g, _ := s.names.parseCollection(c); !strings.HasPrefix(g, "v2_") && c != s.names.commitsCollection() {
			t.Errorf("collection %s left behind", c)
		}
	}
}

func TestSnapshotDimensionMismatch(t *testing.T) {
	f, s := openFake(t, LayoutPerTool)
	ctx := context.Background()
	if _, err := s.Write(ctx, &habilis.Batch{Put: storetest.Catalog(2, 2, false, 1), Meta: storetest.Meta(8, 1)}); err != nil {
		t.Fatal(err)
	}
	// Someone recreates the tools collection with another size.
	f.SetVectorSize("habilis_shop_tools", vecDescription, 384)
	_, err := s.Snapshot(ctx)
	if !errors.Is(err, habilis.ErrInvalid) || !strings.Contains(err.Error(), "vector size 384") || !strings.Contains(err.Error(), "dimension 8") {
		t.Errorf("Snapshot of a resized collection: error = %v, want ErrInvalid naming 384 and 8", err)
	}
}

func TestWriteDimensionMismatch(t *testing.T) {
	_, s := openFake(t, LayoutPerTool)
	_, err := s.Write(context.Background(), &habilis.Batch{Put: storetest.Catalog(2, 2, false, 1), Meta: storetest.Meta(768, 1)})
	if !errors.Is(err, habilis.ErrInvalid) || !strings.Contains(err.Error(), "vector size 8 does not match the embedder's dimension 768") {
		t.Errorf("Write of size-8 vectors for a 768 embedder: error = %v, want ErrInvalid naming both", err)
	}
}

func TestExamples(t *testing.T) {
	for _, layout := range []Layout{LayoutPerTool, LayoutShared} {
		t.Run(string(layout), func(t *testing.T) {
			_, s := openFake(t, layout)
			ctx := context.Background()
			if _, _, err := s.Examples(ctx, "x"); !errors.Is(err, habilis.ErrNotFound) {
				t.Errorf("Examples on an empty catalog: error = %v, want ErrNotFound", err)
			}
			recs := []habilis.Record{storetest.Record("a", 6, true, 1), storetest.Record("b", 5, true, 2), storetest.Record("none", 0, true, 3)}
			if _, err := s.Write(ctx, &habilis.Batch{Put: recs, Meta: storetest.Meta(0, 1)}); err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				texts, vecs, err := s.Examples(ctx, r.Tool.Name)
				if err != nil {
					t.Fatalf("Examples(%q): %v", r.Tool.Name, err)
				}
				if diff := cmp.Diff(r.Tool.Examples, texts); diff != "" {
					t.Errorf("Examples(%q) texts mismatch (-want +got):\n%s", r.Tool.Name, diff)
				}
				if diff := cmp.Diff(r.ExampleVectors, vecs); diff != "" {
					t.Errorf("Examples(%q) vectors mismatch (-want +got):\n%s", r.Tool.Name, diff)
				}
			}
			if _, _, err := s.Examples(ctx, "unknown"); !errors.Is(err, habilis.ErrNotFound) {
				t.Errorf("Examples(unknown): error = %v, want ErrNotFound", err)
			}
		})
	}
}

// TestCommitRace lets two writers, each in a store of its own as in two
// processes, build the same version from the same base: when the first
// reaches its commit, the other writes all the way through its own. The
// first then finds the version taken in the ledger and gets ErrConflict
// although every check before its commit passed; its work is dropped.
func TestCommitRace(t *testing.T) {
	f, s := openFake(t, LayoutPerTool)
	ctx := context.Background()
	w := writeFirst(t, f, s)
	other := openOther(t, s)
	var reached atomic.Int32
	f.SetHook(func(method, collection string) error {
		if method == "Upsert" && collection == s.names.commitsCollection() && reached.Add(1) == 1 {
			if _, err := other.Write(ctx, &habilis.Batch{BaseVersion: w.version, Put: []habilis.Record{storetest.Record("theirs", 2, false, 3)}, Meta: storetest.Meta(8, 3)}); err != nil {
				t.Errorf("the other write: %v", err)
			}
		}
		return nil
	})
	_, err := s.Write(ctx, &habilis.Batch{BaseVersion: w.version, Put: []habilis.Record{storetest.Record("mine", 2, false, 4)}, Meta: storetest.Meta(8, 4)})
	f.SetHook(nil)
	if !errors.Is(err, habilis.ErrConflict) || !strings.Contains(err.Error(), "committed by another writer") {
		t.Fatalf("Write losing the commit: error = %v, want ErrConflict from the ledger", err)
	}
	snap, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if names := storetestNames(snap.Records); snap.Meta.Version != w.version+1 || !slices.Contains(names, "theirs") || slices.Contains(names, "mine") {
		t.Errorf("after the race: version %d, tools %v; want version %d with theirs and not mine", snap.Meta.Version, names, w.version+1)
	}
	for _, c := range f.Collections() {
		if v, _, ok := s.names.parseCollection(c); ok && v != snap.Meta.Version {
			t.Errorf("collection %s left behind", c)
		}
	}
}

// TestCatalogWithoutLedger reads a catalog written before the ledger
// existed (its meta alias alone says which version is live) and writes
// on it: the write starts the ledger.
func TestCatalogWithoutLedger(t *testing.T) {
	f, s := openFake(t, LayoutPerTool)
	ctx := context.Background()
	w := writeFirst(t, f, s)
	f.DeleteCollection(s.names.commitsCollection())
	if v, err := s.Version(ctx); err != nil || v != w.version {
		t.Fatalf("Version() without a ledger = %d, %v; want %d", v, err, w.version)
	}
	checkUnchanged(t, f, s, "dropping the ledger", written{version: w.version, collections: slices.DeleteFunc(w.collections, func(c string) bool { return c == s.names.commitsCollection() }), aliases: w.aliases, snap: w.snap})
	m, err := s.Write(ctx, &habilis.Batch{BaseVersion: w.version, Put: []habilis.Record{storetest.Record("new", 2, false, 5)}, Meta: storetest.Meta(8, 5)})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := s.Version(ctx); err != nil || v != m.Version || !slices.Contains(f.Collections(), s.names.commitsCollection()) {
		t.Errorf("Version() after the write = %d, %v; want %d, from a new ledger", v, err, m.Version)
	}
}

// TestPublishAfterNewerCommit delays a write's alias switch until a newer
// version has committed, switched the aliases and dropped the older
// collections: the late switch fails without disturbing the aliases, which
// stay on the newest version, and the write, which had committed, stands.
func TestPublishAfterNewerCommit(t *testing.T) {
	for _, layout := range []Layout{LayoutPerTool, LayoutShared} {
		t.Run(string(layout), func(t *testing.T) {
			f, s := openFake(t, layout)
			ctx := context.Background()
			w := writeFirst(t, f, s)
			other := openOther(t, s)
			var once atomic.Bool
			f.SetHook(func(method, collection string) error {
				if method == "UpdateAliases" && once.CompareAndSwap(false, true) {
					if _, err := other.Write(ctx, &habilis.Batch{BaseVersion: w.version + 1, Put: []habilis.Record{storetest.Record("theirs", 2, false, 3)}, Meta: storetest.Meta(8, 3)}); err != nil {
						t.Errorf("the newer write: %v", err)
					}
				}
				return nil
			})
			m, err := s.Write(ctx, &habilis.Batch{BaseVersion: w.version, Put: []habilis.Record{storetest.Record("mine", 3, false, 2)}, Meta: storetest.Meta(8, 2)})
			f.SetHook(nil)
			if err != nil || m.Version != w.version+1 {
				t.Fatalf("Write whose switch comes late = version %d, %v; want version %d", m.Version, err, w.version+1)
			}
			snap, err := s.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if names := storetestNames(snap.Records); snap.Meta.Version != m.Version+1 || !slices.Contains(names, "mine") || !slices.Contains(names, "theirs") {
				t.Errorf("Snapshot() = version %d with %v, want version %d with both writes' tools", snap.Meta.Version, names, m.Version+1)
			}
			for a, c := range f.Aliases() {
				if v, _, ok := s.names.parseCollection(c); !ok || v != snap.Meta.Version {
					t.Errorf("alias %s names %s, want a collection of version %d", a, c, snap.Meta.Version)
				}
			}
			for _, r := range snap.Records {
				texts, _, err := s.Examples(ctx, r.Tool.Name)
				if err != nil || len(texts) != len(r.Tool.Examples) {
					t.Errorf("Examples(%q) = %d texts, %v; want %d", r.Tool.Name, len(texts), err, len(r.Tool.Examples))
				}
			}
		})
	}
}

// TestWriteRefusedByOldQdrant checks that a Qdrant that would ignore the
// commit's update filter refuses writes, and still serves reads.
func TestWriteRefusedByOldQdrant(t *testing.T) {
	f, cfg := startFake(t)
	f.SetVersion("1.15.4")
	s, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Write(context.Background(), &habilis.Batch{Put: storetest.Catalog(1, 2, false, 1), Meta: storetest.Meta(8, 1)})
	if !errors.Is(err, habilis.ErrInvalid) || !strings.Contains(err.Error(), "1.15.4") || !strings.Contains(err.Error(), "1.16") {
		t.Errorf("Write against Qdrant 1.15.4: error = %v, want ErrInvalid naming 1.15.4 and 1.16", err)
	}
	if v, err := s.Version(context.Background()); err != nil || v != 0 {
		t.Errorf("Version() against Qdrant 1.15.4 = %d, %v; want 0, nil", v, err)
	}
}

func TestConditional(t *testing.T) {
	tests := []struct {
		version string
		want    bool
	}{
		{"1.16.0", true}, {"1.17.1", true}, {"v1.18.1", true}, {"1.16.0-dev", true}, {"2.0.0", true},
		{"1.15.4", false}, {"v1.9.0", false}, {"0.11.0", false},
		{"", true}, {"fake", true},
	}
	for _, tt := range tests {
		if got := conditional(tt.version); got != tt.want {
			t.Errorf("conditional(%q) = %v, want %v", tt.version, got, tt.want)
		}
	}
}

func storetestNames(recs []habilis.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Tool.Name
	}
	return out
}

// TestLargeMessages writes and reads back a catalog whose pages are far
// larger than grpc-go's default 4 MB message limit (about 8 MB): tools with
// long sparse vectors, as the lexical embedder makes for long descriptions.
func TestLargeMessages(t *testing.T) {
	_, cfg := startFake(t)
	cfg.Catalog = "big"
	cfg.Layout = LayoutShared
	s, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	recs := make([]habilis.Record, DefaultBatchSize)
	for i := range recs {
		recs[i] = storetest.Generate(fmt.Sprintf("tool-%04d", i), 1, storetest.Shape{NonZeros: 1500}, int64(i))
	}
	ctx := context.Background()
	if _, err := s.Write(ctx, &habilis.Batch{Put: recs, Meta: storetest.Meta(0, 1)}); err != nil {
		t.Fatalf("Write of %d tools with 1,500-term vectors: %v", len(recs), err)
	}
	snap, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatalf("Snapshot of %d tools with 1,500-term vectors: %v", len(recs), err)
	}
	// cmp.Diff takes seconds over a million floats: compare first.
	if !reflect.DeepEqual(recs, snap.Records) {
		t.Errorf("records after the round trip mismatch (-want +got):\n%s", cmp.Diff(recs, snap.Records))
	}
}

func TestAlreadyExists(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{status.Error(codes.AlreadyExists, "Wrong input: Collection `c` already exists!"), true},
		{status.Error(codes.InvalidArgument, "Wrong input: Collection `c` already exists!"), true},
		{status.Error(codes.InvalidArgument, "Wrong input: Vector dimension error"), false},
		{status.Error(codes.NotFound, "Not found: Collection `c` doesn't exist!"), false},
		{errors.New("already exists"), false},
	}
	for _, tt := range tests {
		if got := alreadyExists(tt.err); got != tt.want {
			t.Errorf("alreadyExists(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// written is a store's state after writeFirst: what a failed write after
// it must leave as it was.
type written struct {
	version     uint64
	collections []string
	aliases     map[string]string
	snap        *habilis.Snapshot
}

// writeFirst writes a first catalog of three tools into s and returns the
// state it leaves.
func writeFirst(t *testing.T, f *qdranttest.Server, s *Store) written {
	t.Helper()
	ctx := context.Background()
	m, err := s.Write(ctx, &habilis.Batch{Put: storetest.Catalog(3, 2, false, 1), Meta: storetest.Meta(8, 1)})
	if err != nil {
		t.Fatal(err)
	}
	w := written{version: m.Version, collections: f.Collections(), aliases: f.Aliases()}
	if w.snap, err = s.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	return w
}

// checkUnchanged fails t unless the fake's collections and aliases and the
// store's snapshot are what they were in w, before what failed.
func checkUnchanged(t *testing.T, f *qdranttest.Server, s *Store, what string, w written) {
	t.Helper()
	collections, aliases, snap := w.collections, w.aliases, w.snap
	if diff := cmp.Diff(collections, f.Collections()); diff != "" {
		t.Errorf("collections after %s mismatch (-before +after):\n%s", what, diff)
	}
	if diff := cmp.Diff(aliases, f.Aliases()); diff != "" {
		t.Errorf("aliases after %s mismatch (-before +after):\n%s", what, diff)
	}
	after, err := s.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(snap, after, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("snapshot after %s mismatch (-before +after):\n%s", what, diff)
	}
}

// TestReadOnly writes a catalog, then refuses a write through a store
// opened read-only with ErrReadOnly, sending Qdrant nothing: its
// collections, aliases and the catalog stay as they were.
func TestReadOnly(t *testing.T) {
	f, s := openFake(t, LayoutShared)
	ctx := context.Background()
	m, err := s.Write(ctx, &habilis.Batch{Put: []habilis.Record{storetest.Record("a.b", 3, false, 1)}, Meta: storetest.Meta(8, 1)})
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.cfg
	cfg.ReadOnly = true
	ro, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ro.Close() })
	want := storetest.Snapshot(t, ro)
	collections, aliases := f.Collections(), f.Aliases()

	_, err = ro.Write(ctx, &habilis.Batch{BaseVersion: m.Version, Delete: []string{"a.b"}, Meta: storetest.Meta(8, 1)})
	if !errors.Is(err, habilis.ErrReadOnly) || errors.Is(err, habilis.ErrInvalid) || !strings.Contains(err.Error(), "catalog shop") {
		t.Errorf("Write() through a read-only store error = %v, want %v naming the catalog", err, habilis.ErrReadOnly)
	}
	if diff := cmp.Diff(want, storetest.Snapshot(t, s)); diff != "" {
		t.Errorf("the catalog changed after a refused write (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(collections, f.Collections()); diff != "" {
		t.Errorf("collections changed after a refused write (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(aliases, f.Aliases()); diff != "" {
		t.Errorf("aliases changed after a refused write (-before +after):\n%s", diff)
	}
}
