package api

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/eval"
	"github.com/habilis-router/habilis/internal/testutil"
)

// toolCaller is an OpenAI-compatible upstream whose answer to a chat
// request calls the tools its calls map gives for the first message, as
// one JSON answer (gzipped when the request accepts it) or, when the
// request streams, as chunks whose tool call deltas carry each name once
// and the arguments in pieces, with a second choice calling another tool.
type toolCaller struct {
	calls map[string][]string
	// status answers the message its key names; 200 by default.
	status map[string]int
	// hang names a message whose stream stops before its end and waits
	// for the client to go away.
	hang string
}

func (u *toolCaller) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct{ Content json.RawMessage } `json:"messages"`
		Stream   bool                                `json:"stream"`
	}
	b, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(b, &req); err != nil || len(req.Messages) == 0 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var first string
	if json.Unmarshal(req.Messages[0].Content, &first) != nil {
		var parts []struct{ Text string }
		json.Unmarshal(req.Messages[0].Content, &parts)
		first = parts[0].Text
	}
	calls := u.calls[first]
	if req.Stream {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		for _, event := range streamedCalls(calls) {
			if first == u.hang && strings.Contains(event, "[DONE]") {
				<-r.Context().Done()
				return
			}
			io.WriteString(w, event)
			w.(http.Flusher).Flush()
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	answer := []byte(answerCalling(calls))
	if r.Header.Get("Accept-Encoding") == "gzip" {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(answer)
		zw.Close()
		answer = buf.Bytes()
		w.Header().Set("Content-Encoding", "gzip")
	}
	if status := u.status[first]; status != 0 {
		w.WriteHeader(status)
	}
	w.Write(answer)
}

// toolCalls is an answer's tool_calls array calling names.
func toolCalls(names []string, withIndex bool) string {
	var calls []string
	for i, n := range names {
		index := ""
		if withIndex {
			index = fmt.Sprintf(`"index":%d,`, i)
		}
		calls = append(calls, fmt.Sprintf(`{%s"id":"call_%d","type":"function","function":{"name":%q,"arguments":"{}"}}`, index, i, n))
	}
	return "[" + strings.Join(calls, ",") + "]"
}

func answerCalling(names []string) string {
	msg := `{"role":"assistant","content":"It is sunny."}`
	if len(names) > 0 {
		msg = `{"role":"assistant","content":null,"tool_calls":` + toolCalls(names, false) + `}`
	}
	return `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":` + msg + `,"finish_reason":"tool_calls"}]}`
}

// streamedCalls is a stream's events for an answer calling names.
func streamedCalls(names []string) []string {
	chunk := func(choices string) string {
		return `data: {"id":"c1","object":"chat.completion.chunk","choices":[` + choices + "]}\r\n\r\n"
	}
	events := []string{chunk(`{"index":0,"delta":{"role":"assistant","content":null}}`)}
	for i, n := range names {
		events = append(events,
			chunk(fmt.Sprintf(`{"index":0,"delta":{"tool_calls":[{"index":%d,"id":"call_%d","type":"function","function":{"name":%q,"arguments":""}}]}}`, i, i, n)),
			chunk(fmt.Sprintf(`{"index":0,"delta":{"tool_calls":[{"index":%d,"function":{"arguments":"{\"city\":"}}]}}`, i)),
			chunk(fmt.Sprintf(`{"index":0,"delta":{"tool_calls":[{"index":%d,"function":{"arguments":"\"Oslo\"}"}}]}}`, i)))
	}
	if len(names) == 0 {
		events = append(events, chunk(`{"index":0,"delta":{"content":"It is sunny."}}`))
	}
	return append(events,
		chunk(`{"index":1,"delta":{"tool_calls":[{"index":0,"id":"call_9","type":"function","function":{"name":"send_email","arguments":"{}"}}]}}`),
		chunk(`{"index":0,"delta":{},"finish_reason":"tool_calls"}`),
		"data: [DONE]\r\n\r\n")
}

// recordCase is one chat request of TestProxyRecord and the answer the
// upstream gives it.
type recordCase struct {
	ask    string
	calls  []string
	stream bool
	gzip   bool
	status int
	// afterTool makes the conversation end with a tool result; drop
	// leaves a tool of the catalog out of the request.
	afterTool bool
	drop      string
	want      bool
}

// post sends the case's request with tools to the proxy at url and
// returns the answer's body.
func (tt recordCase) post(t *testing.T, url string, tools []string) []byte {
	t.Helper()
	messages := fmt.Sprintf(`[{"role":"user","content":[{"type":"text","text":%q}]}]`, tt.ask)
	if tt.afterTool {
		messages = fmt.Sprintf(`[{"role":"user","content":%q},{"role":"assistant","tool_calls":%s},{"role":"tool","tool_call_id":"call_0","content":"Hallo"}]`,
			tt.ask, toolCalls([]string{"translate_text"}, false))
	}
	extra := ""
	if tt.stream {
		extra = `, "stream": true`
	}
	sent := slices.DeleteFunc(slices.Clone(tools), func(def string) bool {
		return tt.drop != "" && strings.Contains(def, `"name":"`+tt.drop+`"`)
	})
	body := chatBody(json.RawMessage("["+strings.Join(sent, ",")+"]"), messages, extra)
	req, err := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", map[bool]string{true: "gzip", false: "identity"}[tt.gzip])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%q: %v", tt.ask, err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%q: %v", tt.ask, err)
	}
	return got
}

// recordingProxy serves a proxy recording to a file in front of up, and
// returns it, the file and the request tools: the catalog's, and one it
// lacks (lookup_stock).
func recordingProxy(t *testing.T, up http.Handler) (*httptest.Server, string, []string) {
	t.Helper()
	upstream := httptest.NewServer(up)
	t.Cleanup(upstream.Close)
	path := filepath.Join(t.TempDir(), "traffic.jsonl")
	rec, err := eval.OpenRecorder(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	s := NewServer(newRouter(t, testTools(t)), ServerOptions{InlineEmbedder: lexical.New(lexical.Options{})})
	p, err := NewProxy(s, ProxyOptions{Upstream: upstream.URL + "/v1", K: 3, Record: rec})
	if err != nil {
		t.Fatal(err)
	}
	var tools []string
	for _, tool := range s.r.Tools() {
		tools = append(tools, string(renderTool(&tool, shapeOpenAI)))
	}
	tools = append(tools, `{"type":"function","function":{"name":"lookup_stock","description":"Look up a stock price"}}`)
	return httptest.NewServer(p), path, tools
}

// TestProxyRecord sends chat requests through a proxy with Record in
// front of an upstream that calls tools, and checks the record line by
// line: the last user message and the tool the first choice calls, from
// JSON answers (plain or gzipped) and streams alike, and nothing for an
// answer calling no tool, several, one the request lacks or the catalog
// lacks, a failed answer, an answer to a tool result, or a stream the
// client left. Streams reach the client unchanged.
func TestProxyRecord(t *testing.T) {
	tests := []recordCase{
		{ask: "will it rain in Oslo on Sunday", calls: []string{"get_forecast"}, want: true},
		{ask: "is it cold in Bergen today", calls: []string{"get_weather"}, stream: true, want: true},
		{ask: "mail Bob the <slides> & notes", calls: []string{"send_email"}, gzip: true, want: true},
		{ask: "put lunch with Ana on Friday at noon in my agenda", calls: []string{"create_event", "create_event"}, stream: true, want: true},
		{ask: "hello there", calls: nil},
		{ask: "hello again", calls: nil, stream: true},
		{ask: "weather and mail", calls: []string{"get_weather", "send_email"}},
		{ask: "weather and mail, streamed", calls: []string{"get_weather", "send_email"}, stream: true},
		{ask: "buy some stock", calls: []string{"lookup_stock"}},
		{ask: "check my inbox", calls: []string{"read_inbox"}, drop: "read_inbox"},
		{ask: "book a taxi", calls: []string{"book_taxi"}, stream: true},
		{ask: "translate hello into French", calls: []string{"translate_text"}, status: http.StatusInternalServerError},
		{ask: "and now in German", calls: []string{"translate_text"}, afterTool: true},
	}
	const hang = "what is the weather in Lima"
	up := &toolCaller{calls: map[string][]string{hang: {"get_weather"}}, status: map[string]int{}, hang: hang}
	for _, tt := range tests {
		up.calls[tt.ask], up.status[tt.ask] = tt.calls, tt.status
	}
	proxy, path, tools := recordingProxy(t, up)
	var want []string
	for _, tt := range tests {
		got := tt.post(t, proxy.URL, tools)
		if tt.stream && string(got) != strings.Join(streamedCalls(tt.calls), "") {
			t.Errorf("%q: the stream reached the client as %q, want it unchanged", tt.ask, got)
		}
		if tt.want {
			want = append(want, tt.ask+"|"+tt.calls[0]+"|proxy")
		}
	}
	// A client that goes away before the stream's end: the answer is not
	// recorded, though its tool call has passed.
	body := chatBody(json.RawMessage("["+strings.Join(tools, ",")+"]"), fmt.Sprintf(`[{"role":"user","content":%q}]`, hang), `, "stream": true`)
	resp, err := http.Post(proxy.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, len(strings.Join(streamedCalls([]string{"get_weather"})[:2], "")))); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	proxy.Close() // waits for the handlers, which record as they end
	if diff := cmp.Diff(want, testutil.RecordedRows(t, path)); diff != "" {
		t.Errorf("recorded (-want +got):\n%s", diff)
	}
}

// FuzzAnswerTap reads any answer, JSON or streamed, in two reads split
// anywhere, without panicking, and the bytes pass unchanged.
func FuzzAnswerTap(f *testing.F) {
	f.Add([]byte(answerCalling([]string{"get_weather"})), false, false, 10)
	f.Add([]byte(strings.Join(streamedCalls([]string{"send_email"}), "")), true, false, 100)
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"name\":\"x\"}}]}}]}\n"), true, false, 7)
	f.Add([]byte(`{"output":[{"type":"function_call","name":"x"}]}`), false, true, 5)
	f.Add([]byte("data: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"function_call\",\"name\":\"x\"}}\n\n"), true, true, 9)
	f.Fuzz(func(t *testing.T, answer []byte, stream, responses bool, split int) {
		resp := &http.Response{Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(answer))}
		if stream {
			resp.Header.Set("Content-Type", "text/event-stream")
		}
		tapAnswer(resp, responses, func(string) {})
		buf := make([]byte, max(1, min(len(answer), max(split, 1))))
		var got []byte
		for {
			n, err := resp.Body.Read(buf)
			got = append(got, buf[:n]...)
			if err != nil {
				break
			}
		}
		resp.Body.Close()
		if !bytes.Equal(got, answer) {
			t.Errorf("the tap changed the answer: %q, want %q", got, answer)
		}
	})
}
