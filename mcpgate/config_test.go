package mcpgate

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
)

func TestParseConfig(t *testing.T) {
	got, err := ParseConfig("servers.json", []byte(`{
	  "mcpServers": {
	    "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "env": {"MEMORY_FILE_PATH": "/tmp/m.jsonl"}, "autoApprove": []},
	    "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer x"}},
	    "legacy": {"type": "sse", "url": "http://localhost:8931/sse"},
	    "typed": {"type": "streamable-http", "url": "http://localhost:9000/mcp"},
	    "local": {"type": "stdio", "command": "./server", "cwd": "/srv"},
	    "off": {"command": "whatever", "disabled": true}
	  }
	}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Server{
		{Name: "legacy", Transport: TransportSSE, URL: "http://localhost:8931/sse"},
		{Name: "local", Transport: TransportStdio, Command: "./server", Dir: "/srv"},
		{Name: "memory", Transport: TransportStdio, Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-memory"}, Env: map[string]string{"MEMORY_FILE_PATH": "/tmp/m.jsonl"}},
		{Name: "remote", Transport: TransportHTTP, URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer x"}},
		{Name: "typed", Transport: TransportHTTP, URL: "http://localhost:9000/mcp"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseConfig (-want +got):\n%s", diff)
	}
	// Some editors write the same entries under "servers".
	got, err = ParseConfig("mcp.json", []byte(`{"servers": {"fs": {"type": "stdio", "command": "fs-server"}}}`))
	if err != nil || len(got) != 1 || got[0].Command != "fs-server" {
		t.Errorf(`ParseConfig of a "servers" file = %+v, %v`, got, err)
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{`[]`, `servers.json: not a JSON object`},
		{`{"servers": 1, "x": 2}`, `servers.json: field "servers": must be an object of servers by name`},
		{`{"other": {}}`, `servers.json: has no "mcpServers" object`},
		{`{"mcpServers": {}}`, `servers.json: field "mcpServers": names no enabled server`},
		{`{"mcpServers": {"a": {"command": "x", "disabled": true}}}`, `names no enabled server`},
		{`{"mcpServers": {"a": {"comand": "x"}}}`, `servers.json: server "a": field "command": is required`},
		{`{"mcpServers": {"a": {"command": "x", "args": "-y"}}}`, `servers.json: server "a": field "args": must be an array of strings`},
		{`{"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}}`, `server "a": field "env": must be an object of strings`},
		{`{"mcpServers": {"a": {"command": "x", "url": "http://h/mcp"}}}`, `server "a": set "command" (a stdio server) or "url" (an HTTP server), not both`},
		{`{"mcpServers": {"a": {"url": "ftp://h/mcp"}}}`, `server "a": field "url": "ftp://h/mcp" is not an http or https URL`},
		{`{"mcpServers": {"a": {"type": "websocket", "url": "ws://h"}}}`, `server "a": field "type": "websocket": want "stdio", "http" or "sse"`},
		{`{"mcpServers": {"a": {"type": "http"}}}`, `server "a": field "url": is required for transport "http"`},
		{`{"mcpServers": {"a": {"url": "http://h", "headers": {"bad name": "v"}}}}`, `field "headers": "bad name" is not a header name`},
		{`{"mcpServers": {"a": 3}}`, `server "a": must be an object`},
		{`{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}`, `server "a": is given twice`},
		{`{"mcpServers": {"": {"command": "x"}}}`, `a server needs a name`},
	} {
		_, err := ParseConfig("servers.json", []byte(tc.data))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseConfig(%s) = %v, want an error containing %q", tc.data, err, tc.want)
			continue
		}
		if !errors.Is(err, habilis.ErrInvalid) {
			t.Errorf("ParseConfig(%s): %v does not wrap ErrInvalid", tc.data, err)
		}
	}
	// Every problem is reported at once, one a line.
	_, err := ParseConfig("s.json", []byte(`{"mcpServers": {"a": {}, "b": {"url": "x"}}}`))
	if err == nil || strings.Count(err.Error(), "\n") != 1 {
		t.Errorf("two broken entries: %v, want two lines", err)
	}
}

func TestParseOverlay(t *testing.T) {
	got, err := ParseOverlay("overlay.json", []byte(`{"read_file": {"examples": ["show me notes.txt", " print the README "]}, "github__search": {"examples": []}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := Overlay{"read_file": {"show me notes.txt", "print the README"}, "github__search": {}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseOverlay (-want +got):\n%s", diff)
	}
	for _, tc := range []struct{ data, want string }{
		{`[]`, `overlay.json: want an object of tools by name`},
		{`{"a": []}`, `overlay.json: tool "a": want {"examples": [...]}`},
		{`{"a": {"examples": [1]}}`, `tool "a": field "examples[0]": must be a string`},
		{`{"a": {"examples": ["x", " "]}}`, `tool "a": field "examples[1]": must not be blank`},
		{`{"a": {"examples": ["Hello  there", "hello there"]}}`, `tool "a": field "examples[1]": duplicates examples[0]`},
		{`{"a": {"examples": ["` + strings.Repeat("x", 5000) + `"]}}`, `is 5000 bytes long; the limit is 4096`},
		{`{"a": {"examples": []}, "a": {"examples": []}}`, `tool "a": is given twice`},
		// A misspelt field would otherwise drop the examples unnoticed.
		{`{"a": {"exmples": ["x"]}}`, `tool "a": field "exmples": unknown field: an overlay entry holds only "examples"`},
		{`{"a": {"examples": ["x"], "margin": 0.2}}`, `tool "a": field "margin": unknown field`},
	} {
		_, err := ParseOverlay("overlay.json", []byte(tc.data))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, habilis.ErrInvalid) {
			t.Errorf("ParseOverlay(%.60s) = %v, want an ErrInvalid containing %q", tc.data, err, tc.want)
		}
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"mcpServers": {"a": {"command": "x", "args": ["y"], "env": {"K": "v"}}}}`))
	f.Add([]byte(`{"servers": {"b": {"type": "http", "url": "http://h/mcp", "headers": {"A": "b"}}}}`))
	f.Add([]byte(`{"mcpServers": {"a": {"command": "x"}, "a": {"url": "y"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		servers, err := ParseConfig("f.json", data)
		if err != nil {
			if !errors.Is(err, habilis.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		for _, s := range servers {
			switch s.Transport {
			case TransportStdio:
				if strings.TrimSpace(s.Command) == "" {
					t.Fatalf("stdio server %q without a command", s.Name)
				}
			case TransportHTTP, TransportSSE:
				if s.URL == "" {
					t.Fatalf("%s server %q without a URL", s.Transport, s.Name)
				}
			default:
				t.Fatalf("server %q: transport %q", s.Name, s.Transport)
			}
		}
	})
}

func FuzzParseOverlay(f *testing.F) {
	f.Add([]byte(`{"read_file": {"examples": ["show me notes.txt"]}}`))
	f.Add([]byte(`{"a": {"examples": ["x", "X"]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := ParseOverlay("f.json", data)
		if err != nil {
			if !errors.Is(err, habilis.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		for name, ex := range o {
			for _, e := range ex {
				if strings.TrimSpace(e) != e || e == "" {
					t.Fatalf("tool %q: example %q kept untrimmed or blank", name, e)
				}
			}
		}
	})
}
