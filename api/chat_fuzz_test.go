package api

import (
	"strings"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/tidwall/gjson"
)

// FuzzParseChat reads arbitrary requests as the proxy does and cuts their
// tools to the first function: it must not panic, clip every text, find
// the tools array where it is, and write valid JSON whose other fields are
// the request's, byte for byte and in order.
func FuzzParseChat(f *testing.F) {
	for _, seed := range []string{
		chatBody([]byte(`[{"type":"function","function":{"name":"a","description":"one"}},{"type":"custom","custom":{"name":"b"}},{"type":"function","function":{"name":"c"}}]`), userMail,
			`, "tool_choice": {"type": "allowed_tools", "allowed_tools": {"tools": [{"type": "function", "function": {"name": "c"}}]}}`),
		`{"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "a"}}]}, {"role": "user", "content": [{"type": "text", "text": "hé"}]}], "tools": [{"type": "function", "function": {"name": "a"}}, {"type": "function", "function": {"name": "b"}}], "tool_choice": "auto", "parallel_tool_calls": true}`,
		`{"tools": null}`,
		`{"tools": {"a": 1}}`,
		`{"messages": "x", "tools": []}`,
		`{"tools": [1, "x", {"type": "function", "function": {"name": 3}}], "tools": [{"type": "function", "function": {"name": "d"}}]}`,
		`[]`,
		`{"a": "\u00e9\\"", "tools": [ {"type":"function", "function":{"name":"z"}} ] }`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		checkParsed(t, body, parseChat)
	})
}

// FuzzParseResponses is FuzzParseChat for Responses API requests.
func FuzzParseResponses(f *testing.F) {
	for _, seed := range []string{
		responsesBody([]byte(`[{"type":"function","name":"a","description":"one"},{"type":"web_search"},{"type":"custom","name":"b"},{"type":"function","name":"c"}]`),
			`[{"role":"user","content":[{"type":"input_text","text":"hé"}]},{"type":"function_call","name":"a","call_id":"x"},{"type":"function_call_output","call_id":"x","output":"1"}]`,
			`, "tool_choice": {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "c"}]}`),
		`{"input": "hi", "tools": [{"type": "function", "name": "a"}, {"type": "function", "name": "b"}], "tool_choice": {"type": "function", "name": "b"}, "parallel_tool_calls": true}`,
		`{"input": 3, "tools": []}`,
		`{"input": [1, "x", {"role": 2}], "tools": [{"type": "function", "name": 3}], "tools": [{"type": "function", "name": "d"}]}`,
		`[]`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		checkParsed(t, body, parseResponses)
	})
}

// checkParsed reads body with parse and cuts its tools to the first
// function, checking what FuzzParseChat says.
func checkParsed(t *testing.T, body string, parse func(string, int) (*chatRequest, error)) {
	const maxText = 16
	req, err := parse(body, maxText)
	if err != nil {
		return
	}
	for _, m := range req.messages {
		if len(m.GetContent()) > maxText {
			t.Fatalf("message text %q longer than %d bytes", m.GetContent(), maxText)
		}
	}
	if len(req.tools) == 0 {
		return
	}
	if arr := gjson.Parse(body[req.toolsAt:req.toolsEnd]); !arr.IsArray() || len(arr.Array()) != len(req.tools) {
		t.Fatalf("tools at %d:%d of %q: %q, want the array of %d tools", req.toolsAt, req.toolsEnd, body, body[req.toolsAt:req.toolsEnd], len(req.tools))
	}
	d := &habilis.Decision{}
	for _, tool := range req.tools {
		if tool.function {
			d.Matches = append(d.Matches, habilis.Match{Tool: tool.name})
			break
		}
	}
	plan, err := (&Proxy{}).cut(body, req, d)
	if err != nil {
		t.Fatalf("cut(%q): %v", body, err)
	}
	if !gjson.Valid(plan.body) {
		t.Fatalf("cut(%q) = %q, not valid JSON", body, plan.body)
	}
	if got, want := otherFields(plan.body, plan.after == 0), otherFields(body, plan.after == 0); got != want {
		t.Fatalf("cut(%q) = %q: fields besides tools %q, want %q", body, plan.body, got, want)
	}
}

// otherFields lists the request's top-level fields but its tools (and
// tool_choice and parallel_tool_calls when noTools), key and value as sent.
func otherFields(body string, noTools bool) string {
	var b strings.Builder
	gjson.Parse(body).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "tools":
			return true
		case "tool_choice", "parallel_tool_calls":
			if noTools {
				return true
			}
		}
		b.WriteString(k.Raw + ":" + v.Raw + "\n")
		return true
	})
	return b.String()
}
