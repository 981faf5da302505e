package api

import (
	"bytes"
	"compress/gzip"
	"io"
	"mime"
	"net/http"

	"github.com/habilis-router/habilis/eval"
	"github.com/tidwall/gjson"
)

// maxTappedAnswer bounds the answer (or, streamed, the line) the proxy
// keeps to read its tool call: past it, the answer passes unread.
const maxTappedAnswer = 8 << 20

// chatAsk is what a recorded answer is labelled with: the request's last
// message, a user's, and the names of its function tools.
type chatAsk struct {
	query string
	tools map[string]bool
}

// newChatAsk returns req's ask, or nil when its last message is not the
// user's: an answer to a tool result is the next step of a task, not the
// tool the user's words asked for.
func newChatAsk(req *chatRequest) *chatAsk {
	n := len(req.messages)
	if n == 0 || req.messages[n-1].GetRole() != "user" || req.functions == 0 {
		return nil
	}
	a := &chatAsk{query: req.messages[n-1].GetContent(), tools: make(map[string]bool, req.functions)}
	for _, t := range req.tools {
		if t.function {
			a.tools[t.name] = true
		}
	}
	return a
}

// record records that the answer to ask called tool, when the request
// offered it and the server's catalog holds it: habilis fit refuses a
// query for a tool its catalog lacks.
func (p *Proxy) record(ask *chatAsk, tool string) {
	if !ask.tools[tool] {
		return
	}
	if !p.s.r.Has(tool) {
		return
	}
	p.opts.Record.Record(eval.SourceProxy, ask.query, tool)
}

// tapAnswer makes resp's body report, once the client has read it whole,
// the tool the answer's first choice calls: from the JSON answer, or from
// the tool call deltas of a stream as its events pass. The bytes pass
// unchanged and undelayed; done is called from Close, after the last of
// them. An answer in an encoding other than gzip (a gzipped stream
// included), or too large, is not read. With responses the answer is the
// Responses API's: its function_call output items, or the stream's events
// that add them.
func tapAnswer(resp *http.Response, responses bool, done func(tool string)) {
	enc := resp.Header.Get("Content-Encoding")
	media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	t := &answerTap{ReadCloser: resp.Body, done: done, stream: media == "text/event-stream", gzip: enc == "gzip", responses: responses}
	if (enc != "" && enc != "identity" && !t.gzip) || (t.stream && t.gzip) {
		return
	}
	t.calls = map[int64]string{}
	resp.Body = t
}

// answerTap reads an answer as it passes to the client.
type answerTap struct {
	io.ReadCloser
	done                    func(tool string)
	stream, gzip, responses bool
	// buf is the answer so far, or a stream's unfinished line.
	buf bytes.Buffer
	// calls maps the first choice's tool calls' indexes to their names.
	calls        map[int64]string
	eof, skipped bool
}

func (t *answerTap) Read(b []byte) (int, error) {
	n, err := t.ReadCloser.Read(b)
	if !t.skipped {
		t.see(b[:n])
	}
	if err == io.EOF {
		t.eof = true
	}
	return n, err
}

// see takes in bytes of the answer.
func (t *answerTap) see(b []byte) {
	if !t.stream {
		t.buf.Write(b)
		t.skipIfOver()
		return
	}
	for len(b) > 0 {
		line, rest, ok := bytes.Cut(b, []byte("\n"))
		t.buf.Write(line)
		if !ok {
			t.skipIfOver()
			return
		}
		t.event(t.buf.Bytes())
		t.buf.Reset()
		b = rest
	}
}

// skipIfOver stops reading an answer, or a line, past maxTappedAnswer,
// and lets go of what it kept.
func (t *answerTap) skipIfOver() {
	if t.buf.Len() > maxTappedAnswer {
		t.skipped = true
		t.buf = bytes.Buffer{}
	}
}

// event reads one line of a stream: a "data:" line holds a chunk whose
// first choice's delta may start tool calls, each named once, in its first
// delta.
func (t *answerTap) event(line []byte) {
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return
	}
	if t.responses {
		// response.output_item.added, then .done, name each call.
		ev := gjson.ParseBytes(data)
		if typ := ev.Get("type").String(); typ == "response.output_item.added" || typ == "response.output_item.done" {
			t.outputItem(ev.Get("output_index").Int(), ev.Get("item"))
		}
		return
	}
	gjson.GetBytes(data, "choices").ForEach(func(_, c gjson.Result) bool {
		if c.Get("index").Int() != 0 {
			return true
		}
		c.Get("delta.tool_calls").ForEach(func(i, call gjson.Result) bool {
			idx := i.Int()
			if x := call.Get("index"); x.Exists() {
				idx = x.Int()
			}
			if name := call.Get("function.name").String(); name != "" && t.calls[idx] == "" {
				t.calls[idx] = name
			}
			return true
		})
		return true
	})
}

// Close closes the body and, when the answer was read to its end, reports
// the tool it calls.
func (t *answerTap) Close() error {
	err := t.ReadCloser.Close()
	if t.eof && !t.skipped {
		if tool := t.tool(); tool != "" {
			t.done(tool)
		}
	}
	return err
}

// tool returns the one tool the answer's first choice calls, or "" when
// it calls none or several different ones (its request needs them all,
// which one label cannot say).
func (t *answerTap) tool() string {
	if !t.stream {
		t.readAnswer()
	}
	tool := ""
	for _, name := range t.calls {
		if tool != "" && name != tool {
			return ""
		}
		tool = name
	}
	return tool
}

// readAnswer reads the tool calls of a JSON answer.
func (t *answerTap) readAnswer() {
	body := t.buf.Bytes()
	if t.gzip {
		zr, err := gzip.NewReader(&t.buf)
		if err != nil {
			return
		}
		if body, err = io.ReadAll(io.LimitReader(zr, maxTappedAnswer)); err != nil {
			return
		}
	}
	if t.responses {
		gjson.GetBytes(body, "output").ForEach(func(i, item gjson.Result) bool {
			t.outputItem(i.Int(), item)
			return true
		})
		return
	}
	gjson.GetBytes(body, "choices.0.message.tool_calls").ForEach(func(i, call gjson.Result) bool {
		if name := call.Get("function.name").String(); name != "" && call.Get("type").String() != "custom" {
			t.calls[i.Int()] = name
		}
		return true
	})
}

// outputItem notes the Responses API output item at index i when it calls
// a function tool.
func (t *answerTap) outputItem(i int64, item gjson.Result) {
	if name := item.Get("name").String(); name != "" && item.Get("type").String() == "function_call" && t.calls[i] == "" {
		t.calls[i] = name
	}
}
