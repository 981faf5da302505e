package toolmap

import (
	"math"

	"github.com/habilis-router/habilis"
)

// goldenTurn is the golden angle's share of a turn: successive multiples
// of it spread points evenly around a circle, however many there are.
const goldenTurn = 0.3819660112501051

// fan is how widely the examples that lean one way spread around that
// direction, in radians: a quarter of a turn, so that they stay on the
// side they lean to without piling up on one ray.
const fan = math.Pi / 2

// leakInfo is what the collision analysis says about one example.
type leakInfo struct {
	routedTo string
	routedBy float32 // the winning tool's score, to keep the best
	passes   []string
}

// leaksByExample indexes the collisions' leaks by tool and example text.
func leaksByExample(cols []habilis.Collision) map[[2]string]*leakInfo {
	out := map[[2]string]*leakInfo{}
	for _, c := range cols {
		for _, lk := range c.Leaks {
			k := [2]string{lk.From, lk.Example}
			li := out[k]
			if li == nil {
				li = &leakInfo{}
				out[k] = li
			}
			if lk.RanksFirst && (li.routedTo == "" || lk.Score > li.routedBy) {
				li.routedTo, li.routedBy = lk.Into, lk.Score
			}
			if lk.PassesGate {
				li.passes = append(li.passes, lk.Into)
			}
		}
	}
	return out
}

// examples places every drawn tool's examples.
func (l *layout) examples(cols []habilis.Collision) []Example {
	leaks := leaksByExample(cols)
	out := []Example{}
	s := make([]float64, l.n())
	for t, r := range l.recs {
		own := heldOut(r)
		for k, v := range r.ExampleVectors {
			for j := range s {
				s[j] = dot(v, l.point[j])
			}
			s[t] = own[k]
			e := Example{Tool: r.Tool.Name, Text: r.Tool.Examples[k], Score: float32(own[k]), InGate: own[k] >= l.gates[t]}
			anchor := t
			if li := leaks[[2]string{e.Tool, e.Text}]; li != nil {
				e.Passes = li.passes
				if a, ok := l.byName[li.routedTo]; ok && li.routedTo != "" {
					e.RoutedTo, anchor = li.routedTo, a
				}
			}
			dir, leans := l.lean(anchor, s)
			turn := float64(k+1) * goldenTurn
			turn -= math.Floor(turn)
			if leans {
				dir += fan * (turn - 0.5)
			} else {
				dir = 2 * math.Pi * turn
			}
			p := l.from(anchor, l.offset(s[anchor]), dir)
			e.X, e.Y = p[0], p[1]
			out = append(out, e)
		}
	}
	return out
}

// heldOut returns each example's similarity to the centroid of the tool's
// other examples: e·(S − e)/|S − e| with S their sum, from dot products
// alone. A tool's only example scores against the centroid, which is
// itself. When the other examples cancel out there is no centroid to be
// near, and the score is 0.
func heldOut(r *habilis.Record) []float64 {
	vs := r.ExampleVectors
	m := len(vs)
	out := make([]float64, m)
	if m == 1 {
		out[0] = dot(vs[0], r.Centroid)
		return out
	}
	rowSum := make([]float64, m) // e_k·S
	self := make([]float64, m)   // e_k·e_k
	var ss float64               // S·S
	for k := range m {
		for j := k; j < m; j++ {
			d := dot(vs[k], vs[j])
			if j == k {
				self[k] = d
				rowSum[k] += d
				continue
			}
			rowSum[k] += d
			rowSum[j] += d
		}
	}
	for _, x := range rowSum {
		ss += x
	}
	for k := range m {
		if den := ss - 2*rowSum[k] + self[k]; den > 1e-9*max(ss, 1) {
			out[k] = (rowSum[k] - self[k]) / math.Sqrt(den)
		}
	}
	return out
}

// query places the request around the tool its decision ranks first among
// the drawn ones, or the most similar drawn tool when none passes.
func (l *layout) query(q *Query) *QueryPoint {
	qp := &QueryPoint{Text: q.Text, Passed: []string{}}
	if d := q.Decision; d != nil {
		qp.Abstained, qp.Ambiguous, qp.Reason = d.Abstained, d.Ambiguous, d.Reason
		for _, m := range d.Matches {
			if _, ok := l.byName[m.Tool]; ok && m.Passed {
				qp.Passed = append(qp.Passed, m.Tool)
			}
		}
	}
	n := l.n()
	if n == 0 {
		return qp
	}
	s := make([]float64, n)
	anchor := 0
	for j, r := range l.recs {
		s[j] = float64(q.Scores[r.Tool.Name])
		if s[j] > s[anchor] {
			anchor = j
		}
	}
	if len(qp.Passed) > 0 {
		anchor = l.byName[qp.Passed[0]]
	}
	qp.Near = l.recs[anchor].Tool.Name
	dir, leans := l.lean(anchor, s)
	if !leans {
		dir = math.Pi / 2
	}
	p := l.from(anchor, l.offset(s[anchor]), dir)
	qp.X, qp.Y = p[0], p[1]
	return qp
}
