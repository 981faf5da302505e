package api

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/fill"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/selector"
)

// everyField fails the test when a field of v is unset.
func everyField(t *testing.T, name string, v any) {
	t.Helper()
	if u := testutil.Unset(v); len(u) > 0 {
		t.Errorf("%s leaves %v unset: set every field, so that the round trip covers it", name, u)
	}
}

func margin(x float32) *float32 { return &x }

// TestConvertRoundTrip converts a value of every type the API carries,
// each field set, to its message and back, and checks that the client
// reads what the server wrote: a field added to a type and not to its
// message fails it.
func TestConvertRoundTrip(t *testing.T) {
	tool := habilis.Tool{Name: "get_weather", Description: "Weather in a city.", Examples: []string{"rain in Oslo?"},
		InputSchema: json.RawMessage(`{"type":"object"}`), Margin: margin(0.1), Executor: json.RawMessage(`{"http":{"url":"http://x"}}`),
		Meta: map[string]string{"owner": "ops"}}
	d := &habilis.Decision{Query: "rain in Oslo", Mode: habilis.ModeCentroid, Abstained: true, Reason: "why", Ambiguous: true, CatalogVersion: 7,
		Matches: []habilis.Match{{Tool: "get_weather", Score: 0.5, CentroidScore: 0.4, DescriptionScore: 0.3, ExampleScore: 0.2, Radius: 0.6,
			RadiusSource: "examples", Margin: 0.1, Passed: true, Gate: 0.35, GateScore: 0.45, Confidence: 0.7, CollidesWith: []string{"forecast"}, Pinned: true}}}
	info := &selector.ToolInfo{Tool: tool, Hash: "abc", Radius: 0.6, RadiusSource: "examples", RadiusExample: "rain in Oslo?", Margin: 0.1,
		Threshold: 0.5, Gates: map[habilis.Mode]float32{habilis.ModeHybrid: 0.2}, FallbackGate: 0.07, GateScores: map[habilis.Mode]string{habilis.ModeHybrid: "evidence"}, FallbackGateScore: "description score", CollidesWith: []string{"forecast"}}
	rep := &selector.LoadReport{Added: []string{"a"}, Updated: []string{"u"}, Removed: []string{"r"}, Unchanged: 1, Embedded: 2, Reused: 3,
		Version: 4, Tools: 5, Examples: 6, MedianExamples: 7, Bare: 8, Duration: 9 * time.Millisecond}
	col := &habilis.Collision{A: "a", B: "b", CentroidSimilarity: 0.9, Overlap: 0.1, Severity: habilis.SeverityHigh, MisroutesAB: 1, MisroutesBA: 2,
		MisrouteRate: 0.25, NearestAB: 3, NearestBA: 4, Leaks: []habilis.Leak{{From: "a", Into: "b", Example: "x", Score: 0.8, OwnScore: 0.7, RanksFirst: true, PassesGate: true}}}
	for name, v := range map[string]any{"Tool": tool, "Decision": d, "ToolInfo": info, "LoadReport": rep, "Collision": col} {
		everyField(t, name, v)
	}
	if diff := cmp.Diff(tool, toolFromProto(toolToProto(&tool))); diff != "" {
		t.Errorf("Tool round trip (-sent +read):\n%s", diff)
	}
	if diff := cmp.Diff(d, decisionFromProto(decisionToProto(d))); diff != "" {
		t.Errorf("Decision round trip (-sent +read):\n%s", diff)
	}
	if diff := cmp.Diff(info, toolInfoFromProto(toolInfoToProto(info))); diff != "" {
		t.Errorf("ToolInfo round trip (-sent +read):\n%s", diff)
	}
	if diff := cmp.Diff(rep, reportFromProto(reportToProto(rep))); diff != "" {
		t.Errorf("LoadReport round trip (-sent +read):\n%s", diff)
	}
	if diff := cmp.Diff(*col, collisionFromProto(collisionToProto(col))); diff != "" {
		t.Errorf("Collision round trip (-sent +read):\n%s", diff)
	}
}

// TestConvertFillRoundTrip is TestConvertRoundTrip for a fill's result and
// a tool's, whose values travel as JSON (numbers come back as float64).
// ToolResult.Ran travels beside the result (InvokeResponse.ran).
func TestConvertFillRoundTrip(t *testing.T) {
	fr := &fill.Result{Tool: "get_weather", Arguments: map[string]any{"city": "Oslo", "days": 3.0},
		FilledBy: map[string]string{"city": "extractor"}, Rejected: []fill.Rejection{{Path: "unit", Value: "K", Reason: "not in the request", By: "model"}},
		Missing:  []fill.MissingArg{{Name: "date", Description: "the day", Question: "Which day?"}},
		Problems: []fill.Problem{{Path: "days", Message: "above 2"}}, Defaults: map[string]any{"unit": "C"},
		Errors: []fill.FillerError{{Filler: "ollama", Error: "down"}}, Complete: true}
	res := &habilis.ToolResult{Content: []habilis.Content{{Type: "text", Text: "rain", MimeType: "text/plain", Data: "cmFpbg==", URI: "file:///r",
		Name: "r", Resource: json.RawMessage(`{"uri":"file:///r"}`)}}, StructuredContent: map[string]any{"rain": true}, IsError: true,
		SelectionOnly: true, Ran: true, Truncated: true}
	everyField(t, "fill.Result", fr)
	everyField(t, "ToolResult", res)
	p, err := fillToProto(fr)
	if err != nil {
		t.Fatal(err)
	}
	got, err := fillFromProto(p)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fr, got); diff != "" {
		t.Errorf("fill.Result round trip (-sent +read):\n%s", diff)
	}
	rp, err := resultToProto(res)
	if err != nil {
		t.Fatal(err)
	}
	back, err := resultFromProto(rp)
	if err != nil {
		t.Fatal(err)
	}
	back.Ran = true
	if diff := cmp.Diff(res, back); diff != "" {
		t.Errorf("ToolResult round trip (-sent +read):\n%s", diff)
	}
}
