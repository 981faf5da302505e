package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/mcpgate"
)

// The requests TestMCPServeFit asks of the notes and clock servers, which
// share no word with the tool that serves them: unfitted, the gateway
// ranks save_note first for the first and abstains on the second.
var fitAsks = map[string]string{
	"should I go to bed, is it late in Paris": "current_time",
	"remind me to call mum":                   "save_note",
}

// routed reports whether an answer chose tool, without abstaining.
func routed(res mcpgate.SearchResult, tool string) bool {
	return !res.Abstained && len(res.Tools) > 0 && res.Tools[0].Name == tool && res.Tools[0].Passed
}

// TestMCPServeFit drives `habilis mcp serve --record FILE --fit FILE` as an
// agent's host would: the first gateway has nothing to learn yet and
// records its traffic; restarted, it has learnt from it, and routes
// requests it had got wrong. mcp search --fit shows the same, a row for a
// tool no server has is skipped, and a damaged file is refused at start,
// naming its line.
func TestMCPServeFit(t *testing.T) {
	config := testUpstreams(t)
	record := filepath.Join(t.TempDir(), "traffic.jsonl")
	cs, stderr := gatewayOverStdio(t, "--config", config, "--record", record, "--fit", record, "--log-level", "info")
	for q, tool := range fitAsks {
		if res := searchTools(t, cs, q, 3); routed(res, tool) {
			t.Fatalf("unfitted, %q routes to %s: the test servers no longer show what fitting changes (%+v)", q, tool, res)
		}
	}
	for _, a := range []struct {
		query, tool string
		args        map[string]any
	}{
		{"is it evening in Lima yet", "current_time", map[string]any{"timezone": "America/Lima"}},
		{"how late is it in Tokyo", "current_time", map[string]any{"timezone": "Asia/Tokyo"}},
		{"keep a reminder about the dentist", "save_note", map[string]any{"text": "dentist"}},
		{"remind me to buy bread", "save_note", map[string]any{"text": "bread"}},
	} {
		searchTools(t, cs, a.query, 5)
		if res := callThrough(t, cs, a.tool, a.args); res.IsError {
			t.Fatalf("call_tool %s: %s", a.tool, resultText(res))
		}
	}
	q := "should I go to bed, is it late in Paris"
	if res := searchTools(t, cs, q, 3); routed(res, fitAsks[q]) {
		t.Errorf("%q routes to %s before any rebuild: the file was read again without one", q, fitAsks[q])
	}
	cs.Close()
	if !strings.Contains(stderr.String(), "no labelled queries to fit on yet") {
		t.Errorf("the first gateway does not say it has nothing to learn yet:\n%s", stderr)
	}
	testutil.AppendLines(t, record, `{"query": "post the notes to the team channel", "expected": ["post_message"]}`)

	cs, stderr = gatewayOverStdio(t, "--config", config, "--record", record, "--fit", record, "--log-level", "info")
	for q, tool := range fitAsks {
		if res := searchTools(t, cs, q, 3); !routed(res, tool) {
			t.Errorf("restarted on the record, %q: %+v; want %s chosen\nstderr:\n%s", q, res, tool, stderr)
		}
	}
	cs.Close()
	if !strings.Contains(stderr.String(), "skipped=1 of=5") {
		t.Errorf("the restarted gateway does not count the row for a tool no server has:\n%s", stderr)
	}

	for q, tool := range fitAsks {
		res := decode[mcpgate.SearchResult](t, mustRun(t, "mcp", "search", "--config", config, "--fit", record, q))
		if !routed(res, tool) {
			t.Errorf("mcp search --fit %q: %+v; want %s chosen", q, res, tool)
		}
	}
	testutil.AppendLines(t, record, `{"query": "cut short", "expec`)
	for _, args := range [][]string{{"serve"}, {"search", "what time is it"}} {
		r := habilisRun(t, append([]string{"mcp", args[0], "--config", config, "--fit", record}, args[1:]...)...)
		if want := record + ":6:"; r.code != exitError || !strings.Contains(r.stderr, want) {
			t.Errorf("mcp %s --fit on a damaged file: exit %d, stderr %q; want exit %d naming %q", args[0], r.code, r.stderr, exitError, want)
		}
	}
}

// TestMCPSearchFitMissing checks that mcp search --fit with a file that
// does not exist yet answers unfitted, like without the flag, and warns
// once that it does, since a mistyped path would otherwise fit nothing
// without a word at the default log level.
func TestMCPSearchFitMissing(t *testing.T) {
	config := testUpstreams(t)
	q := "remind me to call mum"
	want := mustRun(t, "mcp", "search", "--config", config, q)
	missing := filepath.Join(t.TempDir(), "none.jsonl")
	r := habilisRun(t, "mcp", "search", "--config", config, "--fit", missing, q)
	got := r.stdout
	warning := `msg="--fit ` + missing + ` does not exist yet: the index serves unfitted until it does (the file is read again at each build)"`
	if r.code != exitOK || strings.Count(r.stderr, warning) != 1 {
		t.Errorf("mcp search --fit on a missing file: exit %d, stderr:\n%s\nwant exit 0 and the warning once: %s", r.code, r.stderr, warning)
	}
	var a, b mcpgate.SearchResult
	if json.Unmarshal([]byte(want), &a) != nil || json.Unmarshal([]byte(got), &b) != nil || routed(b, fitAsks[q]) {
		t.Fatalf("mcp search --fit on a missing file printed %s", got)
	}
	if got != want {
		t.Errorf("mcp search --fit on a missing file printed\n%s\nwithout --fit\n%s", got, want)
	}
}
