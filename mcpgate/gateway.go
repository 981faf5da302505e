// Package mcpgate is habilis as an MCP gateway: it connects to the MCP
// servers of an mcpServers config, indexes their tools with a
// selector.Router, and serves MCP itself, offering an agent search_tools
// (the tools that fit a request, with the decision, or that none does)
// and call_tool (forwarded to the server that owns the tool), or the
// found tools themselves.
//
// The catalog is immutable once built and swapped whole when an upstream's
// tools change or it goes away, so a search sees one catalog, never half
// of two. An upstream that fails never takes the gateway down: it is
// reported, its tools leave the index, and calls to them fail with the
// reason.
package mcpgate

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/eval"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/memstore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of Options.
const (
	DefaultConnectTimeout = 60 * time.Second
	DefaultStartWait      = 10 * time.Second
	DefaultCallTimeout    = 60 * time.Second
	DefaultMaxResult      = 1 << 20
	DefaultK              = 5
	// MaxK bounds how many tools one search returns.
	MaxK = 50
	// DefaultRestartDelay is the wait before the first attempt to start a
	// server that is down again; each failed attempt doubles it, up to
	// MaxRestartDelay, and a session that lasted that long starts over.
	DefaultRestartDelay = 2 * time.Second
	MaxRestartDelay     = time.Minute
)

// Options configure a Gateway. Router.Embedder is required; every other
// zero value has the default its field names.
type Options struct {
	// Router configures the index of the upstreams' tools (its embedder;
	// the lexical one with no model is what cmd/habilis gives by default).
	Router selector.Config
	// Overlay adds examples to tools by name.
	Overlay Overlay
	// Environ is the environment stdio servers start with, before their
	// config's env; nil starts them with that env alone.
	Environ []string
	// HTTPClient reaches HTTP servers; nil means a new default client.
	HTTPClient *http.Client
	// Transport, when set, may reach a server instead of its config's
	// transport (tests connect servers in the same process); a nil
	// transport and nil error fall back to the config's.
	Transport func(Server) (mcp.Transport, error)
	// ConnectTimeout bounds connecting to a server and listing its tools;
	// 0 means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// StartWait bounds how long New waits for the servers before serving
	// without those still starting; 0 means DefaultStartWait.
	StartWait time.Duration
	// RestartDelay is the wait before starting a server that is down
	// again (see DefaultRestartDelay); 0 means DefaultRestartDelay, a
	// negative value never restarts one.
	RestartDelay time.Duration
	// CallTimeout bounds one forwarded call; 0 means DefaultCallTimeout.
	CallTimeout time.Duration
	// MaxResult caps a forwarded result, in bytes of JSON; a larger one
	// is cut, with a note saying so. 0 means DefaultMaxResult.
	MaxResult int
	// K is how many tools a search returns when it does not say; 0 means
	// DefaultK.
	K int
	// Version is the habilis version the gateway reports to servers and
	// clients.
	Version string
	// Logger receives the upstreams' stderr and events; nil discards them.
	Logger *slog.Logger
	// Fit, when set, returns the labelled queries (a queries file's rows,
	// such as Record appends) that each index is fitted on once built, as
	// habilis fit would (eval.Fit: fusion weights, prior, thresholds, the
	// single-tool queries as examples). It is called at every build (at
	// start, when a server joins or goes, when its tools change), so that
	// lines appended to a file it reads count from the next one: FitFile
	// reads a file. Rows expecting a tool the index lacks are skipped. No
	// rows, or an error wrapping fs.ErrNotExist, is nothing to learn yet;
	// any other error fails New, and at a later build is logged, the index
	// serving unfitted.
	Fit func(context.Context) ([]eval.Query, error)
	// Record, when set, receives each tool a session calls (through
	// call_tool or, with ExposeSelected, directly) that its last search
	// found, with that search's query: a labelled query habilis fit can
	// learn from. Each tool is recorded once per search. Nil records
	// nothing.
	Record *eval.Recorder
}

func (o *Options) connectTimeout() time.Duration {
	return cmp.Or(o.ConnectTimeout, DefaultConnectTimeout)
}
func (o *Options) startWait() time.Duration   { return cmp.Or(o.StartWait, DefaultStartWait) }
func (o *Options) callTimeout() time.Duration { return cmp.Or(o.CallTimeout, DefaultCallTimeout) }
func (o *Options) maxResult() int             { return cmp.Or(o.MaxResult, DefaultMaxResult) }
func (o *Options) k() int                     { return cmp.Or(o.K, DefaultK) }
func (o *Options) restartDelay() time.Duration {
	return cmp.Or(o.RestartDelay, DefaultRestartDelay)
}
func (o *Options) version() string { return cmp.Or(o.Version, "dev") }

// ServerStatus is what the gateway knows of one upstream.
type ServerStatus struct {
	Name      string `json:"server"`
	Transport string `json:"transport"`
	// Status is StatusReady, StatusStarting or StatusDown.
	Status string `json:"status"`
	// Reason says why a server is down.
	Reason string `json:"reason,omitempty"`
	Tools  int    `json:"tools"`
}

// view is the gateway's view of its upstreams as of one rebuild:
// immutable, swapped whole.
type view struct {
	router *selector.Router
	// store holds the catalog as built, before fitting: what the next
	// rebuild starts from.
	store   *memstore.Store
	entries []*entry // sorted by name
	byName  map[string]*entry
	servers []ServerStatus // sorted by name
	// lost maps the names of the tools of servers that are down, as the
	// gateway showed them and as their servers named them, to the server.
	lost map[string]string
}

// Gateway fronts a set of MCP servers. It is safe for concurrent use.
type Gateway struct {
	opts      Options
	ups       []*upstream // sorted by server name
	upstreams map[string]*upstream

	mu  sync.Mutex // serialises rebuilds
	cur atomic.Pointer[view]

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New connects to every server, lists and indexes their tools, and keeps
// following them until Close. It waits for the servers up to the start
// wait; one that has not answered by then joins the index when it does,
// and is reported as starting meanwhile, so that a slow server (npx
// fetching a package) does not keep the gateway from answering its own
// client. A server that cannot be reached within the connect timeout is
// down, which Servers and every search report: the others serve. New
// fails only on bad options, labelled queries (Fit) that cannot be read,
// or when the index cannot be built.
func New(ctx context.Context, servers []Server, opts Options) (*Gateway, error) {
	if opts.Router.Embedder == nil {
		return nil, fmt.Errorf("no embedder: %w", habilis.ErrInvalid)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	g := &Gateway{opts: opts}
	ups, err := newUpstreams(servers, &g.opts)
	if err != nil {
		return nil, err
	}
	g.ups, g.upstreams = ups, map[string]*upstream{}
	for _, u := range ups {
		g.upstreams[u.cfg.Name] = u
	}
	began := time.Now()
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	g.cancel = cancel
	started := make(chan *upstream, len(ups))
	built := make(chan struct{})
	for _, u := range ups {
		g.wg.Go(func() { g.follow(wctx, u, started, built) })
	}
	if err := g.awaitStart(ctx, started); err != nil {
		g.Close()
		return nil, err
	}
	g.mu.Lock()
	first, qs, err := g.build(ctx)
	if err == nil {
		g.cur.Store(first)
	}
	g.mu.Unlock()
	if err != nil {
		g.Close()
		return nil, err
	}
	close(built)
	if names, near := unmatchedOverlay(opts.Overlay, first.entries); len(names) > 0 {
		opts.Logger.Warn("overlay names tools no server has", "names", names, "did_you_mean", near)
	}
	g.fitFirst(ctx, wctx, first, qs, began)
	return g, nil
}

// fitFirst fits the first index on qs in the background, swapping the
// fitted one in when it is ready, and waits for it until the start wait
// has passed since New began: fitting takes time in proportion to the
// labelled queries (0.23-0.8 s for 1,000 with the lexical embedder and
// 60 tools, BenchmarkFit; a model embedder embeds each), which must not
// keep the gateway from answering its client. The unfitted index serves
// meanwhile.
func (g *Gateway) fitFirst(ctx, wctx context.Context, first *view, qs []eval.Query, began time.Time) {
	if len(qs) == 0 {
		return
	}
	done := make(chan struct{})
	g.wg.Go(func() {
		defer close(done)
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.cur.Load() != first {
			return // a later build was fitted itself
		}
		if r := g.fitted(wctx, first.store, first.entries, qs); r != nil {
			v := *first
			v.router = r // first's router is left open: searches may be reading it
			g.cur.Store(&v)
		}
	})
	wait := time.NewTimer(g.opts.startWait() - time.Since(began))
	defer wait.Stop()
	select {
	case <-done:
	case <-wait.C:
		g.opts.Logger.Info("mcp gateway: the start wait is over before fitting the index ended; it serves unfitted until then")
	case <-ctx.Done():
	}
}

// follow starts one upstream and, once the first index is built, keeps
// the index in step with it: a server that was not ready for the first
// index joins it now, later changes are watched, and a server that is down
// is started again, after a wait that doubles with each failed attempt.
func (g *Gateway) follow(ctx context.Context, u *upstream, started chan<- *upstream, built <-chan struct{}) {
	_ = u.start(ctx) // a failure leaves u down, with its reason
	started <- u
	select {
	case <-built:
	case <-ctx.Done():
		return
	}
	if !u.inFirst.Load() {
		g.refresh(ctx)
	}
	delay := g.opts.restartDelay()
	for {
		began := time.Now()
		u.watch(ctx, func() { g.refresh(ctx) }) // returns at once when u is down
		if ctx.Err() != nil || delay < 0 {
			return
		}
		if time.Since(began) >= MaxRestartDelay {
			delay = g.opts.restartDelay()
		}
		u.restartIn(delay)
		g.refresh(ctx) // so that searches and Servers say when
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return
		}
		if u.start(ctx) == nil {
			u.logger.Info("mcp server started again")
			g.refresh(ctx)
			continue
		}
		delay = min(2*delay, MaxRestartDelay)
	}
}

// awaitStart waits until every upstream has started (or failed to), or
// the start wait has passed, marking those that made it in time.
func (g *Gateway) awaitStart(ctx context.Context, started <-chan *upstream) error {
	timer := time.NewTimer(g.opts.startWait())
	defer timer.Stop()
	for range g.ups {
		select {
		case u := <-started:
			u.inFirst.Store(true)
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// refresh rebuilds the index after an upstream changed; on failure the
// previous index keeps serving.
func (g *Gateway) refresh(ctx context.Context) {
	if err := g.rebuild(ctx); err != nil && ctx.Err() == nil {
		g.opts.Logger.Error("mcp gateway: rebuilding the index failed; serving the previous one", "error", err)
	}
}

// newUpstreams makes an upstream of every server, sorted by name.
func newUpstreams(servers []Server, opts *Options) ([]*upstream, error) {
	if len(servers) == 0 {
		return nil, fmt.Errorf("no servers: %w", habilis.ErrInvalid)
	}
	seen := map[string]bool{}
	ups := make([]*upstream, len(servers))
	for i, s := range servers {
		if seen[s.Name] {
			return nil, fmt.Errorf("server %q is given twice: %w", s.Name, habilis.ErrInvalid)
		}
		seen[s.Name] = true
		ups[i] = newUpstream(s, opts)
	}
	slices.SortFunc(ups, func(a, b *upstream) int { return strings.Compare(a.cfg.Name, b.cfg.Name) })
	return ups, nil
}

// startAll starts every server at once, for List, and returns when each
// is ready or down. A server that fails is not logged: List's caller
// reports it from the Listing.
func startAll(ctx context.Context, servers []Server, opts *Options) ([]*upstream, error) {
	ups, err := newUpstreams(servers, opts)
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	for _, u := range ups {
		u.quietDown = true
		wg.Go(func() { _ = u.start(ctx) }) // a failure leaves u down, with its reason
	}
	wg.Wait()
	return ups, ctx.Err()
}

func closeAll(ups []*upstream) {
	var wg sync.WaitGroup
	for _, u := range ups {
		wg.Go(u.close)
	}
	wg.Wait()
}

// gather returns every upstream's status and the tool lists of the ready
// ones, in server order, and the names of the tools of those that are
// down, by server.
func gather(ups []*upstream) ([]ServerStatus, []serverTools, map[string][]string) {
	var statuses []ServerStatus
	var lists []serverTools
	lost := map[string][]string{}
	for _, u := range ups {
		status, reason, tools, _ := u.snapshot()
		statuses = append(statuses, ServerStatus{Name: u.cfg.Name, Transport: u.cfg.Transport, Status: status, Reason: reason, Tools: len(tools)})
		if status == StatusReady {
			lists = append(lists, serverTools{server: u.cfg.Name, tools: tools})
		} else {
			lost[u.cfg.Name] = u.lostTools()
		}
	}
	return statuses, lists, lost
}

// rebuild makes a new catalog from the upstreams as they are now, fits
// it (Options.Fit) and swaps it in. On failure the previous catalog
// stays.
func (g *Gateway) rebuild(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	v, qs, err := g.build(ctx)
	if err != nil {
		return err
	}
	if r := g.fitted(ctx, v.store, v.entries, qs); r != nil {
		v.router.Close() // never searched
		v.router = r
	}
	// The previous catalog's router is left open: searches in flight may
	// still be reading it.
	g.cur.Store(v)
	return nil
}

// build makes an unfitted view of the upstreams as they are now, and
// returns it with the labelled queries to fit it on. g.mu must be held.
func (g *Gateway) build(ctx context.Context) (*view, []eval.Query, error) {
	qs, err := g.fitQueries(ctx)
	if err != nil {
		return nil, nil, err
	}
	statuses, lists, lostByServer := gather(g.ups)
	entries := nameTools(lists, g.opts.Overlay, g.opts.Logger)
	tools := make([]habilis.Tool, len(entries))
	byName := make(map[string]*entry, len(entries))
	for i, e := range entries {
		tools[i] = e.habilisTool()
		byName[e.Name] = e
	}
	st, err := g.seededStore(ctx)
	if err != nil {
		return nil, nil, err
	}
	r, err := selector.New(ctx, st, g.opts.Router)
	if err != nil {
		return nil, nil, fmt.Errorf("index the servers' tools: %w", err)
	}
	if _, err := r.Load(ctx, tools, selector.LoadOptions{}); err != nil {
		return nil, nil, fmt.Errorf("index the servers' tools: %w", err)
	}
	lost := map[string]string{}
	for server, names := range lostByServer {
		for _, n := range names {
			lost[n], lost[prefixed(server, n)] = server, server
		}
	}
	return &view{router: r, store: st, entries: entries, byName: byName, servers: statuses, lost: lost}, qs, nil
}

// seededStore returns a new store holding the current catalog's records,
// so that tools that did not change keep their vectors instead of being
// embedded again (which costs a model embedder a round trip).
func (g *Gateway) seededStore(ctx context.Context) (*memstore.Store, error) {
	if prev := g.cur.Load(); prev != nil {
		return copyStore(ctx, prev.store)
	}
	return memstore.New(), nil
}

// Listing is the tools of a set of servers, named as the gateway names
// them, and what became of each server.
type Listing struct {
	Tools   []ToolInfo     `json:"tools"`
	Servers []ServerStatus `json:"servers"`
	// ListBytes is the size of the ready servers' tools/list results as
	// JSON: the tool definitions an agent connected to every server
	// carries. GatewayBytes is the same for the gateway's own tools.
	ListBytes    int `json:"list_bytes"`
	GatewayBytes int `json:"gateway_bytes"`
	// OverlayUnmatched are the overlay's tool names that name no tool of
	// the servers that answered, sorted: a misspelt name adds nothing.
	OverlayUnmatched []string `json:"overlay_unmatched,omitempty"`
	// OverlaySuggestions gives, for each name of OverlayUnmatched that
	// likely misspells a tool's name, the names it most likely misspells.
	OverlaySuggestions map[string][]string `json:"overlay_suggestions,omitempty"`
}

// List connects to every server, lists its tools and disconnects. A
// server that cannot be reached is reported in Servers, not as an error.
func List(ctx context.Context, servers []Server, opts Options) (*Listing, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ups, err := startAll(ctx, servers, &opts)
	defer closeAll(ups)
	if err != nil {
		return nil, err
	}
	statuses, lists, _ := gather(ups)
	l := &Listing{Tools: []ToolInfo{}, Servers: statuses, GatewayBytes: listBytes([]*mcp.Tool{searchTool, callTool})}
	entries := nameTools(lists, opts.Overlay, opts.Logger)
	for _, e := range entries {
		l.Tools = append(l.Tools, e.ToolInfo)
	}
	l.OverlayUnmatched, l.OverlaySuggestions = unmatchedOverlay(opts.Overlay, entries)
	for _, st := range lists {
		l.ListBytes += listBytes(st.tools)
	}
	return l, nil
}

// listBytes is the size of a tools/list result holding tools.
func listBytes(tools []*mcp.Tool) int {
	b, err := json.Marshal(&mcp.ListToolsResult{Tools: tools})
	if err != nil {
		return 0
	}
	return len(b)
}

// Tools returns the tools the gateway offers, sorted by name.
func (g *Gateway) Tools() []ToolInfo {
	c := g.cur.Load()
	out := make([]ToolInfo, len(c.entries))
	for i, e := range c.entries {
		out[i] = e.ToolInfo
	}
	return out
}

// Servers returns what the gateway knows of each upstream, by name.
func (g *Gateway) Servers() []ServerStatus { return slices.Clone(g.cur.Load().servers) }

// Close stops following the upstreams and ends their sessions, stopping
// stdio servers.
func (g *Gateway) Close() error {
	g.cancel()
	g.wg.Wait() // no upstream starts after this
	closeAll(g.ups)
	return nil
}

// FoundTool is one tool of a search's answer: its full definition, where
// it lives, and how it scored.
type FoundTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Server      string          `json:"server"`
	// Score ranks the tools (hybrid mode's fused score).
	Score float32 `json:"score"`
	// Passed reports that the tool passed its gate: the router judges it
	// fits the request.
	Passed bool `json:"passed"`
	// CollidesWith names tools the router cannot tell apart from this one.
	CollidesWith []string `json:"collides_with,omitempty"`
}

// SearchResult is search_tools' answer.
type SearchResult struct {
	// Tools are the k best tools, best first: those that passed their
	// gates, then the rest of the ranking.
	Tools []FoundTool `json:"tools"`
	// Abstained reports that no tool passed its gate: the tools listed
	// are the closest, and likely none fits.
	Abstained bool `json:"abstained"`
	// Reason explains an abstention or an ambiguity; "" otherwise.
	Reason string `json:"reason"`
	// Ambiguous reports that tools which collide both passed.
	Ambiguous bool `json:"ambiguous,omitempty"`
	// Unavailable lists the servers that are down, whose tools are not
	// searched.
	Unavailable []Unavailable `json:"unavailable,omitempty"`
}

// Unavailable is a server that is down, and why.
type Unavailable struct {
	Server string `json:"server"`
	Reason string `json:"reason"`
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// round3 rounds a score to three decimals: what an agent can tell apart,
// in a third of the digits.
func round3(x float32) float32 { return float32(math.Round(float64(x)*1000) / 1000) }

// Search returns the k tools that best fit query (0 means Options.K),
// with the decision. It fails only on a bad query or k.
func (g *Gateway) Search(ctx context.Context, query string, k int) (*SearchResult, error) {
	switch {
	case k < 0:
		return nil, fmt.Errorf("k %d: must not be negative: %w", k, habilis.ErrInvalid)
	case k == 0:
		k = g.opts.k()
	case k > MaxK:
		k = MaxK
	}
	c := g.cur.Load()
	d, rk, err := c.router.SelectRanked(ctx, query, habilis.SelectOptions{K: k, FailOpen: true})
	if err != nil {
		return nil, err
	}
	res := &SearchResult{Tools: []FoundTool{}, Abstained: d.Abstained, Reason: d.Reason, Ambiguous: d.Ambiguous}
	if d.Abstained && len(rk.Matches) > 0 {
		res.Reason += "; the closest tools are listed anyway: use one only if it clearly serves the request"
	}
	// The tools that passed their gates come first, each group in ranking
	// order: the router judged those fit, whatever the fused score says.
	ms := slices.Concat(d.Matches, rk.Matches)
	slices.SortStableFunc(ms, func(a, b habilis.Match) int { return boolRank(b.Passed) - boolRank(a.Passed) })
	seen := map[string]bool{}
	for _, m := range ms {
		e := c.byName[m.Tool]
		if e == nil || seen[m.Tool] || len(res.Tools) == k {
			continue
		}
		seen[m.Tool] = true
		res.Tools = append(res.Tools, FoundTool{Name: e.Name, Description: e.Description, InputSchema: e.InputSchema,
			Server: e.Server, Score: round3(m.Score), Passed: m.Passed, CollidesWith: m.CollidesWith})
	}
	for _, s := range c.servers {
		if s.Status != StatusReady {
			res.Unavailable = append(res.Unavailable, Unavailable{Server: s.Name, Reason: s.Reason})
		}
	}
	if len(c.byName) == 0 {
		res.Reason = emptyReason(len(c.servers), len(res.Unavailable))
	}
	return res, nil
}

// emptyReason says why an index holds no tool, where the router says "the
// catalog is empty" of a config that names servers.
func emptyReason(servers, unavailable int) string {
	switch {
	case unavailable > 0 && unavailable == servers:
		return "no tool to search: every server is unavailable (see unavailable)"
	case unavailable > 0:
		return "no tool to search: the servers that answered offer none, and the others are unavailable (see unavailable)"
	}
	return "no tool to search: the servers offer none"
}
