package api

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis/internal/ollamatest"
	"github.com/habilis-router/habilis/internal/testutil"
)

// flatTools returns the Chat Completions tools of defs (a JSON array) in
// the Responses API's flat shape: {"type": "function", "name": ...}.
func flatTools(t testing.TB, defs json.RawMessage) json.RawMessage {
	t.Helper()
	var nested []struct {
		Function map[string]any `json:"function"`
	}
	if err := json.Unmarshal(defs, &nested); err != nil {
		t.Fatal(err)
	}
	flat := make([]map[string]any, len(nested))
	for i, n := range nested {
		flat[i] = map[string]any{"type": "function"}
		for k, v := range n.Function {
			flat[i][k] = v
		}
	}
	b, err := json.Marshal(flat)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// responsesBody is a Responses API request with tools and input (JSON
// texts), and fields of the caller's own that the proxy must keep.
func responsesBody(tools json.RawMessage, input, extra string) string {
	b := `{"model": "tiny", "instructions": "You are helpful.", "x_vendor": {"a": [1, 2.50, "three"]}, "input": ` + input
	if tools != nil {
		b += `, "tools": ` + string(tools)
	}
	return b + extra + "}"
}

// forwardedFlat decodes the Responses request the upstream got: its tools'
// names (a tool without one by its type) and every other field.
func forwardedFlat(t *testing.T, body []byte) (tools []string, rest map[string]any) {
	t.Helper()
	if err := json.Unmarshal(body, &rest); err != nil {
		t.Fatalf("upstream got invalid JSON %q: %v", body, err)
	}
	ts, _ := rest["tools"].([]any)
	for _, x := range ts {
		tool := x.(map[string]any)
		name, _ := tool["name"].(string)
		if name == "" {
			name = tool["type"].(string)
		}
		tools = append(tools, name)
	}
	delete(rest, "tools")
	return tools, rest
}

// hosted are tools of types other than function, which are never cut.
const hosted = `{"type": "web_search"}, {"type": "mcp", "server_label": "deepwiki", "server_url": "https://mcp.deepwiki.com/mcp"}, {"type": "custom", "name": "grammar_tool", "description": "free text"}`

func TestProxyResponsesCutsTools(t *testing.T) {
	tools := flatTools(t, openAITools(t))
	withHosted := json.RawMessage(strings.Replace(string(tools), "[", "["+hosted+",", 1))
	tests := []struct {
		name        string
		tools       json.RawMessage
		input       string
		extra       string
		want        []string
		count       int
		hostedCount int
	}{
		{"string input", tools, `"send an email to Bob with the report"`, "", []string{"send_email"}, 3, 0},
		{"input items", tools, `[{"role": "user", "content": [{"type": "input_text", "text": "convert 20 dollars to euros"}]}]`, "",
			[]string{"convert_currency"}, 3, 0},
		{"message items typed", tools, `[{"type": "message", "role": "developer", "content": "Be brief."}, {"type": "message", "role": "user", "content": "convert 20 dollars to euros"}]`, "",
			[]string{"convert_currency"}, 3, 0},
		{"hosted tools kept", withHosted, `"send an email to Bob with the report"`, "",
			[]string{"send_email", "web_search", "mcp", "grammar_tool"}, 6, 3},
		{"tool_choice kept", tools, `"send an email to Bob with the report"`, `, "tool_choice": {"type": "function", "name": "lock_door"}`,
			[]string{"send_email", "lock_door"}, 4, 0},
		{"allowed tools kept", tools, `"send an email to Bob with the report"`, `, "tool_choice": {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "lock_door"}, {"type": "function", "name": "pause_music"}]}`,
			[]string{"send_email", "lock_door", "pause_music"}, 5, 0},
		{"earlier calls kept", tools, `[
			{"role": "user", "content": "good morning"},
			{"type": "function_call", "call_id": "c1", "name": "lock_door", "arguments": "{}"},
			{"type": "function_call_output", "call_id": "c1", "output": "locked"},
			{"role": "assistant", "content": [{"type": "output_text", "text": "It is locked."}]},
			{"role": "user", "content": "send an email to Bob with the report"}]`, "",
			[]string{"send_email", "lock_door"}, 4, 0},
		// The conversation so far is the upstream's; the request's own
		// input is routed.
		{"previous response", tools, `[{"role": "user", "content": "send an email to Bob with the report"}]`, `, "previous_response_id": "resp_123"`,
			[]string{"send_email"}, 3, 0},
		// Roles compare ignoring case, as Prefilter compares them.
		{"previous response, role in capitals", tools, `[{"role": "User", "content": "send an email to Bob with the report"}]`, `, "previous_response_id": "resp_123"`,
			[]string{"send_email"}, 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, rec, base := proxyFixture(t, ProxyOptions{K: 3})
			sent := responsesBody(tt.tools, tt.input, tt.extra)
			status, hdr, answer := testutil.Post(t, base+"/v1/responses", sent)
			if status != http.StatusOK || answer != recordedAnswer {
				t.Fatalf("answer %d %q, want 200 and the upstream's answer unchanged", status, answer)
			}
			path, body := rec.last()
			if path != "/v1/responses" {
				t.Errorf("upstream got %s, want /v1/responses", path)
			}
			got, rest := forwardedFlat(t, body)
			if len(got) != tt.count {
				t.Errorf("forwarded %d tools %v, want %d", len(got), got, tt.count)
			}
			for _, w := range tt.want {
				if !slices.Contains(got, w) {
					t.Errorf("forwarded %v, want %s among them", got, w)
				}
			}
			_, restIn := forwardedFlat(t, []byte(sent))
			if diff := cmp.Diff(restIn, rest); diff != "" {
				t.Errorf("fields besides tools changed (-sent +forwarded):\n%s", diff)
			}
			if h := hdr.Get(HeaderToolsBefore); h != fmt.Sprint(50+tt.hostedCount) {
				t.Errorf("%s = %q, want %d", HeaderToolsBefore, h, 50+tt.hostedCount)
			}
			if h := hdr.Get(HeaderToolsAfter); h != fmt.Sprint(tt.count) {
				t.Errorf("%s = %q, want %d", HeaderToolsAfter, h, tt.count)
			}
			if o := hdr.Get(HeaderOutcome); o != OutcomeSelected && o != OutcomeAmbiguous {
				t.Errorf("%s = %q, want selected or ambiguous", HeaderOutcome, o)
			}
		})
	}
}

// TestProxyResponsesInstructions checks that instructions are not taken
// for the user's request: they name one tool, the input another.
func TestProxyResponsesInstructions(t *testing.T) {
	_, rec, base := proxyFixture(t, ProxyOptions{K: 3})
	sent := strings.Replace(responsesBody(flatTools(t, openAITools(t)), `"convert 20 dollars to euros"`, ""),
		"You are helpful.", "Always send an email to Bob with the report.", 1)
	testutil.Post(t, base+"/v1/responses", sent)
	_, body := rec.last()
	if got, _ := forwardedFlat(t, body); !slices.Contains(got, "convert_currency") || slices.Contains(got, "send_email") {
		t.Errorf("forwarded %v, want convert_currency and not send_email", got)
	}
}

// TestProxyResponsesKeepsBytes checks a catalog of three tools cut to one:
// the forwarded request is the sent one with only the tools array
// replaced, the kept definitions as sent, the hosted tool kept.
func TestProxyResponsesKeepsBytes(t *testing.T) {
	_, rec, base := proxyFixture(t, ProxyOptions{K: 1})
	tools := `[
		{"type": "function", "name": "send_email", "description": "Send an email message", "strict": true, "parameters": {"type": "object"}},
		{"type": "web_search_preview"},
		{"type": "function", "name": "play_music", "description": "Play a song"},
		{"type": "function", "name": "convert_currency", "description": "Convert an amount of money"}]`
	sent := responsesBody(json.RawMessage(tools), `"send an email to Bob with the report"`, `, "stream": false`)
	_, hdr, _ := testutil.Post(t, base+"/v1/responses", sent)
	_, body := rec.last()
	want := strings.Replace(sent, tools, `[{"type": "function", "name": "send_email", "description": "Send an email message", "strict": true, "parameters": {"type": "object"}},`+
		`{"type": "web_search_preview"}]`, 1)
	if string(body) != want {
		t.Errorf("upstream got\n%s\nwant\n%s", body, want)
	}
	if got := hdr.Get(HeaderSelected); got != "send_email" {
		t.Errorf("%s = %q, want send_email", HeaderSelected, got)
	}
	if got := hdr.Get(HeaderToolsAfter); got != "2" {
		t.Errorf("%s = %q, want 2", HeaderToolsAfter, got)
	}
}

// TestProxyResponsesUntouched checks the Responses requests that go on as
// they came.
func TestProxyResponsesUntouched(t *testing.T) {
	tools := flatTools(t, openAITools(t))
	tests := []struct {
		name, body, outcome, before string
	}{
		{"no tools", responsesBody(nil, `"send an email"`, ""), OutcomeNoTools, "0"},
		{"hosted tools only", responsesBody(json.RawMessage("["+hosted+"]"), `"send an email"`, ""), OutcomeFewTools, "3"},
		{"no user input", responsesBody(tools, `[{"type": "function_call_output", "call_id": "c1", "output": "sunny"}]`, `, "previous_response_id": "resp_1"`), OutcomeContinued, "50"},
		{"no user input, continuing nothing", responsesBody(tools, `[{"type": "function_call_output", "call_id": "c1", "output": "sunny"}]`, ""), OutcomeError, "50"},
		{"no input", `{"model": "tiny", "tools": ` + string(tools) + `}`, OutcomeError, "50"},
		{"input not text", responsesBody(tools, `{"role": "user"}`, ""), OutcomeError, "0"},
		{"not JSON", `{"model": "tiny", "input": "hi", "tools": [`, OutcomeError, "0"},
		{"tools twice", responsesBody(tools, `"send an email"`, `, "tools": []`), OutcomeError, "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, rec, base := proxyFixture(t, ProxyOptions{K: 2})
			status, hdr, answer := testutil.Post(t, base+"/v1/responses", tt.body)
			if status != http.StatusOK || answer != recordedAnswer {
				t.Errorf("answer %d %q, want the upstream's", status, answer)
			}
			if _, body := rec.last(); string(body) != tt.body {
				t.Errorf("upstream got %q, want the request as sent", body)
			}
			if got := hdr.Get(HeaderOutcome); got != tt.outcome {
				t.Errorf("%s = %q, want %q", HeaderOutcome, got, tt.outcome)
			}
			if hdr.Get(HeaderToolsBefore) != tt.before || hdr.Get(HeaderToolsAfter) != tt.before {
				t.Errorf("tools before, after = %s, %s, want %s both", hdr.Get(HeaderToolsBefore), hdr.Get(HeaderToolsAfter), tt.before)
			}
		})
	}
}

// TestProxyResponsesFailClosed checks that a request the router abstains
// on goes with --fail-closed without tools, tool_choice and
// parallel_tool_calls, or with the tool tool_choice names alone.
func TestProxyResponsesFailClosed(t *testing.T) {
	tools := flatTools(t, openAITools(t))
	for _, tt := range []struct {
		name, extra string
		want        []string
	}{
		{"no tools left", `, "tool_choice": "auto", "parallel_tool_calls": false`, nil},
		{"tool_choice kept", `, "tool_choice": {"type": "function", "name": "lock_door"}`, []string{"lock_door"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, rec, base := proxyFixture(t, ProxyOptions{K: 2, FailClosed: true})
			_, hdr, _ := testutil.Post(t, base+"/v1/responses", responsesBody(tools, `"xyzzy qwq zzz"`, tt.extra))
			if got := hdr.Get(HeaderOutcome); got != OutcomeAbstained {
				t.Fatalf("%s = %q, want abstained", HeaderOutcome, got)
			}
			_, body := rec.last()
			got, rest := forwardedFlat(t, body)
			if !slices.Equal(got, tt.want) {
				t.Errorf("forwarded %v, want %v", got, tt.want)
			}
			if _, ok := rest["tool_choice"]; ok == (tt.want == nil) {
				t.Errorf("tool_choice forwarded: %v, want %v", ok, tt.want != nil)
			}
		})
	}
}

// TestProxyResponsesStream checks that a streamed Responses request comes
// back as the upstream streamed it, its tools cut.
func TestProxyResponsesStream(t *testing.T) {
	_, rec, base := proxyFixture(t, ProxyOptions{K: 2})
	status, hdr, answer := testutil.Post(t, base+"/v1/responses", responsesBody(flatTools(t, openAITools(t)), `"send an email to Bob"`, `, "stream":true`))
	want := ""
	for _, c := range recordedChunks {
		want += "data: " + c + "\n\n"
	}
	want += "data: [DONE]\n\n"
	if status != 200 || answer != want || hdr.Get("Content-Type") != "text/event-stream" {
		t.Errorf("stream answer %d %s %q, want the upstream's events unchanged", status, hdr.Get("Content-Type"), answer)
	}
	_, body := rec.last()
	if got, rest := forwardedFlat(t, body); len(got) != 2 || rest["stream"] != true {
		t.Errorf("forwarded tools %v and stream %v, want 2 tools and stream true", got, rest["stream"])
	}
}

// TestProxyResponsesErrors checks the answers in OpenAI's error shape: the
// upstream's to a malformed request, passed back byte for byte, and the
// proxy's own 502 when the upstream cannot be reached.
func TestProxyResponsesErrors(t *testing.T) {
	const refusal = `{"error":{"message":"We could not parse the JSON body of your request.","type":"invalid_request_error","param":null,"code":null}}`
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if !json.Valid(b) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, refusal)
			return
		}
		io.WriteString(w, recordedAnswer)
	})
	_, _, base := proxyFixture(t, ProxyOptions{Upstream: serveHTTP(t, upstream) + "/v1"})
	status, hdr, answer := testutil.Post(t, base+"/v1/responses", `{"model": "tiny", "input": "hi", "tools": [`)
	if status != http.StatusBadRequest || answer != refusal || hdr.Get(HeaderOutcome) != OutcomeError {
		t.Errorf("malformed request: %d %q (%s %q), want the upstream's 400 %q and outcome error", status, answer, HeaderOutcome, hdr.Get(HeaderOutcome), refusal)
	}

	_, _, closed := proxyFixture(t, ProxyOptions{Upstream: "http://" + ollamatest.ClosedAddr(t) + "/v1"})
	status, hdr, answer = testutil.Post(t, closed+"/v1/responses", responsesBody(flatTools(t, openAITools(t)), `"send an email to Bob"`, ""))
	var shape struct {
		Error struct{ Message, Type string }
	}
	if err := json.Unmarshal([]byte(answer), &shape); err != nil || status != http.StatusBadGateway || shape.Error.Type != "upstream_error" || shape.Error.Message == "" || hdr.Get(HeaderToolsAfter) != "5" {
		t.Errorf("unreachable upstream: %d %q %v, want 502 in OpenAI's shape with the habilis headers", status, answer, hdr)
	}
}

func TestProxyResponsesMetrics(t *testing.T) {
	s, _, base := proxyFixture(t, ProxyOptions{K: 2})
	testutil.Post(t, base+"/v1/responses", responsesBody(flatTools(t, openAITools(t)), `"send an email to Bob"`, ""))
	testutil.Post(t, base+"/v1/chat/completions", chatBody(openAITools(t), userMail, ""))
	got := httptestRecorder(t, s.MetricsHandler())
	for _, want := range []string{
		`habilis_proxy_tools_before_total 100`,
		`habilis_proxy_tools_after_total 4`,
		`habilis_proxy_selection_duration_seconds_count 2`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestProxyResponsesRecord checks that Record labels a Responses request's
// input with the function its answer calls, from the JSON answer's output
// items and from a stream's output_item events, and not an answer calling
// a hosted tool or answering a tool's output.
func TestProxyResponsesRecord(t *testing.T) {
	const (
		called = `{"id":"resp_1","object":"response","output":[{"type":"reasoning","id":"rs_1","summary":[]},{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_forecast","arguments":"{}"}]}`
		hosted = `{"id":"resp_2","object":"response","output":[{"type":"web_search_call","id":"ws_1","status":"completed"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Sunny."}]}]}`
	)
	streamed := "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_3\"}}\n\n" +
		"event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"function_call\",\"id\":\"fc_2\",\"call_id\":\"call_2\",\"name\":\"get_weather\",\"arguments\":\"\"}}\n\n" +
		"event: response.function_call_arguments.delta\ndata: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":0,\"delta\":\"{}\"}\n\n" +
		"event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"type\":\"function_call\",\"id\":\"fc_2\",\"call_id\":\"call_2\",\"name\":\"get_weather\",\"arguments\":\"{}\"}}\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_3\"}}\n\n"
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch {
		case strings.Contains(string(b), `"stream": true`):
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, streamed)
		case strings.Contains(string(b), "search the web"):
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, hosted)
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, called)
		}
	})
	proxy, path, nested := recordingProxy(t, up)
	tools := string(flatTools(t, json.RawMessage("["+strings.Join(nested, ",")+"]")))
	for _, tt := range []struct{ input, extra, want string }{
		{`"will it rain in Oslo on Sunday"`, "", called},
		{`[{"role": "user", "content": [{"type": "input_text", "text": "is it cold in Bergen today"}]}]`, `, "stream": true`, streamed},
		{`"search the web for the weather in Rome"`, "", hosted},
		{`[{"type": "function_call_output", "call_id": "call_1", "output": "rain"}]`, `, "previous_response_id": "resp_1"`, called},
	} {
		_, _, answer := testutil.Post(t, proxy.URL+"/v1/responses", responsesBody(json.RawMessage(tools), tt.input, tt.extra))
		if answer != tt.want {
			t.Errorf("%s: answer %q, want the upstream's unchanged", tt.input, answer)
		}
	}
	proxy.Close() // waits for the handlers, which record as they end
	want := []string{"will it rain in Oslo on Sunday|get_forecast|proxy", "is it cold in Bergen today|get_weather|proxy"}
	if diff := cmp.Diff(want, testutil.RecordedRows(t, path)); diff != "" {
		t.Errorf("recorded (-want +got):\n%s", diff)
	}
}
