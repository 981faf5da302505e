package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/eval"
	"github.com/habilis-router/habilis/mcpgate"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
)

// mcpOptions are the flags of the `habilis mcp` commands.
type mcpOptions struct {
	g              *globalOptions
	config         string
	overlay        string
	connectTimeout time.Duration

	// serve and search
	k int
	// serve
	httpAddr    string
	expose      string
	callTimeout time.Duration
	maxResult   int
	grace       time.Duration
	restart     time.Duration
	record      string
	// serve and search
	fit string
	// rec is the open --record file; lis, serve's --http listener.
	rec *eval.Recorder
	lis net.Listener
	// stdin is where serve reads MCP over stdio; stdinTTY says it is a
	// terminal, where a user rather than an MCP client started serve.
	stdin    io.Reader
	stdinTTY bool
	// query is search's request.
	query string
}

// newMCPOptions returns the options at their defaults, those of the flags
// a command does not have included, so that checkFlags passes them.
func newMCPOptions(g *globalOptions) *mcpOptions {
	return &mcpOptions{g: g, connectTimeout: mcpgate.DefaultConnectTimeout, k: mcpgate.DefaultK,
		callTimeout: mcpgate.DefaultCallTimeout, maxResult: mcpgate.DefaultMaxResult, restart: mcpgate.DefaultRestartDelay}
}

func (o *mcpOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "", "the MCP servers to front: a JSON file with an \"mcpServers\" object, as MCP clients write it (required)")
	f.DurationVar(&o.connectTimeout, "connect-timeout", mcpgate.DefaultConnectTimeout, "how long a server may take to start and list its tools")
	f.StringVar(&o.overlay, "overlay", "", `examples for the servers' tools, by tool name: {"TOOL": {"examples": ["a request it serves", ...]}}`)
}

func (o *mcpOptions) addSearchFlags(cmd *cobra.Command) {
	cmd.Flags().IntVarP(&o.k, "k", "k", mcpgate.DefaultK, "how many tools a search returns (serve: when search_tools' call gives no k)")
}

func (o *mcpOptions) addFitFlag(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.fit, "fit", "", "fit the index on the labelled queries of `FILE` (JSONL, as --record writes it) each time it is built; a file that does not exist yet is nothing to learn yet")
}

func (o *mcpOptions) addServeFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.httpAddr, "http", "", "serve streamable HTTP on this address, at /mcp (default: serve over stdio)")
	f.StringVar(&o.expose, "expose", string(mcpgate.ExposeSearch), "search: tools/list holds search_tools and call_tool; selected: also the tools the last search found")
	f.DurationVar(&o.callTimeout, "call-timeout", mcpgate.DefaultCallTimeout, "how long a forwarded call may take")
	f.IntVar(&o.maxResult, "max-result", mcpgate.DefaultMaxResult, "largest forwarded result, in bytes of JSON; larger ones are cut, with a note")
	f.DurationVar(&o.grace, "shutdown-timeout", 10*time.Second, "how long SIGTERM waits for HTTP requests in flight")
	f.DurationVar(&o.restart, "restart-delay", mcpgate.DefaultRestartDelay, "wait before starting a server that is down again, doubled after each failed attempt up to a minute; 0 never does")
	f.StringVar(&o.record, "record", "", "append each search's query and the tool the agent then called to `FILE`, for --fit FILE or habilis fit FILE (off by default: the queries are the users' requests)")
}

func newMCPCmd(g *globalOptions) *cobra.Command {
	return newGroupCmd("mcp", "Front MCP servers: serve their tools through search_tools and call_tool",
		newMCPServeCmd(g), newMCPToolsCmd(g), newMCPSearchCmd(g))
}

func newMCPServeCmd(g *globalOptions) *cobra.Command {
	o := newMCPOptions(g)
	cmd := &cobra.Command{
		Use:   "serve --config FILE",
		Short: "Serve MCP in front of the config's servers",
		Long: `Serve connects to every server of the config (stdio servers by "command",
"args", "env" and "cwd"; HTTP servers by "url" and "headers"), indexes their
tools with the configured embedder, and serves MCP: over stdio (the agent's
client starts habilis) or, with --http ADDR, streamable HTTP at /mcp.

The agent sees two tools: search_tools ({"query", "k"}: the k tools that best
fit the request, with their definitions, scores and the decision) and
call_tool ({"name", "arguments"}: forwarded to the server that owns the tool,
its result returned as it came). A tool's name is its server's own unless two
servers share it; then it is SERVER__NAME (habilis mcp tools shows the
mapping). With --expose selected, tools/list also holds the tools the last
search found, and the client is notified when they change.

With --record FILE, each time the agent calls a tool that its last search
found, the search's query and the tool are appended to FILE as a labelled
query ({"query", "expected": [TOOL], "source": "mcp", "time"}), which --fit
FILE learns from, as does habilis fit FILE a store loaded with habilis load
--mcp-config. Nothing is recorded without it: the queries are the users'
requests.

With --fit FILE, each time the gateway builds its index (at start, when a
server joins or goes, when a server's tools change) it reads FILE again and
fits the index on its labelled queries, as habilis fit does a store: fusion
weights, prior, thresholds, the single-tool queries as examples of their
tools. --record FILE --fit FILE makes the gateway learn from its own use
across restarts; lines recorded since start count from the next build. Rows
naming tools the index lacks (a server down, a tool renamed) are skipped and
counted in the log; a FILE that does not exist yet is nothing to learn yet.
A FILE that cannot be read stops the gateway at start, naming the line; at a
later build the error is logged and the index serves unfitted. A fit that
outlasts the start wait goes on while the unfitted index serves.

Serving starts once every server has answered, or after 10 seconds: a slower
server (npx fetching a package) is reported as starting and joins when it
answers, within --connect-timeout. A server that fails to start or dies is
logged and named in search_tools' "unavailable"; the others keep serving, a
call to one of its tools fails with the reason, and it is started again after
--restart-delay (doubled after each failed attempt, up to a minute).

Logs go to stderr (upstream servers' stderr at --log-level info), never to
stdout, which carries the protocol in stdio mode. Started in a terminal, serve
says on stderr that it waits for an MCP client there (Ctrl-D stops it); habilis
mcp tools and habilis mcp search try the servers by hand.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.stdin = cmd.InOrStdin()
			o.stdinTTY = isTerminal(o.stdin)
			return runMCPServe(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	o.addFlags(cmd)
	o.addSearchFlags(cmd)
	o.addFitFlag(cmd)
	o.addServeFlags(cmd)
	return cmd
}

func newMCPToolsCmd(g *globalOptions) *cobra.Command {
	o := newMCPOptions(g)
	cmd := &cobra.Command{
		Use:   "tools --config FILE",
		Short: "List the tools of the config's servers, with the names the gateway gives them",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMCPTools(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	o.addFlags(cmd)
	return cmd
}

func newMCPSearchCmd(g *globalOptions) *cobra.Command {
	o := newMCPOptions(g)
	cmd := &cobra.Command{
		Use:   "search --config FILE QUERY",
		Short: "Print search_tools' answer to QUERY over the config's servers",
		Args:  minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.query = strings.Join(args, " ")
			return runMCPSearch(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	o.addFlags(cmd)
	o.addSearchFlags(cmd)
	o.addFitFlag(cmd)
	return cmd
}

// gatewayOptions reads the config and overlay files and builds the
// gateway's options from the flags.
func (o *mcpOptions) gatewayOptions() ([]mcpgate.Server, mcpgate.Options, error) {
	var opts mcpgate.Options
	if err := o.g.noRemote("mcp"); err != nil {
		return nil, opts, err
	}
	if o.config == "" {
		return nil, opts, usagef("--config FILE is required: the MCP servers to front")
	}
	if err := o.checkFlags(); err != nil {
		return nil, opts, err
	}
	servers, err := mcpgate.ReadConfig(o.config)
	if err != nil {
		return nil, opts, fmt.Errorf("--config: %w", err)
	}
	if err := o.files(&opts); err != nil {
		return nil, opts, err
	}
	o.g.serving = true
	if opts.Router, err = o.g.routerConfig(); err != nil {
		return nil, opts, err
	}
	opts.Router.Logger = nil // a rebuild's load summary is not news
	opts.Environ = os.Environ()
	opts.Logger = o.g.logger
	opts.Version = currentVersion().Version
	opts.ConnectTimeout, opts.CallTimeout, opts.MaxResult, opts.K = o.connectTimeout, o.callTimeout, o.maxResult, o.k
	opts.RestartDelay, opts.Record = o.restart, o.rec
	if o.restart == 0 {
		opts.RestartDelay = -1 // never
	}
	return servers, opts, nil
}

// checkFlags refuses a flag out of range, naming it and its value. Flags
// a command does not have hold their defaults, which pass.
func (o *mcpOptions) checkFlags() error {
	switch {
	case o.k < 1 || o.k > mcpgate.MaxK:
		return usagef("-k %d: want 1 to %d", o.k, mcpgate.MaxK)
	case o.connectTimeout <= 0:
		return usagef("--connect-timeout %s: want a positive duration", o.connectTimeout)
	case o.callTimeout <= 0:
		return usagef("--call-timeout %s: want a positive duration", o.callTimeout)
	case o.maxResult <= 0:
		return usagef("--max-result %d: want a positive number of bytes", o.maxResult)
	case o.restart < 0:
		return usagef("--restart-delay %s: want 0 (never restart) or more", o.restart)
	}
	return nil
}

// files sets the options the --overlay, --record and --fit files give,
// once the config reads, so that a bad one creates no --record file.
func (o *mcpOptions) files(opts *mcpgate.Options) error {
	var err error
	if o.overlay != "" {
		if opts.Overlay, err = mcpgate.ReadOverlay(o.overlay); err != nil {
			return fmt.Errorf("--overlay: %w", err)
		}
	}
	if o.record != "" {
		if o.rec, err = eval.OpenRecorder(o.record, o.g.logger); err != nil {
			return fmt.Errorf("--%w", err)
		}
	}
	if o.fit != "" {
		opts.Fit = mcpgate.FitFile(o.fit) // read at each build of the index
		// The --record file exists by now; another that does not is
		// nothing to learn yet, or a mistyped path: say so once.
		if _, err := os.Stat(o.fit); errors.Is(err, fs.ErrNotExist) {
			o.g.logger.Warn("--fit " + o.fit + " does not exist yet: the index serves unfitted until it does (the file is read again at each build)")
		}
	}
	return nil
}

// openGateway starts a gateway over the config's servers (it logs the
// ones that are down). waitAll waits for every server to answer or fail,
// as a one-off search should, instead of serving without the slow ones.
func (o *mcpOptions) openGateway(ctx context.Context, waitAll bool) (*mcpgate.Gateway, error) {
	servers, opts, err := o.gatewayOptions()
	if err != nil {
		return nil, err
	}
	if waitAll {
		// A server that does not answer in time fails once its process
		// has stopped: up to 2 s after its stdin closes, 2 s after
		// SIGTERM and 2 s after SIGKILL (mcpgate's stdio transport). The
		// wait ends as soon as every server has answered or failed.
		opts.StartWait = o.connectTimeout + 7*time.Second
	}
	// serve --http listens before it starts the servers: an address in
	// use is said at once, not after the servers' start wait.
	if o.httpAddr != "" {
		if o.lis, err = o.listenHTTP(); err != nil {
			return nil, err
		}
	}
	gw, err := mcpgate.New(ctx, servers, opts)
	if err != nil {
		if o.lis != nil {
			o.lis.Close()
		}
		return nil, fmt.Errorf("mcp: %w", err)
	}
	return gw, nil
}

// listenHTTP listens on --http, warning of an address beyond this machine.
func (o *mcpOptions) listenHTTP() (net.Listener, error) {
	lis, err := net.Listen("tcp", o.httpAddr)
	if err != nil {
		return nil, listenError("mcp serve", "--http", err)
	}
	if a, ok := lis.Addr().(*net.TCPAddr); ok && !a.IP.IsLoopback() {
		// The SDK guards a loopback listener against DNS rebinding; past
		// it, nothing checks who calls the servers' tools.
		o.g.logger.Warn("mcp serve: --http " + o.httpAddr + " answers beyond this machine with no authentication: " +
			"whoever reaches it can call every tool of the servers; listen on 127.0.0.1 unless something in front checks who calls")
	}
	return lis, nil
}

// serveStdio serves MCP on stdin and stdout. Started in a terminal, where
// nothing would show until a line broke the protocol, it says on stderr
// what it waits for and how to try the servers instead.
func (o *mcpOptions) serveStdio(ctx context.Context, gw *mcpgate.Gateway, expose mcpgate.Expose, summary string, stdout io.Writer) error {
	o.g.logger.Info("serving MCP on stdio: " + summary)
	if o.stdinTTY {
		fmt.Fprintf(o.g.stderr, "habilis mcp serve: serving MCP over stdio (%s) to the MCP client that started it, "+
			"which speaks JSON-RPC on stdin: in a terminal nothing shows. To try the servers, run habilis mcp tools "+
			"or habilis mcp search with the same --config; to serve HTTP, --http ADDR. Ctrl-D stops it.\n", summary)
	}
	t := &mcp.IOTransport{Reader: io.NopCloser(o.stdin), Writer: nopWriteCloser{stdout}}
	err := gw.NewServer(expose).Run(ctx, t)
	var syntax *json.SyntaxError
	switch {
	case err == nil || ctx.Err() != nil:
		return nil
	case errors.As(err, &syntax):
		return fmt.Errorf("mcp serve: stdin is not MCP (JSON-RPC messages, one a line): %w", err)
	}
	return fmt.Errorf("mcp serve: %w", err)
}

func runMCPServe(ctx context.Context, o *mcpOptions, stdout io.Writer) error {
	expose, err := mcpgate.ParseExpose(o.expose)
	if err != nil {
		return usagef("--expose: %v", err)
	}
	defer func() {
		if o.rec != nil {
			o.rec.Close()
		}
	}()
	gw, err := o.openGateway(ctx, false)
	if err != nil {
		return err
	}
	defer gw.Close()
	summary := gatewaySummary(gw)
	if o.httpAddr == "" {
		return o.serveStdio(ctx, gw, expose, summary, stdout)
	}
	return serveMCPHTTP(ctx, o, gw, expose, summary, stdout)
}

// serveMCPHTTP serves the gateway over streamable HTTP until ctx ends,
// one MCP server per session.
func serveMCPHTTP(ctx context.Context, o *mcpOptions, gw *mcpgate.Gateway, expose mcpgate.Expose, summary string, stdout io.Writer) error {
	lis := o.lis // opened by openGateway
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return gw.NewServer(expose) },
		&mcp.StreamableHTTPOptions{Logger: o.g.logger}))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(lis) }()
	fmt.Fprintf(stdout, "listening on http://%s/mcp (%s)\n", lis.Addr(), summary)
	select {
	case err := <-served:
		return fmt.Errorf("mcp serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.grace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("mcp serve: %w", err)
	}
	return nil
}

// gatewaySummary says how many tools and servers a gateway holds.
func gatewaySummary(gw *mcpgate.Gateway) string {
	return serversSummary(len(gw.Tools()), gw.Servers())
}

// serversSummary says how many tools came from how many of the servers,
// and which servers are not ready: "5 tools from 2 of 3 servers, 1 not
// ready (github)".
func serversSummary(tools int, servers []mcpgate.ServerStatus) string {
	var notReady []string
	for _, s := range servers {
		if s.Status != mcpgate.StatusReady {
			notReady = append(notReady, s.Name)
		}
	}
	if len(notReady) == 0 {
		return fmt.Sprintf("%s from %s, 0 not ready", counted(tools, "tool"), counted(len(servers), "server"))
	}
	return fmt.Sprintf("%s from %d of %s, %d not ready (%s)", counted(tools, "tool"),
		len(servers)-len(notReady), counted(len(servers), "server"), len(notReady), strings.Join(notReady, ", "))
}

// counted is n and the noun, in the plural unless n is 1.
func counted(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func runMCPTools(ctx context.Context, o *mcpOptions, stdout io.Writer) error {
	servers, opts, err := o.gatewayOptions()
	if err != nil {
		return err
	}
	l, err := mcpgate.List(ctx, servers, opts)
	if err != nil {
		return fmt.Errorf("mcp tools: %w", err)
	}
	if o.g.json {
		return writeJSON(stdout, l)
	}
	tw := newTable(stdout)
	fmt.Fprintln(tw, "NAME\tSERVER\tNAME ON SERVER\tDESCRIPTION")
	for _, t := range l.Tools {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, t.Server, t.Upstream, truncate(t.Description, 60))
	}
	tw.Flush()
	for _, s := range l.Servers {
		if s.Status != mcpgate.StatusReady {
			fmt.Fprintf(stdout, "server %q is down: %s\n", s.Name, s.Reason)
		}
	}
	if len(l.OverlayUnmatched) > 0 {
		names := make([]string, len(l.OverlayUnmatched))
		for i, n := range l.OverlayUnmatched {
			names[i] = n + habilis.DidYouMean(l.OverlaySuggestions[n])
		}
		fmt.Fprintf(stdout, "--overlay names tools no server that answered has: %s\n", strings.Join(names, ", "))
	}
	fmt.Fprintf(stdout, "%s; their tools/list results hold %d bytes of JSON (about %d tokens), the gateway's own %d (about %d)\n",
		serversSummary(len(l.Tools), l.Servers), l.ListBytes, tokens(l.ListBytes), l.GatewayBytes, tokens(l.GatewayBytes))
	return nil
}

// tokens estimates the tokens of n bytes of JSON: a quarter, rounded up,
// as Prefilter estimates them.
func tokens(n int) int { return (n + 3) / 4 }

func runMCPSearch(ctx context.Context, o *mcpOptions, stdout io.Writer) error {
	if err := checkQuery("mcp search", o.query); err != nil {
		return err
	}
	gw, err := o.openGateway(ctx, true)
	if err != nil {
		return err
	}
	defer gw.Close()
	res, err := gw.Search(ctx, o.query, 0)
	if err != nil {
		return fmt.Errorf("mcp search: %w", err)
	}
	b, err := res.Encode()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", b)
	return err
}
