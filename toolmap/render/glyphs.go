package render

import (
	"image/color"
	"math"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// gonum's ring and cross glyphs stroke half a point wide, too thin to see
// among the map's tints; these draw the same shapes with a chosen width,
// and a tool's disc (or square) edged in white so that it stands out from
// the lines that meet at it.

// ring is an outlined circle.
type ring struct{ width vg.Length }

func (g ring) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: g.width})
	c.Stroke(circlePath(pt, sty.Radius))
}

// cross is an X.
type cross struct{ width vg.Length }

func (g cross) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: g.width})
	r := sty.Radius * vg.Length(math.Sqrt2/2)
	var p vg.Path
	p.Move(vg.Point{X: pt.X - r, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y + r})
	p.Move(vg.Point{X: pt.X - r, Y: pt.Y + r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y - r})
	c.Stroke(p)
}

// edged is a filled disc, or square, with a white edge.
type edged struct{ square bool }

func (g edged) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	var p vg.Path
	if g.square {
		r := sty.Radius * 0.9
		p.Move(vg.Point{X: pt.X - r, Y: pt.Y - r})
		p.Line(vg.Point{X: pt.X + r, Y: pt.Y - r})
		p.Line(vg.Point{X: pt.X + r, Y: pt.Y + r})
		p.Line(vg.Point{X: pt.X - r, Y: pt.Y + r})
		p.Close()
	} else {
		p = circlePath(pt, sty.Radius)
	}
	c.SetColor(sty.Color)
	c.Fill(p)
	c.SetLineStyle(draw.LineStyle{Color: color.White, Width: vg.Points(1.3)})
	c.Stroke(p)
}

func circlePath(pt vg.Point, r vg.Length) vg.Path {
	var p vg.Path
	p.Move(vg.Point{X: pt.X + r, Y: pt.Y})
	p.Arc(pt, r, 0, 2*math.Pi)
	p.Close()
	return p
}
