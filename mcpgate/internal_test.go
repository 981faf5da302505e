package mcpgate

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/habilis-router/habilis/internal/testutil"
)

func TestTailWriter(t *testing.T) {
	logs := &testutil.Buffer{}
	w := &tailWriter{logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	for _, chunk := range []string{"starting\n", "\n", "half a ", "line\r\nwarning: x\n", strings.Repeat("z", maxLine+10), "\nlast\n"} {
		if n, err := w.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", chunk, n, err)
		}
	}
	if got, want := w.last(), "warning: x | "+strings.Repeat("z", maxLine)+" | last"; got != want {
		t.Errorf("last() = %.80q..., want %.80q...", got, want)
	}
	for _, want := range []string{`line=starting`, `line="half a line"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logs)
		}
	}
}

func TestCapResult(t *testing.T) {
	small := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}, StructuredContent: map[string]any{"a": 1}}
	if got := capResult(small, 1000); got != small {
		t.Errorf("a result under the limit was copied")
	}
	big := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{
		&mcp.TextContent{Text: "first"},
		&mcp.TextContent{Text: strings.Repeat("é", 400)},
		&mcp.ImageContent{Data: make([]byte, 10), MIMEType: "image/png"},
	}}
	got := capResult(big, 300)
	if !got.IsError || len(got.Content) != 3 {
		t.Fatalf("capResult = isError %v, %d items; want the error kept, the first text, the cut text and a note", got.IsError, len(got.Content))
	}
	if text := got.Content[1].(*mcp.TextContent).Text; len(text) > 300 || !strings.HasPrefix(text, "éé") || strings.ToValidUTF8(text, "?") != text {
		t.Errorf("cut text = %d bytes %.20q, want a valid prefix under 300 bytes", len(text), text)
	}
	b, _ := json.Marshal(got)
	if len(b) > 300+200 {
		t.Errorf("capped result is %d bytes", len(b))
	}
	// What comes after the first item that does not fit is left out, so
	// the agent reads a prefix of the result: an image that does not fit
	// is dropped whole.
	image := &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: "caption"},
		&mcp.ImageContent{Data: make([]byte, 500), MIMEType: "image/png"},
		&mcp.TextContent{Text: "after"},
	}}
	got = capResult(image, 300)
	if len(got.Content) != 2 || got.Content[0].(*mcp.TextContent).Text != "caption" || !strings.Contains(got.Content[1].(*mcp.TextContent).Text, "cut") {
		t.Errorf("capResult with an image over the limit = %d items", len(got.Content))
	}
}

func TestCutUTF8(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{{"abc", 5, "abc"}, {"abc", 2, "ab"}, {"éé", 3, "é"}, {"éé", 1, ""}, {"日本", 4, "日"}} {
		if got := cutUTF8(tc.s, tc.n); got != tc.want {
			t.Errorf("cutUTF8(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

func TestDescribeAndSchema(t *testing.T) {
	for _, tc := range []struct {
		tool *mcp.Tool
		want string
	}{
		{&mcp.Tool{Name: "x", Description: "  Does x  ", Title: "X"}, "Does x"},
		{&mcp.Tool{Name: "x", Title: "The X tool"}, "The X tool"},
		{&mcp.Tool{Name: "x", Annotations: &mcp.ToolAnnotations{Title: "Annotated"}}, "Annotated"},
		{&mcp.Tool{Name: "get_file-info.v2"}, "get file info v2"},
	} {
		if got := describe(tc.tool); got != tc.want {
			t.Errorf("describe(%+v) = %q, want %q", tc.tool, got, tc.want)
		}
	}
	for _, tc := range []struct {
		schema any
		want   string
	}{
		{nil, `{"type":"object"}`},
		{map[string]any{"type": "object", "properties": map[string]any{}}, `{"properties":{},"type":"object"}`},
		{"not a schema", `{"type":"object"}`},
	} {
		if diff := cmp.Diff(tc.want, string(objectSchema(tc.schema))); diff != "" {
			t.Errorf("objectSchema(%v) (-want +got):\n%s", tc.schema, diff)
		}
	}
}
