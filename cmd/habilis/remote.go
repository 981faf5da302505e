package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/api"
	"github.com/habilis-router/habilis/catalog"
	"github.com/habilis-router/habilis/selector"
)

// dialRemote connects to the habilis server at addr (see `habilis serve`):
// HOST:PORT, any gRPC target, or an http:// or https:// URL's HOST:PORT,
// https meaning TLS. The environment supplies what the server may ask for:
//
//	HABILIS_TOKEN       bearer token, or HABILIS_TOKEN_FILE, a file holding it
//	HABILIS_TLS_CA      CA certificate file (PEM): dial TLS, trusting it
//	HABILIS_TLS=1       dial TLS, trusting the system's CAs
func dialRemote(ctx context.Context, addr string, g *globalOptions) (*remoteBackend, error) {
	target, scheme, err := remoteTarget(addr)
	if err != nil {
		return nil, err
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
	if opts.TLS, err = remoteTLS(g); err != nil {
		return nil, err
	}
	switch {
	case scheme == "https" && opts.TLS == nil:
		opts.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	case scheme == "http" && opts.TLS != nil:
		return nil, usagef("--remote %q: http:// dials without TLS, but HABILIS_TLS or HABILIS_TLS_CA asks for it: use https://", addr)
	}
	c, err := api.Dial(ctx, target, opts)
	if err != nil {
		return nil, fmt.Errorf("remote %s: %w", target, err)
	}
	return &remoteBackend{c: c, addr: target, token: opts.Token != ""}, nil
}

// remoteTarget returns the gRPC target --remote names and the scheme of
// a URL ("" for none). Any gRPC target dials ("dns:///h:p", "unix:/path"),
// but a bare host without a port would fail only at the first call, as a
// resolver's "produced zero addresses", and grpc reads "http://h:p" as a
// host "http" with a default port, hence "too many colons in address".
func remoteTarget(addr string) (target, scheme string, err error) {
	const want = "want HOST:PORT of a habilis server"
	u, err := url.Parse(addr)
	if err != nil || (!strings.EqualFold(u.Scheme, "http") && !strings.EqualFold(u.Scheme, "https")) || !strings.Contains(addr, "://") {
		if !strings.Contains(addr, ":") {
			return "", "", usagef("--remote %q: %s", addr, want)
		}
		return addr, "", nil
	}
	if u.Port() == "" || u.Hostname() == "" || (u.Path != "" && u.Path != "/") || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", "", usagef("--remote %q: %s (http:// or https:// may come before it, with no path)", addr, want)
	}
	return u.Host, strings.ToLower(u.Scheme), nil
}

// remoteTLS returns the TLS configuration the environment asks for, or
// nil for none.
func remoteTLS(g *globalOptions) (*tls.Config, error) {
	if ca := g.getenv("HABILIS_TLS_CA"); ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("HABILIS_TLS_CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("HABILIS_TLS_CA %s: no PEM certificate found: %w", ca, habilis.ErrInvalid)
		}
		return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
	}
	if v := g.getenv("HABILIS_TLS"); v != "" && v != "0" && v != "false" {
		return &tls.Config{MinVersion: tls.VersionTLS12}, nil
	}
	return nil, nil
}

// remoteBackend is a habilis server as a backend. Its errors name the
// server and wrap the same sentinels a local router's do.
type remoteBackend struct {
	c    *api.Client
	addr string
	// token reports that a bearer token was sent.
	token bool
}

func (b *remoteBackend) wrap(err error) error {
	if err == nil {
		return nil
	}
	if status.Code(err) == codes.Unauthenticated {
		return &tokenError{addr: b.addr, sent: b.token, err: err}
	}
	return fmt.Errorf("remote %s: %w", b.addr, err)
}

// tokenError is a server refusing a call for its bearer token, none or
// the wrong one (sent). It tells a CLI user where the CLI reads the token
// from, where the server's own message tells any gRPC client which header
// to send.
type tokenError struct {
	addr string
	sent bool
	err  error
}

func (e *tokenError) Error() string {
	if e.sent {
		return fmt.Sprintf("remote %s refused the bearer token: set HABILIS_TOKEN, or the file HABILIS_TOKEN_FILE names, to what the server's --token-file holds", e.addr)
	}
	return fmt.Sprintf("remote %s wants a bearer token: set HABILIS_TOKEN to it, or HABILIS_TOKEN_FILE to a file holding it", e.addr)
}

func (e *tokenError) Unwrap() error { return e.err }

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
