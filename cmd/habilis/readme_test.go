package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/habilis-router/habilis/internal/ollamatest"
)

// shellBlock returns the first ```sh block after the line heading in the
// file at path (relative to the repository's root).
func shellBlock(t *testing.T, path, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", path))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("%s has no %q", path, heading)
	}
	text = text[i:]
	start := strings.Index(text, "\n```sh\n")
	if start < 0 {
		t.Fatalf("%s has no sh block after %q", path, heading)
	}
	text = text[start+len("\n```sh\n"):]
	end := strings.Index(text, "\n```")
	if end < 0 {
		t.Fatalf("%s: the sh block after %q does not end", path, heading)
	}
	return text[:end]
}

// TestReadmeProxy runs the README's example of habilis proxy as written,
// and docs/proxy.md's examples of the JSON API: the proxy starts in front
// of a real Ollama serving a tiny model under the README's model name (on
// a free port instead of 8080, with a store of its own), then the other
// lines run in bash, with curl and this binary as habilis.
func TestReadmeProxy(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	readme := shellBlock(t, "README.md", "## In front of a model")
	docs := shellBlock(t, "docs/proxy.md", "## The JSON API")
	first, rest, _ := strings.Cut(readme, "\n")
	first, _, _ = strings.Cut(first, "#")
	args := strings.Fields(strings.TrimSuffix(strings.TrimSpace(first), "&"))
	if len(args) < 2 || args[0] != "habilis" || args[1] != "proxy" {
		t.Fatalf("the README's example starts with %q, want habilis proxy ... &", first)
	}
	const readmeUpstream, readmeAddr = "http://127.0.0.1:11434/v1", "127.0.0.1:8080"
	m := regexp.MustCompile(`"model": "([^"]+)"`).FindStringSubmatch(rest)
	if m == nil {
		t.Fatal("the README's chat request names no model")
	}
	inst := ollamatest.Server(t)
	ollamatest.CreateToolChatModel(t, inst.Client, m[1], "")
	for i, a := range args {
		args[i] = strings.ReplaceAll(a, readmeUpstream, inst.Host+"/v1")
	}
	srv := startServe(t, append(append([]string{"--store", filepath.Join(t.TempDir(), "habilis.db")}, args[1:]...), "--listen", "127.0.0.1:0")...)

	script := "habilis() { \"$HABILIS_BIN\" \"$@\"; }\n" + rest + "\n" + docs
	cmd := habilisCmd()
	cmd.Path, cmd.Args = "/bin/bash", []string{"bash", "-euo", "pipefail", "-c", strings.ReplaceAll(script, readmeAddr, srv.addr)}
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(cmd.Env, "HABILIS_BIN="+binary)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the examples failed: %v\n%s", err, out)
	}
	for _, want := range []string{
		// The chat request: 2 tools in, the fitting one forwarded, the
		// model's answer back.
		`(?i)x-habilis-tools-before: 2\r?\n`,
		`(?i)x-habilis-tools-after: 1\r?\n`,
		`(?i)x-habilis-selected: weather_forecast\r?\n`,
		`"object":"chat.completion"`,
		// load --remote, then the JSON API over the loaded catalog.
		`loaded tools.json: 16 tools`,
		`"matches":\s*\[\{"tool":\s*"weather_forecast"`,
		`"tools_json":\s*"\[\{\\"type\\"`,
		`"tools":\s*\[\{"name"`,
		`"tool":\s*\{"name":\s*"weather_forecast"`,
		`"collisions":\s*\[\{"a"`,
		`"arguments_json":\s*"\{\\"location\\":\\"Porto\\"\}"`,
	} {
		if !regexp.MustCompile(want).Match(out) {
			t.Errorf("the examples' output lacks %s:\n%s", want, out)
		}
	}
}
