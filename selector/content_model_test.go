package selector

import (
	"context"
	"hash/fnv"
	"math"
	"strings"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/store/memstore"
)

// hashedWords is a dense test embedder: one of 64 hashed dimensions a
// word, as testutil.WordEmbedder{Dim: 64}, which this package's own tests
// cannot import (testutil imports selector).
type hashedWords struct{}

func (hashedWords) Info() habilis.EmbedderInfo {
	return habilis.EmbedderInfo{Kind: "test", Model: "hashed-words", Dim: 64}
}

func (hashedWords) Embed(_ context.Context, texts []string, _ habilis.Purpose) ([]habilis.Vector, error) {
	out := make([]habilis.Vector, len(texts))
	for i, t := range texts {
		v := make([]float32, 64)
		for _, w := range strings.Fields(strings.ToLower(t)) {
			h := fnv.New32a()
			h.Write([]byte(strings.Trim(w, "?.,!'\"")))
			v[h.Sum32()%64]++
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

// TestPhrasedOnly checks where the phrasing rule holds (index.
// phrasedOnly): with the lexical embedder for every tool whatever its
// scores; with a model, in hybrid mode, for a tool without examples
// whose description score and evidence both stay near the background
// (below the bare gates' z, and below twice it), and never for a tool
// with examples or a request sharing a content word.
func TestPhrasedOnly(t *testing.T) {
	ctx := context.Background()
	tools := []habilis.Tool{
		{Name: "get_current_weather", Description: "Retrieves the current temperature and humidity for a specific location."},
		{Name: "chart_tool", Description: "Draws a chart of numbers.", Examples: []string{"plot these numbers", "draw a bar chart of sales", "make a pie chart"}},
		{Name: "send_email", Description: "Send an email to a recipient."},
	}
	const phrasing, sharing = "could you retrieve the comments for that domain, please", "retrieve the temperature in Oslo"
	routers := map[string]*Router{}
	for name, cfg := range map[string]Config{
		"lexical": {Embedder: lexical.New(lexical.Options{})},
		"model":   {Embedder: hashedWords{}, Lexical: lexical.New(lexical.Options{})},
	} {
		r, err := New(ctx, memstore.New(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Load(ctx, tools, LoadOptions{}); err != nil {
			t.Fatal(err)
		}
		routers[name] = r
	}
	zg := backgroundZ(len(tools), descriptionShare)
	tests := []struct {
		router, tool, query string
		mode                habilis.Mode
		zd, ze              float32 // where the signals sit, in background deviations
		want                bool
	}{
		{"lexical", "get_current_weather", phrasing, habilis.ModeHybrid, 9, 9, true},
		{"lexical", "get_current_weather", phrasing, habilis.ModeDescription, 9, 9, true},
		{"lexical", "get_current_weather", sharing, habilis.ModeHybrid, 0, 0, false},
		{"model", "get_current_weather", phrasing, habilis.ModeHybrid, zg - 0.1, 2*zg - 0.1, true},
		{"model", "get_current_weather", phrasing, habilis.ModeHybrid, zg + 0.05, 2*zg - 0.1, false},
		{"model", "get_current_weather", phrasing, habilis.ModeHybrid, zg - 0.1, 2*zg + 0.05, false},
		{"model", "get_current_weather", sharing, habilis.ModeHybrid, 0, 0, false},
		{"model", "get_current_weather", phrasing, habilis.ModeDescription, 0, 0, false},
		{"model", "chart_tool", phrasing, habilis.ModeHybrid, 0, 0, false},
	}
	for _, tt := range tests {
		ix := routers[tt.router].cur.Load()
		i := ix.byName[tt.tool]
		sg := signals{tool: i}
		if ix.hasBackground != nil && ix.hasBackground[i] {
			b := ix.background[i]
			sg.desc = b.Mean[bgDescription] + tt.zd*b.SD[bgDescription]
			sg.gateScore = b.Mean[bgEvidence] + tt.ze*b.SD[bgEvidence]
		}
		if got := ix.phrasedOnly(sg, ix.contentTerms(tt.query, tt.mode)); got != tt.want {
			t.Errorf("%s, %s, %s at z %.2f / %.2f, %q: phrasedOnly = %v, want %v", tt.router, tt.mode, tt.tool, tt.zd, tt.ze, tt.query, got, tt.want)
		}
	}
}
