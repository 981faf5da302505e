package render

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/toolmap"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

//go:embed page.html
var pageHTML string

var page = template.Must(template.New("page").Parse(pageHTML))

// HTML writes m as one self-contained page: the SVG picture, under a
// layer of transparent targets at the points' places that carry their
// text (shown on hover) and, for tools, their collisions (highlighted on
// click). It loads nothing from the network.
func HTML(w io.Writer, m *toolmap.Map, o Options) error {
	o = o.resolved(m)
	c := vgsvg.NewWith(vgsvg.UseWH(o.Width, o.Height), vgsvg.EmbedFonts(true))
	sc := compose(draw.New(c), m)
	var svg bytes.Buffer
	if _, err := c.WriteTo(&svg); err != nil {
		return fmt.Errorf("render: html: %w", err)
	}
	// The XML prolog has no place inside an HTML document.
	pic := svg.String()
	if i := strings.Index(pic, "<svg"); i >= 0 {
		pic = pic[i:]
	}
	if err := page.Execute(w, newPageData(m, sc, pic)); err != nil {
		return fmt.Errorf("render: html: %w", err)
	}
	return nil
}

// pageData is what page.html shows. Coordinates are SVG user units
// (points from the top left).
type pageData struct {
	Title         string
	Width, Height float64
	// Picture is the SVG that compose drew: generated here, not user
	// text (vgsvg escapes the labels).
	Picture    template.HTML
	Tools      []target
	Examples   []target
	Query      *target
	Links      []segment
	Collisions []toolmap.Link
}

// target is a point that shows Tip on hover.
type target struct {
	Name, Tool, Tip string
	X, Y            float64
}

// segment is a collision's line, shown when one of its tools is clicked.
type segment struct {
	A, B           string
	Severity       habilis.Severity
	X1, Y1, X2, Y2 float64
}

func newPageData(m *toolmap.Map, sc *scene, pic string) *pageData {
	h := sc.height
	flip := func(p vg.Point) (float64, float64) { return p.X.Points(), (h - p.Y).Points() }
	d := &pageData{Title: strings.ReplaceAll(title(m), "\n", "; "), Width: sc.width.Points(), Height: h.Points(),
		Picture: template.HTML(pic), Collisions: m.Links}
	byName := make(map[string]int, len(m.Tools))
	for i, t := range m.Tools {
		byName[t.Name] = i
		x, y := flip(sc.tools[i])
		d.Tools = append(d.Tools, target{Name: t.Name, Tip: toolTip(t, m.Links), X: x, Y: y})
	}
	for i, e := range m.Examples {
		x, y := flip(sc.examples[i])
		d.Examples = append(d.Examples, target{Tool: e.Tool, Tip: exampleTip(e, m.Tools[byName[e.Tool]]), X: x, Y: y})
	}
	if q := m.Query; q != nil && sc.query != nil {
		x, y := flip(*sc.query)
		d.Query = &target{Tip: queryTip(q), X: x, Y: y}
	}
	for _, l := range m.Links {
		x1, y1 := flip(sc.tools[byName[l.A]])
		x2, y2 := flip(sc.tools[byName[l.B]])
		d.Links = append(d.Links, segment{A: l.A, B: l.B, Severity: l.Severity, X1: x1, Y1: y1, X2: x2, Y2: y2})
	}
	return d
}

func toolTip(t toolmap.Tool, links []toolmap.Link) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n%s\n", t.Name, t.Description)
	if t.Examples == 0 {
		fmt.Fprintf(&b, "no examples (placed by its description) · gate %.3f", t.Gate)
	} else {
		fmt.Fprintf(&b, "%d examples · gate %.3f", t.Examples, t.Gate)
	}
	var with []string
	for _, l := range links {
		switch t.Name {
		case l.A:
			with = append(with, fmt.Sprintf("%s (%s)", l.B, l.Severity))
		case l.B:
			with = append(with, fmt.Sprintf("%s (%s)", l.A, l.Severity))
		}
	}
	if len(with) > 0 {
		fmt.Fprintf(&b, "\ncollides with %s", strings.Join(with, ", "))
	}
	return b.String()
}

func exampleTip(e toolmap.Example, own toolmap.Tool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s example\n“%s”\nsimilarity %.3f to the centroid of the tool's other examples (gate %.3f): ", e.Tool, e.Text, e.Score, own.Gate)
	if e.InGate {
		b.WriteString("inside its gate")
	} else {
		b.WriteString("outside its gate")
	}
	if e.RoutedTo != "" {
		fmt.Fprintf(&b, "\nrouted to %s", e.RoutedTo)
	}
	if len(e.Passes) > 0 {
		fmt.Fprintf(&b, "\npasses the gate of %s", strings.Join(e.Passes, ", "))
	}
	return b.String()
}

func queryTip(q *toolmap.QueryPoint) string {
	var b strings.Builder
	fmt.Fprintf(&b, "request\n“%s”\n", q.Text)
	switch {
	case len(q.Passed) > 0:
		fmt.Fprintf(&b, "passes the gate of %s", strings.Join(q.Passed, ", "))
	case q.Abstained:
		b.WriteString("no tool fits")
	default:
		b.WriteString("passes no drawn tool's gate")
	}
	if q.Reason != "" {
		fmt.Fprintf(&b, "\n%s", q.Reason)
	}
	return b.String()
}
