package selector_test

import (
	"context"
	"hash/fnv"
	"math"
	"strings"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/memstore"
)

// conceptEmbedder is a tiny semantic model: each word is one of 256
// hashed dimensions, but the words of a concept (synonyms) share one, so
// that it matches requests to tools in other words, as a real model does.
type conceptEmbedder struct{ concepts map[string]string }

func (e conceptEmbedder) Info() habilis.EmbedderInfo {
	return habilis.EmbedderInfo{Kind: "test", Model: "concepts", Dim: 256}
}

func (e conceptEmbedder) Embed(_ context.Context, texts []string, _ habilis.Purpose) ([]habilis.Vector, error) {
	out := make([]habilis.Vector, len(texts))
	for i, t := range texts {
		v := make([]float32, 256)
		for _, w := range strings.Fields(strings.ToLower(t)) {
			w = strings.Trim(w, "?.,!'\"")
			if c, ok := e.concepts[w]; ok {
				w = c
			}
			h := fnv.New32a()
			h.Write([]byte(w))
			v[h.Sum32()%256]++
		}
		v[0] += 0.1 // no zero vector
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		for j := range v {
			v[j] /= float32(math.Sqrt(n))
		}
		out[i] = habilis.Vector{Dense: v}
	}
	return out, nil
}

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
	model := conceptEmbedder{concepts: map[string]string{"high": "elevation", "altitude": "elevation", "height": "elevation"}}
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
