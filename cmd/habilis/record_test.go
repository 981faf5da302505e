package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis/eval"
	"github.com/habilis-router/habilis/internal/testutil"
)

// fitRecorded runs habilis fit on a recorded file and checks that the
// catalog learnt from it: every query added as an example of its tool, a
// calibration marked fitted.
func fitRecorded(t *testing.T, store, record string) {
	t.Helper()
	rep := decode[eval.FitReport](t, mustRun(t, "--store", store, "fit", "--json", record))
	if rep.Before.Fitted || !rep.After.Fitted {
		t.Errorf("fit: fitted before %v, after %v; want false, true", rep.Before.Fitted, rep.After.Fitted)
	}
	rows := testutil.RecordedRows(t, record)
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
	if diff := cmp.Diff(want, testutil.RecordedRows(t, record)); diff != "" {
		t.Fatalf("recorded (-want +got):\n%s\nstderr:\n%s", diff, stderr)
	}

	store := filepath.Join(dir, "habilis.db")
	mustRun(t, "--store", store, "load", "--mcp-config", config)
	fitRecorded(t, store, record)
}

// TestRecordFlagRefused checks that --record stops a command that cannot
// record before it serves, naming why, and that a command refused for
// another reason creates no file.
func TestRecordFlagRefused(t *testing.T) {
	dir := t.TempDir()
	unwritable := filepath.Join(dir, "missing", "traffic.jsonl")
	record := filepath.Join(dir, "traffic.jsonl")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "serve", "--config", testUpstreams(t), "--record", unwritable}, unwritable},
		{[]string{"mcp", "serve", "--config", filepath.Join(dir, "none.json"), "--record", record}, "none.json"},
		{[]string{"--store", filepath.Join(dir, "a.db"), "serve", "--addr", "127.0.0.1:0", "--record", record}, "--record needs --upstream"},
		{[]string{"--store", filepath.Join(dir, "b.db"), "proxy", "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:1/v1", "--record", unwritable}, unwritable},
	}
	for _, tt := range tests {
		r := habilisRun(t, tt.args...)
		if r.code == 0 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("habilis %v: exit %d, stderr %q; want a failure saying %q", tt.args, r.code, r.stderr, tt.want)
		}
	}
	if _, err := os.Stat(record); err == nil {
		t.Errorf("refused commands created %s", record)
	}
}

// toolCallingUpstream is an OpenAI-compatible API whose answer to a chat
// request calls the tool calls names for its last user message: one JSON
// answer, or a stream whose first delta names the tool and later ones
// carry its arguments.
func toolCallingUpstream(t *testing.T, calls map[string]string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
			Stream   bool                       `json:"stream"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		tool := calls[req.Messages[len(req.Messages)-1].Content]
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":%q,"arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`, tool)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, delta := range []string{
			fmt.Sprintf(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":%q,"arguments":""}}]}`, tool),
			`{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}`,
		} {
			fmt.Fprintf(w, "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":%s}]}\n\n", delta)
			w.(http.Flusher).Flush()
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// TestProxyRecordThenFit runs `habilis proxy --record` in front of an API
// that calls tools, streamed and not, checks the file line by line once
// the proxy has stopped, then fits the proxy's store on it as it is.
func TestProxyRecordThenFit(t *testing.T) {
	asks := []struct {
		query, tool string
		stream      bool
	}{
		{"will it be sunny in Rome next week", "get_forecast", false},
		{"is it snowing in Oslo at the moment", "get_weather", true},
		{"tell Carol the budget is approved", "send_email", true},
		{"any new messages from HR", "read_inbox", false},
		{"how much is 30 francs in dollars", "convert_currency", false},
		{"say good night in Italian", "translate_text", true},
		{"set up a call with the team Tuesday at 3", "create_event", false},
	}
	calls := map[string]string{}
	for _, a := range asks {
		calls[a.query] = a.tool
	}
	dir := t.TempDir()
	store, record := filepath.Join(dir, "habilis.db"), filepath.Join(dir, "traffic.jsonl")
	srv := startServe(t, "--store", store, "proxy", "--listen", "127.0.0.1:0", "--upstream", toolCallingUpstream(t, calls),
		"--tools", testdata("tools.json"), "--record", record)
	var want []string
	for _, a := range asks {
		body := chatRequest(t, 7, a.query)
		if a.stream {
			body = strings.TrimSuffix(body, "}") + `,"stream":true}`
		}
		if status, _, answer := testutil.Post(t, "http://"+srv.addr+"/v1/chat/completions", body); status != 200 || !strings.Contains(answer, a.tool) {
			t.Fatalf("chat %q through the proxy: %d %s", a.query, status, answer)
		}
		want = append(want, a.query+"|"+a.tool+"|proxy")
	}
	if code, _ := srv.stop(t); code != 0 {
		t.Fatalf("proxy exited %d:\n%s", code, srv.stderr)
	}
	if diff := cmp.Diff(want, testutil.RecordedRows(t, record)); diff != "" {
		t.Fatalf("recorded (-want +got):\n%s", diff)
	}
	fitRecorded(t, store, record)
}

// TestMCPServeRecordHTTP interleaves two sessions of `habilis mcp serve
// --http --record`: each call records its own session's last search, not
// the other's later one.
func TestMCPServeRecordHTTP(t *testing.T) {
	record := filepath.Join(t.TempDir(), "traffic.jsonl")
	url, stderr, _ := startGatewayHTTP(t, "--config", testUpstreams(t), "--record", record)
	a, b := connectHTTP(t, url, stderr), connectHTTP(t, url, stderr)
	searchTools(t, a, "what time is it in Tokyo", 5)
	searchTools(t, b, "jot this down for later: buy milk", 5)
	callThrough(t, a, "current_time", map[string]any{"timezone": "Asia/Tokyo"})
	callThrough(t, b, "save_note", map[string]any{"text": "buy milk"})
	searchTools(t, b, "count the words of my essay", 5)
	callThrough(t, a, "count_words", map[string]any{"text": "a b"}) // a's last search still the first
	want := []string{
		"what time is it in Tokyo|current_time|mcp",
		"jot this down for later: buy milk|save_note|mcp",
		"what time is it in Tokyo|count_words|mcp",
	}
	if diff := cmp.Diff(want, testutil.RecordedRows(t, record)); diff != "" {
		t.Errorf("recorded (-want +got):\n%s\nstderr:\n%s", diff, stderr)
	}
}
