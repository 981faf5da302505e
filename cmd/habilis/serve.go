package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/api"
	"github.com/habilis-router/habilis/catalog"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/fill/executor"
	"github.com/habilis-router/habilis/selector"
	"github.com/spf13/cobra"
)

// serveOptions are the flags of `habilis serve`.
type serveOptions struct {
	g           *globalOptions
	addr        string
	tools       string
	metricsAddr string
	tokenFile   string
	tlsCert     string
	tlsKey      string
	allow       []string
	// grace bounds how long a shutdown waits for calls in flight.
	grace time.Duration
}

func (o *serveOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "127.0.0.1:50051", "address to serve gRPC on (port 0 picks a free one)")
	f.StringVar(&o.tools, "tools", "", "catalog file to load at start; it becomes the whole catalog, as with `habilis load`")
	f.StringVar(&o.metricsAddr, "metrics-addr", "", "address to serve Prometheus metrics on, at /metrics (default: none)")
	f.StringVar(&o.tokenFile, "token-file", "", "file holding the bearer token every call but health checks must carry (default: no authentication)")
	f.StringVar(&o.tlsCert, "tls-cert", "", "TLS certificate file (PEM); with --tls-key, serves TLS instead of plaintext")
	f.StringVar(&o.tlsKey, "tls-key", "", "TLS private key file (PEM)")
	f.StringSliceVar(&o.allow, "allow", nil, "executor kinds Invoke may run: http, command, mcp (default none)")
	f.DurationVar(&o.grace, "shutdown-timeout", 10*time.Second, "how long SIGTERM waits for calls in flight before cancelling them")
}

func newServeCmd(g *globalOptions) *cobra.Command {
	o := &serveOptions{g: g}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the router over gRPC",
		Long: `Serve answers the habilis.v1.ToolRouter gRPC service (Select, SelectBatch,
Prefilter, ListTools, GetTool, UpsertTools, DeleteTools, Collisions, Fill,
Invoke) over the
store, with the grpc.health.v1 health service (SERVING once a catalog is loaded)
and server reflection. It holds the store until it stops: query it meanwhile
with --remote ADDR.

It prints "listening on ADDR" once it accepts calls. SIGTERM or SIGINT stop it
gracefully: health turns NOT_SERVING, new calls are refused, calls in flight
finish (up to --shutdown-timeout), and it exits 0.

With --token-file, every call but health checks must carry the header
"authorization: Bearer TOKEN" (grpcurl -H 'authorization: Bearer TOKEN').
The CLI's --remote reads the token from HABILIS_TOKEN or HABILIS_TOKEN_FILE,
and dials TLS when HABILIS_TLS_CA (a CA file) or HABILIS_TLS=1 is set.

Prefilter requests may carry their own catalog (OpenAI or MCP tools JSON, up to
2,000 tools and 4 MiB); it is indexed with the lexical embedder, whatever
--embedder says.

Invoke runs tools only of the executor kinds given with --allow (http, command,
mcp; none by default); other kinds answer with an error result. Executors see
only the environment variables their catalog entry names.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServe(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	o.addFlags(cmd)
	return cmd
}

// serverOptions builds the server's options from the flags: the token and
// the TLS certificate come from files.
func (o *serveOptions) serverOptions() (api.ServerOptions, error) {
	opts := api.ServerOptions{Logger: o.g.logger, InlineEmbedder: lexical.New(lexical.Options{})}
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
	if err := o.g.noRemote("serve"); err != nil {
		return err
	}
	if o.grace <= 0 {
		return usagef("--shutdown-timeout %v: want a positive duration", o.grace)
	}
	opts, err := o.serverOptions()
	if err != nil {
		return err
	}
	// Parse first: a broken catalog never touches the store.
	var tools []habilis.Tool
	if o.tools != "" {
		if tools, err = catalog.Read(o.tools); err != nil {
			return fmt.Errorf("serve: --tools %s: %w", o.tools, err)
		}
	}
	r, closeRouter, err := openRouter(ctx, o.g, true)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer closeRouter()
	if tools != nil {
		rep, err := r.Load(ctx, tools, selector.LoadOptions{})
		if err != nil {
			return fmt.Errorf("serve: load %s: %w", o.tools, err)
		}
		o.g.logger.Info("catalog loaded", "file", o.tools, "tools", rep.Tools, "examples", rep.Examples,
			"embedded", rep.Embedded, "version", rep.Version, "duration", rep.Duration)
	}

	srv := api.NewServer(r, opts)
	lis, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	var metrics *http.Server
	if o.metricsAddr != "" {
		mlis, err := net.Listen("tcp", o.metricsAddr)
		if err != nil {
			lis.Close()
			return fmt.Errorf("serve: --metrics-addr: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", srv.MetricsHandler())
		metrics = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := metrics.Serve(mlis); err != nil && !errors.Is(err, http.ErrServerClosed) {
				o.g.logger.Warn("metrics listener stopped", "error", err)
			}
		}()
		fmt.Fprintf(stdout, "metrics on http://%s/metrics\n", mlis.Addr())
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	fmt.Fprintf(stdout, "listening on %s (%d tools, catalog version %d)\n", lis.Addr(), len(r.Tools()), r.Version())

	select {
	case err := <-served:
		// The listener failed: nothing to drain.
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	o.g.logger.Info("shutting down", "grace", o.grace)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.grace)
	defer cancel()
	stopErr := srv.Shutdown(sctx)
	if metrics != nil {
		metrics.Shutdown(sctx)
	}
	if err := <-served; err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if stopErr != nil {
		return fmt.Errorf("serve: calls still running after --shutdown-timeout %v were cancelled: %w", o.grace, stopErr)
	}
	fmt.Fprintln(stdout, "stopped")
	return nil
}
