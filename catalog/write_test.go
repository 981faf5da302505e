package catalog

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/habilis-router/habilis"
)

// TestWriteReadsBack checks that Parse reads back what OpenAI and MCP
// write, examples and an MCP title included.
func TestWriteReadsBack(t *testing.T) {
	tools := []habilis.Tool{
		{Name: "get_weather", Description: "The weather in a city now.", Examples: []string{"is it raining in Oslo", "weather in Lisbon"},
			InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
		{Name: "current_time", Description: "The time now.", Examples: []string{"what time is it"}},
	}
	want, err := Parse("tools.json", jsonOfTools(t, tools))
	if err != nil {
		t.Fatal(err)
	}
	openai := make([]OpenAIDef, len(want))
	mcp := make([]MCPDef, len(want))
	for i, tl := range want {
		openai[i], mcp[i] = OpenAI(tl), MCP(tl)
	}
	for name, data := range map[string][]byte{
		"openai": jsonOfTools(t, openai),
		"mcp":    jsonOfTools(t, map[string]any{"tools": mcp}),
	} {
		got, err := Parse(name+".json", data)
		if err != nil {
			t.Fatalf("%s: Parse: %v", name, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: read back (-want +got):\n%s", name, diff)
		}
	}
	titled := want[0]
	titled.Meta = map[string]string{"title": "Weather"}
	if d := MCP(titled); d.Title != "Weather" {
		t.Errorf("MCP(%s).Title = %q, want Weather", titled.Name, d.Title)
	}
	if s := string(Schema(habilis.Tool{Name: "bare"})); s != `{"type":"object"}` {
		t.Errorf("Schema of a tool without one = %s, want {\"type\":\"object\"}", s)
	}
}

func jsonOfTools(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
