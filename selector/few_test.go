package selector_test

import (
	"context"
	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis/embed/lexical"
	"strings"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/memstore"
)

// fewCatalog is eight tools with four examples each, which calibrate
// hybrid mode's gate, and a research tool with the examples given. The
// examples share words with each other and few with their descriptions,
// so that the calibrated hybrid gate sits above the description gate.
func fewCatalog(research ...string) []habilis.Tool {
	ex := func(name, desc string, examples ...string) habilis.Tool {
		return habilis.Tool{Name: name, Description: desc, Examples: examples}
	}
	return []habilis.Tool{
		ex("get_weather", "Current conditions outside for a place.", "weather in Oslo", "weather in Paris", "weather in Cairo", "weather in Tokyo"),
		ex("create_event", "Add an entry to the schedule.", "calendar event on Friday", "calendar event tomorrow", "calendar event on Monday", "calendar event next week"),
		ex("send_email", "Deliver a message to someone.", "email Bob", "email Alice", "email the team", "email my landlord"),
		ex("play_music", "Start audio playback.", "play jazz", "play rock", "play the new album", "play piano music"),
		ex("translate_text", "Render words in a different tongue.", "translate into Spanish", "translate into Japanese", "translate into German", "translate into French"),
		ex("get_stock_price", "Latest quote of a listed company.", "stock price of Apple", "stock price of Tesla", "stock price of Microsoft", "stock price of Nvidia"),
		ex("news_search", "Find recent press coverage.", "news about the election", "news about the earthquake", "news about Mars", "news about electric cars"),
		ex("set_timer", "Count down a duration.", "timer for ten minutes", "timer for 5 minutes", "timer for 30 seconds", "timer for 8 minutes"),
		{Name: "simulate_research_query", Description: "Simulates a deep research operation that gathers, analyzes, and synthesizes information.", Examples: research},
	}
}

// TestFewExamplesKeepTheDescriptionGate checks that a tool given fewer
// examples than calibration can hold out still takes the requests its
// description alone would take, where the catalog's calibrated gate, set
// by tools with four examples each, refuses them; and that from
// selector.MinHeldOutExamples on a tool is gated on its evidence alone.
func TestFewExamplesKeepTheDescriptionGate(t *testing.T) {
	ctx := context.Background()
	const q = "research the history of the printing press in depth"
	for _, tc := range []struct {
		examples []string
		fallback bool // whether the research tool's match reports its fallback gate
	}{
		{[]string{"run a deep research query on renewable energy trends"}, true},
		{[]string{"run a deep research query on renewable energy trends", "deep research query on battery chemistry",
			"deep research query on ocean currents"}, false},
	} {
		r := testutil.LexicalRouter(t, memstore.New())
		if _, err := r.Load(ctx, fewCatalog(tc.examples...), selector.LoadOptions{}); err != nil {
			t.Fatal(err)
		}
		info, err := r.Tool("simulate_research_query")
		if err != nil {
			t.Fatal(err)
		}
		if tc.fallback && info.FallbackGate >= info.Gates[habilis.ModeHybrid] {
			t.Fatalf("%d examples: fallback gate %v not below the hybrid gate %v: the test shows nothing", len(tc.examples),
				info.FallbackGate, info.Gates[habilis.ModeHybrid])
		}
		d, err := r.Select(ctx, q, habilis.SelectOptions{K: 3, FailOpen: true})
		if err != nil {
			t.Fatal(err)
		}
		m := d.Matches[0]
		if m.Tool != "simulate_research_query" {
			t.Fatalf("%d examples: %q ranks %s first, want simulate_research_query", len(tc.examples), q, m.Tool)
		}
		want := info.Gates[habilis.ModeHybrid]
		if tc.fallback {
			want = info.FallbackGate
		}
		if m.Gate != want || (info.FallbackGate != 0) != tc.fallback {
			t.Errorf("%d examples: gated at %v, want %v (gates %v, fallback gate %v)", len(tc.examples), m.Gate, want, info.Gates, info.FallbackGate)
		}
		if tc.fallback && (d.Abstained || !m.Passed || m.GateScore != m.DescriptionScore) {
			t.Errorf("one example: abstained %v, passed %v on gate score %v (description score %v), want it passed on the description score",
				d.Abstained, m.Passed, m.GateScore, m.DescriptionScore)
		}
	}
}

// TestOneExampleDoesNotOutweighTheDescription checks that the words a
// single example shares with a request by chance ("hello world") do not
// outrank a tool whose description says what the request asks: the
// description weighs as the examples that are missing.
func TestOneExampleDoesNotOutweighTheDescription(t *testing.T) {
	ctx := context.Background()
	tools := append(fewCatalog(),
		habilis.Tool{Name: "write_file", Description: "Create a new file or completely overwrite an existing file with new content."},
		habilis.Tool{Name: "echo", Description: "Echoes back the input.", Examples: []string{"repeat back exactly what I type: hello world"}},
		habilis.Tool{Name: "read_file", Description: "Read the complete contents of a file."})
	r := testutil.LexicalRouter(t, memstore.New())
	if _, err := r.Load(ctx, tools, selector.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"save hello world in notes.txt", "write hello world into greeting.txt", "print hello world back to me"} {
		want := "write_file"
		if strings.HasPrefix(q, "print") {
			want = "echo"
		}
		d, err := r.Select(ctx, q, habilis.SelectOptions{K: 3, FailOpen: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Matches[0].Tool; got != want {
			t.Errorf("%q ranks %s first, want %s", q, got, want)
		}
	}
}

// TestFewExamplesLeaveBareGates checks that a few tools given an example
// each do not raise the gates of the tools without: the examples, which
// paraphrase their tools' descriptions, calibrate a description threshold
// that says how requests for those tools read, not requests for the
// others. It had raised move_file's gate fourfold, and a request that
// passed it before was refused.
func TestFewExamplesLeaveBareGates(t *testing.T) {
	ctx := context.Background()
	bare := func() []habilis.Tool {
		return []habilis.Tool{
			{Name: "read_text_file", Description: "Read the complete contents of a file from the file system as text."},
			{Name: "write_file", Description: "Create a new file or completely overwrite an existing file with new content."},
			{Name: "move_file", Description: "Move or rename files and directories."},
			{Name: "list_directory", Description: "Get a detailed listing of all files and directories in a specified path."},
			{Name: "directory_tree", Description: "Get a recursive tree view of files and directories as a JSON structure."},
			{Name: "search_repositories", Description: "Search for GitHub repositories."},
			{Name: "fork_repository", Description: "Fork a GitHub repository to your account or specified organization."},
			{Name: "create_issue", Description: "Create a new issue in a GitHub repository."},
			{Name: "create_entities", Description: "Create multiple new entities in the knowledge graph."},
			{Name: "read_graph", Description: "Read the entire knowledge graph."},
		}
	}
	withExamples := bare()
	for i, ex := range map[int]string{
		0: "read the complete contents of the file notes.txt as text",
		5: "search GitHub for repositories about parsers",
		8: "create new entities for Alice and Bob in the knowledge graph",
	} {
		withExamples[i].Examples = []string{ex}
	}
	const q = "move notes.txt into the archive folder"
	gates := map[string]float32{}
	for name, tools := range map[string][]habilis.Tool{"bare": bare(), "three examples": withExamples} {
		r := testutil.LexicalRouter(t, memstore.New())
		if _, err := r.Load(ctx, tools, selector.LoadOptions{}); err != nil {
			t.Fatal(err)
		}
		info, err := r.Tool("move_file")
		if err != nil {
			t.Fatal(err)
		}
		gates[name] = info.Gates[habilis.ModeHybrid]
		d, err := r.Select(ctx, q, habilis.SelectOptions{K: 3})
		if err != nil {
			t.Fatal(err)
		}
		if d.Abstained || d.Matches[0].Tool != "move_file" {
			t.Errorf("%s: %q abstained %v (%s), matches %v; want move_file", name, q, d.Abstained, d.Reason, d.Matches)
		}
	}
	if gates["three examples"] > 1.25*gates["bare"] {
		t.Errorf("move_file's gate %v with three other tools given an example, %v without: raised by their examples", gates["three examples"], gates["bare"])
	}
}

// TestOneExampleCorrectsAMisroute checks that a request given as the one
// example of its tool, to correct a misroute, then goes to that tool:
// here read_text_file, whose deprecated twin read_file is described in
// the same words and took the request before.
func TestOneExampleCorrectsAMisroute(t *testing.T) {
	ctx := context.Background()
	const q = "read the file notes.txt"
	catalog := func(examples ...string) []habilis.Tool {
		return append(fewCatalog(),
			habilis.Tool{Name: "read_file", Description: "Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead."},
			habilis.Tool{Name: "read_text_file", Examples: examples, Description: "Read the complete contents of a file from the file system as text. " +
				"Handles various text encodings and provides detailed error messages if the file cannot be read. " +
				"Use this tool when you need to examine the contents of a single file."},
			habilis.Tool{Name: "write_file", Description: "Create a new file or completely overwrite an existing file with new content."})
	}
	for _, tc := range []struct {
		examples []string
		want     string
	}{{nil, "read_file"}, {[]string{q}, "read_text_file"}} {
		r := testutil.LexicalRouter(t, memstore.New())
		if _, err := r.Load(ctx, catalog(tc.examples...), selector.LoadOptions{}); err != nil {
			t.Fatal(err)
		}
		d, err := r.Select(ctx, q, habilis.SelectOptions{K: 3, FailOpen: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Matches[0].Tool; got != tc.want {
			t.Errorf("examples %q: %q ranks %s first, want %s", tc.examples, q, got, tc.want)
		}
	}
}

// TestGateScoresName checks that tools show names the score each gate is
// on as selection gates it: a bare tool's hybrid gate is on its
// description score with the lexical embedder, on its evidence with a
// model that weighs the lexical document; a match reports that gate.
func TestGateScoresName(t *testing.T) {
	ctx := context.Background()
	tools := append(fewCatalog("run a deep research query on renewable energy trends"),
		habilis.Tool{Name: "write_file", Description: "Create a new file or completely overwrite an existing file with new content."})
	for _, tc := range []struct {
		name   string
		cfg    selector.Config
		hybrid string
	}{
		{"lexical", selector.Config{Embedder: lexical.New(lexical.Options{})}, "description score"},
		{"model", selector.Config{Embedder: testutil.HashEmbedder{Dim: 64}, Lexical: lexical.New(lexical.Options{})}, "evidence"},
	} {
		r, err := selector.New(ctx, memstore.New(), tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if _, err := r.Load(ctx, tools, selector.LoadOptions{}); err != nil {
			t.Fatal(err)
		}
		bare, err := r.Tool("write_file")
		if err != nil {
			t.Fatal(err)
		}
		want := map[habilis.Mode]string{habilis.ModeDescription: "description score", habilis.ModeCentroid: "description score", habilis.ModeHybrid: tc.hybrid}
		if diff := cmp.Diff(want, bare.GateScores); diff != "" {
			t.Errorf("%s: write_file's gate scores (-want +got):\n%s", tc.name, diff)
		}
		one, err := r.Tool("simulate_research_query")
		if err != nil {
			t.Fatal(err)
		}
		if one.FallbackGateScore != tc.hybrid || one.GateScores[habilis.ModeHybrid] != "evidence" {
			t.Errorf("%s: one-example tool: fallback on %q, hybrid gate on %q; want %q and evidence", tc.name, one.FallbackGateScore, one.GateScores[habilis.ModeHybrid], tc.hybrid)
		}
		d, err := r.Select(ctx, "overwrite the file notes.txt with new content", habilis.SelectOptions{K: 1, FailOpen: true})
		if err != nil {
			t.Fatal(err)
		}
		m := d.Matches[0]
		onDesc := m.GateScore == m.DescriptionScore
		if m.Tool != "write_file" || m.Gate != bare.Gates[habilis.ModeHybrid] || onDesc != (tc.hybrid == "description score") {
			t.Errorf("%s: match %s gated at %v on %v (description score %v); want write_file at %v on its %s",
				tc.name, m.Tool, m.Gate, m.GateScore, m.DescriptionScore, bare.Gates[habilis.ModeHybrid], tc.hybrid)
		}
	}
}
