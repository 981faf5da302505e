package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/api"
	"github.com/habilis-router/habilis/catalog"
	"github.com/habilis-router/habilis/selector"
)

// dialRemote connects to the habilis server at addr (see `habilis serve`).
// The environment supplies what the server may ask for:
//
//	HABILIS_TOKEN       bearer token, or HABILIS_TOKEN_FILE, a file holding it
//	HABILIS_TLS_CA      CA certificate file (PEM): dial TLS, trusting it
//	HABILIS_TLS=1       dial TLS, trusting the system's CAs
func dialRemote(ctx context.Context, addr string, g *globalOptions) (*remoteBackend, error) {
	// Any gRPC target dials ("dns:///h:p", "unix:/path"); a bare one
	// without a port would fail only at the first call, as a resolver's
	// "produced zero addresses".
	if !strings.Contains(addr, ":") {
		return nil, usagef("--remote %q: want HOST:PORT of a habilis server", addr)
	}
	var opts api.DialOptions
	opts.Token = g.getenv("HABILIS_TOKEN")
	if f := g.getenv("HABILIS_TOKEN_FILE"); f != "" && opts.Token == "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("HABILIS_TOKEN_FILE: %w", err)
		}
		opts.Token = strings.TrimSpace(string(b))
	}
	if ca := g.getenv("HABILIS_TLS_CA"); ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("HABILIS_TLS_CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("HABILIS_TLS_CA %s: no PEM certificate found: %w", ca, habilis.ErrInvalid)
		}
		opts.TLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	} else if v := g.getenv("HABILIS_TLS"); v != "" && v != "0" && v != "false" {
		opts.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	c, err := api.Dial(ctx, addr, opts)
	if err != nil {
		return nil, fmt.Errorf("remote %s: %w", addr, err)
	}
	return &remoteBackend{c: c, addr: addr}, nil
}

// remoteBackend is a habilis server as a backend. Its errors name the
// server and wrap the same sentinels a local router's do.
type remoteBackend struct {
	c    *api.Client
	addr string
}

func (b *remoteBackend) wrap(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("remote %s: %w", b.addr, err)
}

func (b *remoteBackend) Select(ctx context.Context, query string, opts habilis.SelectOptions) (*habilis.Decision, error) {
	d, err := b.c.Select(ctx, query, opts)
	return d, b.wrap(err)
}

func (b *remoteBackend) Tools(ctx context.Context) ([]habilis.Tool, error) {
	tools, err := b.c.Tools(ctx)
	return tools, b.wrap(err)
}

func (b *remoteBackend) Tool(ctx context.Context, name string) (*selector.ToolInfo, error) {
	ti, err := b.c.Tool(ctx, name)
	return ti, b.wrap(err)
}

func (b *remoteBackend) DeleteTools(ctx context.Context, names []string) (*selector.LoadReport, error) {
	rep, err := b.c.DeleteTools(ctx, names)
	return rep, b.wrap(err)
}

func (b *remoteBackend) Collisions(ctx context.Context, threshold float32) ([]habilis.Collision, error) {
	cols, err := b.c.Collisions(ctx, threshold)
	return cols, b.wrap(err)
}

func (b *remoteBackend) Close() error { return b.c.Close() }

// runLoadRemote is `habilis load --remote`: the catalog is read and
// checked here first, so that a broken file is refused with its problems
// named as a local load names them and never reaches the server, then
// written by the server in one call: a file as it is (UpsertTools with
// catalog_json, which the server parses by the same rules), MCP servers'
// tools as Tool messages.
func runLoadRemote(ctx context.Context, o *loadOptions, stdout io.Writer) error {
	var (
		data  []byte
		tools []habilis.Tool
		err   error
	)
	if o.file != "" {
		if data, err = os.ReadFile(o.file); err == nil {
			_, err = catalog.Parse(o.file, data)
		}
	} else {
		tools, err = o.readTools(ctx)
	}
	if err != nil {
		return parseError(o.file, err)
	}
	b, err := dialRemote(ctx, o.g.remote, o.g)
	if err != nil {
		return err
	}
	defer b.Close()
	opts := api.UpsertOptions{Replace: !o.merge}
	var rep *selector.LoadReport
	if data != nil {
		rep, err = b.c.UpsertCatalog(ctx, data, opts)
	} else {
		rep, err = b.c.UpsertTools(ctx, tools, opts)
	}
	if err != nil {
		return fmt.Errorf("load %s: %w", o.file, b.wrap(err))
	}
	if o.g.json {
		return writeJSON(stdout, nonNilReport(rep))
	}
	printLoadReport(stdout, o.file, rep, nil)
	return nil
}
