package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/api"
	"github.com/habilis-router/habilis/internal/testutil"
)

// server is a `habilis serve` subprocess.
type server struct {
	cmd     *exec.Cmd
	addr    string
	metrics string
	// http is the --http listener's URL, when serve printed one.
	http string
	// rest delivers stdout after the lines serve printed at start.
	rest   chan string
	stderr *bytes.Buffer
}

// startServe runs the binary's serve command with args and waits until it
// says where it listens. The process is killed if the test ends first.
func startServe(t *testing.T, args ...string) *server {
	t.Helper()
	cmd := habilisCmd(args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, rest: make(chan string, 1), stderr: &bytes.Buffer{}}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	br := bufio.NewReader(stdout)
	for s.addr == "" {
		line, err := br.ReadString('\n')
		if err != nil {
			cmd.Wait()
			t.Fatalf("serve %v exited before listening: %v\nstderr: %s", args, err, s.stderr)
		}
		switch {
		case strings.HasPrefix(line, "metrics on "):
			s.metrics = strings.TrimSpace(strings.TrimPrefix(line, "metrics on "))
		case strings.HasPrefix(line, "http on "):
			s.http = strings.TrimSpace(strings.TrimPrefix(line, "http on "))
		case strings.HasPrefix(line, "listening on "):
			s.addr = strings.Fields(line)[2]
		}
	}
	go func() {
		b, _ := io.ReadAll(br)
		s.rest <- string(b)
	}()
	return s
}

// stop sends SIGTERM and returns the exit code and the rest of stdout.
func (s *server) stop(t *testing.T) (int, string) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	out := <-s.rest
	err := s.cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out
	case errors.As(err, &ee):
		return ee.ExitCode(), out
	}
	t.Fatalf("wait for serve: %v", err)
	return -1, out
}

func TestServe(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, "--store", filepath.Join(dir, "habilis.db"), "serve",
		"--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0",
		"--tools", "testdata/tools.json", "--token-file", tokenFile)
	ctx := context.Background()

	c, err := api.Dial(ctx, srv.addr, api.DialOptions{Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if ok, err := c.Healthy(ctx); err != nil || !ok {
		t.Errorf("Healthy() = %v, %v, want true", ok, err)
	}
	d, err := c.Select(ctx, "what's the weather in Oslo right now", habilis.SelectOptions{K: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Matches) != 1 || d.Matches[0].Tool != "get_weather" {
		t.Errorf("Select = %+v, want get_weather", d)
	}
	if _, err := c.Tool(ctx, "teleport"); !errors.Is(err, habilis.ErrNotFound) {
		t.Errorf("Tool(teleport) error = %v, want %v", err, habilis.ErrNotFound)
	}
	anon, err := api.Dial(ctx, srv.addr, api.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	if _, err := anon.Tools(ctx); err == nil || !strings.Contains(err.Error(), "token") {
		t.Errorf("Tools() without a token: error %v, want a refusal", err)
	}

	checkRemoteCLI(t, srv.addr, tokenFile)

	body := testutil.Get(t, srv.metrics)
	if !strings.Contains(string(body), `habilis_grpc_requests_total{code="OK",method="/habilis.v1.ToolRouter/Select"}`) {
		t.Errorf("metrics lack the Select count:\n%.2000s", body)
	}

	code, rest := srv.stop(t)
	if code != 0 || !strings.Contains(rest, "stopped") {
		t.Errorf("serve after SIGTERM: exit %d, stdout %q, stderr %q; want 0 and \"stopped\"", code, rest, srv.stderr)
	}
	if _, err := c.Select(ctx, "weather in Oslo", habilis.SelectOptions{}); !errors.Is(err, habilis.ErrUnavailable) {
		t.Errorf("Select after shutdown: error %v, want %v", err, habilis.ErrUnavailable)
	}
}

// checkRemoteCLI checks the CLI's --remote backend against the server at
// addr, which wants the token in tokenFile: by HOST:PORT and by an http://
// URL, and, without a token, the message saying which variables give one.
func checkRemoteCLI(t *testing.T, addr, tokenFile string) {
	t.Helper()
	// The CLI's --remote backend.
	sel := exec.Command(binary, "--remote", addr, "--json", "select", "mail", "the", "report", "to", "Bob")
	sel.Env = append(os.Environ(), "HABILIS_TOKEN_FILE="+tokenFile)
	out, err := sel.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"send_email"`) {
		t.Errorf("select --remote: %v\n%s", err, out)
	}
	// An http:// URL names the same server; without a token, the CLI
	// says which variables give one.
	for _, tt := range []struct {
		env  string
		code int
		want string
	}{
		{"HABILIS_TOKEN_FILE=" + tokenFile, 0, `"send_email"`},
		{"HABILIS_TOKEN_FILE=", exitError, "habilis: select: remote " + addr +
			" wants a bearer token: set HABILIS_TOKEN to it, or HABILIS_TOKEN_FILE to a file holding it\n"},
		{"HABILIS_TOKEN=not-the-token", exitError, "habilis: select: remote " + addr +
			" refused the bearer token: set HABILIS_TOKEN, or the file HABILIS_TOKEN_FILE names, to what the server's --token-file holds\n"},
	} {
		sel := exec.Command(binary, "--remote", "http://"+addr, "--json", "select", "mail", "the", "report", "to", "Bob")
		sel.Env = append(os.Environ(), "HABILIS_TOKEN=", "HABILIS_TOKEN_FILE=", tt.env)
		var stdout, stderr strings.Builder
		sel.Stdout, sel.Stderr = &stdout, &stderr
		_ = sel.Run()
		got := stderr.String()
		if tt.code == 0 {
			got = stdout.String()
		}
		if code := sel.ProcessState.ExitCode(); code != tt.code || (tt.code == 0 && !strings.Contains(got, tt.want)) || (tt.code != 0 && got != tt.want) {
			t.Errorf("select --remote http://%s with %s = exit %d, output:\n%s\nwant exit %d and %q", addr, tt.env, code, got, tt.code, tt.want)
		}
	}
}

func TestServeBadFlags(t *testing.T) {
	dir := t.TempDir()
	broken, err := filepath.Abs("testdata/broken.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"serve", "--tls-cert", "x.pem"}, exitUsage, "--tls-key"},
		{[]string{"serve", "--tools", broken}, exitError, "broken.json"},
		{[]string{"serve", "--token-file", filepath.Join(dir, "missing")}, exitError, "--token-file"},
		{[]string{"--remote", "127.0.0.1:1", "serve"}, exitUsage, "--remote"},
		{[]string{"serve", "--follow-interval", "-1s"}, exitUsage, "--follow-interval"},
		{[]string{"serve", "--read-only", "--tools", broken}, exitUsage, "--read-only and --tools do not go together"},
		{[]string{"--reindex", "serve", "--read-only"}, exitUsage, "--read-only and --reindex do not go together"},
		{[]string{"serve", "--read-only"}, exitError, "h.db does not exist"},
		{[]string{"proxy", "--upstream", "http://127.0.0.1:1/v1", "--read-only", "--tools", broken}, exitUsage, "--read-only and --tools"},
	} {
		r := habilisIn(t, dir, "", append([]string{"--store", filepath.Join(dir, "h.db")}, tt.args...)...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("habilis %v: exit %d, stderr %q; want %d mentioning %q", tt.args, r.code, r.stderr, tt.code, tt.want)
		}
	}
}
