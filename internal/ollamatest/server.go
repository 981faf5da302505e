// Package ollamatest gives tests a real Ollama server and tiny models that
// the tests write themselves, so code that talks to Ollama is tested against
// the real thing without downloading any weights.
//
// Tests find a server through the environment:
//
//   - HABILIS_OLLAMA_HOST (e.g. http://127.0.0.1:11434) names a running
//     server to use;
//   - otherwise HABILIS_OLLAMA_BIN names an ollama binary that Server starts
//     on a free loopback port with empty model and home directories
//     (bash .ci/build-ollama.sh builds one and prints its path);
//   - otherwise the test is skipped, saying how to run it.
//
// A package whose tests share one server calls Main from its TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(ollamatest.Main(m)) }
package ollamatest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
)

// SkipMessage says how to run the tests that need a real Ollama.
const SkipMessage = "no Ollama server: set HABILIS_OLLAMA_BIN (bash .ci/build-ollama.sh builds it) or HABILIS_OLLAMA_HOST"

// startTimeout bounds how long a starting server may take to answer
// /api/version; it answers within about 70 ms when healthy.
const startTimeout = 60 * time.Second

// Instance is a running Ollama server.
type Instance struct {
	// Host is the server's base URL, e.g. "http://127.0.0.1:40123".
	Host string
	// Client talks to the server.
	Client *api.Client

	cmd  *exec.Cmd
	dir  string
	log  *os.File
	done chan struct{}
}

// shared is the server of the test binary when its TestMain calls Main. It
// is package state because one test binary has exactly one TestMain, and
// sharing the server across its tests saves a start and a model load per test.
var shared struct {
	active bool
	once   sync.Once
	inst   *Instance
	err    error
	skip   string
}

// Main runs m's tests with one server shared by every Server call, started
// on first use, and stops it when they are done. It returns m.Run's code.
func Main(m *testing.M) int {
	shared.active = true
	code := m.Run()
	if shared.inst != nil {
		if err := shared.inst.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "ollamatest: %v\n", err)
		}
	}
	return code
}

// Server returns a running Ollama server, or skips tb when none is
// configured. Under Main every call returns the same server; otherwise each
// call starts one that stops when tb's test ends.
func Server(tb testing.TB) *Instance {
	tb.Helper()
	if host := os.Getenv("HABILIS_OLLAMA_HOST"); host != "" {
		inst, err := Connect(host)
		if err != nil {
			tb.Fatalf("HABILIS_OLLAMA_HOST=%q: %v", host, err)
		}
		return inst
	}
	bin := os.Getenv("HABILIS_OLLAMA_BIN")
	if bin == "" {
		tb.Skip(SkipMessage)
	}
	if shared.active {
		shared.once.Do(func() { shared.inst, shared.err = Start(bin) })
		if shared.err != nil {
			tb.Fatalf("start ollama: %v", shared.err)
		}
		return shared.inst
	}
	inst, err := Start(bin)
	if err != nil {
		tb.Fatalf("start ollama: %v", err)
	}
	tb.Cleanup(func() {
		if err := inst.Stop(); err != nil {
			tb.Errorf("stop ollama: %v", err)
		}
	})
	return inst
}

// Connect returns an Instance for a server already running at host, after
// checking that it answers.
func Connect(host string) (*Instance, error) {
	u, err := url.Parse(host)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("host %q: want a URL like http://127.0.0.1:11434", host)
	}
	inst := &Instance{Host: strings.TrimSuffix(u.String(), "/"), Client: api.NewClient(u, http.DefaultClient)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := inst.Client.Version(ctx); err != nil {
		return nil, fmt.Errorf("%s does not answer: %w", host, err)
	}
	return inst, nil
}

// Start runs "bin serve" on a free 127.0.0.1 port with fresh model and home
// directories, and returns once it answers /api/version. Stop ends it.
func Start(bin string) (*Instance, error) {
	var err error
	// A free port found by listening can be taken by someone else before
	// the server binds it; a few attempts make that harmless.
	for range 3 {
		var inst *Instance
		inst, err = start(bin)
		if err == nil {
			return inst, nil
		}
	}
	return nil, err
}

func start(bin string) (*Instance, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "habilis-ollama-")
	if err != nil {
		return nil, err
	}
	models, home := filepath.Join(dir, "models"), filepath.Join(dir, "home")
	for _, d := range []string{models, home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	log, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(environ(),
		"OLLAMA_HOST="+addr,
		"OLLAMA_MODELS="+models,
		"HOME="+home,
		"OLLAMA_NO_CLOUD=1",
	)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	u := &url.URL{Scheme: "http", Host: addr}
	inst := &Instance{
		Host:   u.String(),
		Client: api.NewClient(u, http.DefaultClient),
		cmd:    cmd,
		dir:    dir,
		log:    log,
		done:   make(chan struct{}),
	}
	go func() {
		cmd.Wait()
		close(inst.done)
	}()
	if err := inst.wait(); err != nil {
		tail := inst.logTail()
		inst.Stop()
		return nil, fmt.Errorf("%s serve on %s: %w\n%s", bin, addr, err, tail)
	}
	return inst, nil
}

// wait polls /api/version until the server answers, exits or startTimeout
// passes.
func (s *Instance) wait() error {
	deadline := time.Now().Add(startTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := s.Client.Version(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer within %v: %w", startTimeout, err)
		}
		select {
		case <-s.done:
			return errors.New("server exited")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Stop interrupts a server that Start started, as Ctrl-C would so that it
// stops its model runners too, waits for it and removes its directories. It
// does nothing for a server found through Connect.
func (s *Instance) Stop() error {
	if s.cmd == nil {
		return nil
	}
	var err error
	if e := s.cmd.Process.Signal(syscall.SIGINT); e != nil && !errors.Is(e, os.ErrProcessDone) {
		err = e
	}
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
		err = errors.Join(err, fmt.Errorf("ollama (pid %d) ignored SIGINT and was killed", s.cmd.Process.Pid))
	}
	s.log.Close()
	return errors.Join(err, os.RemoveAll(s.dir))
}

// Log returns the server's output so far ("" for a server found through
// Connect), for messages about failures that only the server explains.
func (s *Instance) Log() string {
	if s.dir == "" {
		return ""
	}
	b, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
	return string(b)
}

func (s *Instance) logTail() string {
	b := []byte(s.Log())
	const max = 4 << 10
	if len(b) > max {
		b = b[len(b)-max:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}

// environ returns the test's environment without OLLAMA_ settings, so the
// server sees only the ones Start chooses.
func environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OLLAMA_") {
			env = append(env, kv)
		}
	}
	return env
}

// ClosedAddr returns a loopback address ("127.0.0.1:40123") that nothing
// listens on, for tests of an unreachable server: a port the kernel just
// handed out and that is closed again.
func ClosedAddr(tb testing.TB) string {
	tb.Helper()
	addr, err := freeAddr()
	if err != nil {
		tb.Fatal(err)
	}
	return addr
}

// freeAddr returns a 127.0.0.1 address with a port that was free a moment
// ago.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
