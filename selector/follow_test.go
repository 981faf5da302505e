package selector_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/memstore"
	"github.com/habilis-router/habilis/store/storetest"
)

// sharedStore is one replica's handle on a store that several share: the
// store itself, which it can make unreachable (down) and in front of whose
// writes it can run something (beforeWrite), as another process would
// write between this one's read and its commit.
type sharedStore struct {
	habilis.Store
	down        atomic.Bool
	beforeWrite func()
	writes      atomic.Int32
}

var errDown = fmt.Errorf("injected: store down: %w", habilis.ErrUnavailable)

func (s *sharedStore) Snapshot(ctx context.Context) (*habilis.Snapshot, error) {
	if s.down.Load() {
		return nil, errDown
	}
	return s.Store.Snapshot(ctx)
}

func (s *sharedStore) Version(ctx context.Context) (uint64, error) {
	if s.down.Load() {
		return 0, errDown
	}
	return s.Store.Version(ctx)
}

func (s *sharedStore) Write(ctx context.Context, b *habilis.Batch) (habilis.CatalogMeta, error) {
	if s.down.Load() {
		return habilis.CatalogMeta{}, errDown
	}
	s.writes.Add(1)
	if s.beforeWrite != nil {
		s.beforeWrite()
	}
	return s.Store.Write(ctx, b)
}

// replicas returns two routers over one store, each with a handle of its
// own, and the store.
func replicas(t *testing.T) (a, b *selector.Router, sa, sb *sharedStore) {
	t.Helper()
	st := memstore.New()
	sa, sb = &sharedStore{Store: st}, &sharedStore{Store: st}
	return lexicalRouter(t, sa), lexicalRouter(t, sb), sa, sb
}

// queries are requests whose decisions the tests compare between replicas.
var queries = []string{
	"send an email to bob about the report",
	"what's the weather in Lisbon tomorrow",
	"compose a sonnet about autumn leaves",
	"book a table for two tonight",
	"convert 20 euros to dollars",
}

// decisions returns r's decisions on queries, failing open so that every
// score shows.
func decisions(t *testing.T, r *selector.Router) []*habilis.Decision {
	t.Helper()
	var out []*habilis.Decision
	for _, q := range queries {
		d, err := r.Select(context.Background(), q, habilis.SelectOptions{K: 3, FailOpen: true})
		if err != nil {
			t.Fatalf("Select(%q): %v", q, err)
		}
		out = append(out, d)
	}
	return out
}

func TestRefreshServesAnotherWritersCatalog(t *testing.T) {
	ctx := context.Background()
	a, b, _, _ := replicas(t)
	tools := testCatalog(t)
	if _, err := a.Load(ctx, tools[:4], selector.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := decisions(t, b); got[0].CatalogVersion != 0 || len(b.Tools()) != 0 {
		t.Fatalf("b before Refresh: version %d, %d tools; want the empty catalog it opened", got[0].CatalogVersion, len(b.Tools()))
	}
	for i, want := range []bool{true, false} {
		swapped, err := b.Refresh(ctx)
		if err != nil || swapped != want {
			t.Fatalf("Refresh() #%d = %v, %v; want %v, nil", i+1, swapped, err, want)
		}
	}
	if diff := cmp.Diff(decisions(t, a), decisions(t, b)); diff != "" {
		t.Errorf("b's decisions after Refresh differ from a's (-a +b):\n%s", diff)
	}

	// More tools change the lexical embedder's statistics, so that a
	// query embedded with the old ones would score otherwise: b serves
	// the old catalog whole until it refreshes, then the new one whole.
	old := decisions(t, b)
	if _, err := a.Load(ctx, tools, selector.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(old, decisions(t, b)); diff != "" {
		t.Errorf("b's decisions changed before it refreshed (-before +after):\n%s", diff)
	}
	if swapped, err := b.Refresh(ctx); err != nil || !swapped {
		t.Fatalf("Refresh() after a's second load = %v, %v; want true", swapped, err)
	}
	now := decisions(t, b)
	if diff := cmp.Diff(decisions(t, a), now); diff != "" {
		t.Errorf("b's decisions after the second Refresh differ from a's (-a +b):\n%s", diff)
	}
	for i := range now {
		if now[i].CatalogVersion != a.Version() || cmp.Equal(now[i].Matches, old[i].Matches) {
			t.Errorf("Select(%q) after the reload: version %d, matches unchanged %v; want version %d and new scores",
				queries[i], now[i].CatalogVersion, cmp.Equal(now[i].Matches, old[i].Matches), a.Version())
		}
	}
}

func TestRefreshKeepsServingWhenStoreFails(t *testing.T) {
	ctx := context.Background()
	a, b, _, sb := replicas(t)
	tools := testCatalog(t)
	if _, err := a.Load(ctx, tools, selector.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	served := decisions(t, b)
	sb.down.Store(true)
	if _, err := a.Delete(ctx, []string{tools[0].Name}); err != nil {
		t.Fatal(err)
	}
	if swapped, err := b.Refresh(ctx); swapped || !errors.Is(err, habilis.ErrUnavailable) {
		t.Errorf("Refresh() with the store down = %v, %v; want false, ErrUnavailable", swapped, err)
	}
	if diff := cmp.Diff(served, decisions(t, b)); diff != "" {
		t.Errorf("b's decisions with the store down changed (-before +after):\n%s", diff)
	}
	sb.down.Store(false)
	if swapped, err := b.Refresh(ctx); !swapped || err != nil || len(b.Tools()) != len(tools)-1 {
		t.Errorf("Refresh() with the store back = %v, %v, %d tools; want true, nil, %d", swapped, err, len(b.Tools()), len(tools)-1)
	}
}

func TestRefreshRefusesAnotherEmbeddersCatalog(t *testing.T) {
	ctx := context.Background()
	a, b, sa, _ := replicas(t)
	if _, err := a.Load(ctx, testCatalog(t), selector.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	served := b.Version()
	// Another process rewrites the catalog with vectors of another
	// algorithm of the lexical embedder.
	storetest.SetAlgorithm(t, sa.Store, storetest.Embedder, "1")
	swapped, err := b.Refresh(ctx)
	if me := (*habilis.MismatchError)(nil); swapped || !errors.As(err, &me) || me.Stored.Algorithm() != "1" {
		t.Errorf("Refresh() over another algorithm's catalog = %v, %v; want false and a MismatchError naming algorithm 1", swapped, err)
	}
	if b.Version() != served {
		t.Errorf("b serves version %d after the refused refresh, want %d", b.Version(), served)
	}
}

// TestConcurrentUpsertsBothLand writes one tool through each replica, the
// second committing between the first's read of the catalog and its
// commit: the first write conflicts, is computed again over the second's
// catalog and lands after it, so both tools are there.
func TestConcurrentUpsertsBothLand(t *testing.T) {
	ctx := context.Background()
	a, b, sa, _ := replicas(t)
	tools := testCatalog(t)
	if _, err := a.Load(ctx, tools[:3], selector.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	sa.writes.Store(0)
	var once sync.Once
	sa.beforeWrite = func() {
		once.Do(func() {
			if _, err := b.Load(ctx, tools[3:4], selector.LoadOptions{Merge: true}); err != nil {
				t.Errorf("b's upsert: %v", err)
			}
		})
	}
	rep, err := a.Load(ctx, tools[4:5], selector.LoadOptions{Merge: true})
	if err != nil {
		t.Fatalf("a's upsert racing b's: %v", err)
	}
	if n := sa.writes.Load(); n != 2 {
		t.Errorf("a wrote %d times, want 2 (a conflict, then the write again)", n)
	}
	want := []string{tools[0].Name, tools[1].Name, tools[2].Name, tools[3].Name, tools[4].Name}
	slices.Sort(want)
	if diff := cmp.Diff(want, toolNames(a.Tools())); diff != "" {
		t.Errorf("a's tools after both upserts (-want +got):\n%s", diff)
	}
	if rep.Version != b.Version()+1 || !slices.Equal(rep.Added, []string{tools[4].Name}) {
		t.Errorf("a's report: version %d, added %v; want version %d (after b's %d), added %s", rep.Version, rep.Added, b.Version()+1, b.Version(), tools[4].Name)
	}
}

// TestConflictAfterAttempts has another writer commit before every one of
// a write's attempts: the write gives up with ErrConflict and changes
// nothing, while every other write stands.
func TestConflictAfterAttempts(t *testing.T) {
	ctx := context.Background()
	a, b, sa, _ := replicas(t)
	tools := testCatalog(t)
	if _, err := a.Load(ctx, tools[:3], selector.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	var others []string
	sa.beforeWrite = func() {
		name := fmt.Sprintf("other_%d", len(others))
		tool := tools[3]
		tool.Name = name
		if _, err := b.Load(ctx, []habilis.Tool{tool}, selector.LoadOptions{Merge: true}); err != nil {
			t.Errorf("b's upsert: %v", err)
		}
		others = append(others, name)
	}
	before := a.Version()
	_, err := a.Load(ctx, tools[4:5], selector.LoadOptions{Merge: true})
	if !errors.Is(err, habilis.ErrConflict) {
		t.Fatalf("a's upsert losing every attempt: error %v, want ErrConflict", err)
	}
	if len(others) < 2 || a.Version() != before {
		t.Errorf("a made %d attempts and serves version %d; want several, and version %d still", len(others), a.Version(), before)
	}
	if _, err := a.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	want := append(toolNames(tools[:3]), others...)
	slices.Sort(want)
	if diff := cmp.Diff(want, toolNames(a.Tools())); diff != "" {
		t.Errorf("tools after the lost race (-want +got):\n%s", diff)
	}
}

// TestFollow runs Follow on one replica while the other writes and the
// store goes away and comes back: it reports the catalogs it swaps in,
// the failures (serving the catalog it has meanwhile) and the recovery.
func TestFollow(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b, _, sb := replicas(t)
	reports := make(chan selector.FollowStatus, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Follow(ctx, selector.FollowOptions{Interval: time.Millisecond, MaxBackoff: 4 * time.Millisecond, Report: func(st selector.FollowStatus) { reports <- st }})
	}()
	// next waits for the next report that satisfies ok.
	next := func(what string, ok func(selector.FollowStatus) bool) selector.FollowStatus {
		t.Helper()
		for {
			select {
			case st := <-reports:
				if ok(st) {
					return st
				}
			case <-time.After(time.Minute):
				t.Fatalf("no report of %s", what)
			}
		}
	}
	tools := testCatalog(t)
	rep, err := a.Load(ctx, tools, selector.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := next("the first catalog", func(st selector.FollowStatus) bool { return st.Version == rep.Version })
	if st.Err != nil || st.Reloads != 1 || b.Version() != rep.Version {
		t.Errorf("report after a's load = %+v, b at version %d; want version %d, one reload, no error", st, b.Version(), rep.Version)
	}

	sb.down.Store(true)
	rep, err = a.Delete(ctx, []string{tools[0].Name})
	if err != nil {
		t.Fatal(err)
	}
	st = next("a failure", func(st selector.FollowStatus) bool { return st.Failures >= 2 })
	if !errors.Is(st.Err, habilis.ErrUnavailable) || b.Version() != rep.Version-1 {
		t.Errorf("report with the store down = %+v, b at version %d; want ErrUnavailable and version %d", st, b.Version(), rep.Version-1)
	}
	if _, err := b.Select(ctx, queries[0], habilis.SelectOptions{}); err != nil {
		t.Errorf("Select with the store down: %v", err)
	}

	sb.down.Store(false)
	st = next("the recovery", func(st selector.FollowStatus) bool { return st.Err == nil })
	if st.Failures != 0 || st.Version != rep.Version || len(b.Tools()) != len(tools)-1 {
		t.Errorf("report with the store back = %+v, %d tools; want version %d, %d tools", st, len(b.Tools()), rep.Version, len(tools)-1)
	}
	cancel()
	<-done
}

func toolNames(tools []habilis.Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}
