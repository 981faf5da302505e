package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis/eval"
)

// recordedRows reads a --record file line by line as "query|tool|source",
// checking that each line holds exactly the keys the contract names, one
// expected tool and an RFC 3339 time.
func recordedRows(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for line := range strings.Lines(string(b)) {
		var rec struct {
			Query, Source, Time string
			Expected            []string
		}
		var keys map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &keys); err != nil || json.Unmarshal([]byte(line), &rec) != nil {
			t.Fatalf("record line %q: not a JSON object: %v", line, err)
		}
		if len(keys) != 4 || len(rec.Expected) != 1 {
			t.Errorf("record line %q: want query, expected (one tool), source and time", line)
		}
		if _, err := time.Parse(time.RFC3339, rec.Time); err != nil {
			t.Errorf("record line %q: time: %v", line, err)
		}
		rows = append(rows, rec.Query+"|"+strings.Join(rec.Expected, ",")+"|"+rec.Source)
	}
	return rows
}

// fitRecorded runs habilis fit on a recorded file and checks that the
// catalog learnt from it: every query added as an example of its tool, a
// calibration marked fitted.
func fitRecorded(t *testing.T, store, record string) {
	t.Helper()
	rep := decode[eval.FitReport](t, mustRun(t, "--store", store, "fit", "--json", record))
	if rep.Before.Fitted || !rep.After.Fitted {
		t.Errorf("fit: fitted before %v, after %v; want false, true", rep.Before.Fitted, rep.After.Fitted)
	}
	rows := recordedRows(t, record)
	if rep.Queries != len(rows) || rep.AddedExamples != len(rows) {
		t.Errorf("fit read %d queries and added %d examples, want the %d recorded", rep.Queries, rep.AddedExamples, len(rows))
	}
	examples := map[string][]string{}
	for _, tool := range listTools(t, store) {
		examples[tool.Name] = tool.Examples
	}
	for _, r := range rows {
		q, rest, _ := strings.Cut(r, "|")
		tool, _, _ := strings.Cut(rest, "|")
		if !slices.Contains(examples[tool], q) {
			t.Errorf("after fit, %s lacks the recorded query %q among its examples %q", tool, q, examples[tool])
		}
	}
}

// TestMCPServeRecord drives `habilis mcp serve --record` with an SDK
// client over stdio, checks the file line by line, then loads the same
// servers' tools into a store and fits it on the file as it is.
func TestMCPServeRecord(t *testing.T) {
	config := testUpstreams(t)
	dir := t.TempDir()
	record := filepath.Join(dir, "traffic.jsonl")
	cs, stderr := gatewayOverStdio(t, "--config", config, "--record", record)
	callThrough(t, cs, "current_time", map[string]any{"timezone": "UTC"}) // no search yet: nothing
	asks := []struct {
		query, tool string
		args        map[string]any
	}{
		{"what time is it in Tokyo", "current_time", map[string]any{"timezone": "Asia/Tokyo"}},
		{"jot this down for later: buy milk", "save_note", map[string]any{"text": "buy milk"}},
		{"how long is this paragraph", "count_words", map[string]any{"text": "a b c"}},
		{"say hello back to me", "notes__echo", map[string]any{"message": "hello"}},
		{"is it evening in Lima yet", "current_time", map[string]any{"timezone": "America/Lima"}},
		{"keep a reminder about the dentist", "save_note", map[string]any{"text": "dentist"}},
	}
	var want []string
	for _, a := range asks {
		searchTools(t, cs, a.query, 5)
		if res := callThrough(t, cs, a.tool, a.args); res.IsError {
			t.Fatalf("call_tool %s: %s", a.tool, resultText(res))
		}
		want = append(want, a.query+"|"+a.tool+"|mcp")
	}
	callThrough(t, cs, "no_such_tool", nil)
	if diff := cmp.Diff(want, recordedRows(t, record)); diff != "" {
		t.Fatalf("recorded (-want +got):\n%s\nstderr:\n%s", diff, stderr)
	}

	store := filepath.Join(dir, "habilis.db")
	mustRun(t, "--store", store, "load", "--mcp-config", config)
	fitRecorded(t, store, record)
}

// TestRecordFlagRefused checks that a --record file that cannot be opened
// stops the command before it serves, naming the file.
func TestRecordFlagRefused(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "missing", "traffic.jsonl")
	r := habilisRun(t, "mcp", "serve", "--config", testUpstreams(t), "--record", bad)
	if r.code == 0 || !strings.Contains(r.stderr, bad) {
		t.Errorf("mcp serve --record %s: exit %d, stderr %q; want a failure naming the file", bad, r.code, r.stderr)
	}
}
