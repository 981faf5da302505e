package api

import (
	"encoding/json"
	"testing"

	"github.com/habilis-router/habilis"
)

// TestRenderTool checks the definitions a model is given: the tool's own
// fields in the shape asked for, a schema even when the tool has none, and
// neither the examples nor the title that a catalog export carries.
func TestRenderTool(t *testing.T) {
	tool := habilis.Tool{Name: "get_weather", Description: "Weather now.", Examples: []string{"is it raining"}, Meta: map[string]string{"title": "Weather"}}
	withSchema := tool
	withSchema.InputSchema = json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)
	tests := []struct {
		tool  habilis.Tool
		shape string
		want  string
	}{
		{tool, shapeOpenAI, `{"type":"function","function":{"name":"get_weather","description":"Weather now.","parameters":{"type":"object"}}}`},
		{tool, shapeMCP, `{"name":"get_weather","description":"Weather now.","inputSchema":{"type":"object"}}`},
		{withSchema, shapeOpenAI, `{"type":"function","function":{"name":"get_weather","description":"Weather now.","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}`},
	}
	for _, tt := range tests {
		if got := string(renderTool(&tt.tool, tt.shape)); got != tt.want {
			t.Errorf("renderTool(%s, %s) = %s, want %s", tt.tool.Name, tt.shape, got, tt.want)
		}
		// tt.tool is the tool renderTool was given; tool, which the table
		// copied, could not change.
		if tt.tool.Examples == nil || tt.tool.Meta == nil {
			t.Error("renderTool changed the tool it was given")
		}
	}
}
