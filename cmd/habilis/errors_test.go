package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestErrorMessages runs the commands a user gets wrong most often and
// checks the exact text they read: one line saying what is wrong, naming
// the file, tool and field, and what to do, with no package names, and the
// exit code (1 an error, 2 a usage error, followed by where the command's
// help is).
func TestErrorMessages(t *testing.T) {
	store := loadedStore(t)
	cases := append(usageErrorCases(store), inputErrorCases(t, store)...)
	for _, tt := range append(cases, mcpFlagErrorCases()...) {
		t.Run(tt.name, func(t *testing.T) {
			r := habilisRun(t, tt.args...)
			if r.code != tt.code || r.stderr != tt.want {
				t.Errorf("habilis %v = exit %d, stderr:\n%s\nwant exit %d, stderr:\n%s", tt.args, r.code, r.stderr, tt.code, tt.want)
			}
		})
	}
}

// errorCase is a command a user gets wrong and what it must print.
type errorCase struct {
	name string
	args []string
	code int
	want string
}

// notInCatalog ends the message of a tool the catalog does not have.
const notInCatalog = "; habilis tools list names the catalog's tools\n"

// usageErrorCases are the mistakes in a command's words: unknown tools,
// missing or extra arguments, bad flags, against the catalog in store.
func usageErrorCases(store string) []errorCase {
	return []errorCase{
		{"unknown tool", []string{"--store", store, "tools", "show", "nope"}, exitError,
			`habilis: tools show: tool "nope": not found` + notInCatalog},
		{"remove an unknown tool", []string{"--store", store, "tools", "rm", "nope"}, exitError,
			`habilis: tools rm: tool "nope": not found` + notInCatalog},
		{"fill an unknown tool", []string{"--store", store, "fill", "nope", "some request"}, exitError,
			`habilis: fill: tool "nope": not found` + notInCatalog},
		{"pin an unknown tool", []string{"--store", store, "select", "--pin", "nope", "weather in Oslo"}, exitError,
			`habilis: select: pinned tool "nope": not found` + notInCatalog},
		{"no request", []string{"--store", store, "select"}, exitUsage,
			"habilis: select: missing argument QUERY... (usage: habilis select QUERY...)\nRun 'habilis select --help' for usage.\n"},
		{"fill without a request", []string{"--store", store, "fill", "get_weather"}, exitUsage,
			"habilis: fill: missing argument QUERY... (usage: habilis fill TOOL QUERY...)\nRun 'habilis fill --help' for usage.\n"},
		{"tools show without a name", []string{"--store", store, "tools", "show"}, exitUsage,
			"habilis: tools show: missing argument NAME (usage: habilis tools show NAME)\nRun 'habilis tools show --help' for usage.\n"},
		{"an argument too many", []string{"--store", store, "collisions", "extra"}, exitUsage,
			"habilis: collisions: unexpected argument \"extra\" (usage: habilis collisions)\nRun 'habilis collisions --help' for usage.\n"},
		{"request not UTF-8", []string{"--store", store, "select", "weather in \xffOslo"}, exitUsage,
			"habilis: select: the query is not UTF-8 text\nRun 'habilis select --help' for usage.\n"},
		{"fill a request not UTF-8", []string{"--store", store, "fill", "get_weather", "weather in \xffOslo"}, exitUsage,
			"habilis: fill: the query is not UTF-8 text\nRun 'habilis fill --help' for usage.\n"},
		{"run a request not UTF-8", []string{"--store", store, "run", "weather in \xffOslo"}, exitUsage,
			"habilis: run: the query is not UTF-8 text\nRun 'habilis run --help' for usage.\n"},
		{"bad mode", []string{"--store", store, "select", "--mode", "fast", "weather"}, exitUsage,
			"habilis: --mode \"fast\": want description, centroid or hybrid\nRun 'habilis select --help' for usage.\n"},
		{"flag not a number", []string{"--store", store, "select", "-k", "x", "weather"}, exitUsage,
			"habilis: -k \"x\": want an integer\nRun 'habilis select --help' for usage.\n"},
		// A k out of range reads the same locally and against a server.
		{"k out of range", []string{"--store", store, "select", "-k", "5000", "weather"}, exitUsage,
			"habilis: -k 5000: want 1 to 1000\nRun 'habilis select --help' for usage.\n"},
		{"k out of range remotely", []string{"--remote", "127.0.0.1:1", "select", "-k", "5000", "weather"}, exitUsage,
			"habilis: -k 5000: want 1 to 1000\nRun 'habilis select --help' for usage.\n"},
		{"flag not a duration", []string{"serve", "--follow-interval", "soon"}, exitUsage,
			"habilis: --follow-interval \"soon\": want a duration such as 500ms, 30s or 2m\nRun 'habilis serve --help' for usage.\n"},
		{"empty store", []string{"--store", "", "select", "weather"}, exitUsage,
			"habilis: --store is empty: want a bbolt file or qdrant://HOST:PORT/CATALOG\nRun 'habilis select --help' for usage.\n"},
		{"empty store loaded into", []string{"--store", "", "load", testdata("tools.json")}, exitUsage,
			"habilis: load " + testdata("tools.json") + ": --store is empty: want a bbolt file or qdrant://HOST:PORT/CATALOG\nRun 'habilis load --help' for usage.\n"},
		{"unknown flag", []string{"select", "--fast", "weather"}, exitUsage,
			"habilis: unknown flag: --fast\nRun 'habilis select --help' for usage.\n"},
		{"remote without a port", []string{"--remote", "localhost", "select", "weather"}, exitUsage,
			"habilis: --remote \"localhost\": want HOST:PORT of a habilis server\nRun 'habilis select --help' for usage.\n"},
		{"remote as a URL with a path", []string{"--remote", "http://127.0.0.1:1/v1", "select", "weather"}, exitUsage,
			"habilis: --remote \"http://127.0.0.1:1/v1\": want HOST:PORT of a habilis server (http:// or https:// may come before it, with no path)\n" +
				"Run 'habilis select --help' for usage.\n"},
		{"remote as a URL without a port", []string{"--remote", "https://localhost", "select", "weather"}, exitUsage,
			"habilis: --remote \"https://localhost\": want HOST:PORT of a habilis server (http:// or https:// may come before it, with no path)\n" +
				"Run 'habilis select --help' for usage.\n"},
	}
}

// mcpFlagErrorCases are the mcp commands' flags out of range and search's
// queries that select would refuse too: the message names the flag and its
// value, as for every other command, and no server is started: they are
// refused before the config is read.
func mcpFlagErrorCases() []errorCase {
	const config = "servers.json"
	usage := func(cmd, msg string) string {
		return "habilis: " + msg + "\nRun 'habilis mcp " + cmd + " --help' for usage.\n"
	}
	return []errorCase{
		{"mcp search k 0", []string{"mcp", "search", "--config", config, "-k", "0", "weather"}, exitUsage,
			usage("search", "-k 0: want 1 to 50")},
		{"mcp serve k too large", []string{"mcp", "serve", "--config", config, "-k", "51"}, exitUsage,
			usage("serve", "-k 51: want 1 to 50")},
		{"mcp connect timeout 0", []string{"mcp", "tools", "--config", config, "--connect-timeout", "0s"}, exitUsage,
			usage("tools", "--connect-timeout 0s: want a positive duration")},
		{"mcp call timeout 0", []string{"mcp", "serve", "--config", config, "--call-timeout", "0s"}, exitUsage,
			usage("serve", "--call-timeout 0s: want a positive duration")},
		{"mcp max result 0", []string{"mcp", "serve", "--config", config, "--max-result", "0"}, exitUsage,
			usage("serve", "--max-result 0: want a positive number of bytes")},
		{"mcp search empty query", []string{"mcp", "search", "--config", config, "  "}, exitUsage,
			usage("search", "mcp search: the query is empty")},
		{"mcp search query not UTF-8", []string{"mcp", "search", "--config", config, "weather in \xffOslo"}, exitUsage,
			usage("search", "mcp search: the query is not UTF-8 text")},
		{"mcp negative restart delay", []string{"mcp", "serve", "--config", config, "--restart-delay", "-1s"}, exitUsage,
			usage("serve", "--restart-delay -1s: want 0 (never restart) or more")},
	}
}

// inputErrorCases are the mistakes in what a command reads: stores and
// files that are missing, foreign or broken, written under a temporary
// directory, and labels naming tools that store's catalog lacks.
func inputErrorCases(t *testing.T, store string) []errorCase {
	t.Helper()
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	missingStore := filepath.Join(dir, "missing.db")
	foreign := file("foreign.db", strings.Repeat("not a database\n", 2000))
	missingFile := filepath.Join(dir, "missing.json")
	badJSON := file("bad.json", "[{")
	noDescription := file("nodesc.json", `[{"name": "a", "examples": ["x"]}]`)
	customTool := file("custom.json", `[{"type": "function", "function": {"name": "a", "description": "d"}}, {"type": "custom", "name": "b", "description": "d"}]`)
	unknownLabel := file("labelled.jsonl", `{"query": "weather in Oslo", "expected": ["nope"]}`+"\n")
	missingQueries := filepath.Join(dir, "missing.jsonl")
	noToolOnly := file("notool.jsonl", `{"query": "write me a sonnet about the sea", "expected": []}`+"\n")
	return []errorCase{
		{"no store", []string{"--store", missingStore, "select", "weather"}, exitError,
			"habilis: store " + missingStore + " does not exist: load a catalog first (habilis load FILE) or pass --store: not found\n"},
		{"foreign file as store", []string{"--store", foreign, "select", "weather"}, exitError,
			"habilis: store " + foreign + ": not a habilis store (not a bbolt file): invalid input\n"},
		{"foreign file checked", []string{"--store", foreign, "store", "check"}, exitError,
			"habilis: store check: store " + foreign + ": not a habilis store (not a bbolt file): invalid input\n"},
		{"foreign file loaded into", []string{"--store", foreign, "load", testdata("tools.json")}, exitError,
			"habilis: load " + testdata("tools.json") + ": store " + foreign + ": not a habilis store (not a bbolt file): invalid input\n"},
		{"directory as store", []string{"--store", dir, "select", "weather"}, exitError,
			"habilis: store " + dir + ": a directory, not a habilis store: invalid input\n"},
		{"missing catalog file", []string{"--store", filepath.Join(dir, "new.db"), "load", missingFile}, exitError,
			"habilis: open " + missingFile + ": no such file or directory\n"},
		{"catalog not JSON", []string{"--store", filepath.Join(dir, "new.db"), "load", badJSON}, exitError,
			"habilis: " + badJSON + ":1:3: invalid JSON: unexpected end of JSON input\n"},
		{"serve a broken catalog", []string{"--store", filepath.Join(dir, "new.db"), "serve", "--addr", "127.0.0.1:0", "--tools", testdata("broken.json")}, exitError,
			"habilis: serve: --tools: " + testdata("broken.json") + `: tool 1 "send_email": field "descripton": unknown field (did you mean "description"?)` + "\n" +
				testdata("broken.json") + `: tool 1 "send_email": field "description": is required: routing needs to know what the tool does` + "\n"},
		{"catalog tool without description", []string{"--store", filepath.Join(dir, "new.db"), "load", noDescription}, exitError,
			"habilis: " + noDescription + ": tool 0 \"a\": field \"description\": is required: routing needs to know what the tool does\n"},
		{"OpenAI tool of another type", []string{"--store", filepath.Join(dir, "new.db"), "load", customTool}, exitError,
			"habilis: " + customTool + `: tool 1 "b": field "type": must be "function" (the one OpenAI tool type habilis reads), got "custom"` + "\n"},
		{"MCP server that does not start", []string{"--store", filepath.Join(dir, "new.db"), "load", "--mcp", "/nonexistent/mcp-server"}, exitError,
			"habilis: load mcp server `/nonexistent/mcp-server`: mcp server \"mcp\": connect: fork/exec /nonexistent/mcp-server: no such file or directory\n"},
		{"fit to an unknown tool", []string{"--store", store, "fit", unknownLabel}, exitError,
			"habilis: fit " + unknownLabel + `: query 1 "weather in Oslo" expects tool "nope": not found` + notInCatalog},
		{"eval to an unknown tool", []string{"eval", "--tools", testdata("tools.json"), "--queries", unknownLabel}, exitError,
			`habilis: eval: query "weather in Oslo" expects tool "nope", which the catalog does not hold: not found` + "\n"},
		{"eval --min-acc without tool queries", []string{"eval", "--tools", testdata("tools.json"), "--queries", noToolOnly, "--min-acc", "0.5"}, exitError,
			"habilis: eval: --min-acc: no query expects a tool, so there is no acc@1 to compare: invalid input\n"},
		{"missing queries file", []string{"eval", "--tools", testdata("tools.json"), "--queries", missingQueries}, exitError,
			"habilis: open " + missingQueries + ": no such file or directory\n"},
		{"eval --fill without gold arguments", []string{"eval", "--fill", "--tools", testdata("tools.json"), "--queries", testdata("queries.jsonl")}, exitError,
			"habilis: eval --fill: " + testdata("queries.jsonl") + ": no row has gold arguments for one tool of the catalog (skipped 16 rows: no_gold_arguments: 16): " +
				"give rows \"arguments\" and one \"expected\" tool of the catalog\n"},
		{"another embedder", []string{"--store", store, "--embedder", "ollama:nomic-embed-text@127.0.0.1:1", "select", "weather"}, exitError,
			"habilis: store " + store + " was built with embedder lexical (sparse), not ollama:nomic-embed-text: embedder does not match the store; " +
				"pass --reindex to re-embed it with ollama:nomic-embed-text@127.0.0.1:1\n"},
	}
}

// TestRefusedBeforeReport checks that a command refusing its input prints
// no report first: a report of zeros above the error reads as a result.
func TestRefusedBeforeReport(t *testing.T) {
	for _, args := range [][]string{
		{"eval", "--fill", "--tools", testdata("tools.json"), "--queries", testdata("queries.jsonl")},
		{"--json", "eval", "--fill", "--tools", testdata("tools.json"), "--queries", testdata("queries.jsonl")},
	} {
		if r := habilisRun(t, args...); r.code != exitError || r.stdout != "" {
			t.Errorf("habilis %v = exit %d, stdout:\n%s\nwant exit 1 and nothing on stdout", args, r.code, r.stdout)
		}
	}
}

// TestDamagedStoreMessage damages the page bbolt's root bucket starts at
// and checks that a command says which store is damaged, how, and what to
// do, in one line, and that store check lists it without sending the user
// to store check.
func TestDamagedStoreMessage(t *testing.T) {
	store := loadedStore(t)
	data, err := os.ReadFile(store)
	if err != nil {
		t.Fatal(err)
	}
	const pageSize = 64 << 10 // boltstore's
	copy(data[2*pageSize:3*pageSize], bytes.Repeat([]byte{0x01}, pageSize))
	if err := os.WriteFile(store, data, 0o600); err != nil {
		t.Fatal(err)
	}
	const restore = "restore the store from a backup, or move it aside and load the catalog again (habilis load FILE)"
	r := habilisRun(t, "--store", store, "select", "weather in Oslo")
	want := "habilis: store " + store + " is damaged: tree: page 2 says it is page 72340172838076673; " + restore +
		"; habilis store check lists what is damaged\n"
	if r.code != exitError || r.stderr != want {
		t.Errorf("select on a damaged store = exit %d, stderr:\n%s\nwant exit 1, stderr:\n%s", r.code, r.stderr, want)
	}
	r = habilisRun(t, "--store", store, "store", "check")
	if r.code != exitError || !strings.HasPrefix(r.stderr, "habilis: store check: "+store+" has ") || !strings.HasSuffix(r.stderr, "store damaged; "+restore+"\n") {
		t.Errorf("store check on a damaged store = exit %d, stderr:\n%s\nwant exit 1, the problems counted and what to do", r.code, r.stderr)
	}
}
