package api

import (
	"errors"
	"strings"
	"unicode/utf8"

	habilisv1 "github.com/habilis-router/habilis/api/habilis/v1"
	"github.com/tidwall/gjson"
)

// chatRequest is what the proxy reads of an OpenAI chat completion
// request. It is read with gjson, which finds values in place without
// decoding the whole request: a request carries every tool definition,
// and the proxy's time is added to every call.
type chatRequest struct {
	// tools are the request's tools, in order.
	tools []chatTool
	// functions counts the function tools, the ones the router chooses
	// among; catalog is them as a JSON array, the tools array itself when
	// it holds nothing else, so that Prefilter's cache, keyed by these
	// bytes, finds a list of tools sent again.
	functions int
	catalog   string
	// toolsAt and toolsEnd delimit the tools array in the request's body.
	toolsAt, toolsEnd int
	// messages are the conversation's roles and texts.
	messages []*habilisv1.ChatMessage
	// needed names the tools the conversation needs whatever the router
	// says: the tool_choice's, and the ones called earlier.
	needed map[string]bool
	// continues reports a Responses request that continues an earlier
	// response (previous_response_id), whose user message may lie there.
	continues bool
}

// hasUser reports whether the request holds a user message, its role
// compared as Prefilter's conversationQuery compares it (ignoring case).
func (req *chatRequest) hasUser() bool {
	for _, m := range req.messages {
		if strings.EqualFold(m.GetRole(), "user") {
			return true
		}
	}
	return false
}

// chatTool is one element of the tools array.
type chatTool struct {
	// name is the function's (or custom tool's) name, "" when it has none.
	name string
	// raw is the element as sent.
	raw string
	// function reports a function tool with a name.
	function bool
}

// parseChat reads a chat completion request. Each message's text is
// clipped to maxText bytes (see clip). The request is read in one pass
// over its top-level fields, after one that checks it is valid JSON.
func parseChat(body string, maxText int) (*chatRequest, error) {
	return parseRequest(body, func(req *chatRequest, key string, v gjson.Result) error {
		switch key {
		case "tools":
			return req.readTools(v, false)
		case "messages":
			if !v.IsArray() {
				return errors.New("messages: not an array")
			}
			v.ForEach(func(_, m gjson.Result) bool {
				req.readMessage(m, maxText)
				return true
			})
		case "tool_choice":
			// "none", "auto", "required", a function or custom tool, or
			// the tools the model is allowed.
			req.need(v, false)
			v.Get("allowed_tools.tools").ForEach(func(_, t gjson.Result) bool {
				req.need(t, false)
				return true
			})
		}
		return nil
	})
}

// parseRequest reads a request of either API: it checks that body is a
// JSON object, refuses a second tools array, and hands field each
// top-level field in turn.
func parseRequest(body string, field func(req *chatRequest, key string, v gjson.Result) error) (*chatRequest, error) {
	if !gjson.Valid(body) {
		return nil, errors.New("the request is not valid JSON")
	}
	root := gjson.Parse(body)
	if !root.IsObject() {
		return nil, errors.New("the request is not a JSON object")
	}
	req := &chatRequest{needed: map[string]bool{}}
	var err error
	tools := false
	root.ForEach(func(key, v gjson.Result) bool {
		if key.Str == "tools" {
			// Which of two tools arrays counts is the upstream's JSON
			// reader's to say: leave such a request alone.
			if tools {
				err = errors.New("tools: given twice")
				return false
			}
			tools = true
		}
		err = field(req, key.Str, v)
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	return req, nil
}

// readTools reads the tools array: nested ({"type": "function",
// "function": {"name": ...}}, Chat Completions) or flat ({"type":
// "function", "name": ...}, Responses).
func (req *chatRequest) readTools(tools gjson.Result, flat bool) error {
	if tools.Type == gjson.Null {
		return nil
	}
	if !tools.IsArray() {
		return errors.New("tools: not an array")
	}
	var fns []string
	tools.ForEach(func(_, t gjson.Result) bool {
		ct := chatTool{raw: t.Raw, name: toolName(t, flat)}
		ct.function = ct.name != "" && t.Get("type").String() == "function"
		if ct.function {
			fns = append(fns, t.Raw)
		}
		req.tools = append(req.tools, ct)
		return true
	})
	req.functions = len(fns)
	req.catalog = tools.Raw
	req.toolsAt, req.toolsEnd = tools.Index, tools.Index+len(tools.Raw)
	if len(fns) < len(req.tools) {
		req.catalog = "[" + strings.Join(fns, ",") + "]"
	}
	return nil
}

// toolName returns the name of a function or custom tool, or of a
// tool_choice naming one, nested or flat; "" for another type of tool
// (a hosted one: web_search, file_search, mcp, ...), which has none the
// router knows.
func toolName(t gjson.Result, flat bool) string {
	typ := t.Get("type").String()
	if typ != "function" && typ != "custom" {
		return ""
	}
	if flat {
		return t.Get("name").String()
	}
	return t.Get(typ + ".name").String()
}

// readMessage reads one message: its role and text, and the tools it
// called (assistant tool_calls, the legacy function_call) or answers for
// (tool and function messages that carry a name).
func (req *chatRequest) readMessage(m gjson.Result, maxText int) {
	role := m.Get("role").String()
	req.messages = append(req.messages, &habilisv1.ChatMessage{Role: role, Content: clip(text(m.Get("content")), maxText)})
	m.Get("tool_calls").ForEach(func(_, c gjson.Result) bool {
		req.need(c, false)
		return true
	})
	if n := m.Get("function_call.name").String(); n != "" {
		req.needed[n] = true
	}
	if role == "tool" || role == "function" {
		if n := m.Get("name").String(); n != "" {
			req.needed[n] = true
		}
	}
}

// need marks the function or custom tool v names as needed. A nested
// one counts without its type, which some clients leave out of their
// tool calls.
func (req *chatRequest) need(v gjson.Result, flat bool) {
	if flat {
		if n := toolName(v, true); n != "" {
			req.needed[n] = true
		}
		return
	}
	for _, path := range []string{"function.name", "custom.name"} {
		if n := v.Get(path).String(); n != "" {
			req.needed[n] = true
		}
	}
}

// text returns a message content's text: the string, or the text parts of
// an array of parts joined by newlines (images and audio have none). A
// part is "text" in Chat Completions, "input_text" or "output_text" in the
// Responses API.
func text(content gjson.Result) string {
	if content.Type == gjson.String {
		return content.Str
	}
	var parts []string
	content.ForEach(func(_, part gjson.Result) bool {
		if t := part.Get("text"); t.Type == gjson.String && textPart[part.Get("type").String()] {
			parts = append(parts, t.Str)
		}
		return true
	})
	return strings.Join(parts, "\n")
}

// textPart are the types of the content parts that hold text.
var textPart = map[string]bool{"text": true, "input_text": true, "output_text": true}

// clip shortens s to at most n bytes by cutting its middle, at rune
// boundaries: a long message is usually a pasted text with the request
// before or after it.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n < 3 {
		return ""
	}
	head := (n - 1) / 2
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	tail := len(s) - (n - 1 - head)
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return s[:head] + "\n" + s[tail:]
}
