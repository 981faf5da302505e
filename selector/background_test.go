package selector_test

import (
	"context"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/catalog"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/memstore"
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

// TestModelGates loads catalogs with a dense embedder beside the lexical
// one: hybrid mode gates every tool on its evidence (the Rocchio or
// description score weighed with the document's) against the background,
// tools without examples included, while description mode keeps the
// gates calibrated from the examples.
func TestModelGates(t *testing.T) {
	bare, err := catalog.Parse("tools.json", []byte(bareCatalog))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		tools []habilis.Tool
	}{
		{"with examples, and one without", testCatalog(t)},
		{"descriptions only", bare},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			r, err := selector.New(ctx, memstore.New(), selector.Config{Embedder: &wordEmbedder{}, Lexical: lexical.New(lexical.Options{})})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Load(ctx, tc.tools, selector.LoadOptions{}); err != nil {
				t.Fatal(err)
			}
			cal := r.Calibration()
			if cal.DocumentWeight <= 0 || len(cal.Background) != len(tc.tools) {
				t.Fatalf("calibration: document weight %v, %d backgrounds; want a positive weight and %d", cal.DocumentWeight, len(cal.Background), len(tc.tools))
			}
			checkModelGates(t, r, cal)
		})
	}
}

// checkModelGates selects a few requests in hybrid and description modes
// and checks each match's gate against the tool's and the calibration.
func checkModelGates(t *testing.T, r *selector.Router, cal selector.Calibration) {
	t.Helper()
	ctx := context.Background()
	n := len(r.Tools())
	for _, q := range []string{"what's the weather in Oslo", "send an email to Ann", "tell me a joke"} {
		for _, mode := range []habilis.Mode{habilis.ModeHybrid, habilis.ModeDescription} {
			d, err := r.Select(ctx, q, habilis.SelectOptions{Mode: mode, K: n, FailOpen: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Matches) == 0 {
				t.Fatalf("Select(%q, %s, fail-open) = no matches", q, mode)
			}
			for _, m := range d.Matches {
				info, err := r.Tool(m.Tool)
				if err != nil {
					t.Fatal(err)
				}
				if m.Gate != info.Gates[mode] {
					t.Errorf("Select(%q, %s) match %s: gate %v, tools show says %v", q, mode, m.Tool, m.Gate, info.Gates[mode])
				}
				switch {
				case mode == habilis.ModeDescription:
					// The background's rule was measured for hybrid mode only.
					if m.Gate != cal.DescriptionThreshold || m.GateScore != m.DescriptionScore {
						t.Errorf("Select(%q, description) match %s: gate %v on %v, want %v on the description score %v", q, m.Tool, m.Gate, m.GateScore, cal.DescriptionThreshold, m.DescriptionScore)
					}
				case len(info.Tool.Examples) > 0:
					if want := max(cal.HybridThreshold, cal.Background[m.Tool].Gates(n)[2]); m.Gate != want {
						t.Errorf("Select(%q, hybrid) match %s: gate %v, want %v", q, m.Tool, m.Gate, want)
					}
				default:
					bg := cal.Background[m.Tool]
					if m.Gate <= bg.Mean[2] || m.GateScore == m.DescriptionScore {
						t.Errorf("Select(%q, hybrid) match %s: gate %v on %v, want above the background's mean %v on the evidence, not the description score %v", q, m.Tool, m.Gate, m.GateScore, bg.Mean[2], m.DescriptionScore)
					}
				}
			}
		}
	}
}
