package selector_test

import (
	"context"
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
		want     habilis.Mode // the gate the research tool's match reports
	}{
		{[]string{"run a deep research query on renewable energy trends"}, habilis.ModeDescription},
		{[]string{"run a deep research query on renewable energy trends", "deep research query on battery chemistry",
			"deep research query on ocean currents"}, habilis.ModeHybrid},
	} {
		r := testutil.LexicalRouter(t, memstore.New())
		if _, err := r.Load(ctx, fewCatalog(tc.examples...), selector.LoadOptions{}); err != nil {
			t.Fatal(err)
		}
		info, err := r.Tool("simulate_research_query")
		if err != nil {
			t.Fatal(err)
		}
		if info.Gates[habilis.ModeDescription] >= info.Gates[habilis.ModeHybrid] {
			t.Fatalf("%d examples: description gate %v not below the hybrid gate %v: the test shows nothing", len(tc.examples),
				info.Gates[habilis.ModeDescription], info.Gates[habilis.ModeHybrid])
		}
		d, err := r.Select(ctx, q, habilis.SelectOptions{K: 3, FailOpen: true})
		if err != nil {
			t.Fatal(err)
		}
		m := d.Matches[0]
		if m.Tool != "simulate_research_query" {
			t.Fatalf("%d examples: %q ranks %s first, want simulate_research_query", len(tc.examples), q, m.Tool)
		}
		if m.Gate != info.Gates[tc.want] {
			t.Errorf("%d examples: gated at %v, want the %s gate %v (gates %v)", len(tc.examples), m.Gate, tc.want, info.Gates[tc.want], info.Gates)
		}
		if tc.want == habilis.ModeDescription && (d.Abstained || !m.Passed || m.GateScore != m.DescriptionScore) {
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
