package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/store/boltstore"
	"github.com/habilis-router/habilis/store/qdrantstore"
	"github.com/habilis-router/habilis/store/qdrantstore/qdranttest"
	"github.com/habilis-router/habilis/store/storetest"
)

// migrateQueries are selections whose answers must not change when a
// catalog moves between stores: every mode, a clear match and an
// abstention.
var migrateQueries = [][]string{
	{"select", "--json", "-k", "7", "is it sunny in Rome right now"},
	{"select", "--json", "--mode", "centroid", "-k", "7", "mail the meeting notes to Ursula"},
	{"select", "--json", "--mode", "description", "translate see you soon into French"},
	{"select", "--json", "--mode", "centroid", "--fail-open", "recommend a vegan lasagna recipe"},
}

// sameAnswers fails unless the read commands print exactly the same on
// stores a and b: the same decisions with the same scores, the same tools,
// gates and collisions.
// catalogVersion matches the catalog version a decision names.
var catalogVersion = regexp.MustCompile(`("catalog_version":) [0-9]+`)

func sameAnswers(t *testing.T, a, b string) {
	t.Helper()
	cmds := slices.Concat(migrateQueries, [][]string{
		{"tools", "list", "--json"},
		{"tools", "show", "--json", "get_weather"},
		{"collisions", "--json"},
	})
	for _, args := range cmds {
		// The catalog's version says how many writes made it, which
		// migrating over another catalog does not keep.
		want := catalogVersion.ReplaceAllString(mustRun(t, append([]string{"--store", a}, args...)...), "$1 N")
		got := catalogVersion.ReplaceAllString(mustRun(t, append([]string{"--store", b}, args...)...), "$1 N")
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("habilis %v differs after migrating (-%s +%s):\n%s", args, a, b, diff)
		}
	}
}

// writeBolt creates a bbolt store holding recs with meta, written directly
// rather than through the router: any embedder, every field set.
func writeBolt(t *testing.T, path string, recs []habilis.Record, meta habilis.CatalogMeta) {
	t.Helper()
	st, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if len(recs) == 0 {
		return
	}
	if _, err := st.Write(context.Background(), &habilis.Batch{Put: recs, Meta: meta}); err != nil {
		t.Fatal(err)
	}
}

// sameCatalog fails unless want and got hold the same records and meta;
// version and update time are the destination's own.
func sameCatalog(t *testing.T, want, got *habilis.Snapshot) {
	t.Helper()
	ignore := cmpopts.IgnoreFields(habilis.CatalogMeta{}, "Version", "UpdatedAt")
	if diff := cmp.Diff(want.Meta, got.Meta, ignore, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("catalog meta after migrating (-source +destination):\n%s", diff)
	}
	if diff := cmp.Diff(want.Records, got.Records, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("records after migrating (-source +destination):\n%s", diff)
	}
}

func TestMigrateBoltToBolt(t *testing.T) {
	a := loadedStore(t)
	b := filepath.Join(t.TempDir(), "b.db")
	out := mustRun(t, "migrate", "--from", a, "--to", b)
	for _, w := range []string{"migrated 7 tools, 43 examples", "from " + a, "to " + b, "lexical", "catalog version 1"} {
		if !strings.Contains(out, w) {
			t.Errorf("migrate output lacks %q:\n%s", w, out)
		}
	}
	sameCatalog(t, snapshotOf(t, a), snapshotOf(t, b))
	sameAnswers(t, a, b)

	// The destination is a store like any other: loading the same file
	// into it finds nothing to embed or write.
	rep := decode[struct {
		Embedded  int    `json:"embedded"`
		Unchanged int    `json:"unchanged"`
		Version   uint64 `json:"version"`
	}](t, mustRun(t, "--store", b, "load", "--json", testdata("tools.json")))
	if rep.Embedded != 0 || rep.Unchanged != 7 || rep.Version != 1 {
		t.Errorf("load into the migrated store = embedded %d, unchanged %d, version %d; want 0, 7, 1", rep.Embedded, rep.Unchanged, rep.Version)
	}
}

func TestMigrateReplacesDestination(t *testing.T) {
	a := loadedStore(t)
	b := filepath.Join(t.TempDir(), "b.db")
	mustRun(t, "--store", b, "load", testdata("lone.json"))

	rep := decode[migrateReport](t, mustRun(t, "--json", "migrate", "--from", a, "--to", b))
	want := migrateReport{From: a, To: b, Tools: 7, Examples: 43, Embedder: "lexical (sparse)", Replaced: 1, Version: 2}
	if diff := cmp.Diff(want, rep); diff != "" {
		t.Errorf("migrate --json over a one-tool catalog (-want +got):\n%s", diff)
	}
	sameCatalog(t, snapshotOf(t, a), snapshotOf(t, b))
	sameAnswers(t, a, b)

	// Migrating back over a catalog that changed since replaces it too.
	mustRun(t, "--store", a, "tools", "rm", "send_email")
	mustRun(t, "migrate", "--from", a, "--to", b)
	var names []string
	for _, tool := range listTools(t, b) {
		names = append(names, tool.Name)
	}
	if len(names) != 6 || strings.Contains(strings.Join(names, " "), "send_email") {
		t.Errorf("tools after migrating a catalog without send_email = %v, want the 6 others", names)
	}
}

// TestMigrateKeepsEveryField moves a catalog written directly, with every
// field a store keeps set and a model embedder's dense vectors, and checks
// the destination holds exactly the same.
func TestMigrateKeepsEveryField(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src.db"), filepath.Join(dir, "dst.db")
	recs := append(storetest.Catalog(5, 3, false, 1), storetest.Record("no-examples", 0, false, 9))
	writeBolt(t, src, recs, storetest.Meta(8, 1))
	out := mustRun(t, "migrate", "--from", src, "--to", dst)
	if !strings.Contains(out, "migrated 6 tools, 15 examples") || !strings.Contains(out, "ollama:nomic-embed-text (dim 8)") {
		t.Errorf("migrate output = %q, want 6 tools, 15 examples and the embedder", out)
	}
	sameCatalog(t, snapshotOf(t, src), snapshotOf(t, dst))
}

func TestMigrateRefuses(t *testing.T) {
	dir := t.TempDir()
	a := loadedStore(t)
	empty := filepath.Join(dir, "empty.db")
	writeBolt(t, empty, nil, habilis.CatalogMeta{})
	model := filepath.Join(dir, "model.db")
	writeBolt(t, model, storetest.Catalog(2, 2, false, 1), storetest.Meta(8, 1))
	missing := filepath.Join(dir, "missing.db")
	fresh := filepath.Join(dir, "fresh.db")
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		args []string
		code int
		want []string // in stderr
	}{
		{"empty source", []string{"migrate", "--from", empty, "--to", fresh}, exitError, []string{empty, "nothing to migrate"}},
		{"missing source", []string{"migrate", "--from", missing, "--to", fresh}, exitError, []string{missing, "does not exist"}},
		{"same path", []string{"migrate", "--from", a, "--to", a}, exitUsage, []string{a, "same store"}},
		{"same file through a link", []string{"migrate", "--from", a, "--to", link}, exitUsage, []string{link, "same store"}},
		{"same qdrant catalog", []string{"migrate", "--from", "qdrant://localhost/shop", "--to", "qdrant://LOCALHOST:6334/shop"}, exitUsage, []string{"same store"}},
		{"embedder mismatch", []string{"migrate", "--from", a, "--to", model}, exitError, []string{model, "ollama:nomic-embed-text (dim 8)", "lexical", "--force"}},
		{"no --from", []string{"migrate", "--to", fresh}, exitUsage, []string{"--from"}},
		{"no --to", []string{"migrate", "--from", a}, exitUsage, []string{"--to"}},
		{"arguments", []string{"migrate", "--from", a, "--to", fresh, "extra"}, exitUsage, []string{"extra"}},
		{"bad qdrant url", []string{"migrate", "--from", a, "--to", "qdrant://localhost/no_underscores"}, exitUsage, []string{"--to", "no_underscores"}},
		{"remote", []string{"--remote", "127.0.0.1:1", "migrate", "--from", a, "--to", fresh}, exitUsage, []string{"--remote"}},
	}
	beforeA, beforeModel := snapshotOf(t, a), snapshotOf(t, model)
	for _, tt := range tests {
		r := habilisRun(t, tt.args...)
		if r.code != tt.code {
			t.Errorf("%s: habilis %v = exit %d, want %d; stderr:\n%s", tt.name, tt.args, r.code, tt.code, r.stderr)
		}
		for _, w := range tt.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%s: stderr lacks %q:\n%s", tt.name, w, r.stderr)
			}
		}
		if r.stdout != "" {
			t.Errorf("%s: a refused migrate printed %q", tt.name, r.stdout)
		}
	}
	// Relative paths are resolved before they are compared.
	r := habilisIn(t, filepath.Dir(a), "", "migrate", "--from", filepath.Base(a), "--to", "./x/../"+filepath.Base(a))
	if r.code != exitUsage || !strings.Contains(r.stderr, "same store") {
		t.Errorf("migrate between two spellings of one path = exit %d, stderr %q; want 2 saying same store", r.code, r.stderr)
	}
	if _, err := os.Stat(fresh); err == nil {
		t.Errorf("a refused migrate created %s", fresh)
	}
	if diff := cmp.Diff(beforeA, snapshotOf(t, a)); diff != "" {
		t.Errorf("a refused migrate changed %s:\n%s", a, diff)
	}
	if diff := cmp.Diff(beforeModel, snapshotOf(t, model)); diff != "" {
		t.Errorf("a refused migrate changed %s:\n%s", model, diff)
	}

	// --force replaces a catalog another embedder built.
	mustRun(t, "migrate", "--force", "--from", a, "--to", model)
	sameCatalog(t, snapshotOf(t, a), snapshotOf(t, model))
}

func TestStoreLocation(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		spec, want string
	}{
		{"habilis.db", filepath.Join(wd, "habilis.db")},
		{"./x/../habilis.db", filepath.Join(wd, "habilis.db")},
		{"/tmp/a.db", "/tmp/a.db"},
		{"qdrant://", "qdrant://localhost:6334/default"},
		{"qdrant://Qdrant.Example:7000/shop?tls=1&api_key_file=/k", "qdrant://qdrant.example:7000/shop"},
		{"qdrant://[::1]/shop", "qdrant://[::1]:6334/shop"},
	}
	for _, tt := range tests {
		got, err := storeLocation(tt.spec)
		if err != nil || got != tt.want {
			t.Errorf("storeLocation(%q) = %q, %v; want %q", tt.spec, got, err, tt.want)
		}
	}
	if _, err := storeLocation("qdrant://h/a_b"); err == nil {
		t.Errorf("storeLocation(bad catalog) succeeded")
	}
}

// qdrantAddr returns the Qdrant of HABILIS_QDRANT_ADDR or skips the test.
func qdrantAddr(t *testing.T) (string, int) {
	t.Helper()
	addr := os.Getenv("HABILIS_QDRANT_ADDR")
	if addr == "" {
		t.Skip("set HABILIS_QDRANT_ADDR=localhost:6334 to run against Qdrant (docker compose up qdrant)")
	}
	cfg, err := qdrantstore.ParseAddr(addr)
	if err != nil {
		t.Fatalf("HABILIS_QDRANT_ADDR: %v", err)
	}
	return cfg.Host, cfg.Port
}

// qdrantCatalog returns the URL of a catalog no other test uses, deleted
// when the test ends.
func qdrantCatalog(t *testing.T, host string, port int, query string) string {
	t.Helper()
	catalog := qdranttest.Catalog(t, host, port, "cli-")
	return "qdrant://" + net.JoinHostPort(host, strconv.Itoa(port)) + "/" + catalog + query
}

// TestMigrateQdrant moves a catalog from bbolt to Qdrant, over a catalog
// already there, and back, and checks that every answer stays the same.
func TestMigrateQdrant(t *testing.T) {
	host, port := qdrantAddr(t)
	a := loadedStore(t)
	for _, query := range []string{"", "?layout=shared"} {
		t.Run("layout="+strings.TrimPrefix(query, "?layout="), func(t *testing.T) {
			q := qdrantCatalog(t, host, port, query)
			mustRun(t, "--store", q, "load", testdata("lone.json"))
			rep := decode[migrateReport](t, mustRun(t, "--json", "migrate", "--from", a, "--to", q))
			if rep.Tools != 7 || rep.Replaced != 1 || rep.Version != 2 {
				t.Errorf("migrate to Qdrant = %+v, want 7 tools replacing 1 at version 2", rep)
			}
			sameAnswers(t, a, q)

			back := filepath.Join(t.TempDir(), "back.db")
			mustRun(t, "migrate", "--from", q, "--to", back)
			sameCatalog(t, snapshotOf(t, a), snapshotOf(t, back))
			sameAnswers(t, a, back)

			r := habilisRun(t, "migrate", "--from", q, "--to", q)
			if r.code != exitUsage || !strings.Contains(r.stderr, "same store") {
				t.Errorf("migrate from a Qdrant catalog to itself = exit %d, stderr %q; want 2 saying same store", r.code, r.stderr)
			}
		})
	}
}
