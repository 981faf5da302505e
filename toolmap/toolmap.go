// Package toolmap lays a catalog out in two dimensions, so that catalog
// authors see where each tool's region lies, which regions overlap, and
// which examples sit in the wrong one. Package toolmap/render draws the
// result as SVG, PNG or an interactive HTML page.
//
// # Tools
//
// Each tool is a point for its centroid (its description vector when it
// has no examples). Every score in habilis is a dot product of unit
// vectors, so the layout works from the tools' pairwise cosine
// similarities alone and treats dense and sparse vectors alike. The
// similarities are projected with t-SNE started from classical MDS (see
// project): tools with similar centroids lie close together, unrelated
// ones apart. Map coordinates are scaled so that the median distance from
// a tool to its nearest neighbour is 1.
//
// # Gates, examples and requests
//
// A tool's centroid-mode gate is a spherical cap: the requests whose
// similarity to the centroid reaches the gate, that is whose angle from it
// is at most arccos(gate). The map draws it as a circle around the tool
// whose radius is that angle times one scale shared by every tool, chosen
// so that the median circle reaches 45 % of the way to the tool's nearest
// neighbour: wide gates draw wide circles.
//
// Examples and requests are not part of the projection. Each is placed
// around the tool it belongs to on the map at its angle from that tool's
// centroid, on the same scale, so that exactly those inside the gate lie
// inside the circle; the direction leans towards the other tools it
// resembles most, like a Nyström extension interpolates a new point from
// its kernel values to the fitted ones. An example belongs on the map to
// its own tool, scored against the centroid of the tool's other examples
// (leave-one-out, as the collision analysis scores it), unless the
// analysis found that it would be routed to another tool: then it sits in
// that tool's circle, marked. A request sits around the tool its decision
// ranks first, or the nearest one when it abstains, with lines to every
// tool whose gate it passes.
package toolmap

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/habilis-router/habilis"
)

// DefaultMaxTools is how many tools a map draws at most: beyond a few
// hundred, points and labels cover each other.
const DefaultMaxTools = 300

// Input is what a map is built from.
type Input struct {
	// Records is the catalog as stored, with its vectors.
	Records []habilis.Record
	// Gates is each tool's centroid-mode gate: the similarity to its
	// centroid (description vector for a tool without examples) a request
	// must reach, as selector.Router.Tool reports it in Threshold. Every
	// drawn tool needs one.
	Gates map[string]float32
	// Collisions is the catalog's collision analysis with its leaks
	// (selector.Router.Collisions).
	Collisions []habilis.Collision
	// Tools, when set, names the tools to draw; the tools they collide
	// with are drawn beside them.
	Tools []string
	// Query, when set, adds a request to the map.
	Query *Query
	// MaxTools bounds the tools drawn; 0 means DefaultMaxTools. A larger
	// catalog shows the named tools, else the request's neighbourhood,
	// else the colliding tools.
	MaxTools int
}

// Query is a request to place on the map.
type Query struct {
	Text string
	// Scores is the request's similarity to each tool's centroid, or its
	// description vector for a tool without examples
	// (selector.Scores.Centroid).
	Scores map[string]float32
	// Decision is the router's decision on the request.
	Decision *habilis.Decision
}

// Map is a catalog laid out in the plane. Coordinates are in map units:
// the median distance from a tool to its nearest neighbour is 1.
type Map struct {
	Tools    []Tool    `json:"tools"`
	Examples []Example `json:"examples"`
	// Links are the collisions between drawn tools, worst first.
	Links []Link      `json:"links"`
	Query *QueryPoint `json:"query,omitempty"`
	// Total is the number of tools in the catalog; Shown says which of
	// them the map draws when not all ("the colliding tools").
	Total int    `json:"total"`
	Shown string `json:"shown,omitempty"`
	// NeighboursKept is the share of drawn tools whose most similar tool
	// is one of their two nearest on the map: how faithful the layout is.
	NeighboursKept float64 `json:"neighbours_kept"`
}

// Tool is a tool's point and gate.
type Tool struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	X           float64 `json:"x"`
	Y           float64 `json:"y"`
	// Radius is the gate circle's radius in map units.
	Radius float64 `json:"radius"`
	// Gate is the similarity the gate asks for.
	Gate float32 `json:"gate"`
	// Examples is how many examples the tool has; with none the point is
	// the description vector's.
	Examples int `json:"examples"`
	// Worst is the severity of the tool's worst drawn collision, "" when
	// none.
	Worst habilis.Severity `json:"worst,omitempty"`
}

// Example is one example's point.
type Example struct {
	Tool string  `json:"tool"`
	Text string  `json:"text"`
	X    float64 `json:"x"`
	Y    float64 `json:"y"`
	// Score is the example's similarity to the centroid of its tool's
	// other examples, or to the tool's centroid when it is the only one.
	Score float32 `json:"score"`
	// InGate reports that Score reaches the tool's gate.
	InGate bool `json:"in_gate"`
	// RoutedTo names the tool the collision analysis found the example
	// would be routed to instead of its own; the example is drawn in that
	// tool's circle.
	RoutedTo string `json:"routed_to,omitempty"`
	// Passes lists the other tools whose gate the example passes.
	Passes []string `json:"passes,omitempty"`
}

// Link is a collision between two drawn tools.
type Link struct {
	A                  string           `json:"a"`
	B                  string           `json:"b"`
	Severity           habilis.Severity `json:"severity"`
	CentroidSimilarity float32          `json:"centroid_similarity"`
	// Leaks are the culprit examples the analysis kept, worst first.
	Leaks []habilis.Leak `json:"leaks"`
}

// QueryPoint is the request's point and the tools its decision passes.
type QueryPoint struct {
	Text string  `json:"text"`
	X    float64 `json:"x"`
	Y    float64 `json:"y"`
	// Near is the tool the request is placed around.
	Near string `json:"near"`
	// Passed lists the drawn tools whose gate the request passes, best
	// first.
	Passed    []string `json:"passed"`
	Abstained bool     `json:"abstained"`
	Ambiguous bool     `json:"ambiguous"`
	Reason    string   `json:"reason,omitempty"`
}

// Build lays out in. It returns an error wrapping habilis.ErrNotFound for a
// named tool the catalog lacks, and habilis.ErrInvalid for vectors of mixed
// forms or dimensions, a drawn tool without a gate, or a tool without a
// vector to place.
func Build(in Input) (*Map, error) {
	limit := in.MaxTools
	if limit <= 0 {
		limit = DefaultMaxTools
	}
	drawn, shown, err := choose(in, limit)
	if err != nil {
		return nil, err
	}
	l, err := newLayout(in, drawn)
	if err != nil {
		return nil, err
	}
	m := &Map{Total: len(in.Records), Shown: shown, Tools: l.tools(), Links: l.links(in.Collisions)}
	l.project()
	m.NeighboursKept = l.neighboursKept()
	l.scale()
	for i := range m.Tools {
		m.Tools[i].X, m.Tools[i].Y = l.at[i][0], l.at[i][1]
		m.Tools[i].Radius = l.radius(i)
		m.Tools[i].Worst = worst(m.Links, m.Tools[i].Name)
	}
	m.Examples = l.examples(in.Collisions)
	if in.Query != nil {
		m.Query = l.query(in.Query)
	}
	return m, nil
}

// links returns the collisions whose two tools are drawn, worst first
// (the analysis' order).
func (l *layout) links(cols []habilis.Collision) []Link {
	out := []Link{}
	for _, c := range cols {
		_, okA := l.byName[c.A]
		_, okB := l.byName[c.B]
		if okA && okB && c.A != c.B {
			leaks := c.Leaks
			if leaks == nil {
				leaks = []habilis.Leak{}
			}
			out = append(out, Link{A: c.A, B: c.B, Severity: c.Severity, CentroidSimilarity: c.CentroidSimilarity, Leaks: leaks})
		}
	}
	slices.SortStableFunc(out, func(a, b Link) int { return cmp.Compare(b.Severity.Rank(), a.Severity.Rank()) })
	return out
}

func worst(links []Link, name string) habilis.Severity {
	var w habilis.Severity
	for _, k := range links {
		if (k.A == name || k.B == name) && k.Severity.Rank() > w.Rank() {
			w = k.Severity
		}
	}
	return w
}

// angle returns the angle in radians between unit vectors of similarity s.
func angle(s float64) float64 {
	return math.Acos(min(max(s, -1), 1))
}

// errorf wraps a sentinel with what is wrong, in words a user of the map
// command reads.
func errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), sentinel)
}
