// Package render draws a toolmap.Map with gonum.org/v1/plot: as SVG, as
// PNG, or as one self-contained HTML page where hovering a point shows its
// tool or example text and clicking a tool highlights its collisions.
//
// Each tool is a labelled point in a colour of its own (neighbouring tools
// get different colours), inside a tinted circle for its gate; its examples
// are small dots around it (rings when outside the gate, crosses when the
// collision analysis found they would be routed to another tool, in whose
// circle they then sit, with a dashed line back to their own tool).
// Collisions join their tools with lines coloured and sized by severity.
// A request is a black triangle with dashed lines to the tools whose gate
// it passes. Labels go where they cover no other label; a label that
// would is left out of the picture (the HTML form still names the point
// on hover).
package render

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/toolmap"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Options size a picture. The zero value draws 11 inches wide (1584
// pixels at 144 dots per inch) for up to 50 tools, wider by the square
// root of the number of tools beyond (up to 24 inches, which 240 tools
// reach), so that the area a tool has stays about the same; and as high
// as the map's shape needs, 4 inches at least.
type Options struct {
	Width, Height vg.Length
	DPI           int
}

// titleHeight is what the title and its padding take, about.
const titleHeight = 0.7 * vg.Inch

func (o Options) resolved(m *toolmap.Map) Options {
	if o.Width <= 0 {
		o.Width = min(11*vg.Inch*vg.Length(math.Sqrt(max(float64(len(m.Tools))/50, 1))), 24*vg.Inch)
	}
	if o.Height <= 0 {
		minX, maxX, minY, maxY := bounds(m)
		h := (o.Width-legendWidth)*vg.Length((maxY-minY)/(maxX-minX)) + titleHeight
		o.Height = min(max(h, 4*vg.Inch), o.Width)
	}
	if o.DPI <= 0 {
		o.DPI = 144
	}
	return o
}

// SVG writes m as an SVG document. The fonts are embedded (about 500 KB
// each), so that the labels keep the widths they were placed with
// wherever the file is opened.
func SVG(w io.Writer, m *toolmap.Map, o Options) error {
	o = o.resolved(m)
	c := vgsvg.NewWith(vgsvg.UseWH(o.Width, o.Height), vgsvg.EmbedFonts(true))
	compose(draw.New(c), m)
	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("render: svg: %w", err)
	}
	return nil
}

// PNG writes m as a PNG image.
func PNG(w io.Writer, m *toolmap.Map, o Options) error {
	o = o.resolved(m)
	c := vgimg.NewWith(vgimg.UseWH(o.Width, o.Height), vgimg.UseDPI(o.DPI))
	compose(draw.New(c), m)
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(w); err != nil {
		return fmt.Errorf("render: png: %w", err)
	}
	return nil
}

// legendWidth is the column on the right that holds the legend.
const legendWidth = 2.7 * vg.Inch

// sans is the typeface of every text: gonum's embedded Liberation Sans,
// so that text measures the same wherever the picture is drawn.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// scene is where compose put each point, in canvas coordinates (points
// from the bottom left), for the HTML page's hover and click targets.
type scene struct {
	width, height vg.Length
	tools         []vg.Point
	examples      []vg.Point
	query         *vg.Point
	// labelled reports which tools carry a label.
	labelled []bool
}

// compose draws m onto c: the map on the left, the legend on the right.
func compose(c draw.Canvas, m *toolmap.Map) *scene {
	w, h := c.Size().X, c.Size().Y
	mapArea := draw.Crop(c, 0, -legendWidth, 0, 0)
	p := newPlot(m)
	st := newStyles(m)
	layers := st.layers(m)
	p.Add(layers...)
	dc := p.DataCanvas(mapArea)
	fitRanges(p, m, dc.Size())
	// The labels are placed last, on the canvas the plotters draw on.
	lab := &labels{m: m, st: st}
	p.Add(lab)
	p.Draw(mapArea)
	drawLegend(draw.Crop(c, w-legendWidth+vg.Points(8), 0, 0, 0), m, st)

	dc = p.DataCanvas(mapArea)
	trX, trY := p.Transforms(&dc)
	sc := &scene{width: w, height: h, labelled: lab.placed}
	for _, t := range m.Tools {
		sc.tools = append(sc.tools, vg.Point{X: trX(t.X), Y: trY(t.Y)})
	}
	for _, e := range m.Examples {
		sc.examples = append(sc.examples, vg.Point{X: trX(e.X), Y: trY(e.Y)})
	}
	if m.Query != nil {
		sc.query = &vg.Point{X: trX(m.Query.X), Y: trY(m.Query.Y)}
	}
	return sc
}

// newPlot returns a plot without axes, titled with the map's figures.
func newPlot(m *toolmap.Map) *plot.Plot {
	p := plot.New()
	p.HideAxes()
	p.Title.TextStyle.Font = font.From(sans, 13)
	p.Title.Text = title(m)
	p.Title.Padding = vg.Points(6)
	return p
}

// title sums the map up: what is drawn, how many collisions of each
// severity, and which tools are left out.
func title(m *toolmap.Map) string {
	count := map[habilis.Severity]int{}
	for _, l := range m.Links {
		count[l.Severity]++
	}
	s := fmt.Sprintf("%d tools · %d examples · %d collisions", len(m.Tools), len(m.Examples), len(m.Links))
	var by []string
	for _, sev := range []habilis.Severity{habilis.SeverityHigh, habilis.SeverityMedium, habilis.SeverityLow} {
		if count[sev] > 0 {
			by = append(by, fmt.Sprintf("%d %s", count[sev], sev))
		}
	}
	if len(by) > 0 {
		s += ": " + strings.Join(by, ", ")
	}
	if m.Shown != "" {
		s += "\n" + m.Shown
	}
	return s
}

// bounds returns the extent of every circle, point and the request, with
// a margin for the labels of the tools at the edges.
func bounds(m *toolmap.Map) (minX, maxX, minY, maxY float64) {
	minX, maxX, minY, maxY = math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	grow := func(x, y, r float64) {
		minX, maxX = min(minX, x-r), max(maxX, x+r)
		minY, maxY = min(minY, y-r), max(maxY, y+r)
	}
	for _, t := range m.Tools {
		grow(t.X, t.Y, t.Radius)
	}
	for _, e := range m.Examples {
		grow(e.X, e.Y, 0)
	}
	if q := m.Query; q != nil {
		grow(q.X, q.Y, 0)
	}
	if math.IsInf(minX, 1) {
		return -1, 1, -1, 1
	}
	padX, padY := 0.06*(maxX-minX)+0.3, 0.04*(maxY-minY)+0.2
	return minX - padX, maxX + padX, minY - padY, maxY + padY
}

// fitRanges sets the axes to bounds at one scale on both axes (a circle
// stays round, a distance is a distance whatever its direction) for a
// data area of size.
func fitRanges(p *plot.Plot, m *toolmap.Map, size vg.Point) {
	minX, maxX, minY, maxY := bounds(m)
	// Widen whichever range is short of the area's aspect ratio.
	dx, dy := maxX-minX, maxY-minY
	aspect := float64(size.X / size.Y)
	if dx/dy < aspect {
		extra := (dy*aspect - dx) / 2
		minX, maxX = minX-extra, maxX+extra
	} else {
		extra := (dx/aspect - dy) / 2
		minY, maxY = minY-extra, maxY+extra
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = minX, maxX, minY, maxY
}
