package render

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/toolmap"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

func unit(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) / math.Sqrt(n))
	}
	return out
}

// testMap is a small catalog laid out: three pairs of related tools, a
// high collision in the first pair, a medium one in the second, a low one
// across pairs, one example routed to its pair's other tool, and a request
// that passes the first pair's gates.
func testMap(t *testing.T) *toolmap.Map {
	t.Helper()
	const dim = 32
	rng := rand.New(rand.NewPCG(4, 2))
	noisy := func(base []float32, spread float64) []float32 {
		v := make([]float32, dim)
		for i := range v {
			v[i] = base[i] + float32(spread*rng.NormFloat64()/math.Sqrt(dim))
		}
		return unit(v)
	}
	names := []string{"get_weather", "weather_forecast", "web_search", "news_search", "set_reminder", "create_event"}
	in := toolmap.Input{Gates: map[string]float32{}}
	var centre []float32
	for i, name := range names {
		if i%2 == 0 {
			centre = noisy(make([]float32, dim), 10)
		}
		dir := noisy(centre, 0.5)
		rec := habilis.Record{Tool: habilis.Tool{Name: name, Description: "The " + strings.ReplaceAll(name, "_", " ") + " tool."}}
		sum := make([]float32, dim)
		for k := range 4 {
			v := noisy(dir, 0.6)
			rec.Tool.Examples = append(rec.Tool.Examples, fmt.Sprintf("%s request number %d", name, k))
			rec.ExampleVectors = append(rec.ExampleVectors, habilis.Vector{Dense: v})
			for j := range sum {
				sum[j] += v[j]
			}
		}
		rec.Centroid = habilis.Vector{Dense: unit(sum)}
		rec.DescriptionVector = habilis.Vector{Dense: dir}
		in.Records = append(in.Records, rec)
		in.Gates[name] = 0.6
	}
	in.Records[0].Tool.Examples[3] = "what will tomorrow bring"
	in.Collisions = []habilis.Collision{
		{A: "get_weather", B: "weather_forecast", Severity: habilis.SeverityHigh, CentroidSimilarity: 0.8, Leaks: []habilis.Leak{
			{From: "get_weather", Into: "weather_forecast", Example: "what will tomorrow bring", RanksFirst: true, PassesGate: true},
		}},
		{A: "news_search", B: "web_search", Severity: habilis.SeverityMedium, CentroidSimilarity: 0.7},
		{A: "create_event", B: "web_search", Severity: habilis.SeverityLow, CentroidSimilarity: 0.2},
	}
	scores := map[string]float32{"get_weather": 0.7, "weather_forecast": 0.65}
	in.Query = &toolmap.Query{Text: "will it rain in Lisbon", Scores: scores, Decision: &habilis.Decision{
		Query: "will it rain in Lisbon", Ambiguous: true,
		Matches: []habilis.Match{{Tool: "get_weather", Passed: true}, {Tool: "weather_forecast", Passed: true}, {Tool: "web_search"}},
	}}
	m, err := toolmap.Build(in)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// svgElement is one drawing element of an SVG document.
type svgElement struct {
	name  string
	style map[string]string
	text  string
}

// parseSVG reads every element with encoding/xml, failing on malformed
// XML, and returns the paths' styles and the texts.
func parseSVG(t *testing.T, r io.Reader) []svgElement {
	t.Helper()
	dec := xml.NewDecoder(r)
	var out []svgElement
	var open *svgElement
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("the SVG does not parse: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := svgElement{name: tok.Name.Local, style: map[string]string{}}
			for _, a := range tok.Attr {
				if a.Name.Local == "style" {
					for _, kv := range strings.Split(a.Value, ";") {
						if k, v, ok := strings.Cut(kv, ":"); ok {
							e.style[strings.TrimSpace(k)] = strings.TrimSpace(v)
						}
					}
				}
			}
			out = append(out, e)
			open = &out[len(out)-1]
		case xml.CharData:
			if open != nil && open.name == "text" {
				open.text += string(tok)
			}
		case xml.EndElement:
			open = nil
		}
	}
}

// near reports whether the hex colour s ("#RRGGBB") is within 3 of c on
// each channel (vgsvg divides out the alpha, which rounds).
func near(s string, c color.Color) bool {
	if len(s) != 7 || s[0] != '#' {
		return false
	}
	v, err := strconv.ParseUint(s[1:], 16, 32)
	if err != nil {
		return false
	}
	r, g, b, a := c.RGBA()
	want := []float64{float64(r) * 255 / float64(a), float64(g) * 255 / float64(a), float64(b) * 255 / float64(a)}
	got := []float64{float64(v >> 16), float64(v >> 8 & 0xff), float64(v & 0xff)}
	for i := range got {
		if math.Abs(got[i]-want[i]) > 3 {
			return false
		}
	}
	return true
}

// strokes counts the paths stroked like sty.
func strokes(els []svgElement, sty draw.LineStyle) int {
	n := 0
	for _, e := range els {
		sw, ok := e.style["stroke-width"]
		if !ok {
			sw = "1" // vgsvg leaves the default out
		}
		w, err := strconv.ParseFloat(sw, 64)
		if e.name == "path" && err == nil && math.Abs(w-sty.Width.Points()) < 1e-6 && near(e.style["stroke"], sty.Color) {
			n++
		}
	}
	return n
}

func TestSVG(t *testing.T) {
	m := testMap(t)
	var buf bytes.Buffer
	if err := SVG(&buf, m, Options{}); err != nil {
		t.Fatal(err)
	}
	els := parseSVG(t, &buf)
	texts := map[string]int{}
	for _, e := range els {
		if e.name == "text" {
			texts[e.text]++
		}
	}
	want := []string{"“will it rain in Lisbon”", "collision, high", "example routed to another tool,", "request",
		"6 tools · 24 examples · 3 collisions: 1 high, 1 medium, 1 low"}
	for _, tl := range m.Tools {
		want = append(want, tl.Name)
	}
	for _, w := range want {
		if texts[w] != 1 {
			t.Errorf("text %q appears %d times, want once; texts: %v", w, texts[w], texts)
		}
	}
	routed := 0
	for _, e := range m.Examples {
		if e.RoutedTo != "" {
			routed++
		}
	}
	if routed != 1 {
		t.Fatalf("%d examples routed elsewhere, want the one the collision names", routed)
	}
	// Each kind of line once a link, a routed example or a passed tool,
	// and once in the legend.
	for _, c := range []struct {
		what string
		sty  draw.LineStyle
		want int
	}{
		{"high collision", severityStyle[habilis.SeverityHigh], 2},
		{"medium collision", severityStyle[habilis.SeverityMedium], 2},
		{"low collision", severityStyle[habilis.SeverityLow], 2},
		{"request line", queryStyle, 3},
		{"tool's white edge", draw.LineStyle{Color: color.White, Width: vg.Points(1.3)}, 6 + 2},
	} {
		if got := strokes(els, c.sty); got != c.want {
			t.Errorf("%d paths drawn as a %s, want %d", got, c.what, c.want)
		}
	}
}

// TestPNG checks that the PNG decodes, has the size asked for, and shows
// each tool's point in its colour and the request's in black where the
// scene says they are.
func TestPNG(t *testing.T) {
	m := testMap(t)
	var buf bytes.Buffer
	o := Options{Width: 9 * vg.Inch, Height: 6 * vg.Inch, DPI: 100}
	if err := PNG(&buf, m, o); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatalf("png.Decode: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 900 || b.Dy() != 600 {
		t.Errorf("PNG of %d × %d pixels, want 900 × 600", b.Dx(), b.Dy())
	}
	// The same drawing on a canvas of our own gives the points' places.
	c := vgimg.NewWith(vgimg.UseWH(o.Width, o.Height), vgimg.UseDPI(o.DPI))
	sc := compose(draw.New(c), m)
	pixel := func(p vg.Point) color.Color {
		return img.At(int(p.X.Dots(100)), int((o.Height - p.Y).Dots(100)))
	}
	st := newStyles(m)
	for i, tl := range m.Tools {
		if got := pixel(sc.tools[i]); !sameColor(got, st.color[i]) {
			t.Errorf("%s: pixel %v at its point, want its colour %v", tl.Name, got, st.color[i])
		}
		if !sc.labelled[i] {
			t.Errorf("%s has no label", tl.Name)
		}
	}
	if got := pixel(*sc.query); !sameColor(got, black) {
		t.Errorf("request: pixel %v at its point, want %v", got, black)
	}
}

func sameColor(a, b color.Color) bool {
	ar, ag, ab, _ := a.RGBA()
	br, bg, bb, _ := b.RGBA()
	d := func(x, y uint32) bool { return math.Abs(float64(x)-float64(y)) <= 3*257 }
	return d(ar, br) && d(ag, bg) && d(ab, bb)
}

// TestHTMLSelfContained checks that the page loads nothing (no script,
// style, font or image from elsewhere) and carries a target for every
// point and a line for every collision.
func TestHTMLSelfContained(t *testing.T) {
	m := testMap(t)
	var buf bytes.Buffer
	if err := HTML(&buf, m, Options{}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if loads := regexp.MustCompile(`(?i)\b(src|href)\s*=|<link|@import|url\(\s*['"]?(https?:|//)`).FindAllString(page, -1); len(loads) > 0 {
		t.Errorf("the page loads from elsewhere: %q", loads)
	}
	for _, c := range []struct {
		pattern string
		want    int
	}{
		{`<circle class="tool"`, len(m.Tools)},
		{`<circle class="example"`, len(m.Examples)},
		{`<line class="link `, len(m.Links)},
		{`<circle id="query"`, 1},
		{`<svg`, 2},
	} {
		if got := strings.Count(page, c.pattern); got != c.want {
			t.Errorf("%d × %s in the page, want %d", got, c.pattern, c.want)
		}
	}
}

func TestEmptyMap(t *testing.T) {
	m, err := toolmap.Build(toolmap.Input{})
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func(io.Writer, *toolmap.Map, Options) error{"SVG": SVG, "PNG": PNG, "HTML": HTML} {
		var buf bytes.Buffer
		if err := f(&buf, m, Options{}); err != nil {
			t.Errorf("%s of an empty map: %v", name, err)
		}
	}
	var buf bytes.Buffer
	if err := PNG(&buf, m, Options{}); err == nil {
		if _, _, err := image.Decode(&buf); err != nil {
			t.Errorf("PNG of an empty map does not decode: %v", err)
		}
	}
}

// TestSeverityBudget checks which collisions the picture draws: the worst
// severity present always, milder ones while the lines stay within two a
// tool; the legend counts the rest.
func TestSeverityBudget(t *testing.T) {
	links := func(high, medium, low int) []toolmap.Link {
		var out []toolmap.Link
		for sev, n := range map[habilis.Severity]int{habilis.SeverityHigh: high, habilis.SeverityMedium: medium, habilis.SeverityLow: low} {
			for range n {
				out = append(out, toolmap.Link{A: "a", B: "b", Severity: sev})
			}
		}
		return out
	}
	tools := make([]toolmap.Tool, 10)
	for i := range tools {
		tools[i].Name = fmt.Sprint("t", i)
	}
	tests := []struct {
		high, medium, low int
		drawn             []habilis.Severity
		hidden            map[habilis.Severity]int
	}{
		{2, 5, 3, []habilis.Severity{"high", "medium", "low"}, map[habilis.Severity]int{}},
		{2, 17, 3, []habilis.Severity{"high", "medium"}, map[habilis.Severity]int{"low": 3}},
		{2, 20, 3, []habilis.Severity{"high"}, map[habilis.Severity]int{"medium": 20, "low": 3}},
		{0, 64, 0, []habilis.Severity{"medium"}, map[habilis.Severity]int{}},
		{30, 0, 1, []habilis.Severity{"high"}, map[habilis.Severity]int{"low": 1}},
	}
	for _, tc := range tests {
		st := newStyles(&toolmap.Map{Tools: tools, Links: links(tc.high, tc.medium, tc.low)})
		var drawn []habilis.Severity
		for _, sev := range severities {
			if st.drawn[sev] {
				drawn = append(drawn, sev)
			}
		}
		if !slices.Equal(drawn, tc.drawn) || !maps.Equal(st.hidden, tc.hidden) {
			t.Errorf("%d high, %d medium, %d low among 10 tools: drawn %v, hidden %v; want %v, %v",
				tc.high, tc.medium, tc.low, drawn, st.hidden, tc.drawn, tc.hidden)
		}
	}
}
