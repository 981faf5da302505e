package render

import (
	"fmt"
	"image/color"
	"math"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/toolmap"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// palette holds the tools' colours: ColorBrewer's Dark2 without its
// orange and yellow, which the severity lines and the request use, and
// with Paired's dark blue and violet; dark enough for white labels'
// backgrounds and for small dots.
var palette = []color.RGBA{
	{0x1b, 0x9e, 0x77, 0xff}, {0x75, 0x70, 0xb3, 0xff}, {0xe7, 0x29, 0x8a, 0xff},
	{0x66, 0xa6, 0x1e, 0xff}, {0xa6, 0x76, 0x1d, 0xff}, {0x1f, 0x78, 0xb4, 0xff},
	{0x66, 0x66, 0x66, 0xff}, {0x6a, 0x3d, 0x9a, 0xff},
}

// severityStyle is how a collision's line looks.
var severityStyle = map[habilis.Severity]draw.LineStyle{
	habilis.SeverityHigh:   {Color: color.RGBA{0xd6, 0x27, 0x28, 0xff}, Width: vg.Points(3.5)},
	habilis.SeverityMedium: {Color: color.NRGBA{0xff, 0x8c, 0x1a, 0x80}, Width: vg.Points(1.3)},
	habilis.SeverityLow:    {Color: color.NRGBA{0x99, 0x99, 0x99, 0x80}, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}},
}

var (
	black      = color.RGBA{0x22, 0x22, 0x22, 0xff}
	queryStyle = draw.LineStyle{Color: black, Width: vg.Points(1.3), Dashes: []vg.Length{vg.Points(5), vg.Points(3)}}
)

// Glyph sizes, in points.
const (
	toolRadius    = 5.5
	exampleRadius = 2.4
	crossRadius   = 4.5
	queryRadius   = 7
)

// styles holds each tool's colour and which severities of collision the
// picture draws.
type styles struct {
	color  []color.RGBA
	byName map[string]int
	// drawn holds the severities whose lines are drawn; hidden counts the
	// collisions of the others.
	drawn  map[habilis.Severity]bool
	hidden map[habilis.Severity]int
}

// severities is every severity, worst first.
var severities = []habilis.Severity{habilis.SeverityHigh, habilis.SeverityMedium, habilis.SeverityLow}

// lineBudget returns how many collision lines a picture of n tools can
// carry before they hide the tools and each other: two a tool (a tool
// rarely has more than a couple of real overlaps), and at least 12.
func lineBudget(n int) int { return max(2*n, 12) }

// chooseSeverities draws the worst severity present whatever its count,
// then each milder one while the lines stay within lineBudget; the
// collisions of the others are counted in hidden, for the legend to say.
// The HTML page still highlights all of a tool's collisions on click.
func (st *styles) chooseSeverities(m *toolmap.Map) {
	st.drawn, st.hidden = map[habilis.Severity]bool{}, map[habilis.Severity]int{}
	count := map[habilis.Severity]int{}
	for _, l := range m.Links {
		count[l.Severity]++
	}
	total, open := 0, true
	for _, sev := range severities {
		if count[sev] == 0 {
			continue
		}
		if open && (total == 0 || total+count[sev] <= lineBudget(len(m.Tools))) {
			st.drawn[sev] = true
			total += count[sev]
			continue
		}
		open = false
		st.hidden[sev] = count[sev]
	}
}

// newStyles colours the tools so that tools near each other differ: each
// takes the colour whose tools already coloured are farthest from it.
func newStyles(m *toolmap.Map) *styles {
	st := &styles{color: make([]color.RGBA, len(m.Tools)), byName: make(map[string]int, len(m.Tools))}
	st.chooseSeverities(m)
	used := make([][]int, len(palette))
	for i, t := range m.Tools {
		st.byName[t.Name] = i
		best, bestCost := 0, math.Inf(1)
		for k := range palette {
			var cost float64
			for _, j := range used[k] {
				d := math.Hypot(t.X-m.Tools[j].X, t.Y-m.Tools[j].Y)
				cost += 1 / (d*d + 1e-6)
			}
			if cost < bestCost {
				best, bestCost = k, cost
			}
		}
		used[best] = append(used[best], i)
		st.color[i] = palette[best]
	}
	return st
}

func (st *styles) of(tool string) color.RGBA { return st.color[st.byName[tool]] }

func withAlpha(c color.RGBA, a uint8) color.NRGBA {
	return color.NRGBA{R: c.R, G: c.G, B: c.B, A: a}
}

// layers returns the map's plotters, back to front: gate circles, lines
// of collisions, misrouted examples and the request, then examples, tools
// and the request's point.
func (st *styles) layers(m *toolmap.Map) []plot.Plotter {
	var out []plot.Plotter
	for i, t := range m.Tools {
		out = append(out, circle(t, st.color[i]))
	}
	for _, sev := range []habilis.Severity{habilis.SeverityLow, habilis.SeverityMedium, habilis.SeverityHigh} {
		for _, l := range m.Links {
			if l.Severity == sev && st.drawn[sev] {
				a, b := m.Tools[st.byName[l.A]], m.Tools[st.byName[l.B]]
				out = append(out, line(a.X, a.Y, b.X, b.Y, severityStyle[sev]))
			}
		}
	}
	for _, e := range m.Examples {
		if e.RoutedTo != "" {
			own := m.Tools[st.byName[e.Tool]]
			sty := draw.LineStyle{Color: withAlpha(st.of(e.Tool), 0x70), Width: vg.Points(0.6), Dashes: []vg.Length{vg.Points(2), vg.Points(2)}}
			out = append(out, line(e.X, e.Y, own.X, own.Y, sty))
		}
	}
	if q := m.Query; q != nil {
		for _, name := range q.Passed {
			t := m.Tools[st.byName[name]]
			out = append(out, line(q.X, q.Y, t.X, t.Y, queryStyle))
		}
	}
	out = append(out, st.examplePoints(m), st.toolPoints(m))
	if q := m.Query; q != nil {
		s, _ := plotter.NewScatter(plotter.XYs{{X: q.X, Y: q.Y}})
		s.GlyphStyle = draw.GlyphStyle{Color: black, Radius: vg.Points(queryRadius), Shape: draw.PyramidGlyph{}}
		out = append(out, s)
	}
	return out
}

// circle returns a tool's gate: a disc tinted with its colour.
func circle(t toolmap.Tool, c color.RGBA) *plotter.Polygon {
	const sides = 96
	ring := make(plotter.XYs, sides)
	for k := range ring {
		a := 2 * math.Pi * float64(k) / sides
		ring[k] = plotter.XY{X: t.X + t.Radius*math.Cos(a), Y: t.Y + t.Radius*math.Sin(a)}
	}
	p, _ := plotter.NewPolygon(ring)
	p.Color = withAlpha(c, 0x1c)
	p.LineStyle = draw.LineStyle{Color: withAlpha(c, 0x90), Width: vg.Points(0.8)}
	return p
}

func line(x0, y0, x1, y1 float64, sty draw.LineStyle) *plotter.Line {
	l, _ := plotter.NewLine(plotter.XYs{{X: x0, Y: y0}, {X: x1, Y: y1}})
	l.LineStyle = sty
	return l
}

// examplePoints draws the examples: dots inside their gate, rings outside
// it, crosses when routed to another tool.
func (st *styles) examplePoints(m *toolmap.Map) plot.Plotter {
	xys := make(plotter.XYs, len(m.Examples))
	for i, e := range m.Examples {
		xys[i] = plotter.XY{X: e.X, Y: e.Y}
	}
	s, _ := plotter.NewScatter(xys)
	s.GlyphStyleFunc = func(i int) draw.GlyphStyle { return exampleGlyph(m.Examples[i], st.of(m.Examples[i].Tool)) }
	return s
}

func exampleGlyph(e toolmap.Example, c color.RGBA) draw.GlyphStyle {
	switch {
	case e.RoutedTo != "":
		return draw.GlyphStyle{Color: c, Radius: vg.Points(crossRadius), Shape: cross{width: vg.Points(1.8)}}
	case !e.InGate:
		return draw.GlyphStyle{Color: c, Radius: vg.Points(exampleRadius), Shape: ring{width: vg.Points(1)}}
	}
	return draw.GlyphStyle{Color: withAlpha(c, 0xd0), Radius: vg.Points(exampleRadius), Shape: draw.CircleGlyph{}}
}

// toolPoints draws the tools: discs edged in white, squares for tools
// placed by their description.
func (st *styles) toolPoints(m *toolmap.Map) plot.Plotter {
	xys := make(plotter.XYs, len(m.Tools))
	for i, t := range m.Tools {
		xys[i] = plotter.XY{X: t.X, Y: t.Y}
	}
	s, _ := plotter.NewScatter(xys)
	s.GlyphStyleFunc = func(i int) draw.GlyphStyle {
		return draw.GlyphStyle{Color: st.color[i], Radius: vg.Points(toolRadius), Shape: edged{square: m.Tools[i].Examples == 0}}
	}
	return s
}

// drawLegend draws the legend and the layout's figures in c.
func drawLegend(c draw.Canvas, m *toolmap.Map, st *styles) {
	l := plot.NewLegend()
	l.TextStyle.Font = font.From(sans, 9.5)
	l.Top, l.Left = true, true
	l.ThumbnailWidth = vg.Points(22)
	l.YOffs = -vg.Points(40)
	l.Padding = vg.Points(5)
	tool := toolmap.Tool{}
	col := palette[0]
	glyph := func(sty draw.GlyphStyle) plot.Thumbnailer {
		s, _ := plotter.NewScatter(plotter.XYs{{}})
		s.GlyphStyle = sty
		return s
	}
	l.Add("tool (its centroid)", glyph(draw.GlyphStyle{Color: col, Radius: vg.Points(toolRadius), Shape: edged{}}))
	l.Add("tool without examples", glyph(draw.GlyphStyle{Color: col, Radius: vg.Points(toolRadius), Shape: edged{square: true}}))
	l.Add("gate (centroid mode)", circle(tool, col))
	l.Add("example inside its gate", glyph(exampleGlyph(toolmap.Example{InGate: true}, col)))
	l.Add("example outside its gate", glyph(exampleGlyph(toolmap.Example{}, col)))
	l.Add("example routed to another tool,", glyph(exampleGlyph(toolmap.Example{RoutedTo: "x"}, col)))
	l.Add("\u00a0\u00a0\u00a0drawn there, dashed to its own", line(0, 0, 1, 0, draw.LineStyle{Color: col, Width: vg.Points(0.6), Dashes: []vg.Length{vg.Points(2), vg.Points(2)}}))
	for _, sev := range severities {
		if n := st.hidden[sev]; n > 0 {
			l.Add(fmt.Sprintf("collision, %s: %d not drawn", sev, n), line(0, 0, 1, 0, severityStyle[sev]))
		} else {
			l.Add("collision, "+string(sev), line(0, 0, 1, 0, severityStyle[sev]))
		}
	}
	if m.Query != nil {
		l.Add("request", glyph(draw.GlyphStyle{Color: black, Radius: vg.Points(queryRadius), Shape: draw.PyramidGlyph{}}))
		l.Add("\u00a0\u00a0\u00a0passes the gate of", line(0, 0, 1, 0, queryStyle))
	}
	l.Draw(c)
}
