package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/eval"
	"github.com/habilis-router/habilis/fill"
	"github.com/habilis-router/habilis/internal/ollamatest"
)

// habilisWith runs the binary like habilisRun, with stdin (a pipe, so never
// a terminal) and extra environment variables.
func habilisWith(t *testing.T, stdin string, env []string, args ...string) result {
	t.Helper()
	cmd := habilisCmd(args...)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin)
	return runHabilis(t, cmd)
}

func TestFill(t *testing.T) {
	store := loadedStore(t)
	tests := []struct {
		args     []string
		want     map[string]any
		filledBy map[string]string
		missing  []string
	}{
		{[]string{"get_weather", "what's the weather in Paris"}, map[string]any{"city": "Paris"}, map[string]string{"city": "extractor"}, nil},
		{[]string{"get_weather", "is", "it", "raining", "in", "Oslo"}, map[string]any{"city": "Oslo"}, map[string]string{"city": "extractor"}, nil},
		{[]string{"get_weather", "what's the weather like"}, map[string]any{}, map[string]string{}, []string{"city"}},
		{[]string{"convert_currency", "how much is 120 dollars in euros"}, map[string]any{"amount": 120.0}, map[string]string{"amount": "extractor"}, []string{"from", "to"}},
	}
	for _, tt := range tests {
		args := append([]string{"--store", store, "fill", "--json"}, tt.args...)
		out := mustRun(t, args...)
		raw := decode[map[string]json.RawMessage](t, out)
		for _, k := range []string{"tool", "arguments", "filled_by", "rejected", "missing", "problems", "complete"} {
			if _, ok := raw[k]; !ok {
				t.Errorf("fill %v JSON lacks %q:\n%s", tt.args, k, out)
			}
		}
		r := decode[fill.Result](t, out)
		if diff := cmp.Diff(tt.want, r.Arguments); diff != "" {
			t.Errorf("fill %v arguments (-want +got):\n%s", tt.args, diff)
		}
		if diff := cmp.Diff(tt.filledBy, r.FilledBy); diff != "" {
			t.Errorf("fill %v filled_by (-want +got):\n%s", tt.args, diff)
		}
		var missing []string
		for _, m := range r.Missing {
			missing = append(missing, m.Name)
			if !strings.HasSuffix(m.Question, "?") {
				t.Errorf("fill %v: missing %s has question %q, want a question", tt.args, m.Name, m.Question)
			}
		}
		if diff := cmp.Diff(tt.missing, missing); diff != "" {
			t.Errorf("fill %v missing (-want +got):\n%s", tt.args, diff)
		}
		if r.Complete != (len(tt.missing) == 0) || r.Tool != tt.args[0] {
			t.Errorf("fill %v = tool %q complete %v, want %q %v", tt.args, r.Tool, r.Complete, tt.args[0], len(tt.missing) == 0)
		}
	}

	out := mustRun(t, "--store", store, "fill", "get_weather", "what's the weather in Paris")
	for _, w := range []string{"ARGUMENT", "FILLED BY", "city", "Paris", "extractor", "complete"} {
		if !strings.Contains(out, w) {
			t.Errorf("fill table lacks %q:\n%s", w, out)
		}
	}
	out = mustRun(t, "--store", store, "fill", "get_weather", "what's the weather like")
	if !strings.Contains(out, "missing:") || !strings.Contains(out, "city: What is the city name?") {
		t.Errorf("fill table lacks the question for city:\n%s", out)
	}

	errs := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--store", store, "fill", "nope", "weather in Paris"}, exitError, `"nope"`},
		{[]string{"--store", store, "fill", "get_weather"}, exitUsage, "arg"},
		{[]string{"--store", store, "fill", "--filler", "gpt", "get_weather", "Paris"}, exitUsage, "gpt"},
		{[]string{"--store", store, "fill", "--filler", "ollama:", "get_weather", "Paris"}, exitUsage, "ollama:MODEL"},
		{[]string{"--store", store, "fill", "--escalate", "builtin:x", "get_weather", "Paris"}, exitUsage, "builtin takes no model"},
	}
	for _, tt := range errs {
		r := habilisRun(t, tt.args...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("habilis %v = exit %d, stderr %q; want exit %d mentioning %q", tt.args, r.code, r.stderr, tt.code, tt.want)
		}
	}
}

// runFixture is a store loaded with testdata/fill_tools.json, whose tools
// run a helper program and call a test HTTP server.
type runFixture struct {
	store  string
	marker string // the helper writes its stdin here when it runs

	mu       sync.Mutex
	requests []string // bodies the HTTP tool received
}

func newRunFixture(t *testing.T) *runFixture {
	t.Helper()
	dir := t.TempDir()
	helper := filepath.Join(dir, "fill_helper")
	if out, err := exec.Command("go", "build", "-o", helper, "./testdata/fill_helper").CombinedOutput(); err != nil {
		t.Fatalf("build helper: %v\n%s", err, out)
	}
	f := &runFixture{store: filepath.Join(dir, "habilis.db"), marker: filepath.Join(dir, "marker")}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.requests = append(f.requests, r.Method+" "+string(b))
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"content":[{"type":"text","text":"ticket 42 opened"}]}`)
	}))
	t.Cleanup(srv.Close)
	tmpl, err := os.ReadFile(testdata("fill_tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	catalog := strings.NewReplacer("@HELPER@", helper, "@MARKER@", f.marker, "@URL@", srv.URL+"/tickets").Replace(string(tmpl))
	path := filepath.Join(dir, "tools.json")
	if err := os.WriteFile(path, []byte(catalog), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "--store", f.store, "load", path)
	return f
}

// ran reports whether the helper ran, and what it read on stdin.
func (f *runFixture) ran(t *testing.T) (bool, string) {
	t.Helper()
	b, err := os.ReadFile(f.marker)
	if errors.Is(err, os.ErrNotExist) {
		return false, ""
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(f.marker); err != nil {
		t.Fatal(err)
	}
	return true, string(b)
}

func (f *runFixture) takeRequests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.requests
	f.requests = nil
	return r
}

// runJSON is run's --json output with the raw keys kept.
type runJSON struct {
	Query     string              `json:"query"`
	Decision  *habilis.Decision   `json:"decision"`
	Abstained bool                `json:"abstained"`
	Tool      string              `json:"tool"`
	Fill      *fill.Result        `json:"fill"`
	Ran       bool                `json:"ran"`
	Result    *habilis.ToolResult `json:"result"`
}

func TestRun(t *testing.T) {
	f := newRunFixture(t)
	for _, tt := range []struct {
		name string
		test func(*testing.T, *runFixture)
	}{
		{"command", testRunCommand},
		{"missing argument", testRunMissingArgument},
		{"kind not allowed", testRunKindNotAllowed},
		{"no confirmation", testRunNoConfirmation},
		{"http", testRunHTTP},
		{"selection only", testRunSelectionOnly},
		{"abstained", testRunAbstained},
		{"usage", testRunUsage},
		{"confirm on a terminal", testRunConfirmOnTerminal},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.test(t, f) })
	}
}

// run runs habilis run over the fixture's store, with stdin and args, in
// an environment holding a variable the tools may read and one they may
// not.
func (f *runFixture) run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	env := []string{"FILL_GREETING=hello", "FILL_SECRET=hunter2"}
	return habilisWith(t, stdin, env, append([]string{"--store", f.store, "run"}, args...)...)
}

func testRunCommand(t *testing.T, f *runFixture) {
	r := f.run(t, "", "--yes", "--allow", "command", "--json", `save a note "buy milk"`)
	if r.code != exitOK {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	raw := decode[map[string]json.RawMessage](t, r.stdout)
	for _, k := range []string{"decision", "fill", "result", "abstained", "ran"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("run JSON lacks %q:\n%s", k, r.stdout)
		}
	}
	out := decode[runJSON](t, r.stdout)
	if out.Tool != "save_note" || !out.Ran || out.Result == nil || out.Result.IsError {
		t.Fatalf("run = tool %q ran %v result %+v; want save_note run without error", out.Tool, out.Ran, out.Result)
	}
	ran, stdin := f.ran(t)
	if !ran || stdin != `{"text":"buy milk"}` {
		t.Errorf("helper ran %v with stdin %q, want {\"text\":\"buy milk\"}", ran, stdin)
	}
	var got struct {
		Args []string `json:"args"`
		Env  []string `json:"env"`
	}
	if err := json.Unmarshal([]byte(out.Result.Text()), &got); err != nil {
		t.Fatalf("helper output %q: %v", out.Result.Text(), err)
	}
	// Only the variables the spec lists reach the tool.
	want := struct {
		Args []string `json:"args"`
		Env  []string `json:"env"`
	}{[]string{"buy milk"}, []string{"FILL_GREETING=hello"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("helper received (-want +got):\n%s", diff)
	}
	// The human output prints the tool's output.
	r = f.run(t, "", "--yes", "--allow", "command", `save a note "buy milk"`)
	if r.code != exitOK || !strings.Contains(r.stdout, "selected save_note") || !strings.Contains(r.stdout, `"args":["buy milk"]`) {
		t.Errorf("run table = exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	f.ran(t)
}

func testRunMissingArgument(t *testing.T, f *runFixture) {
	r := f.run(t, "", "--yes", "--allow", "command", "--json", "save a note")
	if r.code != exitOK {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	out := decode[runJSON](t, r.stdout)
	if out.Tool != "save_note" || out.Ran || out.Result != nil || out.Fill == nil || len(out.Fill.Missing) != 1 {
		t.Fatalf("run(save a note) = %s; want save_note with text missing and nothing run", r.stdout)
	}
	if m := out.Fill.Missing[0]; m.Name != "text" || m.Question == "" {
		t.Errorf("run(save a note) missing = %+v, want text with a question", m)
	}
	if ran, _ := f.ran(t); ran {
		t.Errorf("run(save a note) executed the tool with an argument missing")
	}
	r = f.run(t, "", "--yes", "--allow", "command", "save a note")
	if r.code != exitOK || !strings.Contains(r.stdout, "What is the text of the note?") || !strings.Contains(r.stdout, "nothing ran") {
		t.Errorf("run table = exit %d, want the question and that nothing ran:\n%s", r.code, r.stdout)
	}
	if ran, _ := f.ran(t); ran {
		t.Errorf("run(save a note) executed the tool with an argument missing")
	}
}

func testRunKindNotAllowed(t *testing.T, f *runFixture) {
	for _, allow := range [][]string{nil, {"--allow", "http"}} {
		r := f.run(t, "", append(append([]string{"--yes", "--json"}, allow...), `save a note "buy milk"`)...)
		if r.code != exitError {
			t.Errorf("run %v: exit %d, want %d", allow, r.code, exitError)
		}
		out := decode[runJSON](t, r.stdout)
		if out.Ran || out.Result == nil || !out.Result.IsError || !strings.Contains(out.Result.Text(), "--allow command") {
			t.Errorf("run %v = ran %v, result %+v; want an error result saying to pass --allow command", allow, out.Ran, out.Result)
		}
		if ran, _ := f.ran(t); ran {
			t.Errorf("run %v executed a command tool that was not allowed", allow)
		}
	}
}

func testRunNoConfirmation(t *testing.T, f *runFixture) {
	r := f.run(t, "y\n", "--allow", "command", "--json", `save a note "buy milk"`)
	if r.code != exitError || !strings.Contains(r.stderr, "not a terminal") || !strings.Contains(r.stderr, "--yes") {
		t.Errorf("run without --yes on a pipe = exit %d, stderr %q; want 1, asking for --yes", r.code, r.stderr)
	}
	if ran, _ := f.ran(t); ran {
		t.Errorf("run without --yes on a pipe executed the tool")
	}
}

func testRunHTTP(t *testing.T, f *runFixture) {
	r := f.run(t, "", "--yes", "--allow", "http", "--json", `open a support ticket titled "printer jam"`)
	if r.code != exitOK {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	out := decode[runJSON](t, r.stdout)
	if out.Tool != "open_ticket" || out.Result == nil || out.Result.IsError || out.Result.Text() != "ticket 42 opened" {
		t.Errorf("run = tool %q result %+v; want open_ticket with the server's answer", out.Tool, out.Result)
	}
	if diff := cmp.Diff([]string{`POST {"title":"printer jam"}`}, f.takeRequests()); diff != "" {
		t.Errorf("HTTP tool requests (-want +got):\n%s", diff)
	}
}

func testRunSelectionOnly(t *testing.T, f *runFixture) {
	r := f.run(t, "", "--yes", "--allow", "command,http,mcp", "--json", "what's the weather in Paris")
	if r.code != exitOK {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	out := decode[runJSON](t, r.stdout)
	if out.Tool != "get_weather" || out.Ran || out.Result == nil || !out.Result.SelectionOnly || out.Fill.Arguments["city"] != "Paris" {
		t.Errorf("run = tool %q ran %v result %+v fill %+v; want get_weather, selection-only, city Paris", out.Tool, out.Ran, out.Result, out.Fill)
	}
	r = f.run(t, "", "what's the weather in Paris")
	if r.code != exitOK || !strings.Contains(r.stdout, "selection-only") {
		t.Errorf("run table = exit %d, want it to say selection-only:\n%s", r.code, r.stdout)
	}
}

func testRunAbstained(t *testing.T, f *runFixture) {
	r := f.run(t, "", "--yes", "--allow", "command", "--json", "recommend a vegan lasagna recipe")
	if r.code != exitOK {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	out := decode[runJSON](t, r.stdout)
	if !out.Abstained || out.Decision == nil || out.Decision.Reason == "" || out.Fill != nil || out.Result != nil || out.Ran {
		t.Errorf("run(off-topic) = %s; want abstained with a reason and nothing filled or run", r.stdout)
	}
	r = f.run(t, "", "recommend a vegan lasagna recipe")
	if r.code != exitOK || !strings.Contains(r.stdout, "abstained") || !strings.Contains(r.stdout, "nothing ran") {
		t.Errorf("run table = exit %d, want the abstention:\n%s", r.code, r.stdout)
	}
	if ran, _ := f.ran(t); ran {
		t.Errorf("an abstention executed a tool")
	}
}

func testRunUsage(t *testing.T, f *runFixture) {
	for _, args := range [][]string{
		{"--allow", "shell", "save a note"},
		{"--mode", "fuzzy", "save a note"},
		{"--filler", "gpt", "save a note"},
		{},
	} {
		if r := f.run(t, "", args...); r.code != exitUsage {
			t.Errorf("run %v: exit %d, want %d (stderr %q)", args, r.code, exitUsage, r.stderr)
		}
	}
}

func testRunConfirmOnTerminal(t *testing.T, f *runFixture) {
	getenv := func(k string) string { return map[string]string{"FILL_GREETING": "hi", "FILL_SECRET": "x"}[k] }
	tests := []struct {
		answer string
		run    bool
	}{
		{"y\n", true},
		{"yes\n", true},
		{"n\n", false},
		{"", false},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		g := &globalOptions{store: f.store, embedder: "lexical", json: true, stderr: &stderr, getenv: getenv}
		o := &runOptions{g: g, fillerFlags: fillerFlags{filler: "builtin"}, query: `save a note "call mum"`, mode: "hybrid",
			allow: []string{"command"}, stdin: strings.NewReader(tt.answer), interactive: true}
		err := runRun(context.Background(), o, &stdout)
		if (err == nil) != tt.run {
			t.Errorf("runRun(answer %q) = %v, want run %v", tt.answer, err, tt.run)
		}
		if !strings.Contains(stderr.String(), `Run save_note (command) with {"text":"call mum"}? [y/N]`) {
			t.Errorf("runRun(answer %q) prompt = %q", tt.answer, stderr.String())
		}
		ran, stdin := f.ran(t)
		if ran != tt.run || (ran && stdin != `{"text":"call mum"}`) {
			t.Errorf("runRun(answer %q): helper ran %v with %q, want ran %v", tt.answer, ran, stdin, tt.run)
		}
	}
}

func TestEvalFill(t *testing.T) {
	r := habilisRun(t, "eval", "--fill", "--json", "--tools", testdata("tools.json"), "--queries", testdata("fill_queries.jsonl"))
	if r.code != exitOK {
		t.Fatalf("eval --fill: exit %d: %s", r.code, r.stderr)
	}
	raw := decode[map[string]map[string]json.RawMessage](t, r.stdout)
	for _, k := range []string{"queries", "exact", "arg_precision", "arg_recall", "invented_rate", "baseline_exact", "skipped_by", "filler"} {
		if _, ok := raw["fill"][k]; !ok {
			t.Errorf("eval --fill JSON lacks fill.%s:\n%s", k, r.stdout)
		}
	}
	rep := decode[struct {
		Fill eval.FillReport `json:"fill"`
	}](t, r.stdout).Fill
	// Six rows are scored. Four are filled exactly, two of them only
	// thanks to their acceptable lists ("Oslo" for "Oslo, Norway", and
	// currencies that may be omitted); a request without a city and one
	// whose recipient the extractor does not find are not.
	want := fill.ScoreTotals{Rows: 6, Exact: 4, Gold: 6, Predicted: 4, Correct: 4, Recalled: 4, Invented: 0}
	if diff := cmp.Diff(want, rep.Totals); diff != "" {
		t.Errorf("eval --fill totals (-want +got):\n%s", diff)
	}
	wantSkipped := map[string]int{eval.SkipNoGold: 1, eval.SkipNotOneTool: 1, eval.SkipUnknownTool: 1, eval.SkipSchemaMismatch: 1}
	if diff := cmp.Diff(wantSkipped, rep.SkippedBy); diff != "" {
		t.Errorf("eval --fill skipped_by (-want +got):\n%s", diff)
	}
	if rep.Queries != 6 || rep.Skipped != 4 || rep.Filler != "extractor" || rep.InventedRate != 0 {
		t.Errorf("eval --fill = %d queries, %d skipped, filler %q, invented %v; want 6, 4, extractor, 0", rep.Queries, rep.Skipped, rep.Filler, rep.InventedRate)
	}
	if rep.Exact != 4.0/6 || rep.BaselineExact != 0 || rep.ArgPrecision != 1 || rep.ArgRecall != 4.0/6 {
		t.Errorf("eval --fill exact %v, baseline %v, precision %v, recall %v; want 4/6, 0, 1, 4/6", rep.Exact, rep.BaselineExact, rep.ArgPrecision, rep.ArgRecall)
	}
	var missed []string
	for _, m := range rep.Misses {
		missed = append(missed, m.Query)
	}
	if diff := cmp.Diff([]string{"what's the weather like today", "email bob@example.com about lunch"}, missed); diff != "" {
		t.Errorf("eval --fill misses (-want +got):\n%s", diff)
	}
}

func TestEvalFillRefuses(t *testing.T) {
	r := habilisRun(t, "eval", "--fill", "--tools", testdata("tools.json"), "--queries", testdata("fill_queries.jsonl"), "--min-acc", "0.9")
	if r.code != exitAccuracy || !strings.Contains(r.stdout, "invented rate") || !strings.Contains(r.stdout, "gold_argument_not_in_schema: 1") {
		t.Errorf("eval --fill --min-acc 0.9 = exit %d, want %d after the report:\n%s", r.code, exitAccuracy, r.stdout)
	}
	for _, args := range [][]string{
		{"eval", "--fill", "--tools", testdata("tools.json")},
		{"eval", "--fill", "--self", "--tools", testdata("tools.json")},
		{"eval", "--fill", "--tools", testdata("tools.json"), "--queries", testdata("fill_queries.jsonl"), "--filler", "bert"},
	} {
		if r := habilisRun(t, args...); r.code != exitUsage {
			t.Errorf("habilis %v: exit %d, want %d (stderr %q)", args, r.code, exitUsage, r.stderr)
		}
	}
}

func TestParseQueriesAcceptable(t *testing.T) {
	tests := []struct {
		line string
		want map[string][]any
		err  string
	}{
		{`{"query":"q","expected":["t"],"arguments":{"a":1}}`, nil, ""},
		{`{"query":"q","expected":["t"],"calls":[{"tool":"t","acceptable":{"a":[1,""],"b":["x"]}}]}`,
			map[string][]any{"a": {1.0, ""}, "b": {"x"}}, ""},
		// Several calls have no single gold answer.
		{`{"query":"q","expected":["t"],"calls":[{"acceptable":{"a":[1]}},{"acceptable":{"a":[2]}}]}`, nil, ""},
		{`{"query":"q","expected":["t"],"calls":{"acceptable":{}}}`, nil, `"calls"`},
		{`{"query":"q","expected":["t"],"calls":[{"acceptable":{"a":1}}]}`, nil, "acceptable"},
	}
	for _, tt := range tests {
		qs, err := eval.ParseQueries("q.jsonl", strings.NewReader(tt.line))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "q.jsonl:1") || !errors.Is(err, habilis.ErrInvalid) {
				t.Errorf("ParseQueries(%s) = %v, want an error at q.jsonl:1 about %s", tt.line, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseQueries(%s): %v", tt.line, err)
			continue
		}
		if diff := cmp.Diff(tt.want, qs[0].Acceptable); diff != "" {
			t.Errorf("ParseQueries(%s).Acceptable (-want +got):\n%s", tt.line, diff)
		}
	}
}

func TestCollisionsFlags(t *testing.T) {
	store := loadedStore(t)
	count := func(args ...string) int {
		t.Helper()
		out := mustRun(t, append([]string{"--store", store, "collisions", "--json", "--min-severity", "low"}, args...)...)
		return len(decode[struct {
			Collisions []habilis.Collision `json:"collisions"`
		}](t, out).Collisions)
	}
	// A threshold near zero reports every pair of the 7 tools; the default
	// reports fewer, so the flag reaches the analysis of the local store.
	if all, def := count("--threshold", "0.001"), count(); all != 21 || def >= all || def == 0 {
		t.Errorf("collisions --threshold 0.001 = %d pairs, default = %d; want 21 and fewer but some", all, def)
	}
	r := habilisRun(t, "--store", store, "collisions", "--fail-on", "high")
	if r.code != exitCollisions || !strings.Contains(r.stdout, "get_forecast") || !strings.Contains(r.stdout, "collisions") {
		t.Errorf("collisions --fail-on high = exit %d, want %d after the report:\n%s", r.code, exitCollisions, r.stdout)
	}
	for _, args := range [][]string{
		{"--threshold", "2"},
		{"--threshold", "-0.5"},
		{"--threshold", "NaN"},
		{"--threshold", "high"},
		{"--fail-on", "severe"},
	} {
		r := habilisRun(t, append([]string{"--store", store, "collisions"}, args...)...)
		if r.code != exitUsage || r.stdout != "" {
			t.Errorf("collisions %v = exit %d, stdout %q; want %d and no report", args, r.code, r.stdout, exitUsage)
		}
	}
}

// TestFillOllama fills with a real Ollama server and a tiny model that
// answers "Paris" to everything: the value stands only where the request
// says it.
func TestFillOllama(t *testing.T) {
	s := ollamatest.Server(t)
	const model = "tiny-paris"
	ollamatest.CreateChatModel(t, s.Client, model, "Paris")
	store := loadedStore(t)
	filler := "ollama:" + model + "@" + s.Host

	checkFillWithModel(t, store, filler, model)

	// Scoring the model's filling: every string it says is "Paris", so of
	// its strings it may keep only the one Paris the requests contain (its
	// boolean for "only unread" is supported too), and nothing is invented.
	rep := decode[struct {
		Fill eval.FillReport `json:"fill"`
	}](t, mustRun(t, "eval", "--fill", "--json", "--filler", filler, "--tools", testdata("tools.json"), "--queries", testdata("fill_queries.jsonl"))).Fill
	if rep.Queries != 6 || rep.Totals.Invented != 0 || rep.Totals.Predicted != 2 || rep.Totals.Exact != 2 || rep.Filler != "ollama:"+model {
		t.Errorf("eval --fill with %s = %+v; want 6 rows, Paris and unread_only kept and exact, nothing invented", model, rep)
	}

	// A server without the model is an error naming it.
	r := habilisRun(t, "--store", store, "fill", "get_weather", "weather in Rome", "--filler", "ollama:no-such-model@"+s.Host)
	if r.code != exitError || !strings.Contains(r.stderr, "no-such-model") {
		t.Errorf("fill with a missing model = exit %d, stderr %q; want 1 naming it", r.code, r.stderr)
	}
}

// checkFillWithModel fills with filler, a model that answers "Paris" to
// everything: the value stands only where the request says it, and
// escalating to the extractor fills what the model could not.
func checkFillWithModel(t *testing.T, store, filler, model string) {
	t.Helper()
	out := decode[fill.Result](t, mustRun(t, "--store", store, "fill", "get_weather", "what's the weather in Paris", "--filler", filler, "--json"))
	if out.Arguments["city"] != "Paris" || out.FilledBy["city"] != "ollama:"+model || !out.Complete {
		t.Errorf("fill(weather in Paris) with %s = %+v; want city Paris filled by the model", model, out)
	}

	out = decode[fill.Result](t, mustRun(t, "--store", store, "fill", "get_weather", "weather in Rome", "--filler", filler, "--json"))
	if len(out.Arguments) != 0 || out.Complete || len(out.Missing) != 1 || out.Missing[0].Name != "city" || out.Missing[0].Question == "" {
		t.Errorf("fill(weather in Rome) with %s = %+v; want city missing with a question", model, out)
	}
	if len(out.Rejected) != 1 || out.Rejected[0].Value != "Paris" || out.Rejected[0].By != "ollama:"+model {
		t.Errorf("fill(weather in Rome) rejected = %+v, want the model's Paris", out.Rejected)
	}

	// Escalating to the extractor fills what the model could not.
	out = decode[fill.Result](t, mustRun(t, "--store", store, "fill", "get_weather", "weather in Rome", "--filler", filler, "--escalate", "builtin", "--json"))
	if out.Arguments["city"] != "Rome" || out.FilledBy["city"] != "extractor" || !out.Complete {
		t.Errorf("fill(weather in Rome) escalating to builtin = %+v; want Rome filled by the extractor", out)
	}
}

// TestRunIncompleteAdvice checks what run tells the user to change when
// filling leaves a question, a value the tool refuses, or both.
func TestRunIncompleteAdvice(t *testing.T) {
	dir := t.TempDir()
	catalog := filepath.Join(dir, "hotel.json")
	const tools = `[{"name": "book_hotel", "description": "Book a hotel room in a city for a number of nights.",
	  "examples": ["book a hotel in Paris for 3 nights", "reserve a room in Rome for two nights", "I need a hotel in Berlin for 5 nights",
	    "book me a room in Madrid", "find and book a hotel for a week in Lisbon", "hotel room in Oslo for 4 nights please"],
	  "inputSchema": {"type": "object", "required": ["city", "nights"], "properties": {
	    "city": {"type": "string", "description": "City"},
	    "nights": {"type": "integer", "description": "Number of nights", "minimum": 1, "maximum": 14}}}}]`
	if err := os.WriteFile(catalog, []byte(tools), 0o600); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "habilis.db")
	mustRun(t, "--store", store, "load", catalog)
	for _, tt := range []struct{ query, want string }{
		{"book a hotel in Paris", "nothing ran: answer the questions above and ask again\n"},
		{"book a hotel in Paris for 30 nights", "nothing ran: the tool refuses a value the request gives (problems above): ask again with a value it accepts\n"},
		{"book a hotel for 30 nights", "nothing ran: answer the questions above, change the values the tool refuses (problems above), and ask again\n"},
	} {
		r := habilisRun(t, "--store", store, "run", tt.query)
		if r.code != exitOK || !strings.HasSuffix(r.stdout, "\n\n"+tt.want) {
			t.Errorf("run %q = exit %d, stdout:\n%s\nwant exit 0, ending with %q", tt.query, r.code, r.stdout, tt.want)
		}
	}
}
