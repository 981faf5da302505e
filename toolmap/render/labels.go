package render

import (
	"cmp"
	"image/color"
	"slices"

	"github.com/habilis-router/habilis/toolmap"
	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Costs of a label's overlaps, per square point: covering another label
// rules a place out; covering a tool is worse than covering an example.
const (
	costLabel   = 1e6
	costTool    = 20
	costExample = 2
)

// maxQueryLabel is how many characters of the request its label shows.
const maxQueryLabel = 48

// labels is a plotter that names the tools and the request. It tries eight
// places around each point, tools with the worst collisions first, and
// takes the one that covers least; a label that would cover another, or
// leave the map, is left out.
type labels struct {
	m  *toolmap.Map
	st *styles
	// placed reports, after Plot, which tools got a label.
	placed []bool
}

// box is a rectangle on the canvas.
type box struct{ min, max vg.Point }

func (a box) overlap(b box) float64 {
	w := min(a.max.X, b.max.X) - max(a.min.X, b.min.X)
	h := min(a.max.Y, b.max.Y) - max(a.min.Y, b.min.Y)
	if w <= 0 || h <= 0 {
		return 0
	}
	return float64(w * h)
}

func around(pt vg.Point, r vg.Length) box {
	return box{vg.Point{X: pt.X - r, Y: pt.Y - r}, vg.Point{X: pt.X + r, Y: pt.Y + r}}
}

// Plot implements plot.Plotter.
func (l *labels) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	at := func(x, y float64) vg.Point { return vg.Point{X: trX(x), Y: trY(y)} }
	pl := &placer{canvas: box{c.Min, c.Max}}
	for _, t := range l.m.Tools {
		pl.tools = append(pl.tools, around(at(t.X, t.Y), vg.Points(toolRadius+1)))
	}
	for _, e := range l.m.Examples {
		pl.examples = append(pl.examples, around(at(e.X, e.Y), vg.Points(exampleRadius+0.5)))
	}
	sty := text.Style{Color: black, Font: font.From(sans, 9.5), Handler: p.TextHandler}
	if q := l.m.Query; q != nil {
		pt := at(q.X, q.Y)
		pl.tools = append(pl.tools, around(pt, vg.Points(queryRadius+1)))
		qs := sty
		qs.Font.Style = xfont.StyleItalic
		if b, ok := pl.place(qs, quote(q.Text), pt, vg.Points(queryRadius+2)); ok {
			drawLabel(c, qs, quote(q.Text), b)
		}
	}
	l.placed = make([]bool, len(l.m.Tools))
	for _, i := range l.order() {
		t := l.m.Tools[i]
		ts := sty
		ts.Color = darker(l.st.color[i])
		if b, ok := pl.place(ts, t.Name, at(t.X, t.Y), vg.Points(toolRadius+2)); ok {
			drawLabel(c, ts, t.Name, b)
			l.placed[i] = true
		}
	}
}

// order returns the tools' indexes, those with the worst collisions
// first, then by name.
func (l *labels) order() []int {
	out := make([]int, len(l.m.Tools))
	for i := range out {
		out[i] = i
	}
	slices.SortStableFunc(out, func(a, b int) int {
		return cmp.Compare(l.m.Tools[b].Worst.Rank(), l.m.Tools[a].Worst.Rank())
	})
	return out
}

func quote(s string) string {
	r := []rune(s)
	if len(r) > maxQueryLabel {
		s = string(r[:maxQueryLabel-1]) + "…"
	}
	return "“" + s + "”"
}

// darker returns c at three quarters of its brightness, so that a label
// in its tool's colour reads well on white.
func darker(c color.RGBA) color.RGBA {
	return color.RGBA{R: c.R / 4 * 3, G: c.G / 4 * 3, B: c.B / 4 * 3, A: c.A}
}

// drawLabel draws txt in b over a white background that keeps it legible
// across lines and tints.
func drawLabel(c draw.Canvas, sty text.Style, txt string, b box) {
	pad := vg.Points(1)
	c.FillPolygon(color.NRGBA{R: 255, G: 255, B: 255, A: 0xc8}, []vg.Point{
		{X: b.min.X - pad, Y: b.min.Y}, {X: b.max.X + pad, Y: b.min.Y},
		{X: b.max.X + pad, Y: b.max.Y}, {X: b.min.X - pad, Y: b.max.Y},
	})
	r := sty.Rectangle(txt)
	c.FillText(sty, vg.Point{X: b.min.X - r.Min.X, Y: b.min.Y - r.Min.Y}, txt)
}

// placer finds places for labels among what is already drawn.
type placer struct {
	canvas   box
	tools    []box
	examples []box
	labels   []box
}

// place returns where a label for the point pt (whose glyph reaches gap
// from it) covers least, and reserves it; ok is false when every place
// covers another label or leaves the canvas.
func (pl *placer) place(sty text.Style, txt string, pt vg.Point, gap vg.Length) (box, bool) {
	r := sty.Rectangle(txt)
	w, h := r.Max.X-r.Min.X, r.Max.Y-r.Min.Y
	d := gap * 0.75
	// Lower left corners: right, left, above, below, then the diagonals.
	corners := []vg.Point{
		{X: pt.X + gap, Y: pt.Y - h/2}, {X: pt.X - gap - w, Y: pt.Y - h/2},
		{X: pt.X - w/2, Y: pt.Y + gap}, {X: pt.X - w/2, Y: pt.Y - gap - h},
		{X: pt.X + d, Y: pt.Y + d}, {X: pt.X - d - w, Y: pt.Y + d},
		{X: pt.X + d, Y: pt.Y - d - h}, {X: pt.X - d - w, Y: pt.Y - d - h},
	}
	best, bestCost := box{}, costLabel
	for k, c := range corners {
		b := box{c, vg.Point{X: c.X + w, Y: c.Y + h}}
		if b.min.X < pl.canvas.min.X || b.min.Y < pl.canvas.min.Y || b.max.X > pl.canvas.max.X || b.max.Y > pl.canvas.max.Y {
			continue
		}
		cost := float64(k) * 1e-3
		for _, o := range pl.labels {
			cost += costLabel * b.overlap(o)
		}
		for _, o := range pl.tools {
			cost += costTool * b.overlap(o)
		}
		for _, o := range pl.examples {
			cost += costExample * b.overlap(o)
		}
		if cost < bestCost {
			best, bestCost = b, cost
		}
	}
	if bestCost >= costLabel {
		return box{}, false
	}
	pl.labels = append(pl.labels, best)
	return best, true
}
