package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/api"
	"github.com/habilis-router/habilis/catalog"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/eval"
	"github.com/habilis-router/habilis/fill/executor"
	"github.com/habilis-router/habilis/selector"
	"github.com/spf13/cobra"
)

// serveOptions are the flags of `habilis serve` and `habilis proxy`.
type serveOptions struct {
	g *globalOptions
	// cmd is the command's name, for messages.
	cmd         string
	addr        string
	httpAddr    string
	tools       string
	metricsAddr string
	tokenFile   string
	tlsCert     string
	tlsKey      string
	allow       []string
	// grace bounds how long a shutdown waits for calls in flight.
	grace time.Duration
	// readOnly opens the store read-only and refuses every write.
	readOnly bool
	// follow is how often the server checks its store for catalogs
	// other processes wrote; 0 never.
	follow time.Duration
	// upstream, k, minTools and failClosed configure the chat proxy on
	// the HTTP listener (api.ProxyOptions); no upstream, no proxy.
	upstream   string
	k          int
	minTools   int
	failClosed bool
	record     string
	// rec is the open --record file.
	rec *eval.Recorder
}

func (o *serveOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "127.0.0.1:50051", "address to serve gRPC on (port 0 picks a free one)")
	f.StringVar(&o.httpAddr, "http", "", "address to serve HTTP on: the JSON API, gRPC over HTTP/2, /metrics, and with --upstream the chat proxy (default: none)")
	f.StringVar(&o.metricsAddr, "metrics-addr", "", "address to serve Prometheus metrics on, at /metrics (default: none)")
	o.addServerFlags(cmd)
	o.addProxyFlags(cmd, "")
}

// addServerFlags registers the flags serve and proxy share.
func (o *serveOptions) addServerFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.tools, "tools", "", "catalog file to load at start; it becomes the whole catalog, as habilis load makes it")
	f.StringVar(&o.tokenFile, "token-file", "", "file holding the bearer token every call but health checks must carry (default: no authentication)")
	f.StringVar(&o.tlsCert, "tls-cert", "", "TLS certificate file (PEM); with --tls-key, serves TLS instead of plaintext")
	f.StringVar(&o.tlsKey, "tls-key", "", "TLS private key file (PEM)")
	f.StringSliceVar(&o.allow, "allow", nil, "executor kinds Invoke may run: http, command, mcp (default none)")
	f.DurationVar(&o.grace, "shutdown-timeout", 10*time.Second, "how long SIGTERM waits for calls in flight before cancelling them")
	f.BoolVar(&o.readOnly, "read-only", false, "open the store read-only (it must exist) and refuse every write (UpsertTools, DeleteTools) with FAILED_PRECONDITION: for a store baked into an image or mounted read-only")
	f.DurationVar(&o.follow, "follow-interval", selector.DefaultFollowInterval, "how often to check the store for a catalog other processes wrote (habilis load, other servers) and serve it; 0 never checks, and holds a bbolt store until the server stops")
}

// addProxyFlags registers the chat proxy's flags; the upstream's usage
// says when it is needed.
func (o *serveOptions) addProxyFlags(cmd *cobra.Command, upstreamNote string) {
	f := cmd.Flags()
	f.StringVar(&o.upstream, "upstream", "", "base URL of the OpenAI-compatible API to proxy chat requests to, ending in /v1"+upstreamNote)
	f.IntVarP(&o.k, "k", "k", selector.DefaultK, "how many tools a proxied chat request keeps, besides those its conversation needs")
	f.IntVar(&o.minTools, "min-tools", 0, "forward chat requests with fewer tools untouched (default: k+1)")
	f.BoolVar(&o.failClosed, "fail-closed", false, "when no tool fits, forward only the tools the conversation needs (default: the k best)")
	f.StringVar(&o.record, "record", "", "append each chat request's last user message and the function tool the answer called (streamed or not) to `FILE`, for habilis fit FILE (off by default: the messages are the users' requests)")
}

func newServeCmd(g *globalOptions) *cobra.Command {
	o := &serveOptions{g: g, cmd: "serve"}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the router over gRPC, and over HTTP with --http",
		Long: `Serve answers the habilis.v1.ToolRouter gRPC service (Select, SelectBatch,
Prefilter, ListTools, GetTool, UpsertTools, DeleteTools, Collisions, Fill,
Invoke) over the store, with the grpc.health.v1 health service (SERVING once a
catalog is loaded) and server reflection.

Every --follow-interval it reads the store's catalog version and, when another
process wrote the store (habilis load, another server over the same Qdrant),
serves the new catalog. While the store cannot be read it serves the catalog
it has, and the health service habilis.v1.Catalog turns NOT_SERVING. A bbolt
file is then held only during each read or write, so habilis load may write
it meanwhile; with --follow-interval 0 the server holds it until it stops
(query it meanwhile with --remote ADDR).

With --read-only it writes nothing to the store, which must exist (a catalog
baked into an image, a read-only mount): it opens the store read-only, and
refuses UpsertTools and DeleteTools, over gRPC and JSON alike, with
FAILED_PRECONDITION (reason READ_ONLY; HTTP 400, code failed_precondition).
It serves everything else as without it, following the store as it is
written elsewhere. --tools and --reindex, which write the store, are refused
with it. Without it, a store file that cannot be written is refused with an
error that says so.

With --http ADDR it also serves HTTP there: every method as JSON (POST
/habilis.v1.ToolRouter/METHOD with the request message as a JSON body, the
.proto's field names; errors are Connect's JSON errors), gRPC over HTTP/2,
/metrics, and with --upstream the chat proxy of ` + "`habilis proxy`" + ` (without it,
requests under /v1 are answered 404 in OpenAI's error shape, saying so).

It prints "listening on ADDR" once it accepts calls (and "http on URL" for
--http). SIGTERM or SIGINT stop it gracefully: health turns NOT_SERVING, new
calls are refused, calls in flight finish (up to --shutdown-timeout), and it
exits 0.

With --token-file, every call but health checks must carry the header
"authorization: Bearer TOKEN" (grpcurl -H 'authorization: Bearer TOKEN'), over
gRPC and JSON alike; the proxied OpenAI API is the upstream's to guard.
The CLI's --remote reads the token from HABILIS_TOKEN or HABILIS_TOKEN_FILE,
and dials TLS when HABILIS_TLS_CA (a CA file) or HABILIS_TLS=1 is set.

Prefilter requests and proxied chat requests may carry their own catalog
(OpenAI or MCP tools JSON, up to 2,000 tools and 4 MiB); it is indexed with the
lexical embedder, whatever --embedder says.

Invoke runs tools only of the executor kinds given with --allow (http, command,
mcp; none by default); other kinds answer with an error result. Executors see
only the environment variables their catalog entry names.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServe(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	o.addFlags(cmd)
	return cmd
}

func newProxyCmd(g *globalOptions) *cobra.Command {
	o := &serveOptions{g: g, cmd: "proxy"}
	cmd := &cobra.Command{
		Use:   "proxy --upstream URL",
		Short: "Serve an OpenAI-compatible API that cuts each chat request's tools to the k it needs",
		Long: `Proxy serves, at --listen, the OpenAI-compatible API of --upstream (its base URL,
ending in /v1): point a client's base URL at http://LISTEN/v1 instead. Every
request under /v1 is forwarded as it came, but for a chat completion request
(POST /v1/chat/completions) or a Responses API request (POST /v1/responses)
with tools: habilis chooses the k tools its last user message needs, with the
user message before it, and forwards the request with its function tools cut
to those (other tools, such as web_search or mcp, are kept). The answer, streamed or not, comes back as the
upstream sent it, errors included.

It never breaks a conversation: a tool named in tool_choice, or called earlier
in the conversation, is always kept; requests with fewer than --min-tools tools
go on untouched, and so does a request habilis cannot choose for (the reason is
logged). When no tool fits, the k best are forwarded all the same, unless
--fail-closed.

The tools are chosen from the catalog of the store (--store, --tools) when it
holds every function tool of the request, so that its examples count, and
otherwise from the request's own tools, indexed once and kept for the requests
that send the same list again.

Each answer to a chat request carries X-Habilis-Tools-Before and
X-Habilis-Tools-After (counts), X-Habilis-Selected (the forwarded tools' names,
comma-separated), X-Habilis-Tokens-Saved (an estimate) and X-Habilis-Outcome
(selected, ambiguous, abstained, few-tools, no-tools, error or too-large);
/metrics counts the same.

With --record FILE, when the answer's first choice calls one function tool of
the request that the catalog holds, the request's last message (a user's) and
that tool are appended to FILE as a labelled query ({"query", "expected":
[TOOL], "source": "proxy", "time"}), which habilis fit FILE learns from.
Streamed answers are read as their events pass, neither delayed nor changed.
Nothing is recorded without it: the messages are the users' requests.

The same listener serves habilis' own API: JSON at /habilis.v1.ToolRouter/METHOD
and gRPC over HTTP/2, so --remote LISTEN manages its catalog (load, tools rm),
unless --read-only (see habilis serve --help).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.upstream == "" {
				return usagef("proxy: --upstream is required: the base URL of the OpenAI-compatible API, e.g. http://127.0.0.1:11434/v1")
			}
			return runServe(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&o.httpAddr, "listen", "127.0.0.1:8080", "address to serve the proxy and the JSON API on (port 0 picks a free one)")
	o.addServerFlags(cmd)
	o.addProxyFlags(cmd, " (required)")
	return cmd
}

// serverOptions builds the server's options from the flags: the token and
// the TLS certificate come from files.
func (o *serveOptions) serverOptions() (api.ServerOptions, error) {
	opts := api.ServerOptions{Logger: o.g.logger, InlineEmbedder: lexical.New(lexical.Options{}), ReadOnly: o.readOnly}
	allowed, err := allowedKinds(o.allow)
	if err != nil {
		return opts, err
	}
	opts.Runner = executor.New(executor.Options{AllowedKinds: allowed, LookupEnv: o.g.lookupEnv})
	if o.tokenFile != "" {
		b, err := os.ReadFile(o.tokenFile)
		if err != nil {
			return opts, fmt.Errorf("--token-file: %w", err)
		}
		if opts.Token = strings.TrimSpace(string(b)); opts.Token == "" {
			return opts, fmt.Errorf("--token-file %s: the file is empty", o.tokenFile)
		}
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return opts, usagef("--tls-cert and --tls-key go together")
	}
	if o.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			return opts, fmt.Errorf("--tls-cert, --tls-key: %w", err)
		}
		opts.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	return opts, nil
}

func runServe(ctx context.Context, o *serveOptions, stdout io.Writer) error {
	if err := o.check(); err != nil {
		return err
	}
	opts, err := o.serverOptions()
	if err != nil {
		return err
	}
	// Parse first: a broken catalog never touches the store.
	var tools []habilis.Tool
	if o.tools != "" {
		if tools, err = catalog.Read(o.tools); err != nil {
			return fmt.Errorf("%s: --tools: %w", o.cmd, err) // its errors name the file
		}
	}
	o.g.serving = true
	r, closeRouter, err := openRouterAs(ctx, o.g, o.access())
	if err != nil {
		return fmt.Errorf("%s: %w", o.cmd, o.notWritable(err))
	}
	defer closeRouter()
	if tools != nil {
		rep, err := r.Load(ctx, tools, selector.LoadOptions{})
		if err != nil {
			return fmt.Errorf("%s: load %s: %w", o.cmd, o.tools, err)
		}
		o.g.logger.Info("catalog loaded", "file", o.tools, "tools", rep.Tools, "examples", rep.Examples,
			"embedded", rep.Embedded, "version", rep.Version, "duration", rep.Duration)
	}
	if o.record != "" {
		if o.rec, err = eval.OpenRecorder(o.record, o.g.logger); err != nil {
			return fmt.Errorf("%s: --%w", o.cmd, err)
		}
		defer o.rec.Close()
	}
	srv := api.NewServer(r, opts)
	ls, err := o.listen(srv, opts.TLS)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("%d tools, catalog version %d", len(r.Tools()), r.Version())
	if o.upstream != "" {
		what = "chat proxy to " + o.upstream + "; " + what
	}
	if o.follow > 0 {
		// Follow stops before the router and the store close.
		fctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			srv.Follow(fctx, selector.FollowOptions{Interval: o.follow})
		}()
		defer func() {
			stop()
			<-done
		}()
		what += fmt.Sprintf(", following the store every %v", o.follow)
	}
	return o.serve(ctx, srv, ls, what, stdout)
}

// access is how the server holds its store: following it, it holds a
// bbolt file only during each read or write.
func (o *serveOptions) access() storeAccess {
	switch {
	case o.readOnly && o.follow > 0:
		return accessReadShared
	case o.readOnly:
		return accessRead
	case o.follow > 0:
		return accessShared
	}
	return accessWrite
}

// notWritable adds to an error opening the store for writing, when the
// file or its directory cannot be written (a store baked into an image, a
// read-only mount, a file of another user), what serves it: --read-only,
// which needs the store to exist.
func (o *serveOptions) notWritable(err error) error {
	if o.readOnly || !(errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)) {
		return err
	}
	// The error names the file: boltstore's errors do.
	if _, serr := os.Stat(o.g.store); serr != nil {
		return fmt.Errorf("%w: the store cannot be created there: pass --store a path this process may write, or load the catalog elsewhere and serve the file with --read-only", err)
	}
	return fmt.Errorf("%w: the store cannot be written here: pass --read-only to serve it as it is, refusing writes", err)
}

// check refuses flags that do not go together.
func (o *serveOptions) check() error {
	if err := o.g.noRemote(o.cmd); err != nil {
		return err
	}
	if err := checkKFlag(o.k); err != nil {
		return err
	}
	switch {
	case o.grace <= 0:
		return usagef("--shutdown-timeout %v: want a positive duration", o.grace)
	case o.follow < 0:
		return usagef("--follow-interval %v: want a positive duration, or 0 never to check", o.follow)
	case o.upstream != "" && o.httpAddr == "":
		return usagef("--upstream needs --http: the chat proxy is served on the HTTP listener")
	case o.record != "" && o.upstream == "":
		return usagef("--record needs --upstream: it records what the chat proxy sees")
	case o.minTools < 0:
		return usagef("--min-tools %d: must not be negative", o.minTools)
	case o.readOnly && o.tools != "":
		return usagef("--read-only and --tools do not go together: --tools loads its catalog into the store, which --read-only never writes; load it beforehand (habilis load FILE)")
	case o.readOnly && o.g.reindex:
		return usagef("--read-only and --reindex do not go together: --reindex rewrites the store, which --read-only never writes; reindex it beforehand (habilis --reindex tools)")
	}
	return nil
}

// listeners are what serve accepts connections on; nil ones are off.
type listeners struct {
	grpc          net.Listener
	http, metrics *httpListener
}

// httpListener is an HTTP server with its listener.
type httpListener struct {
	lis net.Listener
	srv *http.Server
	tls bool
}

// listenHTTP listens on addr for h: HTTP/1.1 and HTTP/2, over TLS when
// tlsConf is set and in cleartext (h2c) otherwise, so that gRPC clients
// reach the same listener.
func listenHTTP(addr string, h http.Handler, tlsConf *tls.Config) (*httpListener, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, TLSConfig: tlsConf, Protocols: new(http.Protocols)}
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetHTTP2(true)
	srv.Protocols.SetUnencryptedHTTP2(tlsConf == nil)
	return &httpListener{lis: lis, srv: srv, tls: tlsConf != nil}, nil
}

// serve serves until the server is shut down; it returns nil then.
func (l *httpListener) serve() error {
	var err error
	if l.tls {
		err = l.srv.ServeTLS(l.lis, "", "")
	} else {
		err = l.srv.Serve(l.lis)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func (l *httpListener) url() string {
	if l.tls {
		return "https://" + l.lis.Addr().String()
	}
	return "http://" + l.lis.Addr().String()
}

// each calls f for each HTTP listener.
func (ls *listeners) each(f func(*httpListener)) {
	for _, l := range []*httpListener{ls.http, ls.metrics} {
		if l != nil {
			f(l)
		}
	}
}

// close closes listeners that never served.
func (ls *listeners) close() {
	if ls.grpc != nil {
		ls.grpc.Close()
	}
	ls.each(func(l *httpListener) { l.lis.Close() })
}

// listen opens the listeners the flags ask for.
func (o *serveOptions) listen(srv *api.Server, tlsConf *tls.Config) (*listeners, error) {
	ls := &listeners{}
	var err error
	if o.addr != "" {
		if ls.grpc, err = net.Listen("tcp", o.addr); err != nil {
			return nil, listenError(o.cmd, "--addr", err)
		}
	}
	if o.httpAddr != "" {
		h, err := o.httpHandler(srv)
		if err != nil {
			ls.close()
			return nil, err
		}
		if ls.http, err = listenHTTP(o.httpAddr, h, tlsConf); err != nil {
			ls.close()
			return nil, listenError(o.cmd, o.httpFlag(), err)
		}
	}
	if o.metricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", srv.MetricsHandler())
		if ls.metrics, err = listenHTTP(o.metricsAddr, mux, nil); err != nil {
			ls.close()
			return nil, listenError(o.cmd, "--metrics-addr", err)
		}
	}
	return ls, nil
}

// httpFlag names the flag that gives the HTTP listener's address.
func (o *serveOptions) httpFlag() string {
	if o.cmd == "proxy" {
		return "--listen"
	}
	return "--http"
}

// listenError names the flag whose address could not be listened on, and
// what to do when another process holds it (net's error names the address).
func listenError(cmd, flag string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%s: %s: %w: another process serves there; stop it or give another address", cmd, flag, err)
	}
	return fmt.Errorf("%s: %s: %w", cmd, flag, err)
}

// httpHandler is what the HTTP listener serves: the server's services
// (JSON and gRPC), /metrics, and the chat proxy under /v1/.
func (o *serveOptions) httpHandler(srv *api.Server) (http.Handler, error) {
	services, err := srv.HTTPHandler()
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/", services)
	mux.Handle("/metrics", srv.MetricsHandler())
	// Without --upstream, /v1/ says how to get a proxy, in the shape of
	// the errors OpenAI's clients read.
	v1 := api.NoProxy()
	if o.upstream != "" {
		if v1, err = api.NewProxy(srv, api.ProxyOptions{Upstream: o.upstream, K: o.k, MinTools: o.minTools, FailClosed: o.failClosed, Record: o.rec}); err != nil {
			return nil, &usageError{err: fmt.Errorf("--%w", err)} // it names the upstream: --upstream "URL": ...
		}
		o.warnBareUpstream()
		api.HandleWithoutV1(mux)
	}
	mux.Handle("/v1/", v1)
	return mux, nil
}

// warnBareUpstream warns of an --upstream without a path, such as
// Ollama's http://127.0.0.1:11434: the proxy forwards /v1/PATH to
// UPSTREAM/PATH, where an OpenAI-compatible server answers 404. It serves
// as told all the same, since some base URLs end otherwise.
func (o *serveOptions) warnBareUpstream() {
	u, err := url.Parse(o.upstream)
	if err != nil || strings.Trim(u.Path, "/") != "" {
		return
	}
	base := strings.TrimSuffix(o.upstream, "/")
	o.g.logger.Warn(fmt.Sprintf("--upstream %s has no path: chat requests go to %s/chat/completions; "+
		"an OpenAI-compatible API's base URL usually ends in /v1 (%s/v1)", o.upstream, base, base))
}

// serve serves on ls until ctx ends, then shuts down gracefully. The line
// "listening on ADDR (what)" says it accepts calls: ADDR is the gRPC
// listener's, or the HTTP one's without it.
func (o *serveOptions) serve(ctx context.Context, srv *api.Server, ls *listeners, what string, stdout io.Writer) error {
	served := make(chan error, 2)
	running := 0
	start := func(serve func() error) {
		running++
		go func() { served <- serve() }()
	}
	if ls.metrics != nil {
		go func() {
			if err := ls.metrics.serve(); err != nil {
				o.g.logger.Warn("metrics listener stopped", "error", err)
			}
		}()
		fmt.Fprintf(stdout, "metrics on %s/metrics\n", ls.metrics.url())
	}
	var addr string
	if ls.http != nil {
		start(ls.http.serve)
		addr = ls.http.lis.Addr().String()
		if ls.grpc != nil {
			fmt.Fprintf(stdout, "http on %s\n", ls.http.url())
		}
	}
	if ls.grpc != nil {
		start(func() error { return srv.Serve(ls.grpc) })
		addr = ls.grpc.Addr().String()
	}
	fmt.Fprintf(stdout, "listening on %s (%s)\n", addr, what)

	select {
	case err := <-served:
		// A listener failed: stop the others at once.
		srv.Stop()
		ls.each(func(l *httpListener) { l.srv.Close() })
		return fmt.Errorf("%s: %w", o.cmd, err)
	case <-ctx.Done():
	}
	o.g.logger.Info("shutting down", "grace", o.grace)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.grace)
	defer cancel()
	// HTTP first: stopping the gRPC server closes the calls that came over
	// HTTP, which the HTTP servers' shutdown lets finish.
	var stopErr error
	ls.each(func(l *httpListener) { stopErr = errors.Join(stopErr, l.srv.Shutdown(sctx)) })
	stopErr = errors.Join(stopErr, srv.Shutdown(sctx))
	for range running {
		if err := <-served; err != nil {
			return fmt.Errorf("%s: %w", o.cmd, err)
		}
	}
	if stopErr != nil {
		return fmt.Errorf("%s: calls still running after --shutdown-timeout %v were cancelled: %w", o.cmd, o.grace, stopErr)
	}
	fmt.Fprintln(stdout, "stopped")
	return nil
}
