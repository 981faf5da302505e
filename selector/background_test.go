package selector_test

import (
	"context"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/catalog"
	"github.com/habilis-router/habilis/selector"
)

// bareCatalog is three OpenAI function tools, as users bring them: a name,
// a description and a schema, no examples.
const bareCatalog = `[
 {"type": "function", "function": {"name": "get_weather", "description": "Get current weather for a city", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}}, "required": ["city"]}}},
 {"type": "function", "function": {"name": "send_email", "description": "Send an email to a recipient", "parameters": {"type": "object", "properties": {"to": {"type": "string"}, "subject": {"type": "string"}, "body": {"type": "string"}}, "required": ["to"]}}},
 {"type": "function", "function": {"name": "read_file", "description": "Read the complete contents of a file from the file system", "parameters": {"type": "object", "properties": {"path": {"type": "string", "description": "Path of the file"}}, "required": ["path"]}}}
]`

func TestBareCatalogRoutesAndAbstains(t *testing.T) {
	tools, err := catalog.Parse("tools.json", []byte(bareCatalog))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := open(t)
	ctx := context.Background()
	rep, err := r.Load(ctx, tools, selector.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Bare != 3 || rep.MedianExamples != 0 {
		t.Errorf("Load report: %d bare tools, median %d examples; want 3 and 0", rep.Bare, rep.MedianExamples)
	}
	cal := r.Calibration()
	for _, tool := range tools {
		bg, ok := cal.Background[tool.Name]
		if !ok || bg.Gates(len(tools))[0] <= 0 {
			t.Errorf("background of %s = %+v (%v), want a positive description gate", tool.Name, bg, ok)
		}
	}
	for _, tt := range []struct{ query, want string }{
		{"what's the weather in Oslo", "get_weather"},
		{"show me what is in the file /etc/hosts", "read_file"},
		{"email Ann that I am running late", "send_email"},
		{"write me a sonnet about the sea in the style of Shakespeare", ""},
		{"tell me a joke", ""},
		{"how do I bake sourdough bread", ""},
	} {
		for _, mode := range []habilis.Mode{habilis.ModeHybrid, habilis.ModeDescription, habilis.ModeCentroid} {
			d, err := r.Select(ctx, tt.query, habilis.SelectOptions{Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			var got string
			if !d.Abstained {
				got = d.Matches[0].Tool
			}
			if got != tt.want {
				t.Errorf("Select(%q, %s) = %q (%s), want %q", tt.query, mode, got, d.Reason, tt.want)
			}
			for _, m := range d.Matches {
				// Every mode gates a tool without examples on its
				// description score against the background.
				if want := max(cal.DescriptionThreshold, cal.Background[m.Tool].Gates(len(tools))[0]); m.Gate != want || m.GateScore != m.DescriptionScore {
					t.Errorf("Select(%q, %s) match %s: gate %v on %v, want %v on the description score %v", tt.query, mode, m.Tool, m.Gate, m.GateScore, want, m.DescriptionScore)
				}
			}
		}
	}
}

func TestBackgroundGateGrowsWithTheCatalog(t *testing.T) {
	// One tool alone, then among many: the same tool's description gate
	// rises with the catalog, since each tool may let fewer generic
	// requests through when there are more tools to pass.
	tools, err := catalog.Parse("tools.json", []byte(bareCatalog))
	if err != nil {
		t.Fatal(err)
	}
	gate := func(ts []habilis.Tool) float32 {
		r, _ := open(t)
		if _, err := r.Load(context.Background(), ts, selector.LoadOptions{}); err != nil {
			t.Fatal(err)
		}
		return r.Calibration().Background["get_weather"].Gates(len(ts))[0]
	}
	alone := gate(tools[:1])
	many := append([]habilis.Tool{}, tools...)
	for _, n := range []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"} {
		many = append(many, habilis.Tool{Name: n, Description: "Look up " + n + " records", InputSchema: []byte(`{"type":"object"}`)})
	}
	among := gate(many)
	if !(among > alone) {
		t.Errorf("get_weather's description gate: alone %v, among %d tools %v; want it higher among many", alone, len(many), among)
	}
}

func TestToolGatesAreTheGatesSelectApplies(t *testing.T) {
	r, _ := loaded(t)
	ctx := context.Background()
	for _, mode := range []habilis.Mode{habilis.ModeDescription, habilis.ModeCentroid, habilis.ModeHybrid} {
		d, err := r.Select(ctx, "send an email to dave about the weather in Lisbon", habilis.SelectOptions{Mode: mode, K: 100, FailOpen: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Matches) != len(r.Tools()) {
			t.Fatalf("Select(%s, fail-open, k=100) = %d matches, want every tool", mode, len(d.Matches))
		}
		for _, m := range d.Matches {
			info, err := r.Tool(m.Tool)
			if err != nil {
				t.Fatal(err)
			}
			if g := info.Gates[mode]; g != m.Gate {
				t.Errorf("%s: Tool(%s).Gates = %v, but Select applied gate %v", mode, m.Tool, g, m.Gate)
			}
			if info.Threshold != info.Gates[habilis.ModeCentroid] {
				t.Errorf("Tool(%s).Threshold = %v, want its centroid gate %v", m.Tool, info.Threshold, info.Gates[habilis.ModeCentroid])
			}
		}
	}
}
