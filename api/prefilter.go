package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/habilis-router/habilis"
	habilisv1 "github.com/habilis-router/habilis/api/habilis/v1"
	"github.com/habilis-router/habilis/catalog"
	"github.com/habilis-router/habilis/internal/suggest"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/memstore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Shapes a Prefilter writes tool definitions in.
const (
	shapeOpenAI  = "openai"
	shapeMCP     = "mcp"
	shapeHabilis = "habilis"
)

// estimateTokens is the token estimate of one tool definition: a quarter
// of its compact JSON's bytes, rounded up. It is crude but the same for
// the catalog before and after filtering, so the saving it shows is fair.
func estimateTokens[T string | []byte](def T) int64 { return (int64(len(def)) + 3) / 4 }

// inlineCatalog is a catalog sent with a Prefilter request. It is kept in
// the inline cache with its index, so what it derives from the request's
// bytes is derived once.
type inlineCatalog struct {
	tools []habilis.Tool
	names map[string]bool
	// sent holds each tool's definition as sent, compacted, by name, in
	// the caller's shape: "openai", "mcp" or "habilis".
	sent *rendered

	// written holds the definitions written afresh, by shape, once a
	// request has needed them (see definitions).
	mu      sync.Mutex
	written map[string]*rendered
}

// lookup returns an UnknownToolError for a name the catalog does not
// hold, suggesting the names it most likely misspells, or nil.
func (c *inlineCatalog) lookup(name string) error {
	if c.names[name] {
		return nil
	}
	return suggest.UnknownTool(name, c.names)
}

// parseInline parses an inline catalog with habilis' catalog rules and
// bounds its tools; indexInline has bounded its bytes.
func parseInline(data string, maxTools int) (*inlineCatalog, error) {
	tools, err := catalog.Parse("tools_json", []byte(data))
	if err != nil {
		return nil, &catalogErrors{field: catalogField{name: "tools_json"}, err: err}
	}
	if len(tools) > maxTools {
		return nil, invalidf("tools_json", "holds %d tools, over the limit of %d tools", len(tools), maxTools)
	}
	c := &inlineCatalog{tools: tools, names: make(map[string]bool, len(tools))}
	for _, t := range tools {
		c.names[t.Name] = true
	}
	elems, wrapped := toolElements([]byte(data))
	sent := &rendered{defs: make(map[string][]byte, len(tools)), shape: shapeHabilis, wrapped: wrapped}
	if wrapped {
		sent.shape = shapeMCP
	}
	for _, raw := range elems {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		nameRaw := m["name"]
		if fn, ok := m["function"]; ok {
			var f map[string]json.RawMessage
			if json.Unmarshal(fn, &f) == nil {
				nameRaw = f["name"]
			}
		}
		if _, ok := m["type"]; ok {
			sent.shape = shapeOpenAI
		} else if _, ok := m["inputSchema"]; ok && sent.shape == shapeHabilis {
			sent.shape = shapeMCP
		}
		var name string
		if json.Unmarshal(nameRaw, &name) != nil {
			continue
		}
		var buf bytes.Buffer
		if json.Compact(&buf, raw) == nil {
			sent.defs[strings.TrimSpace(name)] = buf.Bytes()
		}
	}
	for _, def := range sent.defs {
		sent.tokens += estimateTokens(def)
	}
	c.sent = sent
	return c, nil
}

// definitions returns the definitions a Prefilter asking for shape ("" for
// the catalog's own) chooses from: those sent, when they are in that shape
// and every one was found, or else every tool written afresh in shape, so
// that before and after are estimated alike. A shape is written once.
func (c *inlineCatalog) definitions(shape string) *rendered {
	if (shape == "" || shape == c.sent.shape) && len(c.sent.defs) == len(c.tools) {
		return c.sent
	}
	if shape == "" {
		shape = shapeOpenAI
		if c.sent.shape == shapeMCP {
			shape = shapeMCP
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.written[shape] == nil {
		if c.written == nil {
			c.written = map[string]*rendered{}
		}
		c.written[shape] = renderAll(c.tools, shape)
	}
	return c.written[shape]
}

// toolElements finds the tool definitions of a catalog catalog.Parse has
// accepted, where it finds them: the array itself, or the "tools" or
// "tools_list" array of a wrapper object, possibly the result of a
// JSON-RPC response. wrapped reports a wrapper object.
func toolElements(data []byte) (elems []json.RawMessage, wrapped bool) {
	data = bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF"))
	if json.Unmarshal(data, &elems) == nil {
		return elems, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return nil, false
	}
	if res, ok := m["result"]; ok {
		if _, rpc := m["jsonrpc"]; rpc {
			m = nil
			if json.Unmarshal(res, &m) != nil {
				return nil, true
			}
		}
	}
	list, ok := m["tools"]
	if !ok {
		list = m["tools_list"]
	}
	if json.Unmarshal(list, &elems) != nil {
		return nil, true
	}
	return elems, true
}

// renderTool writes t's definition in shape ("openai" or "mcp"), as a
// model is given it: without examples or a title.
func renderTool(t *habilis.Tool, shape string) []byte {
	bare := *t
	bare.Examples, bare.Meta = nil, nil
	var v any = catalog.OpenAI(bare)
	if shape == shapeMCP {
		v = catalog.MCP(bare)
	}
	b, err := json.Marshal(v)
	if err != nil {
		// Unreachable for parsed tools, whose schemas are valid JSON.
		return []byte(`{"name":` + strconv.Quote(t.Name) + `}`)
	}
	return b
}

// rendered is a catalog's definitions by name in one shape, with their
// total token estimate. wrapped reports that they go in a {"tools": [...]}
// object rather than a bare array; version is the server catalog's they
// were made from (renderCache).
type rendered struct {
	version uint64
	defs    map[string][]byte
	tokens  int64
	shape   string
	wrapped bool
}

// renderAll writes every tool's definition in shape ("openai" or "mcp").
func renderAll(tools []habilis.Tool, shape string) *rendered {
	out := &rendered{defs: make(map[string][]byte, len(tools)), shape: shape, wrapped: shape == shapeMCP}
	for i := range tools {
		d := renderTool(&tools[i], shape)
		out.defs[tools[i].Name] = d
		out.tokens += estimateTokens(d)
	}
	return out
}

// renderCache keeps the server catalog's definitions per shape for the
// catalog version they were made from, so that a Prefilter over the
// server's catalog does not marshal every tool to count tokens_before.
type renderCache struct {
	mu      sync.Mutex
	byShape map[string]*rendered
}

// get returns the definitions of r's catalog in shape.
func (c *renderCache) get(r *selector.Router, shape string) *rendered {
	v := r.Version()
	c.mu.Lock()
	defer c.mu.Unlock()
	if got := c.byShape[shape]; got != nil && got.version == v {
		return got
	}
	out := renderAll(r.Tools(), shape)
	out.version = v
	// Keep the result only when no write slipped in between.
	if r.Version() == v {
		if c.byShape == nil {
			c.byShape = map[string]*rendered{}
		}
		c.byShape[shape] = out
	}
	return out
}

// conversationQuery returns the query of a Prefilter request: its query,
// or its conversation's last user message (with the one before when asked).
func conversationQuery(req *habilisv1.PrefilterRequest) (string, string, error) {
	msgs := req.GetMessages()
	switch {
	case req.GetQuery() != "" && len(msgs) > 0:
		return "", "", invalidf("messages", "set query or messages, not both")
	case len(msgs) == 0:
		return req.GetQuery(), "query", nil
	}
	last, prev := -1, -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if !strings.EqualFold(msgs[i].GetRole(), "user") {
			continue
		}
		if last < 0 {
			last = i
		} else {
			prev = i
			break
		}
	}
	if last < 0 {
		return "", "", invalidf("messages", "holds no message with role \"user\"")
	}
	field := fmt.Sprintf("messages[%d].content", last)
	q := msgs[last].GetContent()
	if strings.TrimSpace(q) == "" {
		return "", "", invalidf(field, "must not be empty")
	}
	if req.GetIncludePrevious() && prev >= 0 && strings.TrimSpace(msgs[prev].GetContent()) != "" {
		q = msgs[prev].GetContent() + "\n" + q
	}
	return q, field, nil
}

// source is the catalog a Prefilter chose from: the decision, and every
// tool's definition as it will be written.
type source struct {
	d *habilis.Decision
	*rendered
}

// chatRoles are the roles of OpenAI's chat messages, which Prefilter's
// messages take (ignoring case): the query is the last "user" one's.
var chatRoles = []string{"system", "developer", "user", "assistant", "tool", "function"}

// checkRoles refuses a message of a role not in chatRoles, naming it:
// Prefilter would pass over it in looking for the last user message, so
// that a client's own word for the user ("human") would route an older
// message, or none, without a word. The chat proxy does not check: the
// upstream model server owns the roles it takes (some take more, as
// Llama's "ipython"), and the request goes on to it whatever habilis
// makes of them.
func checkRoles(msgs []*habilisv1.ChatMessage) error {
	for i, m := range msgs {
		if !slices.ContainsFunc(chatRoles, func(r string) bool { return strings.EqualFold(r, m.GetRole()) }) {
			return invalidf(fmt.Sprintf("messages[%d].role", i), "%q is not a chat role: want one of %s", m.GetRole(), strings.Join(chatRoles, ", "))
		}
	}
	return nil
}

// prefilter answers a Prefilter request.
func (s *Server) prefilter(ctx context.Context, req *habilisv1.PrefilterRequest) (*habilisv1.PrefilterResponse, error) {
	if err := checkRoles(req.GetMessages()); err != nil {
		return nil, err
	}
	src, err := s.prefilterSelect(ctx, req, false)
	if err != nil {
		return nil, err
	}
	s.metrics.decided("Prefilter", src.d)
	return writePrefiltered(s.r, src), nil
}

// prefilterSelect checks a Prefilter request and selects from its catalog:
// the decision, and the definitions to write the chosen tools with. The
// chat proxy selects with it too, with known set: it takes the pinned and
// denied names from the server's catalog itself, so they are not looked
// up one by one again (the router still refuses a name the catalog lost
// meanwhile).
func (s *Server) prefilterSelect(ctx context.Context, req *habilisv1.PrefilterRequest, known bool) (*source, error) {
	query, field, err := conversationQuery(req)
	if err != nil {
		return nil, err
	}
	if err := s.checkQuery(field, query); err != nil {
		return nil, err
	}
	shape := req.GetShape()
	switch shape {
	case "", shapeOpenAI, shapeMCP:
	default:
		return nil, invalidf("shape", "%q: want openai, mcp or empty", shape)
	}
	opts, err := prefilterOptions(req)
	if err != nil {
		return nil, err
	}
	if req.GetToolsJson() == "" {
		return s.prefilterServer(ctx, query, shape, opts, known)
	}
	return s.prefilterInline(ctx, req.GetToolsJson(), query, shape, opts)
}

// writePrefiltered writes the chosen tools' definitions and the token
// estimates of a Prefilter's answer; r is the server's catalog, where a
// tool the catalog gained since the selection is written from.
func writePrefiltered(r *selector.Router, src *source) *habilisv1.PrefilterResponse {
	var buf bytes.Buffer
	if src.wrapped {
		buf.WriteString(`{"tools":`)
	}
	buf.WriteByte('[')
	var after int64
	n := 0
	for _, m := range src.d.Matches {
		def, ok := src.defs[m.Tool]
		if !ok {
			// The server's catalog changed between selection and rendering.
			ti, err := r.Tool(m.Tool)
			if err != nil {
				continue
			}
			def = renderTool(&ti.Tool, src.shape)
		}
		if n > 0 {
			buf.WriteByte(',')
		}
		buf.Write(def)
		after += estimateTokens(def)
		n++
	}
	buf.WriteByte(']')
	if src.wrapped {
		buf.WriteByte('}')
	}
	return &habilisv1.PrefilterResponse{
		ToolsJson:    buf.String(),
		Shape:        src.shape,
		Decision:     decisionToProto(src.d),
		TokensBefore: src.tokens,
		TokensAfter:  after,
		TokensSaved:  src.tokens - after,

		CatalogVersion: src.d.CatalogVersion,
	}
}

// prefilterOptions are a Prefilter's selection options: fail-open, so that
// the k best tools are handed over whatever the decision, unless the
// request asks for fail_closed.
func prefilterOptions(req *habilisv1.PrefilterRequest) (habilis.SelectOptions, error) {
	if req.GetFailOpen() && req.GetFailClosed() {
		return habilis.SelectOptions{}, invalidf("fail_closed", "excludes fail_open")
	}
	opts, err := selectOptions(req)
	if err != nil {
		return opts, err
	}
	opts.FailOpen = !req.GetFailClosed()
	return opts, nil
}

// prefilterServer selects from the server's catalog; known says that
// opts' pinned and denied names are the catalog's own.
func (s *Server) prefilterServer(ctx context.Context, query, shape string, opts habilis.SelectOptions, known bool) (*source, error) {
	if shape == "" {
		shape = shapeOpenAI
	}
	if !known {
		if err := s.checkTools(opts); err != nil {
			return nil, err
		}
	}
	d, err := s.r.Select(ctx, query, opts)
	if err != nil {
		return nil, err
	}
	return &source{d: d, rendered: s.renders.get(s.r, shape)}, nil
}

// inlineIndex is an inline catalog indexed for selection.
type inlineIndex struct {
	data string
	cat  *inlineCatalog
	r    *selector.Router
}

// inlineCache keeps the last few inline catalogs indexed, by their bytes:
// a gateway sends the same tool list with every request, and indexing it
// again each time would cost far more than selecting. Entries are found by
// a seeded hash and confirmed by comparing the bytes.
type inlineCache struct {
	mu   sync.Mutex
	size int
	seed maphash.Seed
	// keys are in order of use, the most recent last.
	keys []uint64
	m    map[uint64]*inlineIndex
}

func newInlineCache(size int) *inlineCache {
	return &inlineCache{size: size, seed: maphash.MakeSeed(), m: map[uint64]*inlineIndex{}}
}

func (c *inlineCache) key(data string) uint64 { return maphash.String(c.seed, data) }

func (c *inlineCache) get(k uint64, data string) *inlineIndex {
	c.mu.Lock()
	defer c.mu.Unlock()
	ix := c.m[k]
	if ix == nil || ix.data != data {
		return nil
	}
	i := slices.Index(c.keys, k)
	c.keys = append(slices.Delete(c.keys, i, i+1), k)
	return ix
}

func (c *inlineCache) put(k uint64, ix *inlineIndex) {
	if c.size <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; ok {
		return
	}
	// Evicted routers are dropped, not closed: a request may still be
	// selecting from one.
	for len(c.keys) >= c.size {
		delete(c.m, c.keys[0])
		c.keys = c.keys[1:]
	}
	c.keys = append(c.keys, k)
	c.m[k] = ix
}

// indexInline returns the index of an inline catalog, from the cache or
// built now into a router over an in-memory store.
func (s *Server) indexInline(ctx context.Context, data string) (*inlineIndex, error) {
	if len(data) > s.opts.MaxInlineBytes {
		return nil, invalidf("tools_json", "is %d bytes, over the limit of %d bytes", len(data), s.opts.MaxInlineBytes)
	}
	key := s.inlines.key(data)
	if ix := s.inlines.get(key, data); ix != nil {
		return ix, nil
	}
	cat, err := parseInline(data, s.opts.MaxInlineTools)
	if err != nil {
		return nil, err
	}
	// Indexing is CPU-bound: bound how many run at once so that a burst of
	// large inline catalogs queues instead of starving selections.
	select {
	case s.inline <- struct{}{}:
		defer func() { <-s.inline }()
	case <-ctx.Done():
		return nil, fmt.Errorf("prefilter: %w", ctx.Err())
	}
	rt, err := selector.New(ctx, memstore.New(), selector.Config{Embedder: s.opts.InlineEmbedder})
	if err != nil {
		return nil, fmt.Errorf("prefilter: %w", err)
	}
	if _, err := rt.Load(ctx, cat.tools, selector.LoadOptions{}); err != nil {
		return nil, fmt.Errorf("index tools_json: %w", err)
	}
	ix := &inlineIndex{data: data, cat: cat, r: rt}
	s.inlines.put(key, ix)
	return ix, nil
}

// prefilterInline selects from an inline catalog.
func (s *Server) prefilterInline(ctx context.Context, data, query, shape string, opts habilis.SelectOptions) (*source, error) {
	if s.opts.InlineEmbedder == nil {
		return nil, status.Error(codes.Unimplemented, "prefilter: this server does not index inline catalogs (tools_json); filter its own catalog instead")
	}
	ix, err := s.indexInline(ctx, data)
	if err != nil {
		return nil, err
	}
	cat := ix.cat
	if err := checkNames(opts, cat.lookup); err != nil {
		return nil, err
	}
	d, err := ix.r.Select(ctx, query, opts)
	if err != nil {
		return nil, err
	}
	// The inline catalog's index is the request's, not a version of the
	// server's catalog.
	d.CatalogVersion = 0
	return &source{d: d, rendered: cat.definitions(shape)}, nil
}
