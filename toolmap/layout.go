package toolmap

import (
	"cmp"
	"math"
	"slices"
	"sort"

	"github.com/habilis-router/habilis"
)

// reach is how far the median gate circle reaches towards its tool's
// nearest neighbour on the map: under half, so that the circles of tools
// that are merely neighbours stay apart and those of tools placed closer
// than usual overlap.
const reach = 0.45

// layout is the drawn tools' vectors and, once projected, their places.
type layout struct {
	recs   []*habilis.Record // drawn, in record order
	byName map[string]int
	gates  []float64
	// point is each tool's vector: its centroid, or its description
	// vector when it has no examples.
	point []habilis.Vector
	sim   []float64 // n×n similarities of point
	at    [][2]float64
	// perRadian converts an angle on the sphere to map units.
	perRadian float64
}

// newLayout checks the drawn records' vectors and gates and computes their
// pairwise similarities.
func newLayout(in Input, drawn []int) (*layout, error) {
	n := len(drawn)
	l := &layout{byName: make(map[string]int, n), gates: make([]float64, n), point: make([]habilis.Vector, n)}
	var form vectorForm
	for k, i := range drawn {
		r := &in.Records[i]
		name := r.Tool.Name
		g, ok := in.Gates[name]
		if !ok || math.IsNaN(float64(g)) {
			return nil, errorf(habilis.ErrInvalid, "tool %q: no gate", name)
		}
		l.recs = append(l.recs, r)
		l.byName[name] = k
		l.gates[k] = float64(g)
		l.point[k] = r.Centroid
		if len(r.Tool.Examples) == 0 || r.Centroid.IsZero() {
			l.point[k] = r.DescriptionVector
		}
		if err := form.check(l.point[k]); err != nil {
			return nil, errorf(habilis.ErrInvalid, "tool %q: %v", name, err)
		}
		for j, v := range r.ExampleVectors {
			if err := form.check(v); err != nil {
				return nil, errorf(habilis.ErrInvalid, "tool %q: example %d: %v", name, j, err)
			}
		}
		if len(r.ExampleVectors) != len(r.Tool.Examples) {
			return nil, errorf(habilis.ErrInvalid, "tool %q: %d example vectors for %d examples", name, len(r.ExampleVectors), len(r.Tool.Examples))
		}
	}
	l.sim = make([]float64, n*n)
	for i := range n {
		l.sim[i*n+i] = 1
		for j := i + 1; j < n; j++ {
			s := dot(l.point[i], l.point[j])
			l.sim[i*n+j], l.sim[j*n+i] = s, s
		}
	}
	return l, nil
}

// vectorForm remembers the first non-zero vector's form, so that every
// other can be checked against it: dot products of mixed forms mean
// nothing.
type vectorForm struct {
	seen   bool
	sparse bool
	dim    int
}

func (f *vectorForm) check(v habilis.Vector) error {
	if err := v.Validate(); err != nil {
		return err
	}
	if v.IsZero() {
		return nil
	}
	sparse, dim := v.IsSparse(), len(v.Dense)
	if !f.seen {
		*f = vectorForm{seen: true, sparse: sparse, dim: dim}
		return nil
	}
	if sparse != f.sparse || dim != f.dim {
		return errorf(habilis.ErrInvalid, "vectors of mixed forms or dimensions")
	}
	return nil
}

// dot returns a·b for two vectors of one form, 0 when either is zero. It
// adds the products in float64 in coordinate order, so that a vector's
// dense and sparse forms give the same bits (a zero coordinate adds
// exactly nothing): t-SNE's layout follows its input's last bits.
func dot(a, b habilis.Vector) float64 {
	var s float64
	switch {
	case a.IsZero() || b.IsZero():
	case a.IsSparse():
		i, j := 0, 0
		for i < len(a.Indices) && j < len(b.Indices) {
			switch {
			case a.Indices[i] == b.Indices[j]:
				s += float64(a.Values[i]) * float64(b.Values[j])
				i++
				j++
			case a.Indices[i] < b.Indices[j]:
				i++
			default:
				j++
			}
		}
	default:
		for i, x := range a.Dense {
			s += float64(x) * float64(b.Dense[i])
		}
	}
	return s
}

func (l *layout) n() int { return len(l.recs) }

// tools returns the drawn tools without places.
func (l *layout) tools() []Tool {
	out := make([]Tool, l.n())
	for i, r := range l.recs {
		out[i] = Tool{Name: r.Tool.Name, Description: r.Tool.Description, Gate: float32(l.gates[i]), Examples: len(r.Tool.Examples)}
	}
	return out
}

func (l *layout) project() { l.at = project(l.sim, l.n()) }

// neighboursKept returns the share of tools whose most similar tool is
// one of their two nearest on the map (1 with fewer than four tools,
// where it always is).
func (l *layout) neighboursKept() float64 {
	n := l.n()
	if n < 4 {
		return 1
	}
	kept := 0
	others := make([]int, 0, n-1)
	for i := range n {
		best := -1
		others = others[:0]
		for j := range n {
			if j == i {
				continue
			}
			if best < 0 || l.sim[i*n+j] > l.sim[i*n+best] {
				best = j
			}
			others = append(others, j)
		}
		slices.SortStableFunc(others, func(a, b int) int { return cmp.Compare(l.dist(i, a), l.dist(i, b)) })
		if others[0] == best || others[1] == best {
			kept++
		}
	}
	return float64(kept) / float64(n)
}

func (l *layout) dist(i, j int) float64 {
	return math.Hypot(l.at[i][0]-l.at[j][0], l.at[i][1]-l.at[j][1])
}

// nearest returns each tool's distance to its nearest neighbour on the map.
func (l *layout) nearest() []float64 {
	n := l.n()
	out := make([]float64, n)
	for i := range n {
		out[i] = math.Inf(1)
		for j := range n {
			if j != i {
				out[i] = min(out[i], l.dist(i, j))
			}
		}
	}
	return out
}

// scale centres the map, turns its longer extent to the horizontal (a
// picture is wider than high), scales it so that the median
// nearest-neighbour distance is 1, and sets perRadian so that the median
// gate circle reaches its tool's nearest neighbour by the share reach.
// Turning and mirroring keep every distance.
func (l *layout) scale() {
	n := l.n()
	if n == 0 {
		return
	}
	var cx, cy float64
	for _, p := range l.at {
		cx += p[0]
		cy += p[1]
	}
	cx, cy = cx/float64(n), cy/float64(n)
	var sxx, syy, sxy float64
	for _, p := range l.at {
		x, y := p[0]-cx, p[1]-cy
		sxx, syy, sxy = sxx+x*x, syy+y*y, sxy+x*y
	}
	// The principal axis of the points is at angle t.
	t := math.Atan2(2*sxy, sxx-syy) / 2
	cos, sin := math.Cos(t), math.Sin(t)
	unit := 1.0
	if n > 1 {
		if m := median(l.nearest()); m > 0 {
			unit = m
		}
	}
	var skewX, skewY float64
	for i, p := range l.at {
		x, y := p[0]-cx, p[1]-cy
		l.at[i] = [2]float64{(x*cos + y*sin) / unit, (-x*sin + y*cos) / unit}
		skewX += l.at[i][0] * l.at[i][0] * l.at[i][0]
		skewY += l.at[i][1] * l.at[i][1] * l.at[i][1]
	}
	// Mirror so that the longer tail points right and up: the
	// orientation then follows the layout, not the eigenvectors' signs.
	for i := range l.at {
		if skewX < 0 {
			l.at[i][0] = -l.at[i][0]
		}
		if skewY < 0 {
			l.at[i][1] = -l.at[i][1]
		}
	}
	per := make([]float64, 0, n)
	for i, d := range l.nearest() {
		if a := angle(l.gates[i]); a > 0 && !math.IsInf(d, 1) {
			per = append(per, reach*d/a)
		}
	}
	l.perRadian = reach / (math.Pi / 2)
	if len(per) > 0 {
		l.perRadian = median(per)
	}
}

// radius returns tool i's gate circle radius.
func (l *layout) radius(i int) float64 { return l.perRadian * angle(l.gates[i]) }

// offset returns how far from its tool's point a vector of similarity s to
// the tool's vector lies: its angle on the map's scale. Similarities of 0
// and below all lie at a right angle, as far as unrelated texts.
func (l *layout) offset(s float64) float64 {
	return l.perRadian * angle(max(s, 0))
}

// lean returns the direction, from tool a, that the similarities s (one
// per drawn tool) lean towards: the sum of unit vectors towards the other
// tools, each weighted by the square of how far its similarity exceeds the
// median. ok is false when nothing leans.
func (l *layout) lean(a int, s []float64) (dir float64, ok bool) {
	med := median(slices.Clone(s))
	var dx, dy float64
	for j, sj := range s {
		d := l.dist(a, j)
		if j == a || sj <= med || d == 0 {
			continue
		}
		w := (sj - med) * (sj - med)
		dx += w * (l.at[j][0] - l.at[a][0]) / d
		dy += w * (l.at[j][1] - l.at[a][1]) / d
	}
	if dx == 0 && dy == 0 {
		return 0, false
	}
	return math.Atan2(dy, dx), true
}

// from returns the point at distance r from tool a in direction dir.
func (l *layout) from(a int, r, dir float64) [2]float64 {
	return [2]float64{l.at[a][0] + r*math.Cos(dir), l.at[a][1] + r*math.Sin(dir)}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	m := len(xs) / 2
	if len(xs)%2 == 1 {
		return xs[m]
	}
	return (xs[m-1] + xs[m]) / 2
}
