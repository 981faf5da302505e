package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/api"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/store/qdrantstore/qdranttest"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// followEvery is how often the servers of these tests check their store.
const followEvery = "20ms"

// serving waits until the server at c answers from catalog version v.
func serving(t *testing.T, c *api.Client, v uint64) *habilis.Decision {
	t.Helper()
	var d *habilis.Decision
	testutil.WaitFor(t, fmt.Sprintf("the server to serve catalog version %d", v), func() bool {
		var err error
		if d, err = c.Select(context.Background(), "what's the weather in Oslo right now", habilis.SelectOptions{K: 3, FailOpen: true}); err != nil {
			t.Fatalf("Select: %v", err)
		}
		return d.CatalogVersion == v
	})
	return d
}

func dialServer(t *testing.T, addr string) *api.Client {
	t.Helper()
	c, err := api.Dial(context.Background(), addr, api.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// loadedVersion runs habilis --store store load --json file and returns
// the catalog version it wrote.
func loadedVersion(t *testing.T, store, file string) uint64 {
	t.Helper()
	return decode[struct {
		Version uint64 `json:"version"`
	}](t, mustRun(t, "--store", store, "load", "--json", file)).Version
}

// TestServeFollowsLoad runs habilis serve over a bbolt file and habilis
// load in another process on the same file: the server, which holds the
// file only during its reads, lets the load in and serves what it wrote.
func TestServeFollowsLoad(t *testing.T) {
	store := filepath.Join(t.TempDir(), "habilis.db")
	srv := startServe(t, "--store", store, "serve", "--addr", "127.0.0.1:0", "--follow-interval", followEvery)
	c := dialServer(t, srv.addr)
	if ok, err := c.Healthy(context.Background()); err != nil || ok {
		t.Errorf("Healthy() before any catalog = %v, %v; want false", ok, err)
	}
	v := loadedVersion(t, store, testdata("tools.json"))
	if d := serving(t, c, v); len(d.Matches) == 0 || d.Matches[0].Tool != "get_weather" {
		t.Errorf("Select after the load = %+v, want get_weather first", d)
	}
	// Health follows the swap, on the goroutine that made it.
	testutil.WaitFor(t, "Healthy() after the load to be true", func() bool {
		ok, err := c.Healthy(context.Background())
		return err == nil && ok
	})
	v = loadedVersion(t, store, testdata("lone.json"))
	serving(t, c, v)
	tools, err := c.Tools(context.Background())
	if err != nil || len(tools) != 1 {
		t.Errorf("Tools() after loading lone.json = %d tools, %v; want 1", len(tools), err)
	}
	if code, _ := srv.stop(t); code != 0 {
		t.Errorf("serve after SIGTERM: exit %d, stderr %s", code, srv.stderr)
	}
}

// TestServeReplicasOverQdrant runs two habilis serve processes over one
// Qdrant (the in-process fake) and writes the catalog from a third
// process, then through each server: both serve every write, with the
// same answers, and say which version in responses and metrics.
func TestServeReplicasOverQdrant(t *testing.T) {
	f := qdranttest.Start(t)
	store := fmt.Sprintf("qdrant://%s:%d/shop", f.Host(), f.Port())
	args := []string{"--store", store, "serve", "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--follow-interval", followEvery}
	srvs := []*server{startServe(t, args...), startServe(t, args...)}
	clients := []*api.Client{dialServer(t, srvs[0].addr), dialServer(t, srvs[1].addr)}
	ctx := context.Background()

	v := loadedVersion(t, store, testdata("tools.json"))
	want := serving(t, clients[0], v)
	if got := serving(t, clients[1], v); !cmp.Equal(want, got, cmpopts.EquateEmpty()) {
		t.Errorf("the replicas answer differently (-first +second):\n%s", cmp.Diff(want, got, cmpopts.EquateEmpty()))
	}

	// A write through either server reaches the other.
	tools, err := clients[0].Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"first_copy", "second_copy"} {
		tool := tools[0]
		tool.Name = name
		rep, err := clients[i].UpsertTools(ctx, []habilis.Tool{tool}, api.UpsertOptions{})
		if err != nil {
			t.Fatalf("upsert through server %d: %v", i, err)
		}
		serving(t, clients[1-i], rep.Version)
		v = rep.Version
	}
	for i, s := range srvs {
		body := testutil.Get(t, s.metrics)
		for _, line := range []string{fmt.Sprintf("habilis_catalog_version %d", v), "habilis_catalog_follow_up 1"} {
			if !strings.Contains(body, line) {
				t.Errorf("server %d's metrics lack %q", i, line)
			}
		}
		resp, err := healthpb.NewHealthClient(clients[i].Conn()).Check(ctx, &healthpb.HealthCheckRequest{Service: api.CatalogServiceName})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("server %d's catalog health = %v, %v; want SERVING", i, resp.GetStatus(), err)
		}
	}
}
