package main

import (
	"os"
	"path/filepath"
	"testing"
)

// suggestCatalog is the small catalog the did-you-mean tests load.
const suggestCatalog = `[
  {"name": "get_weather", "description": "Current weather for a city", "arguments": {"city": "City name"}, "required": ["city"]},
  {"name": "get_time", "description": "Current time in a city", "arguments": {"city": "City name"}},
  {"name": "send_email", "description": "Send an e-mail to someone", "arguments": {"to": "Address", "body": "Text"}}
]`

// TestUnknownToolSuggestsCLI checks that every command naming a tool
// answers a misspelt name with the name it most likely misspells, in the
// message the command gave before (file, query or flag, then the tool),
// locally and against a server, and suggests nothing for a name close to
// none.
func TestUnknownToolSuggestsCLI(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tools := write("tools.json", suggestCatalog)
	store := filepath.Join(dir, "habilis.db")
	mustRun(t, "--store", store, "load", tools)
	labels := write("labels.jsonl", `{"query": "weather in Oslo", "expected": ["get_wether"]}`+"\n")
	candidates := write("candidates.jsonl", `{"query": "weather in Oslo", "expected": ["get_weather"], "candidates": ["get_weather", "send_emial"]}`+"\n")
	served := filepath.Join(dir, "served.db")
	mustRun(t, "--store", served, "load", tools)
	srv := startServe(t, "--store", served, "serve", "--addr", "127.0.0.1:0")
	const hint = ` (did you mean "get_weather"?)`
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"tools show", []string{"--store", store, "tools", "show", "get_wether"},
			`habilis: tools show: tool "get_wether": not found` + hint + notInCatalog},
		{"tools show, no near name", []string{"--store", store, "tools", "show", "teleport"},
			`habilis: tools show: tool "teleport": not found` + notInCatalog},
		{"tools rm", []string{"--store", store, "tools", "rm", "get_time", "get_tmie"},
			`habilis: tools rm: tool "get_tmie": not found (did you mean "get_time"?)` + notInCatalog},
		{"fill", []string{"--store", store, "fill", "Get-Weather", "weather in Oslo"},
			`habilis: fill: tool "Get-Weather": not found` + hint + notInCatalog},
		{"select --pin", []string{"--store", store, "select", "--pin", "get_wether", "weather in Oslo"},
			`habilis: select: pinned tool "get_wether": not found` + hint + notInCatalog},
		{"select --deny", []string{"--store", store, "select", "--deny", "send_mail", "weather in Oslo"},
			`habilis: select: denied tool "send_mail": not found (did you mean "send_email"?)` + notInCatalog},
		{"fit", []string{"--store", store, "fit", labels},
			"habilis: fit " + labels + `: query 1 "weather in Oslo" expects tool "get_wether": not found` + hint + notInCatalog},
		{"eval", []string{"eval", "--tools", tools, "--queries", labels},
			`habilis: eval: query "weather in Oslo" expects tool "get_wether", which the catalog does not hold` + hint + ": not found\n"},
		{"eval candidates", []string{"eval", "--tools", tools, "--queries", candidates},
			`habilis: eval: query 1 "weather in Oslo": candidate "send_emial": not in the catalog (--tools) and not defined inline (did you mean "send_email"?): not found` + "\n"},
		{"map --tools", []string{"--store", store, "map", "--out", filepath.Join(dir, "map.svg"), "--tools", "get_wether"},
			`habilis: map: tool "get_wether": not found` + hint + notInCatalog},
		{"remote tools show", []string{"--remote", srv.addr, "tools", "show", "get_wether"},
			`habilis: tools show: remote ` + srv.addr + `: name: tool "get_wether": not found` + hint + notInCatalog},
		{"remote tools rm", []string{"--remote", srv.addr, "tools", "rm", "get_wether"},
			`habilis: tools rm: remote ` + srv.addr + `: names[0]: tool "get_wether": not found` + hint + notInCatalog},
		{"remote fill", []string{"--remote", srv.addr, "fill", "get_wether", "weather in Oslo"},
			`habilis: fill: remote ` + srv.addr + `: name: tool "get_wether": not found` + hint + notInCatalog},
		{"remote select --pin", []string{"--remote", srv.addr, "select", "--pin", "get_wether", "weather in Oslo"},
			`habilis: select: remote ` + srv.addr + `: pinned[0]: tool "get_wether": not found` + hint + notInCatalog},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := habilisRun(t, tt.args...)
			if r.code != exitError || r.stderr != tt.want {
				t.Errorf("habilis %v = exit %d, stderr:\n%s\nwant exit %d, stderr:\n%s", tt.args, r.code, r.stderr, exitError, tt.want)
			}
		})
	}
}
