package api

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"

	"github.com/habilis-router/habilis"
	habilisv1 "github.com/habilis-router/habilis/api/habilis/v1"
	"github.com/habilis-router/habilis/fill"
	"github.com/habilis-router/habilis/selector"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// DefaultMaxResponseSize bounds a response the client accepts: 64 MiB, room
// for ListTools over a catalog of tens of thousands of tools.
const DefaultMaxResponseSize = 64 << 20

// DialOptions configure a Client. The zero value dials plaintext without a
// token.
type DialOptions struct {
	// Token, when set, is sent as "authorization: Bearer TOKEN" with every
	// call.
	Token string
	// TLS, when set, dials TLS with it instead of plaintext.
	TLS *tls.Config
	// MaxResponseSize bounds a response in bytes; 0 means
	// DefaultMaxResponseSize.
	MaxResponseSize int
}

// Client calls a habilis server. Its methods mirror selector.Router's, and
// its errors wrap the same habilis sentinel errors (see RemoteError). It is
// safe for concurrent use.
type Client struct {
	conn   *grpc.ClientConn
	rpc    habilisv1.ToolRouterClient
	health healthpb.HealthClient
}

// Dial returns a client of the server at addr ("host:port" or any gRPC
// target). It does not wait for a connection: grpc.NewClient connects on
// the first call, whose error says if the server cannot be reached
// (ErrUnavailable). ctx only stops a Dial that is already cancelled.
func Dial(ctx context.Context, addr string, opts DialOptions) (*Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	if opts.MaxResponseSize <= 0 {
		opts.MaxResponseSize = DefaultMaxResponseSize
	}
	creds := insecure.NewCredentials()
	if opts.TLS != nil {
		creds = credentials.NewTLS(opts.TLS)
	}
	gopts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(opts.MaxResponseSize)),
	}
	if opts.Token != "" {
		gopts = append(gopts, grpc.WithPerRPCCredentials(bearer{token: opts.Token, secure: opts.TLS != nil}))
	}
	conn, err := grpc.NewClient(addr, gopts...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %v: %w", addr, err, habilis.ErrInvalid)
	}
	return &Client{conn: conn, rpc: habilisv1.NewToolRouterClient(conn), health: healthpb.NewHealthClient(conn)}, nil
}

// bearer sends the token with every call.
type bearer struct {
	token  string
	secure bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

// RequireTransportSecurity lets a token travel over plaintext only when
// the client was dialled without TLS on purpose (loopback, a sidecar).
func (b bearer) RequireTransportSecurity() bool { return b.secure }

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Conn returns the underlying connection, for other services on the same
// server (health, reflection).
func (c *Client) Conn() *grpc.ClientConn { return c.conn }

// Healthy reports whether the server says it is serving a catalog.
func (c *Client) Healthy(ctx context.Context) (bool, error) {
	resp, err := c.health.Check(ctx, &healthpb.HealthCheckRequest{Service: ServiceName})
	if err != nil {
		return false, fromStatus(err)
	}
	return resp.GetStatus() == healthpb.HealthCheckResponse_SERVING, nil
}

// selectRequest is the request for query with opts. A k out of range is
// refused here, named as the caller gave it, as a local selection
// refuses it: the int32 field could not carry every value.
func selectRequest(query string, opts habilis.SelectOptions) (*habilisv1.SelectRequest, error) {
	if err := selector.CheckK(opts.K); err != nil {
		return nil, err
	}
	return &habilisv1.SelectRequest{
		Query:    query,
		K:        int32(opts.K),
		Mode:     string(opts.Mode),
		Pinned:   opts.Pinned,
		Denied:   opts.Denied,
		FailOpen: opts.FailOpen,
	}, nil
}

// Select answers one selection, like selector.Router.Select.
func (c *Client) Select(ctx context.Context, query string, opts habilis.SelectOptions) (*habilis.Decision, error) {
	req, err := selectRequest(query, opts)
	if err != nil {
		return nil, err
	}
	resp, err := c.rpc.Select(ctx, req)
	if err != nil {
		return nil, fromStatus(err)
	}
	return decisionFromProto(resp), nil
}

// SelectBatch answers several queries with the same options; the
// decisions are parallel to queries.
func (c *Client) SelectBatch(ctx context.Context, queries []string, opts habilis.SelectOptions) ([]*habilis.Decision, error) {
	r, err := selectRequest("", opts)
	if err != nil {
		return nil, err
	}
	resp, err := c.rpc.SelectBatch(ctx, &habilisv1.SelectBatchRequest{
		Queries: queries, K: r.K, Mode: r.Mode, Pinned: r.Pinned, Denied: r.Denied, FailOpen: r.FailOpen,
	})
	if err != nil {
		return nil, fromStatus(err)
	}
	out := make([]*habilis.Decision, len(resp.GetResults()))
	for i, d := range resp.GetResults() {
		out[i] = decisionFromProto(d)
	}
	return out, nil
}

// Message is one message of a conversation given to Prefilter. Role is
// one of OpenAI's chat roles: system, developer, user, assistant, tool or
// function.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// PrefilterRequest asks for the tools of a catalog that fit a query or a
// conversation.
type PrefilterRequest struct {
	// Query is the request to route; set it or Messages.
	Query string
	// Messages is a conversation whose last user message is the query;
	// IncludePrevious prepends the user message before it.
	Messages        []Message
	IncludePrevious bool
	// Catalog, when set, is the catalog to filter instead of the server's
	// (OpenAI function tools, an MCP tools/list result or a habilis
	// catalog, as JSON).
	Catalog []byte
	// Shape is how to write the chosen tools: "openai", "mcp", or "" for
	// Catalog's own shape ("openai" for the server's catalog).
	Shape string
	// Options are the selection's. Options.FailOpen is ignored: Prefilter
	// hands over the k best tools whatever the decision, which it reports
	// beside them, unless FailClosed is set.
	Options habilis.SelectOptions
	// FailClosed hands over no tools (pinned ones aside) when the router
	// abstains, and only the tools that pass their gates otherwise.
	FailClosed bool
}

// Prefiltered is the answer to a Prefilter: the chosen tools' definitions
// and the token estimates (ceil(compact JSON bytes / 4) per definition).
type Prefiltered struct {
	Decision *habilis.Decision `json:"decision"`
	// Tools is a JSON document of the chosen definitions in Shape: an
	// array, or {"tools": [...]} for "mcp".
	Tools        json.RawMessage `json:"tools"`
	Shape        string          `json:"shape"`
	TokensBefore int64           `json:"tokens_before"`
	TokensAfter  int64           `json:"tokens_after"`
	TokensSaved  int64           `json:"tokens_saved"`
	// CatalogVersion is the version of the server's catalog the tools
	// were chosen from; 0 for an inline catalog.
	CatalogVersion uint64 `json:"catalog_version"`
}

// Prefilter shrinks a catalog to the tools that fit a request.
func (c *Client) Prefilter(ctx context.Context, req PrefilterRequest) (*Prefiltered, error) {
	r, err := selectRequest(req.Query, req.Options)
	if err != nil {
		return nil, err
	}
	msgs := make([]*habilisv1.ChatMessage, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = &habilisv1.ChatMessage{Role: m.Role, Content: m.Content}
	}
	resp, err := c.rpc.Prefilter(ctx, &habilisv1.PrefilterRequest{
		Query:           req.Query,
		Messages:        msgs,
		IncludePrevious: req.IncludePrevious,
		ToolsJson:       string(req.Catalog),
		Shape:           req.Shape,
		K:               r.K,
		Mode:            r.Mode,
		Pinned:          r.Pinned,
		Denied:          r.Denied,
		FailClosed:      req.FailClosed,
	})
	if err != nil {
		return nil, fromStatus(err)
	}
	return &Prefiltered{
		Decision:     decisionFromProto(resp.GetDecision()),
		Tools:        json.RawMessage(resp.GetToolsJson()),
		Shape:        resp.GetShape(),
		TokensBefore: resp.GetTokensBefore(),
		TokensAfter:  resp.GetTokensAfter(),
		TokensSaved:  resp.GetTokensSaved(),

		CatalogVersion: resp.GetCatalogVersion(),
	}, nil
}

// Tools returns the server's catalog, sorted by name.
func (c *Client) Tools(ctx context.Context) ([]habilis.Tool, error) {
	resp, err := c.rpc.ListTools(ctx, &habilisv1.ListToolsRequest{})
	if err != nil {
		return nil, fromStatus(err)
	}
	out := make([]habilis.Tool, len(resp.GetTools()))
	for i, t := range resp.GetTools() {
		out[i] = toolFromProto(t)
	}
	return out, nil
}

// Tool returns one tool with its gate, or an error wrapping ErrNotFound.
func (c *Client) Tool(ctx context.Context, name string) (*selector.ToolInfo, error) {
	resp, err := c.rpc.GetTool(ctx, &habilisv1.GetToolRequest{Name: name})
	if err != nil {
		return nil, fromStatus(err)
	}
	return toolInfoFromProto(resp), nil
}

// UpsertOptions tune UpsertTools.
type UpsertOptions struct {
	// Replace makes the catalog exactly the given tools; by default tools
	// not given are kept.
	Replace bool
}

// UpsertTools adds or replaces tools in one atomic write.
func (c *Client) UpsertTools(ctx context.Context, tools []habilis.Tool, opts UpsertOptions) (*selector.LoadReport, error) {
	msgs := make([]*habilisv1.Tool, len(tools))
	for i := range tools {
		msgs[i] = toolToProto(&tools[i])
	}
	resp, err := c.rpc.UpsertTools(ctx, &habilisv1.UpsertToolsRequest{Tools: msgs, Replace: opts.Replace})
	if err != nil {
		return nil, fromStatus(err)
	}
	return reportFromProto(resp.GetReport()), nil
}

// UpsertCatalog is UpsertTools for a catalog file's content, in any shape
// habilis reads; the server parses it.
func (c *Client) UpsertCatalog(ctx context.Context, catalog []byte, opts UpsertOptions) (*selector.LoadReport, error) {
	resp, err := c.rpc.UpsertTools(ctx, &habilisv1.UpsertToolsRequest{CatalogJson: string(catalog), Replace: opts.Replace})
	if err != nil {
		return nil, fromStatus(err)
	}
	return reportFromProto(resp.GetReport()), nil
}

// DeleteTools removes tools in one write; an unknown name returns an
// error wrapping ErrNotFound and removes nothing.
func (c *Client) DeleteTools(ctx context.Context, names []string) (*selector.LoadReport, error) {
	resp, err := c.rpc.DeleteTools(ctx, &habilisv1.DeleteToolsRequest{Names: names})
	if err != nil {
		return nil, fromStatus(err)
	}
	return reportFromProto(resp.GetReport()), nil
}

// Collisions reports the catalog's colliding pairs; threshold 0 means the
// server's default.
func (c *Client) Collisions(ctx context.Context, threshold float32) ([]habilis.Collision, error) {
	resp, err := c.rpc.Collisions(ctx, &habilisv1.CollisionsRequest{Threshold: threshold})
	if err != nil {
		return nil, fromStatus(err)
	}
	out := make([]habilis.Collision, len(resp.GetCollisions()))
	for i, col := range resp.GetCollisions() {
		out[i] = collisionFromProto(col)
	}
	return out, nil
}

// Fill fills tool's arguments from query on the server, like fill.Fill
// with the server's fillers. Nothing runs. JSON numbers in the result's
// values come back as float64.
func (c *Client) Fill(ctx context.Context, tool, query string) (*fill.Result, error) {
	resp, err := c.rpc.Fill(ctx, &habilisv1.FillRequest{Tool: tool, Query: query})
	if err != nil {
		return nil, fromStatus(err)
	}
	return fillFromProto(resp)
}

// InvokeRequest asks the server to fill a tool's arguments and run it.
type InvokeRequest struct {
	Tool  string
	Query string
	// Arguments, when not nil, are run with instead of filling them from
	// Query; the server checks them against the tool's schema.
	Arguments map[string]any
	// Confirm must be true: the server refuses to run a tool without it.
	Confirm bool
}

// Invoked is the answer to an Invoke.
type Invoked struct {
	Fill *fill.Result `json:"fill"`
	// Ran reports that the tool's executor was started.
	Ran bool `json:"ran"`
	// Result is the tool's outcome; nil when arguments are missing or
	// invalid (Fill says which). A kind the server does not allow is a
	// Result with IsError set.
	Result *habilis.ToolResult `json:"result,omitempty"`
}

// Invoke fills a tool's arguments (or checks req.Arguments) and runs the
// tool on the server when nothing is missing.
func (c *Client) Invoke(ctx context.Context, req InvokeRequest) (*Invoked, error) {
	r := &habilisv1.InvokeRequest{Tool: req.Tool, Query: req.Query, Confirm: req.Confirm}
	if req.Arguments != nil {
		b, err := json.Marshal(req.Arguments)
		if err != nil {
			return nil, fmt.Errorf("invoke %q: arguments: %v: %w", req.Tool, err, habilis.ErrInvalid)
		}
		r.ArgumentsJson = string(b)
	}
	resp, err := c.rpc.Invoke(ctx, r)
	if err != nil {
		return nil, fromStatus(err)
	}
	out := &Invoked{Ran: resp.GetRan()}
	if out.Fill, err = fillFromProto(resp.GetFill()); err != nil {
		return nil, err
	}
	if out.Result, err = resultFromProto(resp.GetResult()); err != nil {
		return nil, err
	}
	return out, nil
}
