package selector

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/store/memstore"
)

func TestNoToolConfidence(t *testing.T) {
	tests := []struct {
		c, nearest float32
		weight     float64
		want       float32
	}{
		{0.5, 0, 10, 0.5},
		{0.9, 0, 4, 0.9},
		{0.5, 0.1, 10, float32(1 / (1 + math.E))},
		{0, 0.2, 4, 0},
		{1, 0.2, 4, 1},
	}
	for _, tt := range tests {
		if got := noToolConfidence(tt.c, tt.nearest, tt.weight); math.Abs(float64(got-tt.want)) > 1e-5 {
			t.Errorf("noToolConfidence(%v, %v, %v) = %v, want %v", tt.c, tt.nearest, tt.weight, got, tt.want)
		}
	}
	if a, b := noToolConfidence(0.7, 0.1, 10), noToolConfidence(0.7, 0.3, 10); a <= b {
		t.Errorf("noToolConfidence at nearest 0.1 = %v, at 0.3 = %v: want it to fall", a, b)
	}
}

// TestNearestGeneric checks that a request found among the background
// requests is nearer to them than a request for a tool, and that a router
// without a lexical embedder measures nothing.
func TestNearestGeneric(t *testing.T) {
	ctx := context.Background()
	r, err := New(ctx, memstore.New(), Config{Embedder: lexical.New(lexical.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	tools := []habilis.Tool{
		{Name: "get_weather", Description: "Get current weather for a city"},
		{Name: "send_email", Description: "Send an email to a recipient"},
	}
	if _, err := r.Load(ctx, tools, LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	ix := r.cur.Load()
	nearest := func(q string) float32 {
		vs, err := ix.lex.Embed(ctx, []string{q}, habilis.Query)
		if err != nil {
			t.Fatal(err)
		}
		return ix.nearestGeneric(vs[0])
	}
	generic := strings.SplitN(backgroundText, "\n", 2)[0]
	g, w := nearest(generic), nearest("get_weather Oslo")
	if g <= w || g < 0.5 {
		t.Errorf("nearest generic request: %.3f for one of them, %.3f for get_weather Oslo; want the first above 0.5 and the second", g, w)
	}
	bare := &index{generic: new(genericSpace)}
	if got := bare.nearestGeneric(habilis.Vector{Indices: []uint32{1}, Values: []float32{1}}); got != 0 {
		t.Errorf("nearestGeneric without a lexical embedder = %v, want 0", got)
	}
}
