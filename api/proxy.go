package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/habilis-router/habilis"
	habilisv1 "github.com/habilis-router/habilis/api/habilis/v1"
	"github.com/habilis-router/habilis/eval"
	"github.com/habilis-router/habilis/selector"
	"github.com/tidwall/sjson"
)

// Headers the proxy adds to the answer of every chat completion or
// Responses API request it forwards. A request too large to read (ProxyOptions.MaxChatBytes) gets
// only HeaderOutcome: its tools were not counted.
const (
	// HeaderToolsBefore counts the request's tools as it came.
	HeaderToolsBefore = "X-Habilis-Tools-Before"
	// HeaderToolsAfter counts the tools it was forwarded with.
	HeaderToolsAfter = "X-Habilis-Tools-After"
	// HeaderSelected names the forwarded tools, comma-separated, in the
	// request's order. Past 4 KiB the list ends with "+N", the number of
	// names left out.
	HeaderSelected = "X-Habilis-Selected"
	// HeaderTokensSaved estimates the prompt tokens the cut tools'
	// definitions would have taken, as Prefilter does: a quarter of their
	// bytes.
	HeaderTokensSaved = "X-Habilis-Tokens-Saved"
	// HeaderOutcome is what habilis did, one of the Outcome constants.
	HeaderOutcome = "X-Habilis-Outcome"
)

// Outcomes of a chat request, in HeaderOutcome and in the metrics.
const (
	// OutcomeSelected: the router chose tools and the others were cut.
	OutcomeSelected = "selected"
	// OutcomeAmbiguous: as selected, and tools that collide both fit.
	OutcomeAmbiguous = "ambiguous"
	// OutcomeAbstained: no tool fits; the k best were forwarded anyway, or
	// with FailClosed only those the conversation needs.
	OutcomeAbstained = "abstained"
	// OutcomeFewTools: fewer function tools than MinTools; untouched.
	OutcomeFewTools = "few-tools"
	// OutcomeNoTools: the request has no tools; untouched.
	OutcomeNoTools = "no-tools"
	// OutcomeError: habilis could not choose (the request does not parse,
	// has no user message, its tools break the catalog rules, ...); it was
	// forwarded as it came and the reason logged.
	OutcomeError = "error"
	// OutcomeTooLarge: the request was over MaxChatBytes; forwarded as it
	// came, unread.
	OutcomeTooLarge = "too-large"
	// OutcomeContinued: a Responses request that continues another
	// (previous_response_id) with no user message of its own, such as a
	// tool's output in an agent's loop: there is nothing to route on, so
	// it goes on as it came, and no warning is logged, as nothing failed.
	OutcomeContinued = "continued"
)

// DefaultMaxChatBytes bounds the chat request the proxy reads: 32 MiB.
const DefaultMaxChatBytes = 32 << 20

// maxSelectedHeader bounds HeaderSelected's value: some clients refuse
// longer header lines.
const maxSelectedHeader = 4 << 10

// ProxyOptions configure a Proxy. Only Upstream must be set.
type ProxyOptions struct {
	// Upstream is the base URL of the OpenAI-compatible API requests go
	// to, the one that ends in /v1 (http://127.0.0.1:11434/v1 for Ollama):
	// a request for /v1/PATH is forwarded to Upstream/PATH.
	Upstream string
	// K is how many tools a chat request keeps besides those its
	// conversation needs; 0 means 5.
	K int
	// MinTools: a request with fewer function tools is forwarded
	// untouched; 0 means K+1, since K tools or fewer leave nothing to cut.
	MinTools int
	// FailClosed forwards, when the router abstains, only the tools the
	// conversation needs (without any, the request goes without tools);
	// by default the K best are forwarded all the same.
	FailClosed bool
	// MaxChatBytes bounds the chat request read to cut its tools; a larger
	// one is forwarded untouched. 0 means DefaultMaxChatBytes.
	MaxChatBytes int64
	// Transport sends the requests upstream; nil means
	// http.DefaultTransport.
	Transport http.RoundTripper
	// Record, when set, receives the last user message of each chat
	// request and the function tool the answer's first choice calls, from
	// the JSON answer or from a stream's deltas as they pass: a labelled
	// query habilis fit can learn from. Only a tool of the request that
	// the server's catalog holds is recorded. Nil records nothing.
	Record *eval.Recorder
}

// Proxy is an OpenAI-compatible API in front of another: it forwards every
// request under /v1 to the upstream, and cuts the function tools of a chat
// completion request (POST /v1/chat/completions) or a Responses API request
// (POST /v1/responses) to the K that its last user message, with the user
// message before it, needs, selected with Prefilter's logic. Both shapes
// are read into one chatRequest and take the same path from there. The answer, streamed or not, comes back as the
// upstream sent it, with the Header constants added.
//
// It never breaks a conversation: tools named in tool_choice or called
// earlier in the conversation are always kept, and when habilis cannot
// choose, the request goes on as it came (OutcomeError, logged at warn
// level). The tools are selected from the server's catalog, with its
// examples and fitted gates, when it holds every function tool of the
// request (by name), and otherwise from the request's own tools, indexed
// with the server's InlineEmbedder and cached by their bytes as Prefilter's
// inline catalogs are. Everything but the tools array is forwarded byte
// for byte.
type Proxy struct {
	s        *Server
	opts     ProxyOptions
	minTools int
	rp       *httputil.ReverseProxy
}

// NewProxy returns a proxy to opts.Upstream that selects with s.
func NewProxy(s *Server, opts ProxyOptions) (*Proxy, error) {
	u, err := url.Parse(opts.Upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("upstream %q: want an http or https base URL such as http://127.0.0.1:11434/v1: %w", opts.Upstream, habilis.ErrInvalid)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	if err := selector.CheckK(opts.K); err != nil {
		return nil, fmt.Errorf("%w: %w", err, habilis.ErrInvalid) // as its other refusals read
	}
	if opts.MinTools < 0 {
		return nil, fmt.Errorf("min tools %d: must not be negative: %w", opts.MinTools, habilis.ErrInvalid)
	}
	if opts.K == 0 {
		opts.K = selector.DefaultK
	}
	if opts.MaxChatBytes <= 0 {
		opts.MaxChatBytes = DefaultMaxChatBytes
	}
	p := &Proxy{s: s, opts: opts, minTools: opts.MinTools}
	if p.minTools == 0 {
		p.minTools = opts.K + 1
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Path = strings.TrimPrefix(pr.In.URL.Path, "/v1")
			pr.Out.URL.RawPath = ""
			pr.SetURL(u)
			pr.SetXForwarded()
		},
		Transport:      opts.Transport,
		ModifyResponse: p.answer,
		ErrorHandler:   p.upstreamError,
		ErrorLog:       slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	return p, nil
}

// ServeHTTP implements http.Handler.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		p.chat(w, r, false)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/responses":
		p.chat(w, r, true)
	case r.URL.Path == "/v1" || strings.HasPrefix(r.URL.Path, "/v1/"):
		p.rp.ServeHTTP(w, r)
	default:
		writeOpenAIError(w, http.StatusNotFound, "invalid_request_error",
			fmt.Sprintf("%s is not proxied: the proxy forwards the OpenAI API under /v1", r.URL.Path))
	}
}

// upstreamError answers a request the upstream did not answer (it could
// not be reached, or broke off): 502, in OpenAI's error shape.
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		// The client went away; nobody reads an answer.
		return
	}
	p.s.log.Warn("proxy: upstream failed", "path", r.URL.Path, "error", err)
	if plan, ok := r.Context().Value(planKey{}).(*chatPlan); ok {
		plan.writeHeaders(w.Header())
	}
	writeOpenAIError(w, http.StatusBadGateway, "upstream_error", fmt.Sprintf("habilis proxy: upstream %s: %v", p.opts.Upstream, err))
}

// NoProxy answers every request under /v1 of a server that proxies no
// OpenAI-compatible API (habilis serve --http without --upstream): 404 in
// OpenAI's error shape, saying what to start, so that a client pointed at
// the server tells its user more than "404 page not found".
func NoProxy() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeOpenAIError(w, http.StatusNotFound, "invalid_request_error",
			"this habilis server proxies no OpenAI-compatible API: start habilis serve with --upstream URL "+
				"(the API's base URL, ending in /v1), or habilis proxy --upstream URL")
	})
}

// HandleWithoutV1 registers on mux the paths of the OpenAI API without
// their /v1 (/chat/completions, /models, ...), which a client whose base
// URL lacks /v1 asks for: they are answered 404 in OpenAI's error shape,
// with the base URL to set, where the client reported "404 page not found".
func HandleWithoutV1(mux *http.ServeMux) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		writeOpenAIError(w, http.StatusNotFound, "invalid_request_error",
			fmt.Sprintf("%s is served under /v1 here: set the OpenAI client's base URL to %s://%s/v1", r.URL.Path, scheme, r.Host))
	})
	for _, path := range []string{"/chat/completions", "/completions", "/embeddings", "/models", "/models/", "/responses", "/responses/"} {
		mux.Handle(path, h)
	}
}

// writeOpenAIError writes an error of the proxy's own in OpenAI's shape,
// which clients of that API know how to read.
func writeOpenAIError(w http.ResponseWriter, status int, kind, msg string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": kind, "code": nil}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// chat forwards a chat completion request, or with responses a Responses
// API request, with its tools cut: one path for the two request shapes.
func (p *Proxy) chat(w http.ResponseWriter, r *http.Request, responses bool) {
	start := time.Now()
	body, err := readBody(r, p.opts.MaxChatBytes)
	var plan *chatPlan
	switch {
	case errors.Is(err, errTooLarge):
		// Forward what was read and the rest unread.
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(strings.NewReader(body), r.Body), r.Body}
		plan = &chatPlan{outcome: OutcomeTooLarge}
		p.s.log.Warn("proxy: chat request forwarded as it came", "reason", err)
	case err != nil:
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("habilis proxy: reading the request: %v", err))
		return
	default:
		plan = p.plan(r.Context(), body, responses)
		r.Body = io.NopCloser(strings.NewReader(plan.body))
		r.ContentLength = int64(len(plan.body))
	}
	p.s.metrics.proxied(plan, time.Since(start))
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), planKey{}, plan)))
}

// planKey carries a chat request's plan to the answer, whose headers it
// sets: on the upstream's final answer (ModifyResponse) or the proxy's 502,
// not on w before forwarding, since the reverse proxy clears those when it
// relays an informational answer (100 Continue, 103 Early Hints).
type planKey struct{}

// answer adds the habilis headers to the upstream's answer to a chat
// request and, with Record, watches a successful answer for its tool call.
func (p *Proxy) answer(resp *http.Response) error {
	plan, ok := resp.Request.Context().Value(planKey{}).(*chatPlan)
	if !ok {
		return nil
	}
	plan.writeHeaders(resp.Header)
	if ask := plan.ask; ask != nil && resp.StatusCode == http.StatusOK {
		tapAnswer(resp, plan.responses, func(tool string) { p.record(ask, tool) })
	}
	return nil
}

// errTooLarge reports a chat request over ProxyOptions.MaxChatBytes.
var errTooLarge = errors.New("the request is over the proxy's size limit")

// readBody reads r's body up to limit bytes; past it, it returns what it
// read with errTooLarge. The body is read into a string, which gjson and
// sjson read and write without copying it again.
func readBody(r *http.Request, limit int64) (string, error) {
	var buf strings.Builder
	if r.ContentLength > 0 {
		buf.Grow(int(min(r.ContentLength, limit) + 1))
	}
	if _, err := io.Copy(&buf, io.LimitReader(r.Body, limit+1)); err != nil {
		return "", err
	}
	if int64(buf.Len()) > limit {
		return buf.String(), fmt.Errorf("%w of %d bytes", errTooLarge, limit)
	}
	return buf.String(), nil
}

// chatPlan is what the proxy does with one chat request.
type chatPlan struct {
	// body is the request to forward.
	body    string
	outcome string
	// before and after count the request's tools and the forwarded ones;
	// selected names the forwarded ones.
	before, after int
	selected      []string
	tokensSaved   int64
	// decision is the router's, when it was asked.
	decision *habilis.Decision
	// ask labels the answer's tool call, with ProxyOptions.Record.
	ask *chatAsk
	// responses: the request and its answer are the Responses API's.
	responses bool
}

func (c *chatPlan) writeHeaders(h http.Header) {
	h.Set(HeaderOutcome, c.outcome)
	if c.outcome == OutcomeTooLarge {
		return
	}
	h.Set(HeaderToolsBefore, strconv.Itoa(c.before))
	h.Set(HeaderToolsAfter, strconv.Itoa(c.after))
	h.Set(HeaderSelected, joinNames(c.selected, maxSelectedHeader))
	h.Set(HeaderTokensSaved, strconv.FormatInt(c.tokensSaved, 10))
}

// joinNames joins names with commas in at most limit bytes: past it, the
// list ends with "+N", N the names left out.
func joinNames(names []string, limit int) string {
	var b strings.Builder
	for i, n := range names {
		sep := ""
		if i > 0 {
			sep = ","
		}
		// Leave room for ",+N" after the name unless it is the last.
		tail := 0
		if left := len(names) - i - 1; left > 0 {
			tail = 2 + len(strconv.Itoa(left))
		}
		if b.Len()+len(sep)+len(n)+tail > limit {
			b.WriteString(sep + "+" + strconv.Itoa(len(names)-i))
			break
		}
		b.WriteString(sep + n)
	}
	return b.String()
}

// plan decides what to forward for a chat request's body, a Responses
// API request's with responses.
func (p *Proxy) plan(ctx context.Context, body string, responses bool) *chatPlan {
	parse := parseChat
	if responses {
		parse = parseResponses
	}
	req, err := parse(body, (p.s.opts.MaxQueryBytes-1)/2)
	var plan *chatPlan
	if err != nil {
		plan = p.untouched(body, nil, OutcomeError, err)
	} else {
		plan = p.planParsed(ctx, body, req)
		if p.opts.Record != nil {
			plan.ask = newChatAsk(req)
		}
	}
	plan.responses = responses
	return plan
}

// planParsed decides what to forward for the chat request req, read from
// body.
func (p *Proxy) planParsed(ctx context.Context, body string, req *chatRequest) *chatPlan {
	if len(req.tools) == 0 {
		return p.untouched(body, req, OutcomeNoTools, nil)
	}
	if req.functions < p.minTools {
		return p.untouched(body, req, OutcomeFewTools, nil)
	}
	if req.continues && !req.hasUser() {
		return p.untouched(body, req, OutcomeContinued, nil)
	}
	src, err := p.choose(ctx, req)
	if err != nil {
		return p.untouched(body, req, OutcomeError, err)
	}
	plan, err := p.cut(body, req, src.d)
	if err != nil {
		return p.untouched(body, req, OutcomeError, err)
	}
	p.s.log.Debug("proxy: chat", "outcome", plan.outcome, "tools_before", plan.before, "tools_after", plan.after,
		"selected", plan.selected, "tokens_saved", plan.tokensSaved)
	return plan
}

// untouched is the plan that forwards body as it came, for the reason
// outcome, after err when habilis failed.
func (p *Proxy) untouched(body string, req *chatRequest, outcome string, err error) *chatPlan {
	plan := &chatPlan{body: body, outcome: outcome}
	if req != nil {
		plan.before, plan.after = len(req.tools), len(req.tools)
		for _, t := range req.tools {
			if t.name != "" {
				plan.selected = append(plan.selected, t.name)
			}
		}
	}
	if err != nil {
		p.s.log.Warn("proxy: chat request forwarded as it came", "reason", err)
	}
	return plan
}

// choose selects the request's tools with Prefilter's logic: from the
// server's catalog when it holds every function tool of the request, from
// the request's tools otherwise. The tools the conversation needs are
// pinned.
func (p *Proxy) choose(ctx context.Context, req *chatRequest) (*source, error) {
	pre := &habilisv1.PrefilterRequest{
		Messages:        req.messages,
		IncludePrevious: true,
		Shape:           shapeOpenAI,
		K:               int32(p.opts.K),
		FailClosed:      p.opts.FailClosed,
	}
	for _, t := range req.tools {
		if t.function && req.needed[t.name] {
			pre.Pinned = append(pre.Pinned, t.name)
		}
	}
	denied, known := p.fromCatalog(req)
	if known {
		pre.Denied = denied
	} else {
		pre.ToolsJson = req.catalog
	}
	src, err := p.s.prefilterSelect(ctx, pre, known)
	if err != nil {
		return nil, fmt.Errorf("proxy: select: %w", err)
	}
	return src, nil
}

// fromCatalog reports whether the server's catalog holds every function
// tool of req, and returns its other tools, which the selection denies.
// Their names come from the catalog's definitions that prefilterServer
// keeps for the catalog's version, rather than a copy of every tool made
// for each request.
func (p *Proxy) fromCatalog(req *chatRequest) ([]string, bool) {
	sent := make(map[string]bool, req.functions)
	for _, t := range req.tools {
		if !t.function {
			continue
		}
		if !p.s.r.Has(t.name) {
			return nil, false
		}
		sent[t.name] = true
	}
	var denied []string
	for name := range p.s.renders.get(p.s.r, shapeOpenAI).defs {
		if !sent[name] {
			denied = append(denied, name)
		}
	}
	return denied, true
}

// cut rewrites body's tools to those d chose (the K best, and with
// FailClosed none when the router abstained) and those the conversation
// needs, in the request's order.
func (p *Proxy) cut(body string, req *chatRequest, d *habilis.Decision) (*chatPlan, error) {
	plan := &chatPlan{body: body, before: len(req.tools), decision: d, outcome: OutcomeSelected}
	switch {
	case d.Abstained:
		plan.outcome = OutcomeAbstained
	case d.Ambiguous:
		plan.outcome = OutcomeAmbiguous
	}
	chosen := make(map[string]bool, len(d.Matches))
	for _, m := range d.Matches {
		chosen[m.Tool] = true
	}
	var tools strings.Builder
	tools.WriteByte('[')
	for _, t := range req.tools {
		if t.function && !chosen[t.name] && !req.needed[t.name] {
			plan.tokensSaved += estimateTokens(t.raw)
			continue
		}
		if plan.after > 0 {
			tools.WriteByte(',')
		}
		tools.WriteString(t.raw)
		plan.after++
		if t.name != "" {
			plan.selected = append(plan.selected, t.name)
		}
	}
	tools.WriteByte(']')
	if plan.after < plan.before {
		var err error
		if plan.body, err = replaceTools(body, req, tools.String(), plan.after); err != nil {
			return nil, err
		}
	}
	return plan, nil
}

// replaceTools returns body with its tools array replaced by tools, which
// holds n of them. Without any, the request goes without tools,
// tool_choice and parallel_tool_calls, which OpenAI's API refuses without
// tools.
func replaceTools(body string, req *chatRequest, tools string, n int) (string, error) {
	var err error
	switch {
	case n == 0:
		for _, key := range []string{"tools", "tool_choice", "parallel_tool_calls"} {
			if body, err = sjson.Delete(body, key); err != nil {
				return "", fmt.Errorf("proxy: remove %s: %w", key, err)
			}
		}
	case req.toolsAt > 0 && req.toolsEnd <= len(body):
		// Parsing found where the tools array lies (gjson's index is 0
		// when it does not know): splice the new one in.
		body = body[:req.toolsAt] + tools + body[req.toolsEnd:]
	default:
		if body, err = sjson.SetRaw(body, "tools", tools); err != nil {
			return "", fmt.Errorf("proxy: rewrite tools: %w", err)
		}
	}
	return body, nil
}
