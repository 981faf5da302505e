package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/mcpgate"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// referenceServers returns the directory where .ci/install-mcp-servers.sh
// installed the reference MCP servers from npm, or skips the test.
func referenceServers(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("HABILIS_MCP_SERVERS")
	if dir == "" {
		t.Skip("the reference MCP servers are not installed: run HABILIS_MCP_SERVERS=$(bash .ci/install-mcp-servers.sh) go test ./cmd/habilis (.ci/run does)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not on PATH; the reference MCP servers need it")
	}
	for _, s := range []string{"filesystem", "memory", "everything", "github"} {
		if _, err := os.Stat(referenceBin(dir, s)); err != nil {
			t.Fatalf("HABILIS_MCP_SERVERS=%s: %v (run .ci/install-mcp-servers.sh again)", dir, err)
		}
	}
	return dir
}

func referenceBin(dir, server string) string {
	return filepath.Join(dir, "node_modules", ".bin", "mcp-server-"+server)
}

// reference is a config of four reference servers: filesystem over a
// directory holding notes.txt, memory (started through a shell that
// records its pid, so that the test can kill it), everything, and github,
// which lists its tools without a token.
type reference struct {
	config, files, pidFile string
}

func newReference(t *testing.T) reference {
	dir := referenceServers(t)
	tmp := t.TempDir()
	r := reference{files: filepath.Join(tmp, "files"), pidFile: filepath.Join(tmp, "memory.pid")}
	if err := os.Mkdir(r.files, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.files, "notes.txt"), []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.config = writeConfig(t, map[string]any{
		"filesystem": map[string]any{"command": referenceBin(dir, "filesystem"), "args": []string{r.files}},
		"memory": map[string]any{
			"command": "sh",
			"args":    []string{"-c", `echo $$ > "$0"; exec "$1"`, r.pidFile, referenceBin(dir, "memory")},
			"env":     map[string]string{"MEMORY_FILE_PATH": filepath.Join(tmp, "memory.jsonl")},
		},
		"everything": map[string]any{"command": referenceBin(dir, "everything")},
		"github":     map[string]any{"command": referenceBin(dir, "github")},
	})
	return r
}

// find searches for query and returns the found tool called name, failing
// the test when it is not among the k = 5 best.
func find(t *testing.T, cs *mcp.ClientSession, query, name string) mcpgate.FoundTool {
	t.Helper()
	ans := searchTools(t, cs, query, 5)
	i := slices.IndexFunc(ans.Tools, func(f mcpgate.FoundTool) bool { return f.Name == name })
	if i < 0 {
		t.Fatalf("search_tools(%q) = %v, want %s among them", query, names(ans.Tools), name)
	}
	return ans.Tools[i]
}

// mustCall calls a tool through call_tool and returns its text, failing
// on an error result.
func mustCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res := callThrough(t, cs, name, args)
	if res.IsError {
		t.Fatalf("call_tool(%s, %v): %s", name, args, resultText(res))
	}
	return resultText(res)
}

// checkReference drives a gateway over the reference servers as an agent
// would: search, then call.
func checkReference(t *testing.T, r reference, cs *mcp.ClientSession, stderr *testutil.Buffer) {
	if f := find(t, cs, "list the directory "+r.files, "list_directory"); f.Server != "filesystem" {
		t.Errorf("list_directory is on %s", f.Server)
	}
	if out := mustCall(t, cs, "list_directory", map[string]any{"path": r.files}); !strings.Contains(out, "[FILE] notes.txt") {
		t.Errorf("list_directory = %q, want notes.txt", out)
	}
	todo := filepath.Join(r.files, "todo.txt")
	find(t, cs, "write a file called todo.txt", "write_file")
	mustCall(t, cs, "write_file", map[string]any{"path": todo, "content": "buy milk"})
	find(t, cs, "read the file todo.txt", "read_text_file")
	if out := mustCall(t, cs, "read_text_file", map[string]any{"path": todo}); out != "buy milk" {
		t.Errorf("read_text_file after write_file = %q", out)
	}
	find(t, cs, "create an entity for Alice in the knowledge graph", "create_entities")
	mustCall(t, cs, "create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "Alice", "entityType": "person", "observations": []string{"works at Acme"}}}})
	find(t, cs, "open the knowledge graph node Alice", "open_nodes")
	if out := mustCall(t, cs, "open_nodes", map[string]any{"names": []string{"Alice"}}); !strings.Contains(out, "works at Acme") {
		t.Errorf("open_nodes after create_entities = %q", out)
	}
	// Arguments that break the schema never reach the server.
	if res := callThrough(t, cs, "open_nodes", map[string]any{"names": "Alice"}); !res.IsError || !strings.Contains(resultText(res), "refused before reaching server") {
		t.Errorf("open_nodes with a string for an array = isError %v %q", res.IsError, resultText(res))
	}
	// -everything registers tools once it knows the client's capabilities
	// and says so with notifications/tools/list_changed: the gateway lists
	// them again.
	testutil.WaitFor(t, "the gateway to list -everything's tools again", func() bool {
		return strings.Contains(stderr.String(), `msg="mcp server tools changed; listed again" server=everything`)
	})
	find(t, cs, "get the list of MCP roots the client provided", "get-roots-list")
	checkKilled(t, r, cs)
}

// checkKilled kills the memory server while the gateway is connected to
// it: the gateway reports it, refuses its tools with the reason, and
// serves the others; after the restart delay (restartDelay) it starts the
// server again and serves its tools.
func checkKilled(t *testing.T, r reference, cs *mcp.ClientSession) {
	b, err := os.ReadFile(r.pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var ans mcpgate.SearchResult
	testutil.WaitFor(t, "the killed server to be reported", func() bool {
		ans = searchTools(t, cs, "open the knowledge graph node Alice", 5)
		return slices.ContainsFunc(ans.Unavailable, func(u mcpgate.Unavailable) bool { return u.Server == "memory" })
	})
	if slices.ContainsFunc(ans.Tools, func(f mcpgate.FoundTool) bool { return f.Server == "memory" }) {
		t.Errorf("search after the kill still offers memory's tools: %v", names(ans.Tools))
	}
	res := callThrough(t, cs, "open_nodes", map[string]any{"names": []string{"Alice"}})
	if !res.IsError || !strings.Contains(resultText(res), `server "memory", which is unavailable`) {
		t.Errorf("open_nodes after the kill = isError %v %q", res.IsError, resultText(res))
	}
	if out := mustCall(t, cs, "list_directory", map[string]any{"path": r.files}); !strings.Contains(out, "todo.txt") {
		t.Errorf("list_directory after the kill = %q", out)
	}
	testutil.WaitFor(t, "the killed server to be started again", func() bool {
		ans = searchTools(t, cs, "open the knowledge graph node Alice", 5)
		return len(ans.Unavailable) == 0 && slices.ContainsFunc(ans.Tools, func(f mcpgate.FoundTool) bool { return f.Server == "memory" })
	})
	if res := callThrough(t, cs, "open_nodes", map[string]any{"names": []string{"Alice"}}); res.IsError {
		t.Errorf("open_nodes after the restart = isError, %q", resultText(res))
	}
}

// restartDelay is how long the reference tests' gateway waits before it
// starts a killed server again: long enough for the test to see it down
// on a busy machine.
const restartDelay = "5s"

func TestMCPReferenceServersStdio(t *testing.T) {
	r := newReference(t)
	cs, stderr := gatewayOverStdio(t, "--config", r.config, "--log-level", "info", "--restart-delay", restartDelay)
	checkReference(t, r, cs, stderr)
}

func TestMCPReferenceServersHTTP(t *testing.T) {
	r := newReference(t)
	cs, stderr, _ := gatewayOverHTTP(t, "--config", r.config, "--log-level", "info", "--restart-delay", restartDelay)
	checkReference(t, r, cs, stderr)
}
