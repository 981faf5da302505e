package selector_test

import (
	"context"
	"strings"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/memstore"
)

// TestPhrasingAloneFailsGate checks that a tool sharing only function
// words and common operations with a request fails its gate whatever its
// score, in every mode, that one sharing a content word (exactly, or by
// its 4-grams) does not, and that the abstention says why.
func TestPhrasingAloneFailsGate(t *testing.T) {
	ctx := context.Background()
	r, err := selector.New(ctx, memstore.New(), selector.Config{Embedder: lexical.New(lexical.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	tools := []habilis.Tool{
		{Name: "get_current_weather", Description: "Retrieves the current temperature and humidity for a specific location."},
		{Name: "chart_tool", Description: "Draws a chart of numbers."},
	}
	if _, err := r.Load(ctx, tools, selector.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	phrasing := "could you retrieve the comments for that domain, please"
	for _, mode := range []habilis.Mode{habilis.ModeHybrid, habilis.ModeDescription, habilis.ModeCentroid} {
		d, err := r.Select(ctx, phrasing, habilis.SelectOptions{K: 2, Mode: mode, FailOpen: true})
		if err != nil {
			t.Fatal(err)
		}
		if !d.Abstained {
			t.Errorf("%s: %q selected %v, want an abstention", mode, phrasing, d.Matches)
		}
		for _, m := range d.Matches {
			if m.Tool == "get_current_weather" {
				// The request's only shared word is rare among generic
				// requests: without the rule it would pass.
				if m.GateScore < m.Gate {
					t.Errorf("%s: get_current_weather gate score %.3f < gate %.3f: the test no longer shows the rule", mode, m.GateScore, m.Gate)
				}
				if m.Passed {
					t.Errorf("%s: get_current_weather passed on phrasing alone", mode)
				}
			}
		}
		if mode == habilis.ModeHybrid && !strings.Contains(d.Reason, "shares no word") {
			t.Errorf("reason %q does not say the best tool shares no word with the request", d.Reason)
		}
	}
	for q, want := range map[string]string{
		"retrieve the temperature in Oslo":        "get_current_weather",
		"make a flowchart of the release process": "chart_tool",
	} {
		d, err := r.Select(ctx, q, habilis.SelectOptions{K: 2})
		if err != nil {
			t.Fatal(err)
		}
		if d.Abstained || d.Matches[0].Tool != want {
			t.Errorf("%q: abstained %v (%s), matches %v; want %s", q, d.Abstained, d.Reason, d.Matches, want)
		}
	}
}
