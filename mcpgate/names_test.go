package mcpgate

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestNameTools checks the names the gateway gives upstream tools beyond
// the fixture's: a server name with characters a tool name may not hold
// made safe in the prefix, a tool a server lists twice kept once, a name
// that still clashes once prefixed left out (and logged) rather than
// shadowing another, a tool named like the gateway's call_tool prefixed,
// and overlay examples found by the gateway's name before the upstream's.
func TestNameTools(t *testing.T) {
	tool := func(name string) *mcp.Tool { return &mcp.Tool{Name: name, Description: "does " + name} }
	lists := []serverTools{
		{"a b", []*mcp.Tool{tool("search"), tool("call_tool")}},
		{"a_b", []*mcp.Tool{tool("search")}},
		{"my.server", []*mcp.Tool{tool("search"), tool("fetch"), tool("fetch"), tool("open")}},
	}
	overlay := Overlay{"my_server__search": {"find it on my server"}, "search": {"find it anywhere"}, "open": {"open the door"}}
	var logs testutil.Buffer
	entries := nameTools(lists, overlay, slog.New(slog.NewTextHandler(&logs, nil)))
	type row struct{ Name, Server, Upstream, Example string }
	var got []row
	for _, e := range entries {
		r := row{e.Name, e.Server, e.Upstream, ""}
		if len(e.Examples) > 0 {
			r.Example = e.Examples[0]
		}
		got = append(got, r)
	}
	want := []row{
		{"a_b__call_tool", "a b", "call_tool", ""},
		{"a_b__search", "a b", "search", "find it anywhere"},
		{"fetch", "my.server", "fetch", ""},
		{"my_server__search", "my.server", "search", "find it on my server"},
		{"open", "my.server", "open", "open the door"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("nameTools (-want +got):\n%s", diff)
	}
	for _, w := range []string{`server=a_b tool=search name=a_b__search`, `server=my.server tool=fetch name=fetch`} {
		if !strings.Contains(logs.String(), `msg="mcp tool left out: its name clashes" `+w) {
			t.Errorf("the log does not say %q was left out:\n%s", w, logs.String())
		}
	}
}

func TestParseExpose(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Expose
	}{{"", ExposeSearch}, {"search", ExposeSearch}, {"selected", ExposeSelected}} {
		if got, err := ParseExpose(tt.in); got != tt.want || err != nil {
			t.Errorf("ParseExpose(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	if got, err := ParseExpose("all"); !errors.Is(err, habilis.ErrInvalid) || !strings.Contains(err.Error(), `expose "all": want search or selected`) {
		t.Errorf(`ParseExpose("all") = %q, %v; want ErrInvalid naming it and the choices`, got, err)
	}
}

// TestList lists the fixture's servers and one that fails to start: the
// tools named as the gateway names them, with the overlay's examples (by
// the gateway's name or the server's), the overlay's names that match no
// tool;
// each server's status, the failing one down with its reason; the sizes
// of the servers' and the gateway's tools/list; and the failure left out
// of the log, which List's caller reports from the listing.
func TestList(t *testing.T) {
	f := weatherAndFiles()
	opts := f.options()
	opts.Overlay = Overlay{"read_file": {"show me notes.txt"}, "red_file": {"show me todo.txt"}, "search": {"find notes"}}
	l, err := List(t.Context(), append(f.configs(), subprocess(t, "github", "fail")), opts)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Name, Server string
		Examples     int
	}
	var tools []row
	for _, ti := range l.Tools {
		tools = append(tools, row{ti.Name, ti.Server, len(ti.Examples)})
	}
	want := []row{{"files__search", "files", 1}, {"files__search_tools", "files", 0}, {"get_forecast", "weather", 0},
		{"read_file", "files", 1}, {"weather__search", "weather", 1}}
	if diff := cmp.Diff(want, tools); diff != "" {
		t.Errorf("List tools (-want +got):\n%s", diff)
	}
	status := map[string]string{}
	for _, s := range l.Servers {
		status[s.Name] = s.Status
		if s.Status == StatusDown && !strings.Contains(s.Reason, "GITHUB_TOKEN is not set") {
			t.Errorf("List: server %s down saying %q, want its stderr", s.Name, s.Reason)
		}
	}
	if diff := cmp.Diff(map[string]string{"files": StatusReady, "weather": StatusReady, "github": StatusDown}, status); diff != "" {
		t.Errorf("List servers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"red_file"}, l.OverlayUnmatched); diff != "" {
		t.Errorf("List overlay names matching no tool (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string][]string{"red_file": {"read_file"}}, l.OverlaySuggestions); diff != "" {
		t.Errorf("List overlay names' suggestions (-want +got):\n%s", diff)
	}
	if l.GatewayBytes <= 0 || l.ListBytes <= 0 {
		t.Errorf("List bytes: servers %d, gateway %d; want both counted", l.ListBytes, l.GatewayBytes)
	}
	if strings.Contains(f.logs.String(), "mcp server unavailable") {
		t.Errorf("List logged the failing server, which its caller reports:\n%s", f.logs.String())
	}
}
