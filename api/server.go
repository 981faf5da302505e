// Package api serves a habilis router over gRPC (the habilis.v1 ToolRouter
// service of habilis/v1/habilis.proto, with health and reflection) and
// dials such a server. Errors cross the wire as status codes through one
// table (errorTable) and come back as the same habilis sentinel errors, so
// errors.Is works alike on a local router and a remote one.
//
// The same services answer over HTTP (HTTPHandler, http.go): as JSON
// through Connect's Vanguard transcoder, and as gRPC over HTTP/2. Proxy
// (proxy.go, chat.go) serves an OpenAI-compatible API in front of a model's,
// cutting each chat request's tools to those it needs.
package api

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"

	"github.com/habilis-router/habilis"
	habilisv1 "github.com/habilis-router/habilis/api/habilis/v1"
	"github.com/habilis-router/habilis/catalog"
	"github.com/habilis-router/habilis/fill"
	"github.com/habilis-router/habilis/selector"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
)

// Limits applied when ServerOptions leaves them zero.
const (
	// DefaultMaxRecvMsgSize bounds a request message: 8 MiB.
	DefaultMaxRecvMsgSize = 8 << 20
	// DefaultMaxQueryBytes bounds a query (or a conversation's query).
	DefaultMaxQueryBytes = 16 << 10
	// DefaultMaxBatch bounds the queries of one SelectBatch.
	DefaultMaxBatch = 1000
	// DefaultMaxInlineTools and DefaultMaxInlineBytes bound an inline
	// Prefilter catalog.
	DefaultMaxInlineTools = 2000
	DefaultMaxInlineBytes = 4 << 20
	// DefaultInlineCacheSize is how many inline catalogs stay indexed.
	DefaultInlineCacheSize = 8
	// MaxK is the largest k a request may ask for: a local selection's.
	MaxK = selector.MaxK
)

// ServiceName is the ToolRouter's full name, as health and reflection
// report it.
const ServiceName = "habilis.v1.ToolRouter"

// ServerOptions configure a Server. The zero value serves plaintext
// without authentication, with the default limits, no logs, and refuses
// inline Prefilter catalogs.
type ServerOptions struct {
	// Logger receives one line per call at debug level and failed calls at
	// warn level; nil discards them.
	Logger *slog.Logger
	// Token, when set, is the bearer token every call but health checks
	// must carry ("authorization: Bearer TOKEN").
	Token string
	// TLS, when set, serves TLS with it instead of plaintext.
	TLS *tls.Config
	// InlineEmbedder indexes the catalogs Prefilter requests carry inline
	// (the lexical embedder); nil refuses them with UNIMPLEMENTED.
	InlineEmbedder habilis.CorpusEmbedder
	// MaxRecvMsgSize bounds a request message in bytes; 0 means
	// DefaultMaxRecvMsgSize.
	MaxRecvMsgSize int
	// MaxQueryBytes bounds a query; 0 means DefaultMaxQueryBytes.
	MaxQueryBytes int
	// MaxBatch bounds the queries of a SelectBatch; 0 means DefaultMaxBatch.
	MaxBatch int
	// MaxInlineTools and MaxInlineBytes bound an inline Prefilter catalog;
	// 0 means DefaultMaxInlineTools and DefaultMaxInlineBytes.
	MaxInlineTools int
	MaxInlineBytes int
	// StreamWorkers is how many goroutines are kept to handle calls (calls
	// beyond them get a goroutine of their own); 0 means 4 per CPU, a
	// negative value a new goroutine for every call.
	StreamWorkers int
	// InlineCacheSize is how many inline catalogs stay indexed for the
	// requests that send the same bytes again; 0 means
	// DefaultInlineCacheSize, a negative value keeps none.
	InlineCacheSize int
	// Fillers fill arguments for Fill and Invoke, as fill.Options.Fillers;
	// nil means the built-in extractor alone.
	Fillers []fill.Filler
	// Runner runs the tools Invoke fills (fill/executor, with the kinds
	// the operator allows); nil means Invoke fills but refuses to run.
	Runner fill.Runner
	// ReadOnly refuses the methods that write the store (UpsertTools and
	// DeleteTools) with FAILED_PRECONDITION, reason
	// READ_ONLY (habilis.ErrReadOnly), before reading their request, for
	// habilis serve --read-only. It holds whatever the store is; a store
	// opened read-only refuses writes too.
	ReadOnly bool
}

// Server serves a router over gRPC: the ToolRouter service, health
// (grpc.health.v1, SERVING once a catalog is loaded) and reflection.
type Server struct {
	habilisv1.UnimplementedToolRouterServer

	r       *selector.Router
	opts    ServerOptions
	log     *slog.Logger
	grpc    *grpc.Server
	health  *health.Server
	metrics *metrics
	renders renderCache
	// inline bounds the inline catalogs being indexed at once; inlines
	// keeps the last ones indexed.
	inline  chan struct{}
	inlines *inlineCache
	// tokenHash is the SHA-256 of opts.Token, made once: authorize
	// compares every call's token with it.
	tokenHash [sha256.Size]byte
}

// NewServer returns a server for r. The caller owns r and closes it after
// the server has stopped.
func NewServer(r *selector.Router, opts ServerOptions) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxRecvMsgSize <= 0 {
		opts.MaxRecvMsgSize = DefaultMaxRecvMsgSize
	}
	if opts.MaxQueryBytes <= 0 {
		opts.MaxQueryBytes = DefaultMaxQueryBytes
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	if opts.MaxInlineTools <= 0 {
		opts.MaxInlineTools = DefaultMaxInlineTools
	}
	if opts.MaxInlineBytes <= 0 {
		opts.MaxInlineBytes = DefaultMaxInlineBytes
	}
	if opts.StreamWorkers == 0 {
		opts.StreamWorkers = 4 * max(1, runtime.GOMAXPROCS(0))
	}
	if opts.InlineCacheSize == 0 {
		opts.InlineCacheSize = DefaultInlineCacheSize
	}
	s := &Server{
		r:       r,
		opts:    opts,
		log:     opts.Logger,
		health:  health.NewServer(),
		metrics: newMetrics(r),
		inline:  make(chan struct{}, max(1, runtime.GOMAXPROCS(0))),
		inlines: newInlineCache(opts.InlineCacheSize),

		tokenHash: sha256.Sum256([]byte(opts.Token)),
	}
	gopts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(opts.MaxRecvMsgSize),

		grpc.ChainUnaryInterceptor(s.unaryInterceptor),
		grpc.ChainStreamInterceptor(s.streamInterceptor),
	}
	if opts.StreamWorkers > 0 {
		// Reused workers keep the stacks selections have grown, where a
		// goroutine per call grows a fresh one every time.
		gopts = append(gopts, grpc.NumStreamWorkers(uint32(opts.StreamWorkers)))
	}
	if opts.TLS != nil {
		gopts = append(gopts, grpc.Creds(credentials.NewTLS(opts.TLS)))
	}
	s.grpc = grpc.NewServer(gopts...)
	habilisv1.RegisterToolRouterServer(s.grpc, s)
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)
	s.updateHealth()
	return s
}

// Serve accepts connections on lis until Shutdown or Stop; it returns nil
// after either.
func (s *Server) Serve(lis net.Listener) error {
	if err := s.grpc.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// Shutdown stops the server gracefully: health turns NOT_SERVING, new calls
// are refused and calls in flight finish. When ctx ends first, the calls
// still running are cancelled and Shutdown returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	s.health.Shutdown()
	done := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.grpc.Stop()
		<-done
		return fmt.Errorf("shutdown: %w", ctx.Err())
	}
}

// Stop stops the server at once, cancelling calls in flight.
func (s *Server) Stop() {
	s.health.Shutdown()
	s.grpc.Stop()
}

// MetricsHandler serves the server's Prometheus metrics, for an HTTP
// listener of the caller's choosing.
func (s *Server) MetricsHandler() http.Handler { return s.metrics.handler() }

// updateHealth reports SERVING while the router holds a catalog: before
// the first load, or after every tool was deleted, every selection would
// abstain.
func (s *Server) updateHealth() {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if s.r.Version() > 0 && len(s.r.Tools()) > 0 {
		st = healthpb.HealthCheckResponse_SERVING
	}
	s.health.SetServingStatus("", st)
	s.health.SetServingStatus(ServiceName, st)
}

// checkQuery refuses a blank or oversized query in field.
func (s *Server) checkQuery(field, q string) error {
	switch {
	case strings.TrimSpace(q) == "":
		return invalidf(field, "must not be empty")
	case len(q) > s.opts.MaxQueryBytes:
		return invalidf(field, "is %d bytes, over the limit of %d bytes", len(q), s.opts.MaxQueryBytes)
	}
	return nil
}

// selectParams are the selection options that Select, SelectBatch and
// Prefilter requests share.
type selectParams interface {
	GetK() int32
	GetMode() string
	GetPinned() []string
	GetDenied() []string
	GetFailOpen() bool
}

// selectOptions validates a request's selection options.
func selectOptions(req selectParams) (habilis.SelectOptions, error) {
	k, mode := req.GetK(), req.GetMode()
	if k < 0 || k > MaxK {
		return habilis.SelectOptions{}, invalidf("k", "%s", (&selector.KError{K: int(k)}).Reason())
	}
	m, err := habilis.ParseMode(mode)
	if err != nil {
		return habilis.SelectOptions{}, invalidf("mode", "%q: want description, centroid, hybrid or empty", mode)
	}
	for i, n := range req.GetDenied() {
		if slices.Contains(req.GetPinned(), n) {
			return habilis.SelectOptions{}, invalidf(fmt.Sprintf("denied[%d]", i), "%q is pinned too: a tool is pinned or denied, not both", n)
		}
	}
	return habilis.SelectOptions{K: int(k), Mode: m, Pinned: req.GetPinned(), Denied: req.GetDenied(), FailOpen: req.GetFailOpen()}, nil
}

// checkNames refuses pinned or denied tools that lookup does not know
// (it returns an UnknownToolError for them), naming the field and the
// tool.
func checkNames(opts habilis.SelectOptions, lookup func(string) error) error {
	for _, l := range []struct {
		field string
		names []string
	}{{"pinned", opts.Pinned}, {"denied", opts.Denied}} {
		for i, n := range l.names {
			if err := lookup(n); err != nil {
				return unknownTool(fmt.Sprintf("%s[%d]", l.field, i), err)
			}
		}
	}
	return nil
}

// checkTools checks pinned and denied names against the server's catalog.
func (s *Server) checkTools(opts habilis.SelectOptions) error {
	if len(opts.Pinned) == 0 && len(opts.Denied) == 0 {
		return nil
	}
	return checkNames(opts, func(n string) error {
		_, err := s.r.Tool(n)
		return err
	})
}

// catalogOptions validates a request's selection options and the tools
// they pin or deny against the server's catalog.
func (s *Server) catalogOptions(req selectParams) (habilis.SelectOptions, error) {
	opts, err := selectOptions(req)
	if err != nil {
		return opts, err
	}
	return opts, s.checkTools(opts)
}

// Select implements habilisv1.ToolRouterServer.
func (s *Server) Select(ctx context.Context, req *habilisv1.SelectRequest) (*habilisv1.SelectResponse, error) {
	if err := s.checkQuery("query", req.GetQuery()); err != nil {
		return nil, err
	}
	opts, err := s.catalogOptions(req)
	if err != nil {
		return nil, err
	}
	d, err := s.r.Select(ctx, req.GetQuery(), opts)
	if err != nil {
		return nil, err
	}
	s.metrics.decided("Select", d)
	return decisionToProto(d), nil
}

// SelectBatch implements habilisv1.ToolRouterServer.
func (s *Server) SelectBatch(ctx context.Context, req *habilisv1.SelectBatchRequest) (*habilisv1.SelectBatchResponse, error) {
	qs := req.GetQueries()
	switch {
	case len(qs) == 0:
		return nil, invalidf("queries", "must hold at least one query")
	case len(qs) > s.opts.MaxBatch:
		return nil, invalidf("queries", "holds %d queries, over the limit of %d", len(qs), s.opts.MaxBatch)
	}
	for i, q := range qs {
		if err := s.checkQuery(fmt.Sprintf("queries[%d]", i), q); err != nil {
			return nil, err
		}
	}
	opts, err := s.catalogOptions(req)
	if err != nil {
		return nil, err
	}
	out := &habilisv1.SelectBatchResponse{Results: make([]*habilisv1.SelectResponse, len(qs))}
	for i, q := range qs {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("select batch: %w", err)
		}
		d, err := s.r.Select(ctx, q, opts)
		if err != nil {
			return nil, fmt.Errorf("queries[%d]: %w", i, err)
		}
		s.metrics.decided("SelectBatch", d)
		out.Results[i] = decisionToProto(d)
	}
	return out, nil
}

// Prefilter implements habilisv1.ToolRouterServer.
func (s *Server) Prefilter(ctx context.Context, req *habilisv1.PrefilterRequest) (*habilisv1.PrefilterResponse, error) {
	return s.prefilter(ctx, req)
}

// ListTools implements habilisv1.ToolRouterServer.
func (s *Server) ListTools(ctx context.Context, _ *habilisv1.ListToolsRequest) (*habilisv1.ListToolsResponse, error) {
	// Read the version on both sides of the list, so that the version
	// returned is the list's: retry when a write slipped in between.
	var tools []habilis.Tool
	v := s.r.Version()
	for range 3 {
		tools = s.r.Tools()
		if w := s.r.Version(); w == v {
			break
		} else {
			v = w
		}
	}
	out := &habilisv1.ListToolsResponse{Tools: make([]*habilisv1.Tool, len(tools)), Version: v}
	for i := range tools {
		out.Tools[i] = toolToProto(&tools[i])
	}
	return out, nil
}

// GetTool implements habilisv1.ToolRouterServer.
func (s *Server) GetTool(ctx context.Context, req *habilisv1.GetToolRequest) (*habilisv1.GetToolResponse, error) {
	ti, err := s.tool("name", req.GetName())
	if err != nil {
		return nil, err
	}
	return toolInfoToProto(ti), nil
}

// tool returns the catalog's tool named in field, or a toolError.
func (s *Server) tool(field, name string) (*selector.ToolInfo, error) {
	if name == "" {
		return nil, invalidf(field, "must not be empty")
	}
	ti, err := s.r.Tool(name)
	if err != nil {
		return nil, unknownTool(field, err)
	}
	return ti, nil
}

// writable refuses method, a write, on a ReadOnly server. UpsertTools
// and DeleteTools are the methods that write the store; every other one
// only reads it (Invoke runs a tool, and writes nothing to the store).
// TestReadOnlyMethods holds every method of the service to one side or
// the other, so that a new method is classified when it is added.
func (s *Server) writable(method string) error {
	if !s.opts.ReadOnly {
		return nil
	}
	return fmt.Errorf("%s: the server was started with --read-only and writes nothing to its store: %w", method, habilis.ErrReadOnly)
}

// UpsertTools implements habilisv1.ToolRouterServer. Tools are validated
// by the catalog rules of catalog.Parse: Tool messages are
// marshalled to a habilis catalog and parsed back.
func (s *Server) UpsertTools(ctx context.Context, req *habilisv1.UpsertToolsRequest) (*habilisv1.UpsertToolsResponse, error) {
	if err := s.writable("UpsertTools"); err != nil {
		return nil, err
	}
	var (
		tools []habilis.Tool
		err   error
	)
	switch {
	case len(req.GetTools()) > 0 && req.GetCatalogJson() != "":
		return nil, invalidf("catalog_json", "set tools or catalog_json, not both")
	case len(req.GetTools()) > 0:
		tools, err = parseToolMessages(req.GetTools())
	case req.GetCatalogJson() != "":
		tools, err = catalog.Parse("catalog_json", []byte(req.GetCatalogJson()))
		if err != nil {
			err = &catalogErrors{field: catalogField{name: "catalog_json"}, err: err}
		}
	default:
		return nil, invalidf("tools", "set tools or catalog_json")
	}
	if err != nil {
		return nil, err
	}
	rep, err := s.r.Load(ctx, tools, selector.LoadOptions{Merge: !req.GetReplace()})
	if err != nil {
		return nil, err
	}
	s.updateHealth()
	return &habilisv1.UpsertToolsResponse{Report: reportToProto(rep)}, nil
}

// parseToolMessages validates tools given as messages with the catalog
// rules, and returns them normalised.
func parseToolMessages(msgs []*habilisv1.Tool) ([]habilis.Tool, error) {
	tools := make([]habilis.Tool, len(msgs))
	for i, m := range msgs {
		for _, f := range []struct{ name, text string }{{"input_schema_json", m.GetInputSchemaJson()}, {"executor_json", m.GetExecutorJson()}} {
			if f.text != "" && !json.Valid([]byte(f.text)) {
				return nil, invalidf(fmt.Sprintf("tools[%d].%s", i, f.name), "is not valid JSON")
			}
		}
		tools[i] = toolFromProto(m)
	}
	data, err := json.Marshal(tools)
	if err != nil {
		return nil, fmt.Errorf("tools: %v: %w", err, habilis.ErrInvalid)
	}
	parsed, err := catalog.Parse("tools", data)
	if err != nil {
		return nil, &catalogErrors{field: catalogField{name: "tools", messages: true}, err: err}
	}
	return parsed, nil
}

// DeleteTools implements habilisv1.ToolRouterServer.
func (s *Server) DeleteTools(ctx context.Context, req *habilisv1.DeleteToolsRequest) (*habilisv1.DeleteToolsResponse, error) {
	if err := s.writable("DeleteTools"); err != nil {
		return nil, err
	}
	names := req.GetNames()
	if len(names) == 0 {
		return nil, invalidf("names", "must name at least one tool")
	}
	for i, n := range names {
		if _, err := s.r.Tool(n); err != nil {
			return nil, unknownTool(fmt.Sprintf("names[%d]", i), err)
		}
	}
	rep, err := s.r.Delete(ctx, names)
	if err != nil {
		return nil, err
	}
	s.updateHealth()
	return &habilisv1.DeleteToolsResponse{Report: reportToProto(rep)}, nil
}

// Collisions implements habilisv1.ToolRouterServer.
func (s *Server) Collisions(ctx context.Context, req *habilisv1.CollisionsRequest) (*habilisv1.CollisionsResponse, error) {
	th := req.GetThreshold()
	if th != th || th < 0 || th > 1 {
		return nil, invalidf("threshold", "%v is out of range: want 0 (default) to 1", th)
	}
	cols, err := s.r.Collisions(ctx, th)
	if err != nil {
		return nil, err
	}
	out := &habilisv1.CollisionsResponse{Collisions: make([]*habilisv1.Collision, len(cols))}
	for i := range cols {
		out.Collisions[i] = collisionToProto(&cols[i])
	}
	return out, nil
}
