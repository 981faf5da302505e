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
	"strings"
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
	if want := fmt.Sprintf("qdrantstore: connect qdrant at 127.0.0.1:%d: ", port); !strings.HasPrefix(err.Error(), want) {
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
func startFake(t *testing.T) (*qdranttest.Server, Config) {
	f := qdranttest.Start(t)
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
			var wantCollections []string
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
			if len(aliases) != len(f.Collections()) {
				t.Errorf("%d aliases for %d collections: %v", len(aliases), len(f.Collections()), aliases)
			}
		})
	}
}

func TestFailedWriteLeavesNoTrace(t *testing.T) {
	for _, failing := range []string{"Create", "CreateFieldIndex", "Upsert", "ListAliases", "UpdateAliases"} {
		t.Run(failing, func(t *testing.T) {
			f, s := openFake(t, LayoutShared)
			ctx := context.Background()
			w := writeFirst(t, f, s)
			calls := 0
			f.SetHook(func(method string) error {
				// Fail the second call of the method, once some of the new
				// version exists.
				if method == failing {
					if calls++; calls == 2 || failing != "Create" && failing != "Upsert" {
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

func TestRetriesUnavailable(t *testing.T) {
	f, s := openFake(t, LayoutPerTool)
	failures := 0
	f.SetHook(func(method string) error {
		if method == "Upsert" && failures < 2 {
			failures++
			return status.Error(codes.Unavailable, "injected: try again")
		}
		return nil
	})
	recs := storetest.Catalog(2, 2, false, 1)
	if _, err := s.Write(context.Background(), &habilis.Batch{Put: recs, Meta: storetest.Meta(8, 1)}); err != nil {
		t.Fatalf("Write with two transient failures: %v", err)
	}
	if failures != 2 {
		t.Errorf("injected %d failures, want 2", failures)
	}

	// Unavailable for longer than the retries last is ErrUnavailable.
	f.SetHook(func(method string) error { return status.Error(codes.Unavailable, "injected: down") })
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
	scrolls := 0
	f.SetHook(func(method string) error {
		if method == "Scroll" {
			scrolls++
		}
		return nil
	})
	recs := storetest.Catalog(2, 3, false, 7)
	_, err = s.Write(ctx, &habilis.Batch{BaseVersion: m.Version, Replace: true, Put: recs, Meta: storetest.Meta(8, 2)})
	f.SetHook(nil)
	if err != nil {
		t.Fatalf("Write(replace) error = %v", err)
	}
	if scrolls != 0 {
		t.Errorf("Write(replace) scrolled %d times, want 0", scrolls)
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
	other, err := Open(ctx, s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	once := false
	f.SetHook(func(method string) error {
		if method == "Upsert" && !once {
			once = true
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
		if _, g, _ := s.names.parseCollection(c); !strings.HasPrefix(g, "v2_") {
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

// TestSwitchFailsPartway makes the alias switch fail after some of its
// actions applied, as released Qdrant leaves it when an action fails (here
// a collection of the new version vanished, as when a concurrent writer
// drops it): the catalog must read as before, aliases included.
func TestSwitchFailsPartway(t *testing.T) {
	for _, layout := range []Layout{LayoutPerTool, LayoutShared} {
		t.Run(string(layout), func(t *testing.T) {
			f, s := openFake(t, layout)
			ctx := context.Background()
			w := writeFirst(t, f, s)
			once := false
			f.SetHook(func(method string) error {
				if method != "UpdateAliases" || once {
					return nil
				}
				once = true
				// The tools alias sorts after every examples alias, so
				// those are re-pointed before the switch fails.
				for _, name := range f.Collections() {
					if _, g, ok := s.names.parseCollection(name); ok && strings.HasPrefix(g, "v2_") && strings.HasSuffix(name, "_tools") {
						f.DeleteCollection(name)
					}
				}
				return nil
			})
			_, err := s.Write(ctx, &habilis.Batch{BaseVersion: w.version, Put: []habilis.Record{storetest.Record("new", 3, false, 2)}, Meta: storetest.Meta(8, 2)})
			f.SetHook(nil)
			if err == nil || !strings.Contains(err.Error(), "switch aliases") {
				t.Fatalf("Write with a switch failing partway: error = %v, want it to name the switch", err)
			}
			checkUnchanged(t, f, s, "the failed switch", w)
			for _, r := range w.snap.Records {
				texts, _, err := s.Examples(ctx, r.Tool.Name)
				if err != nil || len(texts) != len(r.Tool.Examples) {
					t.Errorf("Examples(%q) after the failed switch = %d texts, %v; want %d", r.Tool.Name, len(texts), err, len(r.Tool.Examples))
				}
			}
		})
	}
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
