package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLoadMCP(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(t.TempDir(), "habilis.db")
	r := habilisWith(t, "", []string{testUpstreamEnv + "=clock"}, "--store", store, "load", "--mcp", `'`+exe+`' -test.run=none`)
	if r.code != 0 {
		t.Fatalf("load --mcp: exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "loaded mcp server `'"+exe+"' -test.run=none`: 2 tools") {
		t.Errorf("load --mcp printed:\n%s", r.stdout)
	}
	type row struct {
		Name, Server string
		Command      []string
		Tool         string
	}
	rows := func() []row {
		var out []row
		for _, tl := range listTools(t, store) {
			var spec struct {
				Kind, Transport string
				Command         []string
				Tool            string
			}
			if err := json.Unmarshal(tl.Executor, &spec); err != nil || spec.Kind != "mcp" {
				t.Fatalf("tool %s: executor %s", tl.Name, tl.Executor)
			}
			out = append(out, row{tl.Name, tl.Meta["mcp_server"], spec.Command, spec.Tool})
		}
		return out
	}
	want := []row{
		{"current_time", "mcp", []string{exe, "-test.run=none"}, "current_time"},
		{"echo", "mcp", []string{exe, "-test.run=none"}, "echo"},
	}
	if diff := cmp.Diff(want, rows()); diff != "" {
		t.Errorf("tools loaded with --mcp (-want +got):\n%s", diff)
	}
	config := testUpstreams(t)
	mustRun(t, "--store", store, "load", "--mcp-config", config)
	var got []string
	for _, r := range rows() {
		got = append(got, r.Name+" on "+r.Server+" as "+r.Tool)
	}
	wantNames := []string{"clock__echo on clock as echo", "count_words on notes as count_words", "current_time on clock as current_time",
		"notes__echo on notes as echo", "save_note on notes as save_note"}
	if diff := cmp.Diff(wantNames, got); diff != "" {
		t.Errorf("tools loaded with --mcp-config (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"load", "--mcp", "x", "tools.json"}, exitUsage, "load takes one source"},
		{[]string{"load"}, exitUsage, "load takes one source"},
		{[]string{"load", "--mcp", `"unclosed`}, exitUsage, "--mcp"},
		{[]string{"load", "--mcp", "/nonexistent/server"}, exitError, `mcp server "mcp": connect: fork/exec /nonexistent/server`},
		{[]string{"load", "--mcp", config}, exitUsage, "for an mcpServers file, use --mcp-config " + config},
	} {
		r := habilisRun(t, append([]string{"--store", store}, tc.args...)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("habilis %v: exit %d, stderr %q; want exit %d and %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
	if diff := cmp.Diff(wantNames, func() []string {
		var out []string
		for _, r := range rows() {
			out = append(out, r.Name+" on "+r.Server+" as "+r.Tool)
		}
		return out
	}()); diff != "" {
		t.Errorf("a failed load changed the store (-want +got):\n%s", diff)
	}
}

func TestToolsExport(t *testing.T) {
	store := loadedStore(t)
	want := listTools(t, store)
	for _, format := range []string{"mcp", "openai"} {
		file := filepath.Join(t.TempDir(), format+".json")
		if err := os.WriteFile(file, []byte(mustRun(t, "--store", store, "tools", "export", "--format", format)), 0o600); err != nil {
			t.Fatal(err)
		}
		again := filepath.Join(t.TempDir(), "again.db")
		mustRun(t, "--store", again, "load", file)
		got := listTools(t, again)
		if len(got) != len(want) {
			t.Fatalf("%s export loads %d tools, want %d", format, len(got), len(want))
		}
		for i := range want {
			w, g := want[i], got[i]
			if g.Name != w.Name || g.Description != w.Description || !slices.Equal(g.Examples, w.Examples) || string(g.InputSchema) != string(w.InputSchema) {
				t.Errorf("%s export of %s loads back as %+v, want %+v", format, w.Name, g, w)
			}
		}
	}
	if r := habilisRun(t, "--store", store, "tools", "export", "--format", "yaml"); r.code != exitUsage {
		t.Errorf("tools export --format yaml: exit %d", r.code)
	}
}
