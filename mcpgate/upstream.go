package mcpgate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/habilis-router/habilis/internal/httpclient"
)

// Statuses of an upstream.
const (
	// StatusReady is a connected server whose tools are indexed.
	StatusReady = "ready"
	// StatusDown is a server that failed to start or has gone away; its
	// tools are out of the index and calls to them fail with the reason.
	StatusDown = "down"
	// StatusStarting is a server that has not answered yet; its tools
	// join the index when it does.
	StatusStarting = "starting"
)

// Limits on what an upstream may send while listing its tools, so that a
// server that pages forever cannot hold the gateway.
const (
	maxPages    = 1000
	maxToolsOne = 10000
)

// upstream is one server the gateway is a client of. Its session, status
// and tools change under mu; the gateway reads them when it rebuilds its
// catalog.
type upstream struct {
	cfg    Server
	opts   *Options
	logger *slog.Logger
	stderr *tailWriter
	// changed receives a signal when the server says its tools changed;
	// one pending signal is enough to list them again.
	changed chan struct{}

	mu      sync.Mutex
	session *mcp.ClientSession
	status  string
	reason  string
	tools   []*mcp.Tool
	// known are the names of the tools last listed, kept when the server
	// goes down so that a call to one says where it went.
	known []string
	// restart is the wait before a down server is started again, 0 when
	// it will not be.
	restart time.Duration
	// inFirst reports that the server had started, or failed to, when the
	// gateway built its first index.
	inFirst atomic.Bool
	// quietDown leaves a failure out of the log, for List, whose caller
	// reports it from the Listing: logging it too would say it twice.
	quietDown bool
}

func newUpstream(cfg Server, opts *Options) *upstream {
	logger := opts.Logger.With("server", cfg.Name)
	return &upstream{
		cfg:     cfg,
		opts:    opts,
		logger:  logger,
		stderr:  &tailWriter{logger: logger},
		changed: make(chan struct{}, 1),
		status:  StatusStarting,
		reason:  "starting: it has not answered yet",
	}
}

// snapshot returns the upstream's status, reason and tools as of now.
func (u *upstream) snapshot() (status, reason string, tools []*mcp.Tool, session *mcp.ClientSession) {
	u.mu.Lock()
	defer u.mu.Unlock()
	reason = u.reason
	if u.status == StatusDown && u.restart > 0 {
		reason += fmt.Sprintf("; starting it again in %s", u.restart)
	}
	return u.status, reason, u.tools, u.session
}

// down records that the upstream is unusable and why.
func (u *upstream) down(reason string) {
	u.setDown(reason)
	if !u.quietDown {
		u.logger.Warn("mcp server unavailable", "reason", reason)
	}
}

// setDown marks the upstream down for reason, unlogged.
func (u *upstream) setDown(reason string) {
	u.mu.Lock()
	u.status, u.reason, u.tools, u.restart = StatusDown, reason, nil, 0
	u.mu.Unlock()
}

// failed records a failure to start and returns it; a start the gateway's
// closing (ctx) cut short is no failure of the server's, and goes unlogged.
func (u *upstream) failed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		u.setDown(err.Error())
	} else {
		u.down(err.Error())
	}
	return err
}

// restartIn records when a down upstream will be started again, which
// its reason then says.
func (u *upstream) restartIn(d time.Duration) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.status == StatusDown {
		u.restart = d
	}
}

// setTools records a listing; the caller holds mu.
func (u *upstream) setTools(tools []*mcp.Tool) {
	u.tools = tools
	u.known = make([]string, len(tools))
	for i, t := range tools {
		u.known[i] = t.Name
	}
}

// lostTools returns the names of the tools last listed.
func (u *upstream) lostTools() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.known
}

// start connects to the server and lists its tools, within the connect
// timeout. On failure the upstream is down with the reason.
func (u *upstream) start(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, u.opts.connectTimeout())
	defer cancel()
	t, exit, err := u.transport()
	if err != nil {
		u.down(err.Error())
		return err
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "habilis", Version: u.opts.version()}, &mcp.ClientOptions{
		Logger: u.logger,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			// The handler runs on the session's reading path: listing here
			// would wait for an answer that path has to read. Signal instead.
			select {
			case u.changed <- struct{}{}:
			default:
			}
		},
	})
	cs, err := client.Connect(cctx, t, nil)
	if err != nil {
		return u.failed(ctx, u.explain(cctx, "connect", err, exit))
	}
	tools, err := listTools(cctx, cs)
	if err != nil {
		cs.Close()
		return u.failed(ctx, u.explain(cctx, "tools/list", err, exit))
	}
	u.mu.Lock()
	u.session, u.status, u.reason, u.restart = cs, StatusReady, "", 0
	u.setTools(tools)
	u.mu.Unlock()
	u.logger.Info("mcp server ready", "tools", len(tools))
	return nil
}

// explain words a failure to connect or list: a timeout says how long it
// waited, a stdio server that exited says how (exit says, once its session
// has closed), an HTTP server's error names its URL, and a stdio server's
// last words on stderr say why it stopped.
func (u *upstream) explain(ctx context.Context, op string, err error, exit *exitWatch) error {
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		err = fmt.Errorf("no answer within %s", u.opts.connectTimeout())
	case exit.exited() != nil && exit.exited().Exited():
		// Exited of itself, with a status: a process the transport
		// stopped after the failure (SIGTERM) says nothing of its cause.
		err = fmt.Errorf("the server exited (%s) before it answered", exit.exited().ProcessState)
	case exit.garbled():
		err = fmt.Errorf("the server wrote something other than JSON-RPC on stdout (a log line belongs on stderr): %w", err)
	}
	if u.cfg.Transport != TransportStdio {
		op += " to " + u.cfg.URL
	}
	if tail := u.stderr.last(); tail != "" {
		return fmt.Errorf("%s: %v; stderr: %s", op, err, tail)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// exitWatch keeps what a stdio server's connection saw of its process:
// how it exited, which the SDK learns when it closes the session and keeps
// to itself when that happens inside Connect, and whether it wrote
// something that is not JSON, which the SDK reports as a bare syntax error.
type exitWatch struct {
	mu  sync.Mutex
	err *exec.ExitError
	// notJSON is set when the server wrote a line that is not JSON.
	notJSON bool
}

// garbled reports that the server wrote something that is not JSON on
// stdout, which the SDK reports as a bare JSON syntax error.
func (w *exitWatch) garbled() bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.notJSON
}

// exited returns how the process exited, nil while it has not been seen
// to (or for a server that is not a process).
func (w *exitWatch) exited() *exec.ExitError {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// watchExit wraps a command transport so that its connection records in
// w how the process exited and whether it wrote something not JSON.
type watchExit struct {
	mcp.Transport
	w *exitWatch
}

func (t watchExit) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return exitConn{Connection: c, w: t.w}, nil
}

// exitConn is a command transport's connection whose Close, which waits
// for the process, records how it exited, and whose Read records a line
// that is not JSON.
type exitConn struct {
	mcp.Connection
	w *exitWatch
}

func (c exitConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if errors.As(err, new(*json.SyntaxError)) {
		c.w.mu.Lock()
		c.w.notJSON = true
		c.w.mu.Unlock()
	}
	return msg, err
}

func (c exitConn) Close() error {
	err := c.Connection.Close()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		c.w.mu.Lock()
		if c.w.err == nil {
			c.w.err = ee
		}
		c.w.mu.Unlock()
	}
	return err
}

// transport returns how to reach the server, and for a stdio server
// where to learn how its process exited.
func (u *upstream) transport() (mcp.Transport, *exitWatch, error) {
	if u.opts.Transport != nil {
		if t, err := u.opts.Transport(u.cfg); t != nil || err != nil {
			return t, nil, err
		}
	}
	switch u.cfg.Transport {
	case TransportStdio:
		cmd := exec.Command(u.cfg.Command, u.cfg.Args...)
		cmd.Env = slices.Clone(u.opts.Environ)
		for _, k := range slices.Sorted(maps.Keys(u.cfg.Env)) {
			cmd.Env = append(cmd.Env, k+"="+u.cfg.Env[k])
		}
		cmd.Dir = u.cfg.Dir
		// stderr is the server's log, never the protocol: it goes to the
		// gateway's log, and its last lines explain a failure.
		cmd.Stderr = u.stderr
		cmd.WaitDelay = 2 * time.Second
		w := &exitWatch{}
		return watchExit{&mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, w}, w, nil
	case TransportHTTP:
		return &mcp.StreamableClientTransport{Endpoint: u.cfg.URL, HTTPClient: u.httpClient()}, nil, nil
	case TransportSSE:
		return &mcp.SSEClientTransport{Endpoint: u.cfg.URL, HTTPClient: u.httpClient()}, nil, nil
	}
	return nil, nil, fmt.Errorf("transport %q: want stdio, http or sse", u.cfg.Transport)
}

// httpClient returns the HTTP client for the server, sending its headers.
func (u *upstream) httpClient() *http.Client {
	base := u.opts.HTTPClient
	if base == nil {
		base = &http.Client{}
	}
	if len(u.cfg.Headers) == 0 {
		return base
	}
	h := http.Header{}
	for k, v := range u.cfg.Headers {
		h.Set(k, v)
	}
	return httpclient.WithHeaders(base, h)
}

// listTools pages through tools/list. A cursor seen twice, more than
// maxPages pages or more than maxToolsOne tools end the listing with an
// error rather than looping.
func listTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	var tools []*mcp.Tool
	seen := map[string]bool{}
	params := &mcp.ListToolsParams{}
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, fmt.Errorf("more than %d pages of tools", maxPages)
		}
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return nil, err
		}
		for _, t := range res.Tools {
			if t != nil {
				tools = append(tools, t)
			}
		}
		if len(tools) > maxToolsOne {
			return nil, fmt.Errorf("more than %d tools", maxToolsOne)
		}
		if res.NextCursor == "" {
			return tools, nil
		}
		if seen[res.NextCursor] {
			return nil, fmt.Errorf("cursor %q came twice", res.NextCursor)
		}
		seen[res.NextCursor] = true
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
}

// watch follows a ready upstream until ctx ends: it lists the tools again
// when the server says they changed, and marks the upstream down when the
// connection ends. changed is called after either, for the gateway to
// rebuild its catalog.
func (u *upstream) watch(ctx context.Context, changed func()) {
	_, _, _, cs := u.snapshot()
	if cs == nil {
		return
	}
	ended := make(chan error, 1)
	go func() { ended <- cs.Wait() }()
	for {
		select {
		case <-ctx.Done():
			return
		case err := <-ended:
			u.down(u.endReason(cs, err))
			changed()
			return
		case <-u.changed:
			if u.relist(ctx, cs) {
				changed()
			}
		}
	}
}

// relist lists the tools again after a list_changed notification and
// reports whether they were replaced. A failed listing keeps the tools
// the gateway had: if the connection is gone, watch hears of it next.
func (u *upstream) relist(ctx context.Context, cs *mcp.ClientSession) bool {
	lctx, cancel := context.WithTimeout(ctx, u.opts.connectTimeout())
	defer cancel()
	tools, err := listTools(lctx, cs)
	if err != nil {
		if ctx.Err() != nil {
			return false // the gateway is closing
		}
		u.logger.Warn("mcp server: listing changed tools failed; keeping the previous list", "error", err)
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.status != StatusReady || u.session != cs {
		return false
	}
	u.setTools(tools)
	u.logger.Info("mcp server tools changed; listed again", "tools", len(tools))
	return true
}

// endReason says why a session ended: how the process exited, and what it
// last wrote on stderr.
func (u *upstream) endReason(cs *mcp.ClientSession, waitErr error) string {
	reason := "the server closed the connection"
	closeErr := cs.Close()
	var ee *exec.ExitError
	switch {
	case errors.As(closeErr, &ee):
		reason = "the server exited (" + ee.ProcessState.String() + ")"
	case waitErr != nil && !errors.Is(waitErr, mcp.ErrConnectionClosed):
		reason += ": " + waitErr.Error()
	}
	if tail := u.stderr.last(); tail != "" {
		reason += "; stderr: " + tail
	}
	return reason
}

// close ends the session, stopping a stdio server.
func (u *upstream) close() {
	u.mu.Lock()
	cs := u.session
	u.mu.Unlock()
	if cs != nil {
		cs.Close()
	}
}

// tailWriter sends a stdio server's stderr to the log, a line at a time,
// and keeps the last lines to explain a failure.
type tailWriter struct {
	logger *slog.Logger

	mu      sync.Mutex
	partial []byte
	lines   []string
}

// tailLines is how many stderr lines a failure's reason quotes.
const tailLines = 3

// maxLine bounds a stderr line kept or logged, so that a server writing
// without newlines cannot grow the buffer.
const maxLine = 4096

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.line(string(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
	if len(w.partial) > maxLine {
		w.line(string(w.partial))
		w.partial = w.partial[:0]
	}
	return len(p), nil
}

func (w *tailWriter) line(s string) {
	s = strings.TrimRight(s, "\r")
	if len(s) > maxLine {
		s = s[:maxLine]
	}
	if strings.TrimSpace(s) == "" {
		return
	}
	w.logger.Info("mcp server stderr", "line", s)
	w.lines = append(w.lines, s)
	if len(w.lines) > tailLines {
		w.lines = w.lines[len(w.lines)-tailLines:]
	}
}

// last returns the last stderr lines, joined by " | ".
func (w *tailWriter) last() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.lines, " | ")
}
