package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/internal/ollamatest"
	"github.com/habilis-router/habilis/internal/testutil"
)

// recorder is a real HTTP upstream that keeps the last request it got and
// answers with a fixed chat completion, a stream of chunks when the
// request asks for one, or the error its path names (/v1/broken).
type recorder struct {
	mu   sync.Mutex
	path string
	body []byte
	hdr  http.Header
}

const (
	recordedAnswer = `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Paris"},"finish_reason":"stop"}]}`
	recordedError  = `{"error":{"message":"model \"nope\" not found","type":"not_found_error"}}`
)

var recordedChunks = []string{
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Pa"}}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"ris"},"finish_reason":"stop"}]}`,
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	rec.path, rec.body, rec.hdr = r.URL.RequestURI(), body, r.Header.Clone()
	rec.mu.Unlock()
	switch {
	case r.URL.Path == "/v1/broken":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, recordedError)
	case bytes.Contains(body, []byte(`"stream":true`)):
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range recordedChunks {
			fmt.Fprintf(w, "data: %s\n\n", c)
			w.(http.Flusher).Flush()
		}
		io.WriteString(w, "data: [DONE]\n\n")
	default:
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, recordedAnswer)
	}
}

// last returns the last request's path and body.
func (rec *recorder) last() (string, []byte) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.path, rec.body
}

// proxyFixture serves a proxy with opts in front of a recorder; the
// server's catalog is testdata/tools.json. It returns the server, the
// recorder and the proxy's base URL.
func proxyFixture(t testing.TB, opts ProxyOptions) (*Server, *recorder, string) {
	t.Helper()
	rec := &recorder{}
	if opts.Upstream == "" {
		opts.Upstream = serveHTTP(t, rec) + "/v1"
	}
	s := NewServer(newRouter(t, testTools(t)), ServerOptions{InlineEmbedder: lexical.New(lexical.Options{})})
	p, err := NewProxy(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, rec, serveHTTP(t, p)
}

// openAITools returns testdata/openai_tools.json: 50 OpenAI function tools.
func openAITools(t testing.TB) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile("testdata/openai_tools.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// chatBody is a chat request with tools and messages (JSON texts), and
// fields of the caller's own that the proxy must keep.
func chatBody(tools json.RawMessage, messages string, extra string) string {
	b := `{"model": "tiny", "temperature": 0.2, "x_vendor": {"a": [1, 2.50, "three"]}, "messages": ` + messages
	if tools != nil {
		b += `, "tools": ` + string(tools)
	}
	return b + extra + "}"
}

// forwarded decodes the body the upstream got: its tools' names and every
// other field.
func forwarded(t *testing.T, body []byte) (tools []string, rest map[string]any) {
	t.Helper()
	if err := json.Unmarshal(body, &rest); err != nil {
		t.Fatalf("upstream got invalid JSON %q: %v", body, err)
	}
	ts, _ := rest["tools"].([]any)
	for _, x := range ts {
		fn, _ := x.(map[string]any)["function"].(map[string]any)
		tools = append(tools, fn["name"].(string))
	}
	delete(rest, "tools")
	return tools, rest
}

const userMail = `[{"role": "system", "content": "You are helpful."}, {"role": "user", "content": "send an email to Bob with the report"}]`

func TestProxyCutsTools(t *testing.T) {
	tools := openAITools(t)
	tests := []struct {
		name, messages, extra string
		// want are tools that must be forwarded; count how many in all:
		// the k best and the needed ones among them or not.
		want  []string
		count int
	}{
		{"selects k", userMail, "", []string{"send_email"}, 3},
		{"content parts", `[{"role": "user", "content": [{"type": "text", "text": "convert 20 dollars to euros"}]}]`, "",
			[]string{"convert_currency"}, 3},
		{"tool_choice kept", userMail, `, "tool_choice": {"type": "function", "function": {"name": "lock_door"}}`,
			[]string{"send_email", "lock_door"}, 4},
		{"allowed tools kept", userMail, `, "tool_choice": {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": [{"type": "function", "function": {"name": "lock_door"}}, {"type": "function", "function": {"name": "pause_music"}}]}}`,
			[]string{"send_email", "lock_door", "pause_music"}, 5},
		{"earlier calls kept", `[
			{"role": "user", "content": "what's the weather in Paris"},
			{"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
			{"role": "tool", "tool_call_id": "c1", "content": "sunny"},
			{"role": "assistant", "content": "", "function_call": {"name": "get_time", "arguments": "{}"}},
			{"role": "function", "name": "calculate", "content": "4"},
			{"role": "user", "content": "send an email to Bob with the report"}]`, "",
			[]string{"send_email", "get_weather", "get_time", "calculate"}, 5},
		// A role OpenAI lacks is the upstream's to judge (Llama's servers
		// take "ipython"): the proxy still cuts for the last user message.
		{"role of the upstream's", `[
			{"role": "developer", "content": "Be brief."},
			{"role": "user", "content": "send an email to Bob with the report"},
			{"role": "ipython", "content": "{\"ok\": true}"}]`, "",
			[]string{"send_email"}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, rec, base := proxyFixture(t, ProxyOptions{K: 3})
			status, hdr, answer := testutil.Post(t, base+"/v1/chat/completions", chatBody(tools, tt.messages, tt.extra))
			if status != http.StatusOK || answer != recordedAnswer {
				t.Fatalf("answer %d %q, want 200 and the upstream's answer unchanged", status, answer)
			}
			path, body := rec.last()
			if path != "/v1/chat/completions" {
				t.Errorf("upstream got %s, want /v1/chat/completions", path)
			}
			got, rest := forwarded(t, body)
			if len(got) != tt.count {
				t.Errorf("forwarded %d tools %v, want %d", len(got), got, tt.count)
			}
			for _, w := range tt.want {
				if !slices.Contains(got, w) {
					t.Errorf("forwarded %v, want %s among them", got, w)
				}
			}
			_, restIn := forwarded(t, []byte(chatBody(tools, tt.messages, tt.extra)))
			if diff := cmp.Diff(restIn, rest); diff != "" {
				t.Errorf("fields besides tools changed (-sent +forwarded):\n%s", diff)
			}
			wantHdr := map[string]string{
				HeaderToolsBefore: "50", HeaderToolsAfter: fmt.Sprint(tt.count),
				HeaderSelected: strings.Join(got, ","),
			}
			for k, v := range wantHdr {
				if hdr.Get(k) != v {
					t.Errorf("%s = %q, want %q", k, hdr.Get(k), v)
				}
			}
			if o := hdr.Get(HeaderOutcome); o != OutcomeSelected && o != OutcomeAmbiguous {
				t.Errorf("%s = %q, want selected or ambiguous", HeaderOutcome, o)
			}
			if saved := hdr.Get(HeaderTokensSaved); saved == "" || saved == "0" {
				t.Errorf("%s = %q, want a positive estimate", HeaderTokensSaved, saved)
			}
		})
	}
}

// TestProxyToolWithoutDescription checks that a request one of whose
// tools has no description (OpenAI's is optional) is cut like any other,
// not forwarded whole.
func TestProxyToolWithoutDescription(t *testing.T) {
	var tools []map[string]any
	if err := json.Unmarshal(openAITools(t), &tools); err != nil {
		t.Fatal(err)
	}
	delete(tools[0]["function"].(map[string]any), "description")
	b, err := json.Marshal(tools)
	if err != nil {
		t.Fatal(err)
	}
	_, rec, base := proxyFixture(t, ProxyOptions{K: 3})
	_, hdr, _ := testutil.Post(t, base+"/v1/chat/completions", chatBody(b, userMail, ""))
	_, body := rec.last()
	got, _ := forwarded(t, body)
	if o := hdr.Get(HeaderOutcome); o != OutcomeSelected && o != OutcomeAmbiguous {
		t.Errorf("%s = %q, want selected or ambiguous", HeaderOutcome, o)
	}
	if len(got) != 3 || !slices.Contains(got, "send_email") {
		t.Errorf("forwarded %v, want 3 tools, send_email among them", got)
	}
}

// TestProxyKeepsBytes checks that the forwarded request is the sent one
// with only the tools array replaced, each kept definition as sent.
func TestProxyKeepsBytes(t *testing.T) {
	_, rec, base := proxyFixture(t, ProxyOptions{K: 1})
	tools := `[
		{"type": "function", "function": {"name": "send_email", "description": "Send an email message", "strict": true, "parameters": {"type": "object"}}},
		{"type": "function", "function": {"name": "play_music", "description": "Play a song"}},
		{"type": "custom", "custom": {"name": "grammar_tool", "description": "custom tools are never cut"}}]`
	sent := chatBody(json.RawMessage(tools), userMail, `, "stream_options": null`)
	_, hdr, _ := testutil.Post(t, base+"/v1/chat/completions", strings.Replace(sent, "2.50", "2.50e0", 1))
	_, body := rec.last()
	want := strings.Replace(sent, "2.50", "2.50e0", 1)
	want = strings.Replace(want, tools, `[{"type": "function", "function": {"name": "send_email", "description": "Send an email message", "strict": true, "parameters": {"type": "object"}}},`+
		`{"type": "custom", "custom": {"name": "grammar_tool", "description": "custom tools are never cut"}}]`, 1)
	if string(body) != want {
		t.Errorf("upstream got\n%s\nwant\n%s", body, want)
	}
	if got := hdr.Get(HeaderSelected); got != "send_email,grammar_tool" {
		t.Errorf("%s = %q, want send_email,grammar_tool", HeaderSelected, got)
	}
}

// TestProxyUntouched checks the requests that go on as they came.
func TestProxyUntouched(t *testing.T) {
	tools := openAITools(t)
	three := `[{"type":"function","function":{"name":"a","description":"one"}},{"type":"function","function":{"name":"b","description":"two"}},{"type":"function","function":{"name":"c","description":"three"}}]`
	dup := `[{"type":"function","function":{"name":"a","description":"one"}},{"type":"function","function":{"name":"a","description":"two"}},{"type":"function","function":{"name":"c","description":"three"}},{"type":"function","function":{"name":"d","description":"four"}}]`
	tests := []struct {
		name, body, outcome, before, selected string
	}{
		{"no tools", chatBody(nil, userMail, ""), OutcomeNoTools, "0", ""},
		{"few tools", chatBody(json.RawMessage(three), userMail, ""), OutcomeFewTools, "3", "a,b,c"},
		{"tools break the catalog rules", chatBody(json.RawMessage(dup), userMail, ""), OutcomeError, "4", "a,a,c,d"},
		{"no user message", chatBody(tools, `[{"role": "system", "content": "hi"}]`, ""), OutcomeError, "50", ""},
		{"empty user message", chatBody(tools, `[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]`, ""), OutcomeError, "50", ""},
		{"not JSON", `{"model": "tiny", "tools": [`, OutcomeError, "0", ""},
		{"tools not an array", chatBody(json.RawMessage(`{"a": 1}`), userMail, ""), OutcomeError, "0", ""},
		{"tools twice", chatBody(tools, userMail, `, "tools": []`), OutcomeError, "0", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, rec, base := proxyFixture(t, ProxyOptions{K: 2, MinTools: 4})
			status, hdr, answer := testutil.Post(t, base+"/v1/chat/completions", tt.body)
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
			if tt.selected != "" && hdr.Get(HeaderSelected) != tt.selected {
				t.Errorf("%s = %q, want %q", HeaderSelected, hdr.Get(HeaderSelected), tt.selected)
			}
		})
	}
}

// TestProxyLogsWhy checks that a request forwarded as it came because
// habilis failed says why in the log.
func TestProxyLogsWhy(t *testing.T) {
	var logs testutil.Buffer
	rec := &recorder{}
	s := NewServer(newRouter(t, testTools(t)), ServerOptions{
		InlineEmbedder: lexical.New(lexical.Options{}),
		Logger:         slog.New(slog.NewTextHandler(&logs, nil)),
	})
	p, err := NewProxy(s, ProxyOptions{Upstream: serveHTTP(t, rec) + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	base := serveHTTP(t, p)
	testutil.Post(t, base+"/v1/chat/completions", chatBody(openAITools(t), `[{"role": "system", "content": "hi"}]`, ""))
	if got := logs.String(); !strings.Contains(got, "forwarded as it came") || !strings.Contains(got, `no message with role \"user\"`) {
		t.Errorf("log %q, want the request forwarded as it came and why", got)
	}
}

// TestProxyServerCatalog checks that a request whose tools the server's
// catalog holds is routed with the catalog's examples.
func TestProxyServerCatalog(t *testing.T) {
	s, rec, base := proxyFixture(t, ProxyOptions{K: 1, MinTools: 2})
	var defs []string
	for _, tool := range s.r.Tools() {
		defs = append(defs, string(renderTool(&tool, shapeOpenAI)))
	}
	// Descriptions that say nothing: only the catalog's examples tell the
	// tools apart.
	for i := range defs {
		defs[i] = strings.Replace(defs[i], s.r.Tools()[i].Description, "a tool", 1)
	}
	body := chatBody(json.RawMessage("["+strings.Join(defs, ",")+"]"), `[{"role": "user", "content": "will it rain in Oslo on Sunday"}]`, "")
	_, hdr, _ := testutil.Post(t, base+"/v1/chat/completions", body)
	_, got := rec.last()
	tools, _ := forwarded(t, got)
	if diff := cmp.Diff([]string{"get_forecast"}, tools); diff != "" {
		t.Errorf("forwarded tools (-want +got):\n%s\nheaders %v", diff, hdr)
	}
}

func TestProxyFailClosed(t *testing.T) {
	tools := openAITools(t)
	abstain := `[{"role": "user", "content": "xyzzy qwq zzz"}]`
	for _, tt := range []struct {
		name       string
		failClosed bool
		extra      string
		want       []string
	}{
		{"fail open", false, "", nil},
		{"fail closed", true, `, "tool_choice": "auto", "parallel_tool_calls": false`, []string{}},
		{"fail closed keeps tool_choice", true, `, "tool_choice": {"type": "function", "function": {"name": "lock_door"}}`, []string{"lock_door"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, rec, base := proxyFixture(t, ProxyOptions{K: 2, FailClosed: tt.failClosed})
			_, hdr, _ := testutil.Post(t, base+"/v1/chat/completions", chatBody(tools, abstain, tt.extra))
			if got := hdr.Get(HeaderOutcome); got != OutcomeAbstained {
				t.Fatalf("%s = %q, want abstained", HeaderOutcome, got)
			}
			_, body := rec.last()
			got, rest := forwarded(t, body)
			if tt.want == nil {
				if len(got) != 2 {
					t.Errorf("fail open forwarded %v, want the 2 best", got)
				}
				return
			}
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b []string) bool { return slices.Equal(a, b) })); diff != "" {
				t.Errorf("forwarded tools (-want +got):\n%s", diff)
			}
			if len(tt.want) == 0 {
				for _, k := range []string{"tool_choice", "parallel_tool_calls"} {
					if _, ok := rest[k]; ok {
						t.Errorf("forwarded %s without tools", k)
					}
				}
			}
		})
	}
}

// TestProxyPassThrough checks the paths beside chat completions, the
// upstream's errors and an upstream that cannot be reached.
func TestProxyPassThrough(t *testing.T) {
	_, rec, base := proxyFixture(t, ProxyOptions{})
	testutil.Get(t, base+"/v1/models?limit=2")
	if path, _ := rec.last(); path != "/v1/models?limit=2" {
		t.Errorf("GET /v1/models?limit=2 reached the upstream as %s", path)
	}
	status, _, answer := testutil.Post(t, base+"/v1/embeddings", `{"model": "m", "input": "x"}`)
	if path, body := rec.last(); status != 200 || path != "/v1/embeddings" || string(body) != `{"model": "m", "input": "x"}` {
		t.Errorf("POST /v1/embeddings: %d %q, upstream got %s %q", status, answer, path, body)
	}
	status, _, answer = testutil.Post(t, base+"/v1/broken", `{}`)
	if status != http.StatusNotFound || answer != recordedError {
		t.Errorf("the upstream's error came back as %d %q, want 404 %q", status, answer, recordedError)
	}
	status, _, answer = testutil.Post(t, base+"/elsewhere", `{}`)
	if status != http.StatusNotFound || !strings.Contains(answer, "not proxied") {
		t.Errorf("POST /elsewhere: %d %q, want 404 from the proxy", status, answer)
	}

	_, _, closed := proxyFixture(t, ProxyOptions{Upstream: "http://" + ollamatest.ClosedAddr(t) + "/v1"})
	status, hdr, answer := testutil.Post(t, closed+"/v1/chat/completions", chatBody(openAITools(t), userMail, ""))
	if status != http.StatusBadGateway || !strings.Contains(answer, `"type":"upstream_error"`) || hdr.Get(HeaderToolsAfter) != "5" {
		t.Errorf("unreachable upstream: %d %q %v, want 502 in OpenAI's shape with the habilis headers", status, answer, hdr)
	}
}

func TestProxyStream(t *testing.T) {
	_, _, base := proxyFixture(t, ProxyOptions{K: 2})
	status, hdr, answer := testutil.Post(t, base+"/v1/chat/completions", chatBody(openAITools(t), userMail, `, "stream":true`))
	want := ""
	for _, c := range recordedChunks {
		want += "data: " + c + "\n\n"
	}
	want += "data: [DONE]\n\n"
	if status != 200 || answer != want || hdr.Get("Content-Type") != "text/event-stream" {
		t.Errorf("stream answer %d %s %q, want the upstream's events unchanged", status, hdr.Get("Content-Type"), answer)
	}
	if hdr.Get(HeaderToolsAfter) != "2" {
		t.Errorf("%s = %q, want 2", HeaderToolsAfter, hdr.Get(HeaderToolsAfter))
	}
}

// TestProxyHeadersAfterInformational checks that the habilis headers
// reach the final answer when the upstream first sends an informational
// answer (100 Continue to a client's "Expect: 100-continue", which curl
// sends for large bodies, or 103 Early Hints): the reverse proxy relays
// those and then clears the headers set before them.
func TestProxyHeadersAfterInformational(t *testing.T) {
	for _, code := range []int{http.StatusContinue, http.StatusEarlyHints} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.WriteHeader(code)
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, recordedAnswer)
			})
			_, _, base := proxyFixture(t, ProxyOptions{K: 2, Upstream: serveHTTP(t, upstream) + "/v1"})
			status, hdr, answer := testutil.Post(t, base+"/v1/chat/completions", chatBody(openAITools(t), userMail, ""))
			if status != http.StatusOK || answer != recordedAnswer {
				t.Fatalf("answer %d %q, want 200 and the upstream's answer", status, answer)
			}
			for _, k := range []string{HeaderToolsBefore, HeaderToolsAfter, HeaderOutcome} {
				if len(hdr.Values(k)) != 1 {
					t.Errorf("%s = %q in the final answer, want one value", k, hdr.Values(k))
				}
			}
			if hdr.Get(HeaderToolsAfter) != "2" {
				t.Errorf("%s = %q, want 2", HeaderToolsAfter, hdr.Get(HeaderToolsAfter))
			}
		})
	}
}

func TestProxyMetrics(t *testing.T) {
	s, _, base := proxyFixture(t, ProxyOptions{K: 2})
	tools := openAITools(t)
	testutil.Post(t, base+"/v1/chat/completions", chatBody(tools, userMail, ""))
	testutil.Post(t, base+"/v1/chat/completions", chatBody(nil, userMail, ""))
	got := httptestRecorder(t, s.MetricsHandler())
	for _, want := range []string{
		`habilis_proxy_chat_requests_total{outcome="no-tools"} 1`,
		`habilis_proxy_tools_before_total 50`,
		`habilis_proxy_tools_after_total 2`,
		`habilis_proxy_selection_duration_seconds_count 2`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if !strings.Contains(got, `habilis_proxy_tokens_saved_total `) || strings.Contains(got, `habilis_proxy_tokens_saved_total 0`) {
		t.Errorf("metrics lack a positive habilis_proxy_tokens_saved_total")
	}
}

func TestNewProxyRefuses(t *testing.T) {
	s := NewServer(newRouter(t, nil), ServerOptions{})
	for _, opts := range []ProxyOptions{
		{},
		{Upstream: "localhost:11434/v1"},
		{Upstream: "ftp://host/v1"},
		{Upstream: "http://host/v1", K: -1},
		{Upstream: "http://host/v1", K: MaxK + 1},
		{Upstream: "http://host/v1", MinTools: -1},
	} {
		if _, err := NewProxy(s, opts); err == nil || !strings.Contains(err.Error(), habilis.ErrInvalid.Error()) {
			t.Errorf("NewProxy(%+v) = %v, want an invalid-argument error", opts, err)
		}
	}
}

func TestJoinNames(t *testing.T) {
	tests := []struct {
		names []string
		limit int
		want  string
	}{
		{nil, 10, ""},
		{[]string{"a", "b"}, 10, "a,b"},
		{[]string{"aaaa", "bbbb"}, 9, "aaaa,bbbb"},
		{[]string{"aaaa", "bbbb", "cccc"}, 10, "aaaa,+2"},
		{[]string{"aaaa", "bbbb", "cccc"}, 12, "aaaa,bbbb,+1"},
		{[]string{"aaaa", "bbbb", "cccc"}, 14, "aaaa,bbbb,cccc"},
	}
	for _, tt := range tests {
		got := joinNames(tt.names, tt.limit)
		if got != tt.want || len(got) > tt.limit {
			t.Errorf("joinNames(%q, %d) = %q, want %q", tt.names, tt.limit, got, tt.want)
		}
	}
}

func TestClip(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"0123456789", 7, "012\n789"},
		{"ééééé", 6, "é\né"},
		{"abc", 2, ""},
	}
	for _, tt := range tests {
		if got := clip(tt.s, tt.n); got != tt.want || len(got) > tt.n {
			t.Errorf("clip(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}
