package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/eval"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/boltstore"
	"github.com/habilis-router/habilis/store/storetest"
)

// binary is the habilis binary TestMain builds once for every test, and
// embedCache the embedding cache every run of it shares.
var binary, embedCache string

func TestMain(m *testing.M) {
	if mode := os.Getenv(testUpstreamEnv); mode != "" {
		os.Exit(serveTestUpstream(mode))
	}
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "habilis-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "habilis")
	embedCache = filepath.Join(dir, "embeddings")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// result is one run of the binary.
type result struct {
	stdout, stderr string
	code           int
}

// habilisCmd returns a command running the binary with args and the
// test's environment, less every HABILIS_ variable, with an embedding
// cache of the tests' own.
func habilisCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HABILIS_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "HABILIS_EMBED_CACHE="+embedCache)
	return cmd
}

// runHabilis runs cmd, made by habilisCmd, and returns what it printed and
// its exit code.
func runHabilis(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("run habilis %v: %v", cmd.Args[1:], err)
		}
		code = ee.ExitCode()
	}
	return result{stdout.String(), stderr.String(), code}
}

// habilisIn runs the binary with args in dir (the test's own directory
// when ""), with no HABILIS_ variables inherited and TMPDIR set to tmp
// when not "".
func habilisIn(t *testing.T, dir, tmp string, args ...string) result {
	t.Helper()
	cmd := habilisCmd(args...)
	cmd.Dir = dir
	cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "TMPDIR=") })
	if tmp != "" {
		cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
	}
	return runHabilis(t, cmd)
}

func habilisRun(t *testing.T, args ...string) result {
	t.Helper()
	return habilisIn(t, "", "", args...)
}

// mustRun runs the binary and fails the test unless it exits 0.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	r := habilisRun(t, args...)
	if r.code != 0 {
		t.Fatalf("habilis %v: exit %d, stderr:\n%s", args, r.code, r.stderr)
	}
	return r.stdout
}

func testdata(name string) string {
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		panic(err)
	}
	return p
}

// loadedStore returns a store with testdata/tools.json loaded.
func loadedStore(t *testing.T) string {
	t.Helper()
	store := filepath.Join(t.TempDir(), "habilis.db")
	mustRun(t, "--store", store, "load", testdata("tools.json"))
	return store
}

func decode[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("decode %T: %v\n%s", v, err, s)
	}
	return v
}

func listTools(t *testing.T, store string) []habilis.Tool {
	t.Helper()
	out := decode[struct {
		Tools []habilis.Tool `json:"tools"`
	}](t, mustRun(t, "--store", store, "tools", "list", "--json"))
	return out.Tools
}

func TestLoad(t *testing.T) {
	store := filepath.Join(t.TempDir(), "habilis.db")
	out := mustRun(t, "--store", store, "load", testdata("tools.json"))
	for _, want := range []string{"7 tools", "7 added", "0 removed", "texts embedded", "catalog version 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("load output lacks %q:\n%s", want, out)
		}
	}
	// The test catalog's tools have 6 or 7 examples, fewer than the gate
	// needs to be as strict as on larger catalogs: load says so.
	if !strings.Contains(out, "median of 6 examples") || !strings.Contains(out, "habilis fit") {
		t.Errorf("load output lacks the note on few examples:\n%s", out)
	}
	first := decode[selector.LoadReport](t, mustRun(t, "--store", store, "load", "--json", testdata("tools.json")))
	if first.Embedded != 0 || first.Version != 1 || first.Unchanged != 7 || first.MedianExamples != 6 {
		t.Errorf("second load = embedded %d, version %d, unchanged %d, median examples %d; want 0, 1, 7, 6",
			first.Embedded, first.Version, first.Unchanged, first.MedianExamples)
	}
	if got := len(listTools(t, store)); got != 7 {
		t.Errorf("tools list after load: %d tools, want 7", got)
	}
	// With ten examples a tool, no note.
	var many []habilis.Tool
	for i := range 3 {
		tool := habilis.Tool{Name: fmt.Sprintf("tool_%d", i), Description: fmt.Sprintf("does thing %d", i)}
		for j := range 10 {
			tool.Examples = append(tool.Examples, fmt.Sprintf("please do thing %d, variant %d", i, j))
		}
		many = append(many, tool)
	}
	data, err := json.Marshal(many)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "many.json")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out = mustRun(t, "--store", filepath.Join(t.TempDir(), "many.db"), "load", file)
	if !strings.Contains(out, "3 tools") || strings.Contains(out, "note:") {
		t.Errorf("load of 3 tools with 10 examples each: want no note:\n%s", out)
	}
}

func TestLoadSaysWhatBareGatesRestOn(t *testing.T) {
	dir := t.TempDir()
	bare := filepath.Join(dir, "bare.json")
	catalog := `{"tools": [{"name": "read_file", "description": "Read the contents of a file", "inputSchema": {"type": "object"}},
 {"name": "get_weather", "description": "Current weather for a city", "inputSchema": {"type": "object"}}]}`
	if err := os.WriteFile(bare, []byte(catalog), 0o644); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, "--store", filepath.Join(dir, "habilis.db"), "load", bare)
	if !strings.Contains(out, "no tool has examples") || !strings.Contains(out, "background") {
		t.Errorf("load of a catalog without examples says nothing of its gates:\n%s", out)
	}
	rep := decode[selector.LoadReport](t, mustRun(t, "--store", filepath.Join(dir, "habilis.db"), "load", "--json", bare))
	if rep.Bare != 2 {
		t.Errorf("load --json bare_tools = %d, want 2", rep.Bare)
	}
}

func TestLoadErrorsLeaveStoreUnchanged(t *testing.T) {
	store := loadedStore(t)
	before := listTools(t, store)
	tests := []struct {
		file string
		want []string // in stderr
	}{
		{"broken.json", []string{"broken.json", `tool 1 "send_email"`, `"descripton"`, `"description"`}},
		{"duplicate.json", []string{"duplicate.json", `"get_weather"`, "duplicates"}},
		{"missing.json", []string{"missing.json"}},
	}
	for _, tt := range tests {
		r := habilisRun(t, "--store", store, "load", testdata(tt.file))
		if r.code != exitError {
			t.Errorf("load %s: exit %d, want %d", tt.file, r.code, exitError)
		}
		for _, w := range tt.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("load %s: stderr lacks %q:\n%s", tt.file, w, r.stderr)
			}
		}
		if diff := cmp.Diff(before, listTools(t, store)); diff != "" {
			t.Errorf("load %s changed the store (-before +after):\n%s", tt.file, diff)
		}
	}
	// Every problem of the broken file is reported, one per line.
	r := habilisRun(t, "--store", store, "load", testdata("broken.json"))
	if n := strings.Count(r.stderr, "broken.json: tool"); n < 2 {
		t.Errorf("load broken.json reported %d problems, want at least 2:\n%s", n, r.stderr)
	}
}

func TestSelect(t *testing.T) {
	store := loadedStore(t)
	tests := []struct {
		query     string
		mode      string
		wantTop   string // "" means abstained
		abstained bool
	}{
		{"is it sunny in Rome right now", "hybrid", "get_weather", false},
		{"mail the meeting notes to Ursula", "hybrid", "send_email", false},
		{"how much is 12 dollars in euros", "centroid", "convert_currency", false},
		{"translate see you soon into French", "description", "translate_text", false},
		{"recommend a vegan lasagna recipe", "centroid", "", true},
	}
	for _, tt := range tests {
		out := mustRun(t, "--store", store, "select", "--json", "--mode", tt.mode, tt.query)
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(out), &raw); err != nil {
			t.Fatalf("select(%q): %v", tt.query, err)
		}
		for _, k := range []string{"query", "mode", "abstained", "reason", "ambiguous", "matches"} {
			if _, ok := raw[k]; !ok {
				t.Errorf("select(%q) JSON lacks %q:\n%s", tt.query, k, out)
			}
		}
		d := decode[habilis.Decision](t, out)
		if d.Query != tt.query || string(d.Mode) != tt.mode {
			t.Errorf("select(%q) = query %q mode %q, want %q %q", tt.query, d.Query, d.Mode, tt.query, tt.mode)
		}
		if d.Abstained != tt.abstained {
			t.Errorf("select(%q, %s).abstained = %v, want %v (reason %q)", tt.query, tt.mode, d.Abstained, tt.abstained, d.Reason)
		}
		if tt.abstained {
			if len(d.Matches) != 0 || d.Reason == "" {
				t.Errorf("select(%q, %s) abstained with matches %v, reason %q; want none and a reason", tt.query, tt.mode, d.Matches, d.Reason)
			}
			continue
		}
		if len(d.Matches) == 0 || d.Matches[0].Tool != tt.wantTop {
			t.Errorf("select(%q, %s) = %v, want top %s", tt.query, tt.mode, d.Matches, tt.wantTop)
			continue
		}
		var ms []map[string]json.RawMessage
		if err := json.Unmarshal(raw["matches"], &ms); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"tool", "score", "centroid_score", "description_score", "radius", "margin", "passed", "collides_with"} {
			if _, ok := ms[0][k]; !ok {
				t.Errorf("select(%q) match JSON lacks %q", tt.query, k)
			}
		}
		if got := string(ms[0]["collides_with"]); got == "null" {
			t.Errorf("select(%q) match collides_with = %s, want a list", tt.query, got)
		}
	}
}

func TestSelectOptions(t *testing.T) {
	store := loadedStore(t)
	d := decode[habilis.Decision](t, mustRun(t, "--store", store, "select", "--json", "-k", "2",
		"--deny", "get_weather", "--pin", "translate_text", "is", "it", "sunny", "in", "Rome"))
	if d.Query != "is it sunny in Rome" {
		t.Errorf("select query = %q, want the words joined by spaces", d.Query)
	}
	var names []string
	for _, m := range d.Matches {
		names = append(names, m.Tool)
	}
	if slices.Contains(names, "get_weather") || !slices.Contains(names, "translate_text") {
		t.Errorf("select --deny get_weather --pin translate_text = %v", names)
	}
	// Fail-open returns tools even when the router abstains.
	d = decode[habilis.Decision](t, mustRun(t, "--store", store, "select", "--json", "--mode", "centroid", "--fail-open", "recommend a vegan lasagna recipe"))
	if !d.Abstained || len(d.Matches) == 0 {
		t.Errorf("select --fail-open = abstained %v with %d matches, want abstained with matches", d.Abstained, len(d.Matches))
	}
	// The human table says why it abstained.
	out := mustRun(t, "--store", store, "select", "--mode", "centroid", "recommend a vegan lasagna recipe")
	if !strings.Contains(out, "abstained") {
		t.Errorf("select table lacks the abstention line:\n%s", out)
	}
	out = mustRun(t, "--store", store, "select", "is it sunny in Rome right now")
	if !strings.Contains(out, "get_weather") || !strings.Contains(out, "RADIUS") {
		t.Errorf("select table lacks the figures:\n%s", out)
	}
}

func TestCollisions(t *testing.T) {
	store := loadedStore(t)
	out := mustRun(t, "--store", store, "collisions", "--json", "--min-severity", "low")
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatal(err)
	}
	cols := decode[struct {
		Collisions []habilis.Collision `json:"collisions"`
	}](t, out).Collisions
	found := false
	for _, c := range cols {
		if c.A == "get_forecast" && c.B == "get_weather" || c.A == "get_weather" && c.B == "get_forecast" {
			found = true
		}
	}
	if !found {
		t.Errorf("collisions = %v, want the get_weather/get_forecast pair", cols)
	}

	r := habilisRun(t, "--store", store, "collisions", "--fail-on", "low")
	if r.code != exitCollisions {
		t.Errorf("collisions --fail-on low: exit %d, want %d", r.code, exitCollisions)
	}
	if !strings.Contains(r.stdout, "get_weather") {
		t.Errorf("collisions --fail-on low printed no report:\n%s", r.stdout)
	}

	// --min-severity and --limit bound the list, worst first; --fail-on
	// still sees every collision.
	checkCollisionBounds(t, store, cols)
	r = habilisRun(t, "--store", store, "collisions", "--min-severity", "high", "--limit", "0", "--fail-on", "low")
	if r.code != exitCollisions {
		t.Errorf("collisions --min-severity high --fail-on low: exit %d, want %d (every collision counts)", r.code, exitCollisions)
	}
	for _, bad := range [][]string{{"--min-severity", "severe"}, {"--limit", "-1"}} {
		if r := habilisRun(t, append([]string{"--store", store, "collisions"}, bad...)...); r.code != exitUsage {
			t.Errorf("collisions %v: exit %d, want %d", bad, r.code, exitUsage)
		}
	}

	// A catalog without overlaps gives an empty list, not null.
	lone := filepath.Join(t.TempDir(), "lone.db")
	mustRun(t, "--store", lone, "load", testdata("lone.json"))
	out = mustRun(t, "--store", lone, "collisions", "--json", "--fail-on", "low")
	if strings.Contains(out, "null") || !strings.Contains(out, `"collisions": []`) {
		t.Errorf("collisions on a single-tool catalog = %s, want an empty list", out)
	}
}

// checkCollisionBounds checks that --min-severity and --limit bound the
// list of cols, the store's collisions, worst first.
func checkCollisionBounds(t *testing.T, store string, cols []habilis.Collision) {
	t.Helper()
	for _, tt := range []struct {
		args []string
		want func(habilis.Collision) bool
		max  int
	}{
		{nil, func(c habilis.Collision) bool { return c.Severity.Rank() >= 2 }, len(cols)}, // medium by default
		{[]string{"--min-severity", "medium"}, func(c habilis.Collision) bool { return c.Severity.Rank() >= 2 }, len(cols)},
		{[]string{"--min-severity", "high"}, func(c habilis.Collision) bool { return c.Severity == habilis.SeverityHigh }, len(cols)},
		{[]string{"--min-severity", "low", "--limit", "1"}, func(habilis.Collision) bool { return true }, 1},
	} {
		out := decode[struct {
			Collisions []habilis.Collision `json:"collisions"`
			Total      *int                `json:"total"`
		}](t, mustRun(t, append([]string{"--store", store, "collisions", "--json"}, tt.args...)...))
		got := out.Collisions
		if out.Total == nil || *out.Total != len(cols) {
			t.Errorf("collisions %v: total %v, want %d, every collision found", tt.args, out.Total, len(cols))
		}
		var want, have [][2]string
		for _, c := range cols {
			if tt.want(c) && len(want) < tt.max {
				want = append(want, [2]string{c.A, c.B})
			}
		}
		for _, c := range got {
			have = append(have, [2]string{c.A, c.B})
		}
		if diff := cmp.Diff(want, have); diff != "" {
			t.Errorf("collisions %v: not the worst such collisions in order (-want +got):\n%s", tt.args, diff)
		}
	}
}

// TestToolsShowFewExamples checks that tools show says when a tool has
// too few examples to be gated on them alone.
func TestToolsShowFewExamples(t *testing.T) {
	dir := t.TempDir()
	catalog := filepath.Join(dir, "tools.json")
	tools := `[{"name": "echo", "description": "Echoes back the input.", "examples": ["repeat after me: hello"]},
		{"name": "get_sum", "description": "Adds two numbers.", "examples": ["add 2 and 3", "what is 4 plus 5", "sum of 7 and 8"]},
		{"name": "get_time", "description": "Tells the current time."}]`
	if err := os.WriteFile(catalog, []byte(tools), 0o600); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "habilis.db")
	if out, want := mustRun(t, "--store", store, "load", catalog), "note: the tools with examples have a median of 1 example;"; !strings.Contains(out, want) {
		t.Errorf("load of a catalog with one bare tool and two with 1 and 3 examples lacks %q:\n%s", want, out)
	}
	const note = "fewer than 3 examples: hybrid mode also lets through what it would without them, "
	if out := mustRun(t, "--store", store, "tools", "show", "echo"); !strings.Contains(out, note) || !strings.Contains(out, "on the description score)") {
		t.Errorf("tools show echo (one example) lacks %q:\n%s", note, out)
	}
	if out := mustRun(t, "--store", store, "tools", "show", "get_sum"); strings.Contains(out, "fewer than") {
		t.Errorf("tools show get_sum (three examples) says it has too few:\n%s", out)
	}
}

func TestTools(t *testing.T) {
	store := loadedStore(t)
	before := listTools(t, store)

	info := decode[selector.ToolInfo](t, mustRun(t, "--store", store, "tools", "show", "--json", "get_weather"))
	if info.Tool.Name != "get_weather" || len(info.Tool.Examples) != 7 || info.RadiusExample == "" || info.RadiusSource != "examples" {
		t.Errorf("tools show get_weather = %+v", info)
	}
	// The gate is the radius minus the margin, or the catalog's noise
	// floor when that is higher.
	if gate := info.Radius - info.Margin; info.Threshold <= 0 || info.Threshold < gate-1e-6 {
		t.Errorf("tools show get_weather threshold %v, radius %v, margin %v; want at least radius − margin", info.Threshold, info.Radius, info.Margin)
	}
	if len(info.Gates) != 3 || info.Gates[habilis.ModeCentroid] != info.Threshold {
		t.Errorf("tools show --json gates = %v, want one per mode, the centroid one the threshold %v", info.Gates, info.Threshold)
	}
	out := mustRun(t, "--store", store, "tools", "show", "get_weather")
	for _, w := range []string{"radius:", "margin:", "gates:", "hybrid ", "centroid ", "description ", "schema:", "is it raining in Oslo right now"} {
		if !strings.Contains(out, w) {
			t.Errorf("tools show lacks %q:\n%s", w, out)
		}
	}

	r := habilisRun(t, "--store", store, "tools", "show", "nope")
	if want := "habilis: tools show: tool \"nope\": not found; habilis tools list names the catalog's tools\n"; r.code != exitError || r.stderr != want {
		t.Errorf("tools show nope = exit %d, stderr %q; want 1 and %q", r.code, r.stderr, want)
	}

	r = habilisRun(t, "--store", store, "tools", "rm", "get_weather", "nope")
	if r.code != exitError || !strings.Contains(r.stderr, `"nope"`) {
		t.Errorf("tools rm get_weather nope = exit %d, stderr %q; want 1 naming nope", r.code, r.stderr)
	}
	if diff := cmp.Diff(before, listTools(t, store)); diff != "" {
		t.Errorf("a failed tools rm changed the catalog (-before +after):\n%s", diff)
	}

	mustRun(t, "--store", store, "tools", "rm", "translate_text")
	// "remove" is what a user who has not read the help types.
	mustRun(t, "--store", store, "tools", "remove", "read_inbox")
	var names []string
	for _, tool := range listTools(t, store) {
		names = append(names, tool.Name)
	}
	want := []string{"convert_currency", "create_event", "get_forecast", "get_weather", "send_email"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("tools after rm (-want +got):\n%s", diff)
	}
}

// evalKeys are the report's contract keys.
var evalKeys = []string{"queries", "tools", "mode", "k", "acc_at_1", "recall_at_k", "mrr", "decision_accuracy", "no_tool", "latency_us", "per_tool", "confusions"}

func checkEvalReport(t *testing.T, name, out string) {
	t.Helper()
	var raw map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, out)
	}
	for _, k := range evalKeys {
		if _, ok := raw[k]; !ok {
			t.Errorf("%s JSON lacks %q", name, k)
		}
	}
	noTool, _ := raw["no_tool"].(map[string]any)
	for _, k := range []string{"queries", "auroc", "abstain_precision", "abstain_recall"} {
		if _, ok := noTool[k]; !ok {
			t.Errorf("%s no_tool lacks %q", name, k)
		}
	}
	lat, _ := raw["latency_us"].(map[string]any)
	for _, k := range []string{"p50", "p99"} {
		if _, ok := lat[k]; !ok {
			t.Errorf("%s latency_us lacks %q", name, k)
		}
	}
	rates := map[string]any{"acc_at_1": raw["acc_at_1"], "recall_at_k": raw["recall_at_k"], "mrr": raw["mrr"],
		"decision_accuracy": raw["decision_accuracy"], "auroc": noTool["auroc"],
		"abstain_precision": noTool["abstain_precision"], "abstain_recall": noTool["abstain_recall"]}
	for k, v := range rates {
		f, ok := v.(float64)
		if !ok || f < 0 || f > 1 {
			t.Errorf("%s %s = %v, want a rate in [0, 1]", name, k, v)
		}
	}
}

func TestEval(t *testing.T) {
	store := loadedStore(t)
	storeBefore, err := os.ReadFile(store)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	r := habilisIn(t, "", tmp, "--store", store, "eval", "--json", "--tools", testdata("tools.json"), "--queries", testdata("queries.jsonl"))
	if r.code != 0 {
		t.Fatalf("eval: exit %d: %s", r.code, r.stderr)
	}
	checkEvalReport(t, "eval", r.stdout)
	rep := decode[struct {
		Queries int `json:"queries"`
		Tools   int `json:"tools"`
		NoTool  struct {
			Queries int `json:"queries"`
		} `json:"no_tool"`
	}](t, r.stdout)
	if rep.Queries != 16 || rep.Tools != 7 || rep.NoTool.Queries != 2 {
		t.Errorf("eval = %d queries, %d tools, %d no-tool; want 16, 7, 2", rep.Queries, rep.Tools, rep.NoTool.Queries)
	}
	storeAfter, err := os.ReadFile(store)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(storeBefore, storeAfter) {
		t.Errorf("eval changed the user's --store")
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("eval left %d entries in the temporary directory", len(left))
	}

	// A --store that does not exist is neither needed nor created.
	dir := t.TempDir()
	r = habilisIn(t, dir, tmp, "eval", "--tools", testdata("tools.json"), "--queries", testdata("queries.jsonl"))
	if r.code != 0 {
		t.Fatalf("eval: exit %d: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, defaultStore)); err == nil {
		t.Errorf("eval created %s", defaultStore)
	}
	for _, w := range []string{"acc@1", "worst tools", "accepted no-tool"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("eval table lacks %q:\n%s", w, r.stdout)
		}
	}

	r = habilisRun(t, "eval", "--tools", testdata("tools.json"), "--queries", testdata("queries.jsonl"), "--min-acc", "1.01")
	if r.code != exitAccuracy {
		t.Errorf("eval --min-acc 1.01: exit %d, want %d", r.code, exitAccuracy)
	}
	if !strings.Contains(r.stdout, "acc@1") || !strings.Contains(r.stderr, "min-acc") {
		t.Errorf("eval --min-acc 1.01 should print the report then the miss; stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
}

func TestEvalCandidatesBaselineWhere(t *testing.T) {
	dir := t.TempDir()
	rows := `{"query": "what is the weather in Oslo", "expected": ["get_weather"], "candidates": ["get_weather", "send_email"], "set": "dev"}
{"query": "send an email to Ann", "expected": ["send_email"], "candidates": ["send_email"], "set": "dev"}
{"query": "tell me a joke", "expected": [], "candidates": ["get_weather"], "set": "dev"}
{"query": "convert 20 dollars to euros", "expected": ["convert_currency"], "candidates": ["convert_currency"], "set": "other"}
`
	qpath := filepath.Join(dir, "q.jsonl")
	if err := os.WriteFile(qpath, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	type report struct {
		Queries   int     `json:"queries"`
		Baseline  string  `json:"baseline"`
		Threshold float64 `json:"threshold"`
		NoTool    struct {
			Queries      int     `json:"queries"`
			AcceptedRate float64 `json:"accepted_rate"`
		} `json:"no_tool"`
	}
	for _, args := range [][]string{{}, {"--baseline", "bm25"}} {
		r := habilisRun(t, append([]string{"eval", "--json", "--tools", testdata("tools.json"), "--queries", qpath, "--where", "set=dev"}, args...)...)
		if r.code != 0 {
			t.Fatalf("eval %v: exit %d: %s", args, r.code, r.stderr)
		}
		checkEvalReport(t, "eval candidates", r.stdout)
		rep := decode[report](t, r.stdout)
		wantBase := ""
		if len(args) > 0 {
			wantBase = "bm25"
		}
		if rep.Queries != 3 || rep.NoTool.Queries != 1 || rep.Baseline != wantBase {
			t.Errorf("eval --where set=dev %v = %+v, want 3 queries, 1 no-tool, baseline %q", args, rep, wantBase)
		}
	}
	r := habilisRun(t, "eval", "--tools", testdata("tools.json"), "--queries", qpath, "--where", "set")
	if r.code != exitUsage {
		t.Errorf("eval --where set: exit %d, want %d", r.code, exitUsage)
	}
	r = habilisRun(t, "eval", "--tools", testdata("tools.json"), "--queries", qpath, "--baseline", "bm26")
	if r.code != exitUsage {
		t.Errorf("eval --baseline bm26: exit %d, want %d", r.code, exitUsage)
	}
}

func TestEvalSelf(t *testing.T) {
	out := mustRun(t, "eval", "--self", "--json", "--tools", testdata("tools.json"))
	checkEvalReport(t, "eval --self", out)
	rep := decode[struct {
		Queries int `json:"queries"`
		Folds   int `json:"folds"`
	}](t, out)
	if rep.Queries != 43 || rep.Folds != eval.SelfFolds {
		t.Errorf("eval --self = %d queries in %d folds, want 43 in %d", rep.Queries, rep.Folds, eval.SelfFolds)
	}
}

func TestExitCodes(t *testing.T) {
	store := loadedStore(t)
	missing := filepath.Join(t.TempDir(), "missing.db")
	tests := []struct {
		args []string
		code int
		want string // in stderr
	}{
		{[]string{"version"}, exitOK, ""},
		{[]string{"--bogus"}, exitUsage, "bogus"},
		{[]string{"frobnicate"}, exitUsage, "frobnicate"},
		{[]string{"--store", store, "select"}, exitUsage, "arg"},
		{[]string{"--store", store, "select", "--mode", "nope", "weather"}, exitUsage, "nope"},
		{[]string{"--store", store, "select", "-k", "0", "weather"}, exitUsage, "-k"},
		{[]string{"--store", store, "select", "-k", "two", "weather"}, exitUsage, "two"},
		{[]string{"--store", store, "collisions", "--fail-on", "severe"}, exitUsage, "severe"},
		{[]string{"--store", store, "tools", "show"}, exitUsage, "arg"},
		{[]string{"--store", store, "tools", "bogus"}, exitUsage, "bogus"},
		{[]string{"load"}, exitUsage, "arg"},
		{[]string{"eval", "--tools", testdata("tools.json")}, exitUsage, "--queries"},
		{[]string{"--log-level", "loud", "version"}, exitUsage, "loud"},
		{[]string{"--store", store, "--embedder", "word2vec", "select", "weather"}, exitUsage, "word2vec"},
		{[]string{"--store", missing, "select", "weather"}, exitError, "does not exist"},
		// A --where that keeps no row measures nothing: every figure would read 0.
		{[]string{"eval", "--tools", testdata("tools.json"), "--queries", testdata("queries.jsonl"), "--where", "split=none"}, exitError, "--where"},
		{[]string{"--store", missing, "fit", testdata("missing.jsonl")}, exitError, "missing.jsonl"},
		// Commands that change a catalog refuse a store that does not
		// exist rather than create an empty one: only load starts one.
		{[]string{"--store", missing, "fit", testdata("fit.jsonl")}, exitError, "does not exist"},
		{[]string{"--store", missing, "tools", "rm", "get_weather"}, exitError, "does not exist"},
		{[]string{"--store", missing, "--reindex", "select", "weather"}, exitError, "does not exist"},
	}
	for _, tt := range tests {
		r := habilisRun(t, tt.args...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("habilis %v = exit %d, stderr %q; want exit %d mentioning %q", tt.args, r.code, r.stderr, tt.code, tt.want)
		}
		if tt.code != exitOK && !strings.HasPrefix(r.stderr, "habilis: ") {
			t.Errorf("habilis %v: stderr %q does not start with \"habilis: \"", tt.args, r.stderr)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("a command other than load created the missing store %s", missing)
	}
}

func TestStoreInUse(t *testing.T) {
	store := loadedStore(t)
	st, err := boltstore.Open(store, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := habilisRun(t, "--store", store, "select", "weather in Paris")
	if r.code != exitError || !strings.Contains(r.stderr, "in use") || !strings.Contains(r.stderr, "--remote") {
		t.Errorf("select on a store in use = exit %d, stderr %q; want 1, saying it is in use and suggesting --remote", r.code, r.stderr)
	}
}

// TestLexicalAlgorithmMismatch checks that a store whose vectors an
// earlier lexical algorithm made is refused with a line naming both
// algorithms and --reindex, and serves again once reindexed.
func TestLexicalAlgorithmMismatch(t *testing.T) {
	store := loadedStore(t)
	toAlgorithm1(t, store, storetest.Embedder)
	r := habilisRun(t, "--store", store, "select", "weather in Paris")
	want := "built with embedder lexical (sparse, algorithm 1), not lexical (algorithm " + lexical.Algorithm + ")"
	if r.code != exitError || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "--reindex") {
		t.Errorf("select on an algorithm 1 store = exit %d, stderr %q; want 1, saying %q and suggesting --reindex", r.code, r.stderr, want)
	}
	d := decode[habilis.Decision](t, mustRun(t, "--store", store, "--reindex", "select", "--json", "weather in Paris"))
	if len(d.Matches) == 0 || d.Matches[0].Tool != "get_weather" {
		t.Errorf("select after --reindex = %+v, want get_weather first", d)
	}
	mustRun(t, "--store", store, "select", "weather in Paris")
}

// toAlgorithm1 marks the embedder info that field picks in the meta of
// the store at path as made by algorithm 1, as an earlier release wrote it.
func toAlgorithm1(t *testing.T, path string, field func(*habilis.CatalogMeta) *habilis.EmbedderInfo) {
	t.Helper()
	st, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	storetest.SetAlgorithm(t, st, field, "1")
}

func TestEnvironment(t *testing.T) {
	store := loadedStore(t)
	cmd := exec.Command(binary, "tools", "list", "--json")
	cmd.Env = append(os.Environ(), "HABILIS_STORE="+store)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tools list with HABILIS_STORE: %v", err)
	}
	if got := len(decode[struct {
		Tools []habilis.Tool `json:"tools"`
	}](t, string(out)).Tools); got != 7 {
		t.Errorf("tools list with HABILIS_STORE = %d tools, want 7", got)
	}
}

func TestFit(t *testing.T) {
	store := loadedStore(t)
	versionOf := func() uint64 {
		t.Helper()
		return snapshotOf(t, store).Meta.Version
	}
	before := versionOf()
	out := mustRun(t, "--store", store, "fit", "--json", testdata("fit.jsonl"))
	var rep map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep) == 0 {
		t.Fatalf("fit --json = %q (%v), want a JSON report", out, err)
	}
	if after := versionOf(); after <= before {
		t.Errorf("catalog version after fit = %d, want above %d: fit stores its calibration", after, before)
	}
	out = mustRun(t, "--store", store, "fit", testdata("fit.jsonl"))
	if !strings.Contains(out, "26 labelled queries") {
		t.Errorf("fit output lacks the query count:\n%s", out)
	}
	if !strings.Contains(out, "hybrid threshold") || !strings.Contains(out, "tuning half") || strings.Contains(out, "{") {
		t.Errorf("fit output should show the settings before and after as a table, not raw JSON:\n%s", out)
	}

	// A few rows of traffic learn no gates: fit says so, rather than let
	// the thresholds that the added examples moved read as learned, and
	// gives no abstention figure on no-tool queries the tuning half lacks.
	few := filepath.Join(t.TempDir(), "few.jsonl")
	testutil.AppendLines(t, few, `{"query": "is it cloudy in Dublin right now", "expected": ["get_weather"]}`,
		`{"query": "mail the slides to Ann", "expected": ["send_email"]}`, `{"query": "put lunch with Bo in my calendar", "expected": ["create_event"]}`)
	out = mustRun(t, "--store", loadedStore(t), "fit", few)
	if !strings.Contains(out, "gates: not learned") || strings.Contains(out, "of no-tool queries") {
		t.Errorf("fit on 3 rows should say the gates were not learned, and measure no abstention on no-tool queries:\n%s", out)
	}

	out = mustRun(t, "eval", "--json", "--tools", testdata("tools.json"), "--queries", testdata("queries.jsonl"), "--fit", testdata("fit.jsonl"))
	checkEvalReport(t, "eval --fit", out)
	if _, ok := decode[map[string]json.RawMessage](t, out)["fit"]; !ok {
		t.Errorf("eval --fit JSON lacks the fit report")
	}
}

// TestLoadNoteAfterFit checks load's note on a catalog of few examples
// after fit: fit on a few rows learns no gate, and the gates still rest on
// the examples, which load says; gates fit learned from labelled requests
// need no such note.
func TestLoadNoteAfterFit(t *testing.T) {
	store := loadedStore(t)
	rep := decode[eval.FitReport](t, mustRun(t, "--store", store, "fit", "--json", testdata("fit.jsonl")))
	if rep.GatesLearned {
		t.Fatalf("fit on %s learned the gates: the test needs a file too small for it", testdata("fit.jsonl"))
	}
	if out := mustRun(t, "--store", store, "load", testdata("tools.json")); !strings.Contains(out, "have a median of") {
		t.Errorf("load after a fit that learned no gate does not note few examples:\n%s", out)
	}

	many := filepath.Join(t.TempDir(), "many.jsonl")
	for _, city := range []string{"Dublin", "Lima", "Oslo", "Perth", "Quito", "Rome", "Seoul", "Tunis", "Zagreb", "Kyiv", "Accra", "Hanoi", "Cork", "Bern", "Riga", "Baku"} {
		testutil.AppendLines(t, many, fmt.Sprintf(`{"query": "is it raining in %s right now", "expected": ["get_weather"]}`, city),
			fmt.Sprintf(`{"query": "how warm is it in %s today", "expected": ["get_weather"]}`, city),
			fmt.Sprintf(`{"query": "mail the minutes of the %s meeting to Ann", "expected": ["send_email"]}`, city),
			fmt.Sprintf(`{"query": "sing me a song about %s", "expected": []}`, city))
	}
	store = loadedStore(t)
	if rep := decode[eval.FitReport](t, mustRun(t, "--store", store, "fit", "--json", many)); !rep.GatesLearned {
		t.Fatalf("fit on 64 rows learned no gate: %+v", rep.Tuning)
	}
	if out := mustRun(t, "--store", store, "load", testdata("tools.json")); strings.Contains(out, "note:") {
		t.Errorf("load after fit learned the gates still notes few examples:\n%s", out)
	}
}

// snapshotOf reads the catalog a store file holds, as the CLI left it.
func snapshotOf(t *testing.T, path string) *habilis.Snapshot {
	t.Helper()
	st, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	snap, err := st.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// TestCollisionsWithoutExamples checks that a catalog without examples
// gets the pairs its descriptions make (two near-identical readers of
// files), not "no collisions", and a note saying what they rest on.
func TestCollisionsWithoutExamples(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bare.json")
	if err := os.WriteFile(path, []byte(`[
	{"name": "read_file", "description": "Read the complete contents of a file from the file system."},
	{"name": "read_text_file", "description": "Read the complete contents of a file from the file system as text."},
	{"name": "send_email", "description": "Send an email message to one or more recipients."},
	{"name": "get_weather", "description": "Get the current weather conditions for a city."}
]`), 0o644); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "bare.db")
	mustRun(t, "--store", store, "load", path)
	cols := decode[struct {
		Collisions []habilis.Collision `json:"collisions"`
	}](t, mustRun(t, "--store", store, "collisions", "--json", "--min-severity", "low")).Collisions
	if len(cols) != 1 || cols[0].A != "read_file" || cols[0].B != "read_text_file" || cols[0].Severity != habilis.SeverityLow {
		t.Errorf("collisions = %+v, want read_file/read_text_file alone, low (no misroute can show)", cols)
	}
	// By default the table holds medium and above: it says a low pair is
	// left out, and why tools without examples have no more.
	out := mustRun(t, "--store", store, "collisions")
	if !strings.Contains(out, "(0 of 1 collisions shown") || !strings.Contains(out, "note: 4 of 4 tools have no examples") {
		t.Errorf("collisions table lacks the pair left out or the note:\n%s", out)
	}
	// One example (an overlay's) is held out of nothing either, so no
	// misroute of it shows: the note counts such tools too.
	overlaid := filepath.Join(dir, "one.json")
	if err := os.WriteFile(overlaid, []byte(`[
	{"name": "read_file", "description": "Read the complete contents of a file from the file system."},
	{"name": "read_text_file", "description": "Read the complete contents of a file from the file system as text.", "examples": ["show me what is in notes.txt"]},
	{"name": "send_email", "description": "Send an email message to one or more recipients.", "examples": ["mail Ann the slides", "email the team the agenda"]}
]`), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "--store", store, "load", overlaid)
	if out := mustRun(t, "--store", store, "collisions"); !strings.Contains(out, "note: 1 of 3 tools have no examples and 1 has one") {
		t.Errorf("collisions note does not count the tool with one example:\n%s", out)
	}
}
