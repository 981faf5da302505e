package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/api"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/store/qdrantstore/qdranttest"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// fileState is what a write to a file would change: its bytes and its
// modification time.
type fileState struct {
	sum   [sha256.Size]byte
	mtime int64 // nanoseconds
}

func stateOf(t *testing.T, path string) fileState {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fileState{sum: sha256.Sum256(b), mtime: fi.ModTime().UnixNano()}
}

// checkReadOnlyServer checks a serve --read-only --http process over the
// catalog of testdata/tools.json: it answers selections over gRPC, and
// refuses writes over gRPC, JSON and the CLI's --remote with
// FAILED_PRECONDITION saying why (the CLI exits 1: the command was sound),
// its catalog unchanged.
func checkReadOnlyServer(t *testing.T, srv *server) *api.Client {
	t.Helper()
	ctx := context.Background()
	c := dialServer(t, srv.addr)
	if d, err := c.Select(ctx, "what's the weather in Oslo right now", habilis.SelectOptions{K: 1}); err != nil || len(d.Matches) != 1 || d.Matches[0].Tool != "get_weather" {
		t.Errorf("Select on a read-only server = %+v, %v; want get_weather", d, err)
	}
	if ds, err := c.SelectBatch(ctx, []string{"mail the report to Bob", "weather in Oslo"}, habilis.SelectOptions{}); err != nil || len(ds) != 2 {
		t.Errorf("SelectBatch on a read-only server = %d decisions, %v; want 2", len(ds), err)
	}
	_, err := c.UpsertTools(ctx, []habilis.Tool{{Name: "teleport", Description: "Beam a person to another place."}}, api.UpsertOptions{})
	if !errors.Is(err, habilis.ErrReadOnly) || status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "started with --read-only") {
		t.Errorf("UpsertTools on a read-only server: error %v (code %v), want %v (FailedPrecondition) saying --read-only", err, status.Code(err), habilis.ErrReadOnly)
	}
	code, _, body := testutil.Post(t, srv.http+"/habilis.v1.ToolRouter/DeleteTools", `{"names": ["send_email"]}`)
	if code != 400 || !strings.Contains(body, `"code":"failed_precondition"`) || !strings.Contains(body, `"reason":"READ_ONLY"`) || !strings.Contains(body, "--read-only") {
		t.Errorf("JSON DeleteTools on a read-only server: %d %s; want 400 failed_precondition, reason READ_ONLY, saying --read-only", code, body)
	}
	for _, args := range [][]string{{"tools", "rm", "send_email"}, {"load", testdata("lone.json")}} {
		r := habilisRun(t, append([]string{"--remote", srv.addr}, args...)...)
		if r.code != exitError || !strings.Contains(r.stderr, "the server was started with --read-only") {
			t.Errorf("habilis --remote %s %v: exit %d, stderr %q; want %d saying the server was started with --read-only", srv.addr, args, r.code, r.stderr, exitError)
		}
	}
	if tools, err := c.Tools(ctx); err != nil || len(tools) != 7 {
		t.Errorf("Tools() after refused writes = %d tools, %v; want the 7 of tools.json", len(tools), err)
	}
	return c
}

// TestServeReadOnly serves a bbolt file with --read-only, holding it for
// its whole life and following it: selections are answered, writes refused,
// another process reads the file meanwhile, and the file's bytes and time
// are those it had. A server following the file serves a catalog another
// process loads into it.
func TestServeReadOnly(t *testing.T) {
	for _, follow := range []string{"0", followEvery} {
		t.Run("follow-interval "+follow, func(t *testing.T) {
			store := filepath.Join(t.TempDir(), "habilis.db")
			mustRun(t, "--store", store, "load", testdata("tools.json"))
			before := stateOf(t, store)
			srv := startServe(t, "--store", store, "serve", "--read-only", "--addr", "127.0.0.1:0", "--http", "127.0.0.1:0", "--follow-interval", follow)
			c := checkReadOnlyServer(t, srv)
			// A reader shares the file with the server, which holds it
			// for reading only.
			if out := mustRun(t, "--store", store, "--json", "select", "mail the report to Bob"); !strings.Contains(out, `"send_email"`) {
				t.Errorf("select beside a read-only server: %s, want send_email", out)
			}
			if after := stateOf(t, store); after != before {
				t.Errorf("the store changed under a read-only server: %+v, was %+v", after, before)
			}
			if follow != "0" {
				v := loadedVersion(t, store, testdata("lone.json"))
				if d := serving(t, c, v); d.CatalogVersion != v {
					t.Errorf("a read-only server following its store serves version %d, want %d", d.CatalogVersion, v)
				}
			}
			if code, _ := srv.stop(t); code != 0 {
				t.Errorf("serve --read-only after SIGTERM: exit %d, stderr %s", code, srv.stderr)
			}
		})
	}
}

// TestServeReadOnlyQdrant serves a catalog in Qdrant (the in-process fake)
// with --read-only: writes are refused and Qdrant sees none.
func TestServeReadOnlyQdrant(t *testing.T) {
	f := qdranttest.Start(t)
	store := fmt.Sprintf("qdrant://%s:%d/shop", f.Host(), f.Port())
	mustRun(t, "--store", store, "load", testdata("tools.json"))
	var (
		mu     sync.Mutex
		writes []string
	)
	f.SetHook(func(method, collection string) error {
		if slices.Contains([]string{"Create", "Delete", "UpdateAliases", "CreateFieldIndex", "Upsert", "DeletePoints"}, method) {
			mu.Lock()
			defer mu.Unlock()
			writes = append(writes, method+" "+collection)
			return errors.New("the test refuses writes")
		}
		return nil
	})
	srv := startServe(t, "--store", store, "serve", "--read-only", "--addr", "127.0.0.1:0", "--http", "127.0.0.1:0", "--follow-interval", followEvery)
	checkReadOnlyServer(t, srv)
	if code, _ := srv.stop(t); code != 0 {
		t.Errorf("serve --read-only after SIGTERM: exit %d, stderr %s", code, srv.stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(writes) > 0 {
		t.Errorf("a read-only server wrote to Qdrant: %v", writes)
	}
}

// unwritable makes path, a file or a directory, one this process cannot
// write until the test ends: mode 0444 (0555 for a directory) for a user
// other than root, and for root, whom modes do not stop, the immutable
// flag (chattr +i), which ext4 and most Linux file systems keep.
func unwritable(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		mode := os.FileMode(0o444)
		if fi.IsDir() {
			mode = 0o555
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(path, fi.Mode().Perm()) })
		return
	}
	chattr, err := exec.LookPath("chattr")
	if err != nil {
		t.Skip("as root, whom file modes do not stop, this test makes the store immutable with chattr, which is not installed: install e2fsprogs, or run it as a user other than root (a 0444 file then stops writes)")
	}
	if out, err := exec.Command(chattr, "+i", path).CombinedOutput(); err != nil {
		t.Skipf("as root, whom file modes do not stop, this test makes the store immutable, but chattr +i %s failed (%v: %s): run it with TMPDIR on a file system that keeps the flag (ext4), or as a user other than root", path, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command(chattr, "-i", path).CombinedOutput(); err != nil {
			t.Errorf("chattr -i %s: %v: %s", path, err, out)
		}
	})
}

// TestServeNotWritable runs serve over a store file this process cannot
// write: without --read-only it is refused (exit 1) with an error naming
// the file and saying that --read-only serves it; with --read-only it is
// served, and stays as it was. A store that cannot be created, in a
// directory this process cannot write, is refused saying so.
func TestServeNotWritable(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "habilis.db")
	mustRun(t, "--store", store, "load", testdata("tools.json"))
	locked := filepath.Join(dir, "locked")
	if err := os.Mkdir(locked, 0o755); err != nil {
		t.Fatal(err)
	}
	unwritable(t, locked)
	unwritable(t, store)
	before := stateOf(t, store)

	for _, tt := range []struct {
		store, follow, want string
	}{
		{store, "0", "the store cannot be written here: pass --read-only to serve it as it is"},
		{store, followEvery, "the store cannot be written here: pass --read-only to serve it as it is"},
		{filepath.Join(locked, "habilis.db"), "0", "the store cannot be created there: pass --store a path this process may write"},
	} {
		r := habilisRun(t, "--store", tt.store, "serve", "--addr", "127.0.0.1:0", "--follow-interval", tt.follow)
		if r.code != exitError || !strings.HasPrefix(r.stderr, "habilis: serve: store "+tt.store+": ") || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("serve --store %s --follow-interval %s: exit %d, stderr %q; want %d naming the file, and %q", tt.store, tt.follow, r.code, r.stderr, exitError, tt.want)
		}
	}
	srv := startServe(t, "--store", store, "serve", "--read-only", "--addr", "127.0.0.1:0", "--http", "127.0.0.1:0")
	checkReadOnlyServer(t, srv)
	if code, _ := srv.stop(t); code != 0 {
		t.Errorf("serve --read-only after SIGTERM: exit %d, stderr %s", code, srv.stderr)
	}
	if after := stateOf(t, store); after != before {
		t.Errorf("the store changed: %+v, was %+v", after, before)
	}
}
