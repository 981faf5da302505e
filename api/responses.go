package api

import (
	"errors"

	habilisv1 "github.com/habilis-router/habilis/api/habilis/v1"
	"github.com/tidwall/gjson"
)

// parseResponses reads a Responses API request (POST /v1/responses) into
// the chat request the proxy plans with: its flat tools, its input as
// messages, and the tools its tool_choice and earlier calls need.
// instructions is the system prompt, not the user's request, and is not
// read; a request that continues another (previous_response_id) is routed
// on the user input it carries itself.
func parseResponses(body string, maxText int) (*chatRequest, error) {
	return parseRequest(body, func(req *chatRequest, key string, v gjson.Result) error {
		switch key {
		case "tools":
			return req.readTools(v, true)
		case "input":
			return req.readInput(v, maxText)
		case "previous_response_id":
			req.continues = v.Type == gjson.String && v.Str != ""
		case "tool_choice":
			// "none", "auto", "required", a function or custom tool, a
			// hosted tool type, or the tools the model is allowed.
			req.need(v, true)
			if v.Get("type").String() == "allowed_tools" {
				v.Get("tools").ForEach(func(_, t gjson.Result) bool {
					req.need(t, true)
					return true
				})
			}
		}
		return nil
	})
}

// readInput reads a Responses request's input: a string, the user's
// message, or a list of items. A message item (type "message", or none
// with a role) is read as a chat message; a function or custom tool call
// marks its tool needed and, like a tool call's output, is a message of
// its own, so that a request ending with a tool's output is not taken for
// a user's request (recording reads the last message's role). Other items
// (reasoning, hosted tool calls, references) carry no text to route on.
func (req *chatRequest) readInput(input gjson.Result, maxText int) error {
	switch {
	case input.Type == gjson.String:
		req.messages = append(req.messages, &habilisv1.ChatMessage{Role: "user", Content: clip(input.Str, maxText)})
		return nil
	case !input.IsArray():
		return errors.New("input: neither a string nor an array")
	}
	input.ForEach(func(_, item gjson.Result) bool {
		switch typ := item.Get("type").String(); typ {
		case "message", "":
			if role := item.Get("role"); role.Type == gjson.String {
				req.messages = append(req.messages, &habilisv1.ChatMessage{Role: role.Str, Content: clip(text(item.Get("content")), maxText)})
			}
		case "function_call", "custom_tool_call":
			if n := item.Get("name").String(); n != "" {
				req.needed[n] = true
			}
			req.messages = append(req.messages, &habilisv1.ChatMessage{Role: "assistant"})
		case "function_call_output", "custom_tool_call_output":
			req.messages = append(req.messages, &habilisv1.ChatMessage{Role: "tool"})
		}
		return true
	})
	return nil
}
