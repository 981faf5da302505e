package selector_test

import (
	"context"
	"strings"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/memstore"
)

// TestPhrasingAloneWithAModel checks the phrasing rule in a model
// catalog without examples: a tool that shares only phrasing with a
// request, and that the model does not vouch for, fails its gate though
// its evidence reaches it; a request that names a tool in other words
// goes to it, where the lexical embedder alone refuses it for sharing no
// word.
func TestPhrasingAloneWithAModel(t *testing.T) {
	ctx := context.Background()
	tools := []habilis.Tool{
		{Name: "get_current_weather", Description: "Retrieves the current temperature and humidity for a specific location."},
		{Name: "get_elevation", Description: "Get elevation data for locations on the earth."},
		{Name: "chart_tool", Description: "Draws a chart of numbers."},
		{Name: "send_email", Description: "Send an email to a recipient."},
		{Name: "play_music", Description: "Play a song or a playlist."},
		{Name: "translate_text", Description: "Translate text into another language."},
	}
	// A tiny semantic model: the words of a concept share one dimension.
	model := testutil.WordEmbedder{Dim: 256, Synonyms: map[string]string{"high": "elevation", "altitude": "elevation", "height": "elevation"}}
	routers := map[string]*selector.Router{}
	for name, cfg := range map[string]selector.Config{
		"lexical": {Embedder: lexical.New(lexical.Options{})},
		"model":   {Embedder: model, Lexical: lexical.New(lexical.Options{})},
	} {
		r, err := selector.New(ctx, memstore.New(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Load(ctx, tools, selector.LoadOptions{}); err != nil {
			t.Fatal(err)
		}
		routers[name] = r
	}
	phrasing := "could you retrieve the comments for that domain, please"
	d, err := routers["model"].Select(ctx, phrasing, habilis.SelectOptions{K: 3, FailOpen: true})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Abstained || !strings.Contains(d.Reason, "shares no word") {
		t.Errorf("model: %q: abstained %v (%s), want an abstention for sharing no word", phrasing, d.Abstained, d.Reason)
	}
	for _, m := range d.Matches {
		if m.Tool == "get_current_weather" && (m.GateScore < m.Gate || m.Passed) {
			t.Errorf("model: get_current_weather gate score %.3f, gate %.3f, passed %v: want it refused above its gate", m.GateScore, m.Gate, m.Passed)
		}
	}
	other := "get me the altitude of Denver"
	if d, err = routers["lexical"].Select(ctx, other, habilis.SelectOptions{K: 3}); err != nil {
		t.Fatal(err)
	}
	if !d.Abstained || !strings.Contains(d.Reason, "shares no word") {
		t.Errorf("lexical: %q: abstained %v (%s), want an abstention for sharing no word", other, d.Abstained, d.Reason)
	}
	if d, err = routers["model"].Select(ctx, other, habilis.SelectOptions{K: 3}); err != nil {
		t.Fatal(err)
	}
	if d.Abstained || d.Matches[0].Tool != "get_elevation" {
		t.Errorf("model: %q: abstained %v (%s), matches %v; want get_elevation", other, d.Abstained, d.Reason, d.Matches)
	}
}
