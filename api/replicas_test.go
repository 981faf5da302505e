package api

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/boltstore"
	"github.com/habilis-router/habilis/store/memstore"
	"github.com/habilis-router/habilis/store/qdrantstore"
	"github.com/habilis-router/habilis/store/qdrantstore/qdranttest"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// followInterval is how often the replicas of these tests check their
// store: short, so that the tests wait little.
const followInterval = 10 * time.Millisecond

// replica is one habilis server of several over one store, as each
// process of a deployment would run it: its own store handle, router and
// server, following the store.
type replica struct {
	st habilis.Store
	r  *selector.Router
	s  *Server
	c  *Client
}

// startReplica serves a router over st that follows it until the test
// ends.
func startReplica(t *testing.T, st habilis.Store) *replica {
	t.Helper()
	r := testutil.LexicalRouter(t, st)
	s, addr := serve(t, r, ServerOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Follow(ctx, selector.FollowOptions{Interval: followInterval, MaxBackoff: 4 * followInterval})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return &replica{st: st, r: r, s: s, c: dial(t, addr, DialOptions{})}
}

// storeBackend opens two handles on one fresh store, as two processes
// would.
type storeBackend struct {
	name string
	open func(t *testing.T) (a, b habilis.Store)
}

var storeBackends = []storeBackend{
	{"qdrant-fake", func(t *testing.T) (habilis.Store, habilis.Store) {
		f := qdranttest.Start(t)
		cfg := qdrantstore.Config{Host: f.Host(), Port: f.Port(), Catalog: "shop", Layout: qdrantstore.LayoutShared}
		return openQdrant(t, cfg), openQdrant(t, cfg)
	}},
	{"qdrant", func(t *testing.T) (habilis.Store, habilis.Store) {
		cfg := realQdrant(t)
		return openQdrant(t, cfg), openQdrant(t, cfg)
	}},
	{"bbolt-shared", func(t *testing.T) (habilis.Store, habilis.Store) {
		path := filepath.Join(t.TempDir(), "habilis.db")
		return openShared(t, path), openShared(t, path)
	}},
	{"memstore", func(t *testing.T) (habilis.Store, habilis.Store) {
		st := memstore.New()
		return st, st
	}},
}

func openQdrant(t *testing.T, cfg qdrantstore.Config) *qdrantstore.Store {
	t.Helper()
	st, err := qdrantstore.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func openShared(t *testing.T, path string) *boltstore.Shared {
	t.Helper()
	st, err := boltstore.OpenShared(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// realQdrant returns the configuration of a fresh catalog in the Qdrant of
// HABILIS_QDRANT_ADDR, whose collections go when the test ends, or skips
// the test.
func realQdrant(t *testing.T) qdrantstore.Config {
	t.Helper()
	addr := os.Getenv("HABILIS_QDRANT_ADDR")
	if addr == "" {
		t.Skip("set HABILIS_QDRANT_ADDR=localhost:6334 to run against Qdrant (docker compose up qdrant)")
	}
	cfg, err := qdrantstore.ParseAddr(addr)
	if err != nil {
		t.Fatalf("HABILIS_QDRANT_ADDR: %v", err)
	}
	cfg.Catalog, cfg.Layout = qdranttest.Catalog(t, cfg.Host, cfg.Port, "replicas-"), qdrantstore.LayoutShared
	return cfg
}

// serves reports whether a replica answers from catalog version v.
func (rp *replica) serves(t *testing.T, v uint64) bool {
	t.Helper()
	d, err := rp.c.Select(context.Background(), "will it rain in Lisbon tomorrow", habilis.SelectOptions{})
	if err != nil {
		t.Fatalf("Select: %v", err)
	}
	return d.CatalogVersion == v
}

// health returns a replica's health for service.
func (rp *replica) health(t *testing.T, service string) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	resp, err := healthpb.NewHealthClient(rp.c.Conn()).Check(context.Background(), &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		t.Fatalf("health Check(%q): %v", service, err)
	}
	return resp.GetStatus()
}

// renamed returns tool under another name.
func renamed(tool habilis.Tool, name string) habilis.Tool {
	tool.Name = name
	return tool
}

// TestReplicas runs two servers over one store, each with its own handle
// on it: a write through one is served by the other once it has checked
// the store, with the same answers; writes through both at once all land,
// one after the other, or are refused with a conflict, and both replicas
// end serving the same catalog.
func TestReplicas(t *testing.T) {
	for _, be := range storeBackends {
		t.Run(be.name, func(t *testing.T) {
			sa, sb := be.open(t)
			a, b := startReplica(t, sa), startReplica(t, sb)
			ctx := context.Background()
			if got := b.health(t, ServiceName); got != healthpb.HealthCheckResponse_NOT_SERVING {
				t.Errorf("b's health before any catalog = %v, want NOT_SERVING", got)
			}
			rep, err := a.c.UpsertTools(ctx, testTools(t), UpsertOptions{})
			if err != nil {
				t.Fatal(err)
			}
			testutil.WaitFor(t, "b to serve a's catalog", func() bool { return b.serves(t, rep.Version) })
			// Health follows the swap, on the goroutine that made it.
			testutil.WaitFor(t, "b's health to say SERVING", func() bool { return b.health(t, ServiceName) == healthpb.HealthCheckResponse_SERVING })
			for _, q := range []string{"will it rain in Lisbon tomorrow", "mail the report to Bob", "compose a sonnet"} {
				da, err := a.c.Select(ctx, q, habilis.SelectOptions{K: 3, FailOpen: true})
				if err != nil {
					t.Fatal(err)
				}
				db, err := b.c.Select(ctx, q, habilis.SelectOptions{K: 3, FailOpen: true})
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(da, db, decisionOpts); diff != "" {
					t.Errorf("Select(%q) differs between the replicas (-a +b):\n%s", q, diff)
				}
			}
			pf, err := b.c.Prefilter(ctx, PrefilterRequest{Query: "mail the report to Bob"})
			if err != nil || pf.CatalogVersion != rep.Version || pf.Decision.CatalogVersion != rep.Version {
				t.Errorf("b's Prefilter = version %d (decision %d), %v; want %d", pf.CatalogVersion, pf.Decision.CatalogVersion, err, rep.Version)
			}

			landed := concurrentUpserts(t, a, b, testTools(t)[0])
			want := toolNames(testTools(t))
			want = append(want, landed...)
			slices.Sort(want)
			final := rep.Version + uint64(len(landed))
			for _, rp := range []*replica{a, b} {
				testutil.WaitFor(t, "both replicas to serve the last write", func() bool { return rp.serves(t, final) })
				tools, err := rp.c.Tools(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, toolNames(tools)); diff != "" {
					t.Errorf("tools after the concurrent writes (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// concurrentUpserts upserts, through a and b at once, rounds of a new tool
// each, and returns the names of those that landed. Every upsert either
// lands or fails with ErrConflict; in these rounds nearly all land, as a
// write that conflicts is computed again over the other's catalog.
func concurrentUpserts(t *testing.T, a, b *replica, base habilis.Tool) []string {
	t.Helper()
	const rounds = 6
	var (
		mu     sync.Mutex
		landed []string
		wg     sync.WaitGroup
	)
	for i := range rounds {
		for side, rp := range map[string]*replica{"a": a, "b": b} {
			name := fmt.Sprintf("extra_%s_%d", side, i)
			wg.Go(func() {
				rep, err := rp.c.UpsertTools(context.Background(), []habilis.Tool{renamed(base, name)}, UpsertOptions{})
				switch {
				case err == nil && slices.Equal(rep.Added, []string{name}):
					mu.Lock()
					landed = append(landed, name)
					mu.Unlock()
				case err == nil:
					t.Errorf("upsert of %s: added %v", name, rep.Added)
				case !errors.Is(err, habilis.ErrConflict):
					t.Errorf("upsert of %s: %v, want success or ErrConflict", name, err)
				}
			})
		}
		wg.Wait()
	}
	if len(landed) == 0 {
		t.Errorf("no concurrent upsert landed")
	}
	return landed
}

// TestReplicaStoreAway cuts one replica off from Qdrant while the other
// writes: the cut-off one keeps serving the catalog it has, says so in its
// catalog health and metrics, and serves the new catalog once it reaches
// the store again.
func TestReplicaStoreAway(t *testing.T) {
	f := qdranttest.Start(t)
	ea, eb := f.Endpoint(t), f.Endpoint(t)
	cfg := func(e *qdranttest.Endpoint) qdrantstore.Config {
		// No retries: the replica's checks fail as soon as Qdrant does.
		return qdrantstore.Config{Host: e.Host(), Port: e.Port(), Catalog: "shop", Layout: qdrantstore.LayoutShared, Retries: -1}
	}
	a, b := startReplica(t, openQdrant(t, cfg(ea))), startReplica(t, openQdrant(t, cfg(eb)))
	ctx := context.Background()
	tools := testTools(t)
	rep, err := a.c.UpsertTools(ctx, tools[:4], UpsertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "b to serve the first catalog", func() bool { return b.serves(t, rep.Version) })
	if got := b.health(t, CatalogServiceName); got != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("b's catalog health = %v, want SERVING", got)
	}

	eb.SetDown(true)
	testutil.WaitFor(t, "b to report the store away", func() bool {
		return b.health(t, CatalogServiceName) == healthpb.HealthCheckResponse_NOT_SERVING
	})
	rep2, err := a.c.UpsertTools(ctx, tools[4:], UpsertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !b.serves(t, rep.Version) || b.health(t, ServiceName) != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("b with the store away: not serving version %d, or not SERVING", rep.Version)
	}
	if m := metricsOf(t, b.s); !strings.Contains(m, "habilis_catalog_follow_up 0") || strings.Contains(m, "habilis_catalog_follow_failures_total 0") {
		t.Errorf("b's metrics with the store away lack follow_up 0 and failures:\n%s", followLines(m))
	}

	eb.SetDown(false)
	testutil.WaitFor(t, "b to serve the catalog written while it was cut off", func() bool { return b.serves(t, rep2.Version) })
	testutil.WaitFor(t, "b to report the store back", func() bool {
		return b.health(t, CatalogServiceName) == healthpb.HealthCheckResponse_SERVING
	})
	m := metricsOf(t, b.s)
	for _, want := range []string{"habilis_catalog_follow_up 1", "habilis_catalog_reloads_total 2", fmt.Sprintf("habilis_catalog_version %d", rep2.Version)} {
		if !strings.Contains(m, want) {
			t.Errorf("b's metrics with the store back lack %q:\n%s", want, followLines(m))
		}
	}
}

// TestReplicaFollowsWriterProcess follows a bbolt file while another
// process (here a store opened the way `habilis load` opens it) holds the
// file to write a new catalog: the follower's checks fail while the file
// is locked, and it serves the new catalog once the writer lets go.
func TestReplicaFollowsWriterProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "habilis.db")
	shared, err := boltstore.OpenShared(path, boltstore.Options{Timeout: followInterval})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shared.Close() })
	b := startReplica(t, shared)
	ctx := context.Background()

	writer, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatalf("open the file beside a following server: %v", err)
	}
	r, err := selector.New(ctx, writer, selector.Config{Embedder: lexical.New(lexical.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.Load(ctx, testTools(t), selector.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "b to report the file locked", func() bool {
		return b.health(t, CatalogServiceName) == healthpb.HealthCheckResponse_NOT_SERVING
	})
	// As the CLI does: the router first, which reads the index where it
	// lies in the file and so holds it open.
	r.Close()
	if err := writer.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "b to serve the writer's catalog", func() bool { return b.serves(t, rep.Version) })
	testutil.WaitFor(t, "b's health to say SERVING", func() bool { return b.health(t, ServiceName) == healthpb.HealthCheckResponse_SERVING })
}

func metricsOf(t *testing.T, s *Server) string {
	t.Helper()
	srv := httptest.NewServer(s.MetricsHandler())
	defer srv.Close()
	return testutil.Get(t, srv.URL)
}

// followLines keeps the catalog lines of a metrics page, for messages.
func followLines(m string) string {
	var out []string
	for _, l := range strings.Split(m, "\n") {
		if strings.HasPrefix(l, "habilis_catalog") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func toolNames(tools []habilis.Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}
