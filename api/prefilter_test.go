package api

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	habilisv1 "github.com/habilis-router/habilis/api/habilis/v1"
	"github.com/habilis-router/habilis/catalog"
	"github.com/habilis-router/habilis/embed/lexical"
	"google.golang.org/protobuf/testing/protocmp"
)

func TestInlineCache(t *testing.T) {
	c := newInlineCache(2)
	ix := func(data string) *inlineIndex { return &inlineIndex{data: data} }
	for _, d := range []string{"a", "b"} {
		c.put(c.key(d), ix(d))
	}
	if got := c.get(c.key("a"), "a"); got == nil || got.data != "a" {
		t.Errorf("get(a) = %v, want a's index", got)
	}
	c.put(c.key("c"), ix("c")) // evicts b, the least recently used
	for _, tt := range []struct {
		data string
		want bool
	}{{"a", true}, {"b", false}, {"c", true}} {
		if got := c.get(c.key(tt.data), tt.data) != nil; got != tt.want {
			t.Errorf("get(%s) found = %v, want %v", tt.data, got, tt.want)
		}
	}
	// Bytes that differ under an equal key are not a hit.
	if got := c.get(c.key("a"), "not a"); got != nil {
		t.Errorf("get(a's key, other bytes) = %v, want nil", got)
	}
	off := newInlineCache(-1)
	off.put(off.key("a"), ix("a"))
	if got := off.get(off.key("a"), "a"); got != nil {
		t.Errorf("disabled cache kept an index")
	}
}

// TestPrefilterCached checks that a catalog served from the cache answers
// as one indexed afresh, and that another catalog is not confused with it.
func TestPrefilterCached(t *testing.T) {
	r := newRouter(t, testTools(t))
	ctx := context.Background()
	_, catalog := openAICatalog(t, testTools(t))
	req := &habilisv1.PrefilterRequest{Query: "send an e-mail message to Ann", ToolsJson: string(catalog), K: 2, Mode: "description"}
	cached := NewServer(r, ServerOptions{InlineEmbedder: lexical.New(lexical.Options{})})
	fresh := NewServer(r, ServerOptions{InlineEmbedder: lexical.New(lexical.Options{}), InlineCacheSize: -1})
	want, err := fresh.Prefilter(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if i > 0 && cached.inlines.get(cached.inlines.key(req.ToolsJson), req.ToolsJson) == nil {
			t.Fatalf("Prefilter %d: the catalog is not in the inline cache", i+1)
		}
		got, err := cached.Prefilter(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
			t.Errorf("Prefilter from the cache (-fresh +cached):\n%s", diff)
		}
	}
	other, err := json.Marshal([]map[string]any{{"type": "function", "function": map[string]any{"name": "ping", "description": "Check that a host answers."}}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := cached.Prefilter(ctx, &habilisv1.PrefilterRequest{Query: "send an e-mail", ToolsJson: string(other), FailOpen: true})
	if err != nil {
		t.Fatal(err)
	}
	if d := decisionFromProto(got.GetDecision()); len(d.Matches) != 1 || d.Matches[0].Tool != "ping" {
		t.Errorf("Prefilter(other catalog) = %+v, want ping alone", d)
	}
}

// TestPrefilterInlineOtherShape asks for an inline catalog in a shape other
// than its own: every definition is written afresh in that shape, before
// and after are estimated on the written ones, and the catalog served from
// the cache answers the same.
func TestPrefilterInlineOtherShape(t *testing.T) {
	_, _, c := fixture(t)
	ctx := context.Background()
	_, inline := openAICatalog(t, testTools(t))
	tools, err := catalog.Parse("catalog", inline)
	if err != nil {
		t.Fatal(err)
	}
	before := int64(494) // testDefs, written for MCP
	want := map[string]string{}
	for _, tool := range tools {
		want[tool.Name] = testDefs[tool.Name].mcp(tool.Name)
	}
	var first *Prefiltered
	for range 2 {
		got, err := c.Prefilter(ctx, PrefilterRequest{Query: "send an e-mail message to Ann", Catalog: inline, Shape: shapeMCP, Options: habilis.SelectOptions{K: 2}})
		if err != nil {
			t.Fatal(err)
		}
		var list struct{ Tools []json.RawMessage }
		if err := json.Unmarshal(got.Tools, &list); err != nil {
			t.Fatalf("Prefilter(shape mcp) tools %s: %v", got.Tools, err)
		}
		if got.Shape != shapeMCP || len(list.Tools) != len(got.Decision.Matches) || len(list.Tools) == 0 {
			t.Fatalf("Prefilter(shape mcp) = shape %q, tools %s, want mcp with one definition a match", got.Shape, got.Tools)
		}
		for i, m := range got.Decision.Matches {
			if string(list.Tools[i]) != want[m.Tool] {
				t.Errorf("Prefilter(shape mcp) definition %d = %s, want %s", i, list.Tools[i], want[m.Tool])
			}
		}
		if got.TokensBefore != before {
			t.Errorf("Prefilter(shape mcp) tokens_before = %d, want %d", got.TokensBefore, before)
		}
		if first == nil {
			first = got
		} else if diff := cmp.Diff(first, got); diff != "" {
			t.Errorf("Prefilter(shape mcp) again (-first +again):\n%s", diff)
		}
	}
}
