package main

import (
	"bytes"
	bbinary "encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/store/boltstore"
)

// TestDamagedStoreCommands damages a store loaded by the binary at every
// page below its high-water mark (garbage, zeroes, a flipped bit in a
// page's header or elements, truncation) and runs the commands that read
// it. None may panic; a command that fails exits 1 with one line naming
// the file and what to do; one that succeeds prints what it printed on
// the sound store, unless the damage lay inside a value and decoded, which
// `store check` must then report (exit 1). Never "the catalog is empty".
func TestDamagedStoreCommands(t *testing.T) {
	sound := loadedStore(t)
	size := int(testutil.HighWater(t, sound))
	pristine, err := os.ReadFile(sound)
	if err != nil {
		t.Fatal(err)
	}
	pristine = pristine[:size]
	ps := os.Getpagesize()
	commands := [][]string{
		{"select", "--json", "send an email to Zoe"},
		{"tools", "list", "--json"},
		{"collisions", "--json"},
		{"load", "--json", testdata("tools.json")},
	}
	path := filepath.Join(t.TempDir(), "habilis.db")
	want := map[string]string{}
	writeStore(t, path, pristine)
	for _, c := range commands[:3] { // load's output has a duration
		want[c[0]] = mustRun(t, append([]string{"--store", path}, c...)...)
	}
	if r := habilisRun(t, "--store", path, "store", "check"); r.code != exitOK || !strings.Contains(r.stdout, "is sound") {
		t.Fatalf("store check of the sound store = exit %d, %q %q; want 0, sound", r.code, r.stdout, r.stderr)
	}

	rng := rand.New(rand.NewPCG(5, 6))
	outcomes := map[string]int{}
	for page := range len(pristine) / ps {
		for _, d := range []string{"garbage", "zeroes", "flip", "truncate"} {
			b := damageAt(pristine, page, ps, d, rng)
			for _, c := range commands {
				writeStore(t, path, b)
				name := fmt.Sprintf("%s at page %d: habilis %s", d, page, strings.Join(c, " "))
				outcomes[d+"/"+commandOutcome(t, name, path, c, want[c[0]])]++
			}
		}
	}
	t.Logf("%d pages; outcomes %v", len(pristine)/ps, outcomes)
}

// damageAt returns a copy of file with damage d at page.
func damageAt(file []byte, page, ps int, d string, rng *rand.Rand) []byte {
	b := append([]byte(nil), file...)
	p := b[page*ps : (page+1)*ps]
	switch d {
	case "garbage":
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
	case "zeroes":
		clear(p)
	case "flip":
		// In the header and elements of a page bbolt reads as one:
		// elsewhere the bit lands in a value's bytes, which no store
		// keeps a checksum of (a flipped low bit of a vector's float
		// changes a score in its sixth digit and nothing else), so a page
		// that continues a value spread over several is left as it is.
		n := 80 // a meta page
		flags := bbinary.NativeEndian.Uint16(p[8:])
		switch {
		case page > 1 && (flags == 1 || flags == 2):
			n = min(ps, 16+16*int(bbinary.NativeEndian.Uint16(p[10:])))
		case page > 1 && flags != 0x10:
			return b
		}
		p[rng.IntN(n)] ^= 1 << rng.IntN(8)
	case "truncate":
		b = b[:page*ps]
	}
	return b
}

// commandOutcome runs one command on a damaged store and checks what it
// did: "error", "same" (as on the sound store) or "checked" (other
// output, which store check reports as damage).
func commandOutcome(t *testing.T, name, path string, args []string, want string) string {
	t.Helper()
	r := habilisRun(t, append([]string{"--store", path}, args...)...)
	if strings.Contains(r.stdout+r.stderr, "catalog is empty") {
		t.Errorf("%s: says the catalog is empty:\n%s%s", name, r.stdout, r.stderr)
	}
	switch r.code {
	case exitError:
		lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
		hint := strings.Contains(r.stderr, "restore the store from a backup") || strings.Contains(r.stderr, "empty file: load a catalog first")
		if len(lines) != 1 || !strings.Contains(r.stderr, path) || !hint {
			t.Errorf("%s: exit 1 with stderr %q; want one line naming %s and what to do", name, r.stderr, path)
		}
		return "error"
	case exitOK:
		if args[0] == "load" || sameJSON(r.stdout, want) {
			return "same"
		}
		if c := habilisRun(t, "--store", path, "store", "check"); c.code != exitError {
			t.Errorf("%s: exit 0 with other output, and store check exits %d:\n%s", name, c.code, c.stdout)

		}
		return "checked"
	}
	t.Errorf("%s: exit %d, stderr:\n%s", name, r.code, r.stderr)
	return "crash"
}

// writeStore writes a store file, as damage leaves it.
func writeStore(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestStoreCheck(t *testing.T) {
	store := loadedStore(t)
	out := mustRun(t, "--store", store, "store", "check", "--json")
	rep := decode[struct {
		Problems []string `json:"problems"`
		Tools    int      `json:"tools"`
	}](t, out)
	if len(rep.Problems) != 0 || rep.Tools != 7 {
		t.Errorf("store check --json of a sound store = %s, want no problems and 7 tools", out)
	}
	b, err := os.ReadFile(store)
	if err != nil {
		t.Fatal(err)
	}
	ps := int(bbinary.NativeEndian.Uint32(b[24:])) // bbolt's meta page: a 16-byte header, magic, version, page size
	clear(b[3*ps : 4*ps])
	writeStore(t, store, b)
	r := habilisRun(t, "--store", store, "store", "check")
	if r.code != exitError || !strings.Contains(r.stdout, "is damaged:\n  ") || !strings.Contains(r.stderr, store) {
		t.Errorf("store check of a damaged store = exit %d, stdout %q, stderr %q; want 1, the damaged page", r.code, r.stdout, r.stderr)
	}
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	writeStore(t, empty, nil)
	// A file of another program's: SQLite's header, then its first pages.
	sqlite := filepath.Join(dir, "app.sqlite")
	writeStore(t, sqlite, append([]byte("SQLite format 3\x00\x10\x00\x01\x01"), make([]byte, 8192)...))
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--store", filepath.Join(t.TempDir(), "absent.db"), "store", "check"}, exitError, "does not exist"},
		{[]string{"--store", dir, "store", "check"}, exitError, "store " + dir + ": a directory, not a habilis store"},
		{[]string{"--store", empty, "store", "check"}, exitError, "store " + empty + ": not a habilis store (an empty file)"},
		{[]string{"--store", empty, "store", "compact"}, exitError, "store " + empty + ": not a habilis store (an empty file)"},
		{[]string{"--store", sqlite, "store", "check"}, exitError, "habilis: store check: store " + sqlite + ": not a habilis store (not a bbolt file): invalid input\n"},
		{[]string{"--store", sqlite, "store", "check", "--json"}, exitError, "habilis: store check: store " + sqlite + ": not a habilis store (not a bbolt file): invalid input\n"},
		{[]string{"--store", "qdrant://localhost:6334/x", "store", "check"}, exitUsage, "bbolt file"},
		{[]string{"--store", store, "store", "check", "--limit", "0"}, exitUsage, "--limit"},
	} {
		if r := habilisRun(t, tt.args...); r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("habilis %v = exit %d, stderr %q; want %d mentioning %q", tt.args, r.code, r.stderr, tt.code, tt.want)
		}
	}
	if fi, err := os.Stat(empty); err != nil || fi.Size() != 0 {
		t.Errorf("store check and compact of an empty file left it %v, %v; want it empty", fi, err)
	}
}

// sameJSON reports whether two JSON documents are equal, numbers within a
// relative 1e-5: a score's last bits depend on how memory is aligned.
func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return a == b
	}
	return cmp.Equal(x, y, cmp.Comparer(func(p, q float64) bool {
		return math.Abs(p-q) <= 1e-5*max(1, math.Abs(p), math.Abs(q))
	}))
}

// TestStoreCompact loads a catalog of 400 tools, replaces it by the
// 16-tool one, whose store keeps the file's size in free pages, and
// compacts it: the file shrinks, the store reads the same, and store check
// finds it sound. A damaged store is refused and left as it was.
func TestStoreCompact(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	var tools []map[string]any
	for i := range 400 {
		var ex []string
		for j := range 5 {
			ex = append(ex, fmt.Sprintf("request %d for tool number %d about topic%d and item%d", j, i, i%37, i*j))
		}
		tools = append(tools, map[string]any{"name": fmt.Sprintf("tool_%d", i), "description": fmt.Sprintf("Does task %d on subject%d.", i, i%53), "examples": ex})
	}
	b, err := json.Marshal(tools)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, b, 0o600); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "habilis.db")
	mustRun(t, "--store", store, "load", big)
	mustRun(t, "--store", store, "load", testdata("tools.json"))
	before := fileSize(t, store)
	listed := mustRun(t, "--store", store, "tools", "list", "--json")
	selected := mustRun(t, "--store", store, "select", "--json", "will it rain in Lisbon tomorrow")

	var rep struct {
		Before int64 `json:"bytes_before"`
		After  int64 `json:"bytes_after"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "--store", store, "store", "compact", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	after := fileSize(t, store)
	if rep.Before != before || rep.After != after || after*4 > before {
		t.Errorf("compact reported %d -> %d bytes; the file went %d -> %d; want it under a quarter", rep.Before, rep.After, before, after)
	}
	if got := mustRun(t, "--store", store, "tools", "list", "--json"); !sameJSON(got, listed) {
		t.Errorf("tools list after compacting:\n%s\nwant\n%s", got, listed)
	}
	if got := mustRun(t, "--store", store, "select", "--json", "will it rain in Lisbon tomorrow"); !sameJSON(got, selected) {
		t.Errorf("select after compacting:\n%s\nwant\n%s", got, selected)
	}
	if r := habilisRun(t, "--store", store, "store", "check"); r.code != exitOK {
		t.Errorf("store check after compacting: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(store + ".compact"); !os.IsNotExist(err) {
		t.Errorf("the copy is left beside the store: %v", err)
	}

	// A page of garbage in the middle of the pages in use.
	sound, err := os.ReadFile(store)
	if err != nil {
		t.Fatal(err)
	}
	page := int(testutil.HighWater(t, store)) / os.Getpagesize() / 2
	damaged := damageAt(sound, page, os.Getpagesize(), "garbage", rand.New(rand.NewPCG(7, 8)))
	writeStore(t, store, damaged)
	if r := habilisRun(t, "--store", store, "store", "compact"); r.code != exitError || !strings.Contains(r.stderr, store) {
		t.Errorf("compact of a damaged store: exit %d, stderr %q; want 1 naming the file", r.code, r.stderr)
	}
	if got, err := os.ReadFile(store); err != nil || string(got) != string(damaged) {
		t.Errorf("compact of a damaged store changed the file (%v)", err)
	}
	if _, err := os.Stat(store + ".compact"); !os.IsNotExist(err) {
		t.Errorf("a failed compaction left its copy: %v", err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestStoreCheckEmbedderState damages the lexical embedder's stored state,
// which every command restores on opening the store and which has a
// checksum of its own: store check must report it, as select does, and
// compact must refuse the store.
func TestStoreCheckEmbedderState(t *testing.T) {
	store := loadedStore(t)
	st, err := boltstore.Open(store, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := st.Snapshot(t.Context())
	if err != nil || len(snap.Meta.EmbedderState) == 0 {
		t.Fatalf("Snapshot: %v, embedder state of %d bytes; want one", err, len(snap.Meta.EmbedderState))
	}
	meta := snap.Meta
	meta.EmbedderState = append([]byte(nil), meta.EmbedderState...)
	meta.EmbedderState[len(meta.EmbedderState)/2] ^= 0x5a
	if _, err := st.Write(t.Context(), &habilis.Batch{BaseVersion: meta.Version, Meta: meta}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	const want = "the stored embedder state does not decode"
	if r := habilisRun(t, "--store", store, "select", "weather in Oslo"); r.code != exitError || !strings.Contains(r.stderr, want) {
		t.Fatalf("select on the damaged state: exit %d, stderr %q; want 1 and %q", r.code, r.stderr, want)
	}
	for _, cmd := range []string{"check", "compact"} {
		if r := habilisRun(t, "--store", store, "store", cmd); r.code != exitError || !strings.Contains(r.stdout+r.stderr, want) {
			t.Errorf("store %s on the damaged state: exit %d, stdout %q, stderr %q; want 1 and %q", cmd, r.code, r.stdout, r.stderr, want)
		}
	}
}

// TestToolsShowDamagedCalibration damages the catalog's stored calibration
// in the file, beside an intact stored index: tools show still shows the
// tool from the index's copy, and says on stderr, in one line naming the
// file, that the store's own copy is damaged and what to do.
func TestToolsShowDamagedCalibration(t *testing.T) {
	store := loadedStore(t)
	if r := habilisRun(t, "--store", store, "tools", "show", "get_weather"); r.code != 0 || r.stderr != "" {
		t.Fatalf("tools show on a sound store = exit %d, stderr %q; want 0 and nothing", r.code, r.stderr)
	}
	damageCalibration(t, store)
	const want = "the stored calibration does not decode"
	if r := habilisRun(t, "--store", store, "store", "check"); r.code != exitError || !strings.Contains(r.stdout, want) {
		t.Fatalf("store check = exit %d, stdout %q; want 1 and %q: the damage this test means to make", r.code, r.stdout, want)
	}
	for _, args := range [][]string{{"tools", "show", "get_weather"}, {"--json", "tools", "show", "get_weather"}} {
		r := habilisRun(t, append([]string{"--store", store}, args...)...)
		if r.code != 0 || !strings.Contains(r.stdout, "get_weather") {
			t.Errorf("habilis %v = exit %d, stdout %q; want 0 and the tool", args, r.code, r.stdout)
		}
		if !strings.HasPrefix(r.stderr, "habilis: warning: store "+store+": "+want) || !strings.HasSuffix(r.stderr, damagedHint+"\n") ||
			strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("habilis %v: stderr %q; want one warning line naming %s, %q and what to do", args, r.stderr, store, want)
		}
	}
	// The commands that read the catalog's own copy refuse the store,
	// naming it.
	for _, args := range [][]string{{"tools", "rm", "get_weather"}, {"collisions"}, {"load", testdata("tools.json")}, {"fit", testdata("fit.jsonl")}} {
		r := habilisRun(t, append([]string{"--store", store}, args...)...)
		if r.code != exitError || !strings.Contains(r.stderr, "store "+store+": ") || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, damagedHint) {
			t.Errorf("habilis %v = exit %d, stderr %q; want 1, naming %s, %q and what to do", args, r.code, r.stderr, store, want)
		}
	}
}

// damageCalibration makes the catalog's stored calibration in the file at
// store no longer JSON, in place, leaving the stored index's copy intact.
func damageCalibration(t *testing.T, store string) {
	t.Helper()
	st, err := boltstore.Open(store, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := st.Snapshot(t.Context())
	st.Close()
	if err != nil || len(snap.Meta.Calibration) == 0 {
		t.Fatalf("Snapshot: %v, calibration of %d bytes; want one", err, len(snap.Meta.Calibration))
	}
	b, err := os.ReadFile(store)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, snap.Meta.Calibration)
	if i < 0 || bytes.Count(b, snap.Meta.Calibration) != 1 {
		t.Fatalf("the stored calibration is %d times in the file, want once", bytes.Count(b, snap.Meta.Calibration))
	}
	b[i] = '[' // "[...}": no longer JSON
	writeStore(t, store, b)
}
