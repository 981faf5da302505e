package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/habilis-router/habilis"
	habilisv1 "github.com/habilis-router/habilis/api/habilis/v1"
	"github.com/habilis-router/habilis/catalog"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/selector"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
)

// newRouter returns a router over a fresh embedded store in t.TempDir()
// with the lexical embedder, loaded with tools unless they are nil.
func newRouter(t testing.TB, tools []habilis.Tool) *selector.Router {
	t.Helper()
	r := testutil.LexicalRouter(t, testutil.BoltStore(t, filepath.Join(t.TempDir(), "habilis.db")))
	if tools != nil {
		if _, err := r.Load(context.Background(), tools, selector.LoadOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func testTools(t testing.TB) []habilis.Tool {
	t.Helper()
	tools, err := catalog.Read("testdata/tools.json")
	if err != nil {
		t.Fatal(err)
	}
	return tools
}

// serve starts a server for r on a real loopback listener and returns it
// with its address. The server stops when the test ends.
func serve(t testing.TB, r *selector.Router, opts ServerOptions) (*Server, string) {
	t.Helper()
	if opts.InlineEmbedder == nil {
		opts.InlineEmbedder = lexical.New(lexical.Options{})
	}
	s := NewServer(r, opts)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(lis) }()
	t.Cleanup(func() {
		s.Stop()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, lis.Addr().String()
}

// dial returns a client of addr, closed when the test ends.
func dial(t testing.TB, addr string, opts DialOptions) *Client {
	t.Helper()
	c, err := Dial(context.Background(), addr, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// fixture is a loaded router served on loopback, with a client.
func fixture(t *testing.T) (*selector.Router, *Server, *Client) {
	t.Helper()
	r := newRouter(t, testTools(t))
	s, addr := serve(t, r, ServerOptions{})
	return r, s, dial(t, addr, DialOptions{})
}

// decisionOpts compare decisions as the router and the client build them.
var decisionOpts = cmpopts.EquateEmpty()

func TestSelect(t *testing.T) {
	r, _, c := fixture(t)
	ctx := context.Background()
	tests := []struct {
		query string
		opts  habilis.SelectOptions
		want  string
	}{
		{"what's the weather in Rome right now", habilis.SelectOptions{}, "get_weather"},
		{"email the report to Dana", habilis.SelectOptions{Mode: habilis.ModeCentroid, K: 2}, "send_email"},
		{"convert this amount of money into another currency", habilis.SelectOptions{Mode: habilis.ModeDescription, K: 3}, "convert_currency"},
		{"translate good morning into Italian", habilis.SelectOptions{Pinned: []string{"read_inbox"}, Denied: []string{"get_weather"}}, "translate_text"},
	}
	for _, tt := range tests {
		got, err := c.Select(ctx, tt.query, tt.opts)
		if err != nil {
			t.Fatalf("Select(%q): %v", tt.query, err)
		}
		if len(got.Matches) == 0 || got.Matches[0].Tool != tt.want {
			t.Errorf("Select(%q) = %+v, want %s first", tt.query, got, tt.want)
		}
		// Every explanation field crosses the wire unchanged.
		want, err := r.Select(ctx, tt.query, tt.opts)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, decisionOpts); diff != "" {
			t.Errorf("Select(%q) remote differs from local (-local +remote):\n%s", tt.query, diff)
		}
		m := got.Matches[0]
		// Description mode ranks without gating, so its best match need not
		// pass its gate.
		passed := m.Passed || tt.opts.Mode == habilis.ModeDescription
		if !passed || m.Score == 0 || m.DescriptionScore == 0 || m.Radius == 0 || m.RadiusSource == "" || m.Margin == 0 || m.Confidence == 0 || m.CollidesWith == nil {
			t.Errorf("Select(%q) first match %+v: want every explanation field set", tt.query, m)
		}
		if len(tt.opts.Pinned) > 0 && !slices.ContainsFunc(got.Matches, func(m habilis.Match) bool { return m.Pinned && m.Tool == tt.opts.Pinned[0] }) {
			t.Errorf("Select(%q) = %+v, want %s pinned", tt.query, got, tt.opts.Pinned[0])
		}
	}
}

func TestSelectBatch(t *testing.T) {
	r, _, c := fixture(t)
	ctx := context.Background()
	queries := []string{"is it raining in Oslo", "send a mail to Bob", "meeting with the team on Monday at 10"}
	opts := habilis.SelectOptions{K: 2, FailOpen: true}
	got, err := c.SelectBatch(ctx, queries, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(queries) {
		t.Fatalf("SelectBatch returned %d decisions for %d queries", len(got), len(queries))
	}
	for i, q := range queries {
		want, err := r.Select(ctx, q, opts)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got[i], decisionOpts); diff != "" {
			t.Errorf("SelectBatch result %d (%q) differs from Select (-want +got):\n%s", i, q, diff)
		}
	}
}

// testDef is a tool of testdata/tools.json as habilis writes it for a
// model, worked out by hand from the catalog's rules: its arguments map
// made into a JSON Schema (properties sorted, each with its description
// and the type its "(type: ...)" hint names, string without one, then
// "required" as listed), in an OpenAI function or an MCP tool, compact.
// Its token estimates are a quarter of those definitions' bytes, rounded
// up (the OpenAI one 30 bytes longer).
type testDef struct {
	description, schema     string
	openAITokens, mcpTokens int64
}

func (d testDef) openAI(name string) string {
	return `{"type":"function","function":{"name":"` + name + `","description":"` + d.description + `","parameters":` + d.schema + `}}`
}

func (d testDef) mcp(name string) string {
	return `{"name":"` + name + `","description":"` + d.description + `","inputSchema":` + d.schema + `}`
}

// testDefs hold testdata/tools.json; their estimates add up to 544 tokens
// written for OpenAI and 494 for MCP.
var testDefs = map[string]testDef{
	"get_weather": {"Current weather conditions for a city: temperature, rain, wind.",
		`{"properties":{"city":{"description":"City name, e.g. Lisbon","type":"string"}},"required":["city"],"type":"object"}`, 66, 59},
	"get_forecast": {"Weather forecast for a city for the coming days.",
		`{"properties":{"city":{"description":"City name","type":"string"},"days":{"description":"How many days ahead (type: integer)","type":"integer"}},"required":["city"],"type":"object"}`, 79, 71},
	"send_email": {"Send an e-mail message to a recipient.",
		`{"properties":{"body":{"description":"Message text","type":"string"},"subject":{"description":"Subject line","type":"string"},"to":{"description":"Recipient address","type":"string"}},"required":["to"],"type":"object"}`, 85, 78},
	"read_inbox": {"List and read the e-mails in the inbox.",
		`{"properties":{"unread_only":{"description":"Only unread messages (type: boolean)","type":"boolean"}},"type":"object"}`, 60, 53},
	"create_event": {"Create a calendar event or meeting at a date and time.",
		`{"properties":{"start":{"description":"Start date and time","type":"string"},"title":{"description":"Event title","type":"string"}},"required":["title","start"],"type":"object"}`, 79, 72},
	"convert_currency": {"Convert an amount of money from one currency to another.",
		`{"properties":{"amount":{"description":"Amount (type: number)","type":"number"},"from":{"description":"Source currency","type":"string"},"to":{"description":"Target currency","type":"string"}},"required":["amount","from","to"],"type":"object"}`, 97, 90},
	"translate_text": {"Translate text from one language into another.",
		`{"properties":{"target":{"description":"Target language","type":"string"},"text":{"description":"Text to translate","type":"string"}},"required":["text","target"],"type":"object"}`, 78, 71},
}

// openAICatalog returns tools as OpenAI function tools, each definition
// compact, and the catalog JSON (indented, as a caller might send it).
func openAICatalog(t *testing.T, tools []habilis.Tool) (defs map[string]string, catalog []byte) {
	t.Helper()
	defs = map[string]string{}
	var list []json.RawMessage
	for _, tool := range tools {
		def, err := json.Marshal(map[string]any{
			"type": "function",
			"function": map[string]any{
				"name": tool.Name, "description": tool.Description, "parameters": tool.InputSchema,
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		defs[tool.Name] = string(def)
		list = append(list, def)
	}
	catalog, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return defs, catalog
}

func TestPrefilterInlineOpenAI(t *testing.T) {
	_, _, c := fixture(t)
	defs, catalog := openAICatalog(t, testTools(t))
	got, err := c.Prefilter(context.Background(), PrefilterRequest{
		Query:   "send an e-mail message to my landlord",
		Catalog: catalog,
		Options: habilis.SelectOptions{K: 2, Mode: habilis.ModeDescription},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.Shape != shapeOpenAI {
		t.Errorf("Prefilter shape = %q, want %q", got.Shape, shapeOpenAI)
	}
	var chosen []json.RawMessage
	if err := json.Unmarshal(got.Tools, &chosen); err != nil {
		t.Fatalf("Prefilter tools %s: %v", got.Tools, err)
	}
	if len(chosen) == 0 || len(chosen) != len(got.Decision.Matches) {
		t.Fatalf("Prefilter returned %d definitions for %d matches: %s", len(chosen), len(got.Decision.Matches), got.Tools)
	}
	if first := got.Decision.Matches[0].Tool; first != "send_email" {
		t.Errorf("Prefilter first tool = %s, want send_email", first)
	}
	// Definitions come back as sent (compacted), in the decision's order;
	// sent with their keys sorted, they are as long as written by habilis.
	before, after := int64(544), int64(0)
	for i, m := range got.Decision.Matches {
		if string(chosen[i]) != defs[m.Tool] {
			t.Errorf("Prefilter definition %d = %s, want %s", i, chosen[i], defs[m.Tool])
		}
		after += testDefs[m.Tool].openAITokens
	}
	if got.TokensBefore != before || got.TokensAfter != after {
		t.Errorf("Prefilter tokens before/after = %d/%d, want %d/%d", got.TokensBefore, got.TokensAfter, before, after)
	}
	if got.TokensSaved <= 0 || got.TokensSaved != got.TokensBefore-got.TokensAfter {
		t.Errorf("Prefilter tokens_saved = %d, want before - after = %d > 0", got.TokensSaved, got.TokensBefore-got.TokensAfter)
	}
}

func TestPrefilterMCPConversation(t *testing.T) {
	_, _, c := fixture(t)
	var tools []map[string]any
	for _, tool := range testTools(t) {
		tools = append(tools, map[string]any{"name": tool.Name, "description": tool.Description, "inputSchema": tool.InputSchema})
	}
	catalog, err := json.Marshal(map[string]any{"tools": tools, "nextCursor": "abc"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Prefilter(context.Background(), PrefilterRequest{
		Messages: []Message{
			{Role: "system", Content: "You are a helpful assistant."},
			{Role: "user", Content: "I need to tell my sister I am late."},
			{Role: "assistant", Content: "How would you like to reach her?"},
			{Role: "user", Content: "send her an e-mail message"},
		},
		IncludePrevious: true,
		Catalog:         catalog,
		Options:         habilis.SelectOptions{K: 1, Mode: habilis.ModeDescription},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "I need to tell my sister I am late.\nsend her an e-mail message"; got.Decision.Query != want {
		t.Errorf("Prefilter query = %q, want %q", got.Decision.Query, want)
	}
	var list struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(got.Tools, &list); err != nil {
		t.Fatalf("Prefilter tools %s: %v", got.Tools, err)
	}
	if got.Shape != shapeMCP || len(list.Tools) != 1 || list.Tools[0].Name != "send_email" || len(list.Tools[0].InputSchema) == 0 {
		t.Errorf("Prefilter = shape %q, tools %s; want mcp shape with send_email and its schema", got.Shape, got.Tools)
	}
}

// TestPrefilterRoles checks that every role of OpenAI's chat messages is
// taken, in any case, the query being the last user message's.
func TestPrefilterRoles(t *testing.T) {
	_, _, c := fixture(t)
	got, err := c.Prefilter(context.Background(), PrefilterRequest{
		Messages: []Message{
			{Role: "System", Content: "You are a helpful assistant."},
			{Role: "developer", Content: "Answer briefly."},
			{Role: "user", Content: "what is the weather in Oslo"},
			{Role: "assistant", Content: "Let me look."},
			{Role: "tool", Content: "sunny"},
			{Role: "function", Content: "12 degrees"},
			{Role: "USER", Content: "now send an email to Bob about it"},
		},
		Options: habilis.SelectOptions{K: 1},
	})
	if err != nil {
		t.Fatalf("Prefilter with every chat role: %v", err)
	}
	if want := "now send an email to Bob about it"; got.Decision.Query != want {
		t.Errorf("Prefilter query = %q, want %q", got.Decision.Query, want)
	}
}

func TestPrefilterServerCatalog(t *testing.T) {
	_, _, c := fixture(t)
	ctx := context.Background()
	for _, shape := range []string{"", shapeOpenAI, shapeMCP} {
		got, err := c.Prefilter(ctx, PrefilterRequest{Query: "will it rain in Lisbon tomorrow", Shape: shape, Options: habilis.SelectOptions{K: 2}})
		if err != nil {
			t.Fatal(err)
		}
		want := shape
		if want == "" {
			want = shapeOpenAI
		}
		var wantDefs []string
		before, after := int64(544), int64(0)
		if want == shapeMCP {
			before = 494
		}
		for _, m := range got.Decision.Matches {
			d := testDefs[m.Tool]
			if want == shapeMCP {
				wantDefs = append(wantDefs, d.mcp(m.Tool))
				after += d.mcpTokens
			} else {
				wantDefs = append(wantDefs, d.openAI(m.Tool))
				after += d.openAITokens
			}
		}
		wantJSON := "[" + strings.Join(wantDefs, ",") + "]"
		if want == shapeMCP {
			wantJSON = `{"tools":` + wantJSON + "}"
		}
		if got.Shape != want || string(got.Tools) != wantJSON {
			t.Errorf("Prefilter(shape %q) = %s %s, want %s %s", shape, got.Shape, got.Tools, want, wantJSON)
		}
		if got.TokensBefore != before || got.TokensAfter != after || got.TokensSaved != before-after {
			t.Errorf("Prefilter(shape %q) tokens %d - %d = %d, want %d - %d", shape, got.TokensBefore, got.TokensAfter, got.TokensSaved, before, after)
		}
	}
}

func TestPrefilterHandsOverK(t *testing.T) {
	_, srv, c := fixture(t)
	ctx := context.Background()
	_, catalog := openAICatalog(t, testTools(t))
	const noTool = "quantum chromodynamics lattice gluon"
	for _, tt := range []struct {
		name    string
		catalog []byte
	}{{"server catalog", nil}, {"inline catalog", catalog}} {
		for _, old := range []bool{false, true} {
			// The default, and fail_open as older clients send it, hand
			// over k tools beside an abstention.
			open, err := c.Prefilter(ctx, PrefilterRequest{Query: noTool, Catalog: tt.catalog, Options: habilis.SelectOptions{K: 3, FailOpen: old}})
			if err != nil {
				t.Fatal(err)
			}
			var defs []json.RawMessage
			if err := json.Unmarshal(open.Tools, &defs); err != nil {
				t.Fatal(err)
			}
			if !open.Decision.Abstained || len(open.Decision.Matches) != 3 || len(defs) != 3 || open.TokensSaved != open.TokensBefore-open.TokensAfter {
				t.Errorf("%s: Prefilter(%q, fail_open %v) = %+v tools %s, want an abstention with 3 tools anyway", tt.name, noTool, old, open.Decision, open.Tools)
			}
		}
		closed, err := c.Prefilter(ctx, PrefilterRequest{Query: noTool, Catalog: tt.catalog, Options: habilis.SelectOptions{K: 3}, FailClosed: true})
		if err != nil {
			t.Fatal(err)
		}
		if !closed.Decision.Abstained || len(closed.Decision.Matches) != 0 || string(closed.Tools) != "[]" || closed.TokensAfter != 0 || closed.TokensSaved != closed.TokensBefore {
			t.Errorf("%s: fail-closed Prefilter(%q) = %+v tools %s, want an abstention with no tools", tt.name, noTool, closed.Decision, closed.Tools)
		}
	}
	// A request one tool passes still gets k tools, that one first.
	const q = "send an email to bob about the meeting"
	got, err := c.Prefilter(ctx, PrefilterRequest{Query: q, Options: habilis.SelectOptions{K: 3}})
	if err != nil {
		t.Fatal(err)
	}
	ms := got.Decision.Matches
	passed := 0
	for _, m := range ms {
		if m.Passed {
			passed++
		}
	}
	if got.Decision.Abstained || len(ms) != 3 || ms[0].Tool != "send_email" || !ms[0].Passed || passed == 3 {
		t.Errorf("Prefilter(%q) = %+v, want send_email passing first and 3 tools in all, some failing their gates", q, got.Decision)
	}
	_, err = srv.Prefilter(ctx, &habilisv1.PrefilterRequest{Query: q, FailOpen: true, FailClosed: true})
	if !errors.Is(err, habilis.ErrInvalid) {
		t.Errorf("Prefilter(fail_open and fail_closed) error = %v, want ErrInvalid", err)
	}
}

func TestToolsCRUD(t *testing.T) {
	r, _, c := fixture(t)
	ctx := context.Background()
	got, err := c.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r.Tools(), got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Tools() (-local +remote):\n%s", diff)
	}
	info, err := c.Tool(ctx, "send_email")
	if err != nil {
		t.Fatal(err)
	}
	want, err := r.Tool("send_email")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, info, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Tool(send_email) (-local +remote):\n%s", diff)
	}

	margin := float32(0.4)
	upsert := []habilis.Tool{{
		Name:        "book_flight",
		Description: "Book a plane ticket between two airports.",
		Examples:    []string{"book me a flight to Lisbon", "get a plane ticket from Paris to Rome", "reserve a flight for Friday"},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"}},"required":["to"]}`),
		Margin:      &margin,
		Meta:        map[string]string{"team": "travel"},
	}}
	rep, err := c.UpsertTools(ctx, upsert, UpsertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The test catalog's tools have 6 or 7 examples, book_flight 3.
	if diff := cmp.Diff([]string{"book_flight"}, rep.Added); diff != "" || rep.Tools != 8 || rep.Version != r.Version() || rep.MedianExamples != 6 {
		t.Errorf("UpsertTools report %+v, want book_flight added, 8 tools, version %d, median examples 6 (%s)", rep, r.Version(), diff)
	}
	d, err := c.Select(ctx, "get me a plane ticket to Rome", habilis.SelectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Matches) == 0 || d.Matches[0].Tool != "book_flight" {
		t.Errorf("Select after upsert = %+v, want book_flight first", d)
	}
	back, err := c.Tool(ctx, "book_flight")
	if err != nil {
		t.Fatal(err)
	}
	if back.Tool.Margin == nil || *back.Tool.Margin != margin || back.Tool.Meta["team"] != "travel" {
		t.Errorf("Tool(book_flight) = %+v, want the margin and meta sent", back.Tool)
	}
	// The same tools again add, update and remove nothing.
	rep, err = c.UpsertTools(ctx, upsert, UpsertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Added)+len(rep.Updated)+len(rep.Removed) != 0 || rep.Tools != 8 {
		t.Errorf("UpsertTools again: report %+v, want nothing added, updated or removed", rep)
	}

	rep, err = c.DeleteTools(ctx, []string{"book_flight", "read_inbox"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"book_flight", "read_inbox"}, rep.Removed); diff != "" || rep.Tools != 6 {
		t.Errorf("DeleteTools report %+v, want 2 removed, 6 left (%s)", rep, diff)
	}
	if _, err := c.DeleteTools(ctx, []string{"get_weather", "nope"}); !errors.Is(err, habilis.ErrNotFound) {
		t.Errorf("DeleteTools(unknown) error = %v, want %v", err, habilis.ErrNotFound)
	}
	if _, err := r.Tool("get_weather"); err != nil {
		t.Errorf("DeleteTools(unknown) removed get_weather: %v", err)
	}

	// A catalog file's content, replacing the catalog.
	rep, err = c.UpsertCatalog(ctx, []byte(`{"tools":[{"name":"ping","description":"Check that a host answers."}]}`), UpsertOptions{Replace: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Tools != 1 || len(rep.Removed) != 6 {
		t.Errorf("UpsertCatalog(replace) report %+v, want 1 tool, 6 removed", rep)
	}
}

// TestUpsertAtomic runs selections while tools are added and removed in
// writes of 20: every selection sees the catalog before or after a write,
// never part of one, and never fails.
func TestUpsertAtomic(t *testing.T) {
	r, _, c := fixture(t)
	ctx := context.Background()
	base := len(r.Tools())
	const batch = 20
	var tools []habilis.Tool
	var names []string
	for i := range batch {
		name := fmt.Sprintf("batch_%02d", i)
		names = append(names, name)
		tools = append(tools, habilis.Tool{Name: name, Description: fmt.Sprintf("Batch tool number %d for zebra quokka tasks.", i),
			Examples: []string{"zebra quokka", fmt.Sprintf("zebra quokka %d", i)}})
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	var mu sync.Mutex
	var problems []string
	var selections atomic.Int64
	report := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(problems) < 10 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	for range 2 {
		wg.Go(func() {
			for !stop.Load() || selections.Load() < 10 {
				d, err := c.Select(ctx, "zebra quokka", habilis.SelectOptions{K: MaxK, Mode: habilis.ModeDescription, FailOpen: true})
				selections.Add(1)
				if err != nil {
					report("Select: %v", err)
					return
				}
				n := 0
				for _, m := range d.Matches {
					if strings.HasPrefix(m.Tool, "batch_") {
						n++
					}
				}
				if n != 0 && n != batch || len(d.Matches) != base+n {
					report("Select saw %d tools, %d of the batch: half a catalog", len(d.Matches), n)
				}
			}
		})
	}
	for range 5 {
		if _, err := c.UpsertTools(ctx, tools, UpsertOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.DeleteTools(ctx, names); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	for _, p := range problems {
		t.Error(p)
	}
}

func TestCollisions(t *testing.T) {
	r, _, c := fixture(t)
	ctx := context.Background()
	for _, th := range []float32{0, 0.2} {
		got, err := c.Collisions(ctx, th)
		if err != nil {
			t.Fatal(err)
		}
		want, err := r.Collisions(ctx, th)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Collisions(%v) (-local +remote):\n%s", th, diff)
		}
		if th == 0.2 && len(got) == 0 {
			t.Errorf("Collisions(0.2) found nothing; want the weather tools at least")
		}
	}
}

func TestHealth(t *testing.T) {
	r := newRouter(t, nil)
	s, addr := serve(t, r, ServerOptions{})
	c := dial(t, addr, DialOptions{})
	ctx := context.Background()
	hc := healthpb.NewHealthClient(c.Conn())
	check := func(want healthpb.HealthCheckResponse_ServingStatus) {
		t.Helper()
		for _, svc := range []string{"", ServiceName} {
			resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
			if err != nil {
				t.Fatalf("Check(%q): %v", svc, err)
			}
			if resp.GetStatus() != want {
				t.Errorf("Check(%q) = %v, want %v", svc, resp.GetStatus(), want)
			}
		}
	}
	check(healthpb.HealthCheckResponse_NOT_SERVING) // no catalog yet
	if _, err := c.UpsertTools(ctx, testTools(t), UpsertOptions{}); err != nil {
		t.Fatal(err)
	}
	check(healthpb.HealthCheckResponse_SERVING)
	if ok, err := c.Healthy(ctx); err != nil || !ok {
		t.Errorf("Healthy() = %v, %v, want true", ok, err)
	}
	var names []string
	for _, tool := range testTools(t) {
		names = append(names, tool.Name)
	}
	if _, err := c.DeleteTools(ctx, names); err != nil {
		t.Fatal(err)
	}
	check(healthpb.HealthCheckResponse_NOT_SERVING) // an empty catalog
	if _, err := c.UpsertTools(ctx, testTools(t), UpsertOptions{}); err != nil {
		t.Fatal(err)
	}
	check(healthpb.HealthCheckResponse_SERVING)
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	resp, err := s.health.Check(ctx, &healthpb.HealthCheckRequest{Service: ServiceName})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("health after Shutdown = %v, %v, want NOT_SERVING", resp.GetStatus(), err)
	}
	if _, err := c.Select(ctx, "weather in Oslo", habilis.SelectOptions{}); !errors.Is(err, habilis.ErrUnavailable) {
		t.Errorf("Select after Shutdown error = %v, want %v", err, habilis.ErrUnavailable)
	}
}

func TestReflection(t *testing.T) {
	_, _, c := fixture(t)
	stream, err := reflectionpb.NewServerReflectionClient(c.Conn()).ServerReflectionInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		got = append(got, s.GetName())
	}
	for _, want := range []string{ServiceName, "grpc.health.v1.Health"} {
		if !slices.Contains(got, want) {
			t.Errorf("reflection lists %v, want %s among them", got, want)
		}
	}
	stream.CloseSend()
}

func TestAuth(t *testing.T) {
	r := newRouter(t, testTools(t))
	_, addr := serve(t, r, ServerOptions{Token: "s3cret"})
	ctx := context.Background()
	for _, tt := range []struct {
		token string
		want  codes.Code
	}{{"", codes.Unauthenticated}, {"wrong", codes.Unauthenticated}, {"s3cre", codes.Unauthenticated}, {"s3cret", codes.OK}} {
		c := dial(t, addr, DialOptions{Token: tt.token})
		_, err := c.Select(ctx, "weather in Oslo", habilis.SelectOptions{})
		if got := status.Code(err); got != tt.want {
			t.Errorf("Select with token %q: code %v (%v), want %v", tt.token, got, err, tt.want)
		}
		_, err = c.Tools(ctx)
		if got := status.Code(err); got != tt.want {
			t.Errorf("ListTools with token %q: code %v, want %v", tt.token, got, tt.want)
		}
		// Health answers without a token.
		if ok, err := c.Healthy(ctx); err != nil || !ok {
			t.Errorf("Healthy() with token %q = %v, %v, want true", tt.token, ok, err)
		}
	}
}

// fieldsOf returns the fields a status error's BadRequest names.
func fieldsOf(err error) []string {
	var out []string
	for _, d := range status.Convert(err).Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				out = append(out, v.GetField())
			}
		}
	}
	return out
}

func TestBadRequests(t *testing.T) {
	_, _, c := fixture(t)
	raw := habilisv1.NewToolRouterClient(c.Conn())
	ctx := context.Background()

	var big bytes.Buffer
	big.WriteString("[")
	for i := range DefaultMaxInlineTools + 1 {
		if i > 0 {
			big.WriteString(",")
		}
		fmt.Fprintf(&big, `{"type":"function","function":{"name":"t%d","description":"tool %d"}}`, i, i)
	}
	big.WriteString("]")
	huge := `[{"type":"function","function":{"name":"t","description":"` + strings.Repeat("x", DefaultMaxInlineBytes) + `"}}]`

	tests := []struct {
		name   string
		call   func() error
		code   codes.Code
		fields []string
		text   string
	}{
		{"empty query", func() error { _, err := raw.Select(ctx, &habilisv1.SelectRequest{Query: "  "}); return err }, codes.InvalidArgument, []string{"query"}, "query"},
		{"long query", func() error {
			_, err := raw.Select(ctx, &habilisv1.SelectRequest{Query: strings.Repeat("weather ", DefaultMaxQueryBytes)})
			return err
		}, codes.InvalidArgument, []string{"query"}, "limit"},
		{"k 0", func() error { _, err := raw.Select(ctx, &habilisv1.SelectRequest{Query: "weather", K: 0}); return err }, codes.OK, nil, ""},
		{"k 1000", func() error {
			_, err := raw.Select(ctx, &habilisv1.SelectRequest{Query: "weather", K: 1000})
			return err
		}, codes.OK, nil, ""},
		{"k 10^9", func() error {
			_, err := raw.Select(ctx, &habilisv1.SelectRequest{Query: "weather", K: 1e9})
			return err
		}, codes.InvalidArgument, []string{"k"}, "k"},
		{"k negative", func() error { _, err := raw.Select(ctx, &habilisv1.SelectRequest{Query: "weather", K: -1}); return err }, codes.InvalidArgument, []string{"k"}, "k"},
		{"unknown mode", func() error {
			_, err := raw.Select(ctx, &habilisv1.SelectRequest{Query: "weather", Mode: "psychic"})
			return err
		}, codes.InvalidArgument, []string{"mode"}, "psychic"},
		{"unknown pinned", func() error {
			_, err := raw.Select(ctx, &habilisv1.SelectRequest{Query: "weather", Pinned: []string{"get_weather", "teleport"}})
			return err
		}, codes.NotFound, nil, "teleport"},
		{"pinned and denied", func() error {
			_, err := raw.Select(ctx, &habilisv1.SelectRequest{Query: "weather", Pinned: []string{"get_weather"}, Denied: []string{"send_email", "get_weather"}})
			return err
		}, codes.InvalidArgument, []string{"denied[1]"}, `"get_weather" is pinned too`},
		{"unknown tool", func() error { _, err := raw.GetTool(ctx, &habilisv1.GetToolRequest{Name: "teleport"}); return err }, codes.NotFound, nil, "teleport"},
		{"empty batch", func() error { _, err := raw.SelectBatch(ctx, &habilisv1.SelectBatchRequest{}); return err }, codes.InvalidArgument, []string{"queries"}, ""},
		{"blank batch query", func() error {
			_, err := raw.SelectBatch(ctx, &habilisv1.SelectBatchRequest{Queries: []string{"weather", ""}})
			return err
		}, codes.InvalidArgument, []string{"queries[1]"}, ""},
		{"too many inline tools", func() error {
			_, err := raw.Prefilter(ctx, &habilisv1.PrefilterRequest{Query: "weather", ToolsJson: big.String()})
			return err
		}, codes.InvalidArgument, []string{"tools_json"}, "2000"},
		{"inline catalog too large", func() error {
			_, err := raw.Prefilter(ctx, &habilisv1.PrefilterRequest{Query: "weather", ToolsJson: huge})
			return err
		}, codes.InvalidArgument, []string{"tools_json"}, "4194304"},
		{"broken inline catalog", func() error {
			_, err := raw.Prefilter(ctx, &habilisv1.PrefilterRequest{Query: "weather", ToolsJson: `[{"type":"function","function":{"name":"x","description":7}}]`})
			return err
		}, codes.InvalidArgument, []string{"tools_json: tool 0 field function.description"}, "description"},
		{"query and messages", func() error {
			_, err := raw.Prefilter(ctx, &habilisv1.PrefilterRequest{Query: "weather", Messages: []*habilisv1.ChatMessage{{Role: "user", Content: "hi"}}})
			return err
		}, codes.InvalidArgument, []string{"messages"}, ""},
		{"no user message", func() error {
			_, err := raw.Prefilter(ctx, &habilisv1.PrefilterRequest{Messages: []*habilisv1.ChatMessage{{Role: "assistant", Content: "hi"}}})
			return err
		}, codes.InvalidArgument, []string{"messages"}, "user"},
		{"unknown role", func() error {
			_, err := raw.Prefilter(ctx, &habilisv1.PrefilterRequest{Messages: []*habilisv1.ChatMessage{
				{Role: "user", Content: "send a mail to Bob"}, {Role: "assistant", Content: "done"}, {Role: "human", Content: "weather in Oslo"}}})
			return err
		}, codes.InvalidArgument, []string{"messages[2].role"}, `"human" is not a chat role: want one of system, developer, user, assistant, tool, function`},
		{"unknown shape", func() error {
			_, err := raw.Prefilter(ctx, &habilisv1.PrefilterRequest{Query: "weather", Shape: "yaml"})
			return err
		}, codes.InvalidArgument, []string{"shape"}, ""},
		{"inline unknown denied", func() error {
			_, err := raw.Prefilter(ctx, &habilisv1.PrefilterRequest{Query: "weather", ToolsJson: `[{"type":"function","function":{"name":"x","description":"y"}}]`, Denied: []string{"get_weather"}})
			return err
		}, codes.NotFound, nil, "get_weather"},
		{"bad tool message", func() error {
			_, err := raw.UpsertTools(ctx, &habilisv1.UpsertToolsRequest{Tools: []*habilisv1.Tool{{Name: "ok", Description: "fine"}, {Name: "bad name!", Description: "x"}}})
			return err
		}, codes.InvalidArgument, []string{"tools[1].name"}, "bad name!"},
		{"bad schema JSON", func() error {
			_, err := raw.UpsertTools(ctx, &habilisv1.UpsertToolsRequest{Tools: []*habilisv1.Tool{{Name: "ok", Description: "fine", InputSchemaJson: "{"}}})
			return err
		}, codes.InvalidArgument, []string{"tools[0].input_schema_json"}, ""},
		{"bad schema", func() error {
			_, err := raw.UpsertTools(ctx, &habilisv1.UpsertToolsRequest{Tools: []*habilisv1.Tool{{Name: "ok", Description: "fine", InputSchemaJson: `{"type":"object","properties":{"a":{"type":"banana"}}}`}}})
			return err
		}, codes.InvalidArgument, []string{"tools[0].input_schema_json: properties.a.type"}, "banana"},
		{"nothing to upsert", func() error { _, err := raw.UpsertTools(ctx, &habilisv1.UpsertToolsRequest{}); return err }, codes.InvalidArgument, []string{"tools"}, ""},
		{"nothing to delete", func() error { _, err := raw.DeleteTools(ctx, &habilisv1.DeleteToolsRequest{}); return err }, codes.InvalidArgument, []string{"names"}, ""},
		{"collision threshold", func() error { _, err := raw.Collisions(ctx, &habilisv1.CollisionsRequest{Threshold: 2}); return err }, codes.InvalidArgument, []string{"threshold"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if got := status.Code(err); got != tt.code {
				t.Fatalf("code %v (%v), want %v", got, err, tt.code)
			}
			if diff := cmp.Diff(tt.fields, fieldsOf(err), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("field violations (-want +got):\n%s\nerror: %v", diff, err)
			}
			if !strings.Contains(status.Convert(err).Message(), tt.text) {
				t.Errorf("message %q does not mention %q", status.Convert(err).Message(), tt.text)
			}
			if tt.code == codes.NotFound {
				var name string
				for _, d := range status.Convert(err).Details() {
					if ri, ok := d.(*errdetails.ResourceInfo); ok {
						name = ri.GetResourceName()
					}
				}
				if name != tt.text {
					t.Errorf("ResourceInfo names %q, want %q", name, tt.text)
				}
			}
		})
	}
}

// TestClientRefusesK checks that the client refuses a k out of range as
// a local selection does, with the same message naming the k given,
// rather than sending a clamped one the server names instead.
func TestClientRefusesK(t *testing.T) {
	r, _, c := fixture(t)
	ctx := t.Context()
	for _, k := range []int{-1, MaxK + 1, 5000, math.MaxInt} {
		opts := habilis.SelectOptions{K: k}
		_, local := r.Select(ctx, "weather in Oslo", opts)
		_, remote := c.Select(ctx, "weather in Oslo", opts)
		_, batch := c.SelectBatch(ctx, []string{"weather in Oslo"}, opts)
		_, pre := c.Prefilter(ctx, PrefilterRequest{Query: "weather in Oslo", Options: opts})
		want := fmt.Sprintf("k: %d is out of range: want 1 to 1000, or 0 for 5", k)
		for _, got := range []error{local, remote, batch, pre} {
			if !errors.Is(got, habilis.ErrInvalid) || got.Error() != want {
				t.Errorf("k %d: err %v, want %q (ErrInvalid)", k, got, want)
			}
		}
	}
}

func TestDeadline(t *testing.T) {
	_, s, c := fixture(t)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	_, err := c.Select(ctx, "weather in Oslo", habilis.SelectOptions{})
	if !errors.Is(err, context.DeadlineExceeded) || status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("Select past its deadline: error %v (code %v), want %v", err, status.Code(err), context.DeadlineExceeded)
	}
	// The server stops work whose context has ended.
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	_, err = s.SelectBatch(cctx, &habilisv1.SelectBatchRequest{Queries: []string{"weather in Oslo", "mail Bob"}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("SelectBatch with a cancelled context: error %v, want %v", err, context.Canceled)
	}
	if got := status.Code(toStatus(err)); got != codes.Canceled {
		t.Errorf("SelectBatch with a cancelled context: code %v, want %v", got, codes.Canceled)
	}
	_, catalog := openAICatalog(t, testTools(t))
	_, err = s.Prefilter(cctx, &habilisv1.PrefilterRequest{Query: "mail Bob", ToolsJson: string(catalog)})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Prefilter with a cancelled context: error %v, want %v", err, context.Canceled)
	}
}

// TestErrorRoundTrip sends every sentinel of the table through a status
// and back: errors.Is holds on the client's side as on the server's.
func TestErrorRoundTrip(t *testing.T) {
	for _, m := range errorTable() {
		err := fmt.Errorf("selector: op: %w", m.err)
		st := toStatus(err)
		if got := status.Code(st); got != m.code {
			t.Errorf("toStatus(%v) code = %v, want %v", err, got, m.code)
		}
		back := fromStatus(st)
		for _, other := range errorTable() {
			if got, want := errors.Is(back, other.err), other.err == m.err; got != want {
				t.Errorf("fromStatus(toStatus(%v)): errors.Is(%v) = %v, want %v", err, other.err, got, want)
			}
		}
		if back.Error() != err.Error() {
			t.Errorf("fromStatus(toStatus(%v)) = %q, want the same message", err, back.Error())
		}
	}
	// A transport error with no ErrorInfo maps by code.
	if err := fromStatus(status.Error(codes.Unavailable, "connection refused")); !errors.Is(err, habilis.ErrUnavailable) {
		t.Errorf("fromStatus(UNAVAILABLE) = %v, want %v", err, habilis.ErrUnavailable)
	}
	if err := toStatus(errors.New("boom")); status.Code(err) != codes.Internal {
		t.Errorf("toStatus(unmapped) code = %v, want Internal", status.Code(err))
	}

	// And through a real server.
	_, _, c := fixture(t)
	ctx := context.Background()
	_, err := c.Tool(ctx, "teleport")
	if !errors.Is(err, habilis.ErrNotFound) || !strings.Contains(err.Error(), "teleport") {
		t.Errorf("Tool(teleport) error = %v, want %v naming the tool", err, habilis.ErrNotFound)
	}
	_, err = c.Select(ctx, "", habilis.SelectOptions{})
	var re *RemoteError
	if !errors.Is(err, habilis.ErrInvalid) || !errors.As(err, &re) || re.FieldViolations()["query"] == "" {
		t.Errorf("Select(\"\") error = %v, want %v with a violation of field query", err, habilis.ErrInvalid)
	}
	// One past the proto's int32 (negative where int has 32 bits, which is
	// invalid too) is refused by the client, as a local selection refuses
	// it (see TestClientRefusesK); the server names the field of a raw
	// request's (TestBadRequests).
	tooBig := int64(math.MaxInt32) + 1
	_, err = c.Select(ctx, "weather", habilis.SelectOptions{K: int(tooBig)})
	if _, ok := errors.AsType[*selector.KError](err); !ok || !errors.Is(err, habilis.ErrInvalid) {
		t.Errorf("Select(k 2^31) error = %v, want %v naming k", err, habilis.ErrInvalid)
	}
	closed := newRouter(t, testTools(t))
	_, addr := serve(t, closed, ServerOptions{})
	closed.Close()
	_, err = dial(t, addr, DialOptions{}).Select(ctx, "weather", habilis.SelectOptions{})
	if !errors.Is(err, habilis.ErrClosed) || errors.Is(err, habilis.ErrUnavailable) || status.Code(err) != codes.Unavailable {
		t.Errorf("Select on a closed router: error %v (code %v), want %v", err, status.Code(err), habilis.ErrClosed)
	}
}

func TestMetrics(t *testing.T) {
	_, s, c := fixture(t)
	ctx := context.Background()
	if _, err := c.Select(ctx, "weather in Oslo", habilis.SelectOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Select(ctx, "quantum chromodynamics lattice gluon", habilis.SelectOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Tool(ctx, "teleport"); err == nil {
		t.Fatal("Tool(teleport) succeeded")
	}
	srv := httptest.NewServer(s.MetricsHandler())
	defer srv.Close()
	body := testutil.Get(t, srv.URL)
	for _, want := range []string{
		`habilis_grpc_requests_total{code="OK",method="/habilis.v1.ToolRouter/Select"} 2`,
		`habilis_grpc_requests_total{code="NotFound",method="/habilis.v1.ToolRouter/GetTool"} 1`,
		`habilis_grpc_request_duration_seconds_count{method="/habilis.v1.ToolRouter/Select"} 2`,
		`habilis_abstentions_total{method="Select"} 1`,
		`habilis_catalog_tools 7`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestUnimplementedInline(t *testing.T) {
	r := newRouter(t, testTools(t))
	s := NewServer(r, ServerOptions{})
	_, err := s.Prefilter(context.Background(), &habilisv1.PrefilterRequest{Query: "mail Bob", ToolsJson: `[{"name":"x","description":"y"}]`})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("Prefilter(inline) without an inline embedder: %v, want Unimplemented", err)
	}
}

// TestRawClient checks the plain generated stub against the server too,
// as other languages' clients will call it.
func TestRawClient(t *testing.T) {
	r := newRouter(t, testTools(t))
	_, addr := serve(t, r, ServerOptions{})
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := habilisv1.NewToolRouterClient(conn).Select(context.Background(), &habilisv1.SelectRequest{Query: "weather in Oslo", K: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetMatches()) != 1 || resp.GetMatches()[0].GetTool() != "get_weather" || resp.GetMode() != "hybrid" {
		t.Errorf("Select = %v, want get_weather alone, hybrid mode", resp)
	}
}
