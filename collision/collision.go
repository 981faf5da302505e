// Package collision finds tools whose regions of the vector space overlap:
// pairs of centroids that are too similar, gates that contain another tool's
// centroid, and examples of one tool that fall into another's gate or would
// be routed to it. It is a set of pure functions over []habilis.Record, used
// by the selector (collides_with, ambiguous decisions), the collisions
// command and CI gates.
//
// # Geometry
//
// A tool's gate passes a query q when q·c ≥ g, with g = Radius − Margin for
// tools with a radius and g = Options.CatalogThreshold for the others. On the
// unit sphere the gate is a spherical cap of angular radius θ = arccos(g)
// around the centroid c. Two caps intersect when θ_a + θ_b exceeds the angle
// between the centroids; Collision.Overlap is θ_a + θ_b − angle, in radians,
// positive when they intersect.
//
// # What is reported
//
// A pair of tools a, b is reported when any of these holds:
//   - centroid pair: c_a·c_b ≥ Options.Threshold;
//   - centroid in gate: c_a·c_b ≥ g_a or c_a·c_b ≥ g_b, i.e. the typical
//     request of one tool passes the other's gate;
//   - example leak (Find only): an example of one tool, left out of its own
//     centroid, passes the other's gate or is routed to it (see Leak);
//   - with Options.Bare, tools without examples stand in by their
//     description vectors; two of them pair only when each is the other's
//     nearest and they reach Threshold (the gate criterion does not pair
//     them), and only at low severity.
//
// Caps that merely intersect are not reported by themselves. Gates are wide
// in practice: with the lexical embedder radii sit near 0.3 (caps of about
// 72°), so nearly every pair of caps in a catalog intersects and the report
// would list every pair. Overlap is still computed for every reported pair.
//
// # Severity
//
// Severity rests on evidence that a real request would be misrouted: an
// example that, left out of its own tool, is routed to the other tool and
// passes its gate (a misroute) is such a request. A misroute counts only
// between neighbours: tools that are each other's nearest (the other tool
// ranked first of the rest) for at least a quarter of their held-out
// examples. Tools that do overlapping things border each other along their
// whole regions; a misroute between tools that are otherwise far apart
// comes from one shared word ("how much is 7 times 8" to current_time),
// and a person reading the report would not call them overlapping.
//   - high: at least Options.MinMisroutes misroutes (both directions
//     together) between neighbours, or c_a·c_b ≥ Threshold + 0.1;
//   - medium: one misroute between neighbours;
//   - low: similar centroids (c_a·c_b ≥ Threshold), overlapping gates
//     (examples of one pass the other's gate, or a centroid does), or
//     misroutes between tools that are not neighbours.
//
// Which tool an example is routed to, and which other tool it ranks first,
// is decided as hybrid mode ranks, by the Rocchio score: a tool's examples
// with its description as one more example (the centroid alone for
// records without a description vector). Collision.NearestAB and
// NearestBA report the neighbourhood.
//
// # Cost
//
// Pairs compares every pair of centroids: for dense vectors by row scans of
// one slab, for sparse vectors through an inverted index that accumulates the
// products of co-occurring terms, both spread over GOMAXPROCS goroutines.
// Find also scores every example against every centroid. Above
// Options.MaxTools tools with examples, the exact passes are not attempted:
// Pairs reports only centroid pairs above Threshold, found for sparse
// catalogs with a prefix-filtered inverted index (exactly), for dense ones
// by comparing only centroids that share a block around k-means centres
// (nearly all of them: see denseAbove), and Find returns an error.
package collision

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/habilis-router/habilis"
)

// Defaults for the zero values of Options.
const (
	// DefaultThreshold suits cosines of dense model embeddings, where two
	// tools with centroids 37° apart (0.8) are hard to tell apart. Lexical
	// centroids of near-duplicate tools score lower (0.4 to 0.8); the gate
	// criteria catch those.
	DefaultThreshold float32 = 0.8
	// DefaultCatalogThreshold is the gate of tools without a radius when the
	// caller does not pass the selector's calibrated value.
	DefaultCatalogThreshold float32 = 0.5
	// DefaultMaxLeaksPerPair is how many culprit examples a pair keeps.
	DefaultMaxLeaksPerPair = 5
	// DefaultMaxTools bounds the catalogs analysed exactly; see the package
	// documentation.
	DefaultMaxTools = 10000
	// DefaultMinMisroutes is how many misrouted examples make a pair high.
	// One misroute among a few hundred tools is common and rarely a defect
	// of the catalog; two between the same tools usually are.
	DefaultMinMisroutes = 2

	// highDelta is how far above Threshold centroid similarity alone makes
	// a pair high.
	highDelta = 0.1
)

// Options tune the analysis. The zero value uses the defaults above.
type Options struct {
	// Threshold is the centroid similarity from which a pair is reported;
	// 0 means DefaultThreshold. Negative values are invalid.
	Threshold float32
	// CatalogThreshold is the gate of tools without a radius (HasRadius
	// false): a query passes when its score reaches it. Callers should pass
	// the selector's calibrated value; 0 means DefaultCatalogThreshold.
	CatalogThreshold float32
	// GateFloor is the lowest a radius − margin gate may be, as selection
	// applies it (the selector's noise floor); 0 or less means none.
	GateFloor float32
	// MaxLeaksPerPair is how many leaks a collision keeps, worst first
	// (largest Score − OwnScore); 0 means DefaultMaxLeaksPerPair. Severity
	// counts every leak, kept or not.
	MaxLeaksPerPair int
	// MinMisroutes is how many misrouted examples make a pair high; 0 means
	// DefaultMinMisroutes.
	MinMisroutes int
	// MaxTools is the number of tools with examples above which the exact
	// passes are skipped (see the package documentation); 0 means
	// DefaultMaxTools, a negative value means no limit.
	MaxTools int
	// Bare, when set, gives the gate of a tool without examples (a zero
	// centroid) on its description score, ok false to leave the tool out:
	// the analysis then takes the tool's description vector for its
	// centroid, so that other tools' examples are routed to it as hybrid
	// mode ranks them (by the description alone), and two such tools pair
	// when their descriptions are each other's nearest and reach
	// Threshold, at low severity. Nil leaves every such tool out.
	Bare func(rec int) (gate float32, ok bool)
	// HighOnly, above MaxTools, looks for the pairs whose centroid
	// similarity alone makes them high (Threshold + 0.1) and no others:
	// what a caller keeping only high severities needs, found with fewer
	// candidates to check (about half the time on 10,000 synthetic lexical
	// tools). The zero value reports every pair from Threshold on.
	HighOnly bool
	// DescriptionWeight, when set, is the weight of a tool's description
	// in its Rocchio vector (its examples' sum plus that many times its
	// description) given how many examples the vector sums, as the
	// selector ranks; nil weighs it as one example.
	DescriptionWeight func(examples int) float32
}

// descriptionWeight is o.DescriptionWeight of n, 1 without one.
func (o Options) descriptionWeight(n int) float64 {
	if o.DescriptionWeight == nil {
		return 1
	}
	return float64(o.DescriptionWeight(n))
}

// resolved returns o with defaults filled in, or an error for values that
// make no sense.
func (o Options) resolved() (Options, error) {
	if o.Threshold < 0 || isBad(o.Threshold) {
		return o, fmt.Errorf("collision: threshold %v: %w", o.Threshold, habilis.ErrInvalid)
	}
	if isBad(o.CatalogThreshold) {
		return o, fmt.Errorf("collision: catalog threshold %v: %w", o.CatalogThreshold, habilis.ErrInvalid)
	}
	if o.MaxLeaksPerPair < 0 {
		return o, fmt.Errorf("collision: max leaks per pair %d: %w", o.MaxLeaksPerPair, habilis.ErrInvalid)
	}
	if o.MinMisroutes < 0 {
		return o, fmt.Errorf("collision: min misroutes %d: %w", o.MinMisroutes, habilis.ErrInvalid)
	}
	if o.Threshold == 0 {
		o.Threshold = DefaultThreshold
	}
	if o.CatalogThreshold == 0 {
		o.CatalogThreshold = DefaultCatalogThreshold
	}
	if o.MaxLeaksPerPair == 0 {
		o.MaxLeaksPerPair = DefaultMaxLeaksPerPair
	}
	if o.MinMisroutes == 0 {
		o.MinMisroutes = DefaultMinMisroutes
	}
	if o.MaxTools == 0 {
		o.MaxTools = DefaultMaxTools
	}
	return o, nil
}

func isBad(x float32) bool {
	return math.IsNaN(float64(x)) || math.IsInf(float64(x), 0)
}

// Pairs returns the collisions visible from centroids and gates alone:
// centroid pairs and centroids that pass another tool's gate, sorted like
// Find's. Tools with a zero centroid (no examples) are skipped. It returns an
// error wrapping habilis.ErrInvalid when the records mix dense and sparse
// vectors or dimensions, hold malformed vectors, or when a dense catalog
// exceeds Options.MaxTools.
func Pairs(recs []habilis.Record, opts Options) ([]habilis.Collision, error) {
	return analyse(recs, opts, false)
}

// Find returns Pairs' collisions plus example leaks, and pairs that only
// leaks reveal. Each example of a tool with two examples or more is scored
// against its own centroid computed without it and against every other
// tool's centroid. It returns the errors of Pairs, also for sparse catalogs
// above Options.MaxTools, and for example vectors whose form differs from
// the centroids'.
func Find(recs []habilis.Record, opts Options) ([]habilis.Collision, error) {
	return analyse(recs, opts, true)
}

// analyse is Pairs, and Find when withLeaks is set.
func analyse(recs []habilis.Record, opts Options, withLeaks bool) ([]habilis.Collision, error) {
	opts, err := opts.resolved()
	if err != nil {
		return nil, err
	}
	c, err := newCatalog(recs, opts)
	if err != nil {
		return nil, err
	}
	if withLeaks && opts.MaxTools >= 0 && len(c.tools) > opts.MaxTools {
		return nil, fmt.Errorf("collision: %d tools exceed the limit of %d for example leaks: %w",
			len(c.tools), opts.MaxTools, habilis.ErrInvalid)
	}
	ps, err := c.pairs(opts)
	if err != nil {
		return nil, err
	}
	c.keepNearestBare(ps)
	if withLeaks {
		if err := c.leaks(ps, opts); err != nil {
			return nil, err
		}
	}
	return c.report(ps, opts), nil
}

// ForTool returns, for every tool named in cols, the sorted names of the
// tools it collides with, in both directions. Callers that only want some
// severities filter cols first.
func ForTool(cols []habilis.Collision) map[string][]string {
	m := make(map[string][]string)
	for _, c := range cols {
		if c.A == c.B {
			continue
		}
		m[c.A] = append(m[c.A], c.B)
		m[c.B] = append(m[c.B], c.A)
	}
	for k, v := range m {
		slices.Sort(v)
		m[k] = slices.Compact(v)
	}
	return m
}

// AtLeast reports whether some collision in cols is at least as severe as
// s, for --fail-on. An unknown s matches nothing; callers validate it.
func AtLeast(cols []habilis.Collision, s habilis.Severity) bool {
	if s.Rank() == 0 {
		return false
	}
	for _, c := range cols {
		if c.Severity.Rank() >= s.Rank() {
			return true
		}
	}
	return false
}

// pair is what the analysis knows about two tools i < j (indexes into
// catalog.tools).
type pair struct {
	i, j int
	sim  float32
	// leaks holds the worst leaks seen so far, at most twice the cap
	// between trims.
	leaks  []habilis.Leak
	nLeaks int
	// misroutes counts the examples of tool i routed to j (misroutes[0])
	// and of j routed to i (misroutes[1]), each passing the other's gate.
	misroutes [2]int
	// nearest counts the examples of i whose nearest other tool is j
	// (nearest[0]) and of j whose nearest is i (nearest[1]).
	nearest [2]int
	// centroids is set for the pairs the centroid pass found (Pairs), which
	// are reported without a leak.
	centroids bool
	// bare is set, by report, when neither tool has examples
	// (Options.Bare).
	bare bool
}

// side is 0 for an example of tool i, 1 for one of j.
func (p *pair) side(from int) int {
	if from == p.i {
		return 0
	}
	return 1
}

// misrouted returns the misroutes both ways.
func (p *pair) misrouted() int { return p.misroutes[0] + p.misroutes[1] }

// pairSet holds the pairs found so far by key i<<32 | j.
type pairSet map[uint64]*pair

func key(i, j int) uint64 {
	if i > j {
		i, j = j, i
	}
	return uint64(i)<<32 | uint64(j)
}

// leakOrder puts the worst leak first: the largest lead of the other tool
// over the example's own, then the names and text for a stable order.
func leakOrder(a, b habilis.Leak) int {
	if c := cmp.Compare(b.Score-b.OwnScore, a.Score-a.OwnScore); c != 0 {
		return c
	}
	if c := cmp.Compare(a.From, b.From); c != 0 {
		return c
	}
	return cmp.Compare(a.Example, b.Example)
}

// add records a leak.
func (p *pair) add(l habilis.Leak, from int, limit int) {
	p.nLeaks++
	if l.RanksFirst && l.PassesGate {
		p.misroutes[p.side(from)]++
	}
	p.keep(l, limit)
}

// merge adds the leaks that q, the same pair seen by another worker,
// recorded.
func (p *pair) merge(q *pair, limit int) {
	p.nLeaks += q.nLeaks
	p.misroutes[0] += q.misroutes[0]
	p.misroutes[1] += q.misroutes[1]
	p.nearest[0] += q.nearest[0]
	p.nearest[1] += q.nearest[1]
	for _, l := range q.leaks {
		p.keep(l, limit)
	}
}

// keep holds on to l, trimming to the worst limit leaks once twice as many
// have gathered, so memory stays bounded whatever the catalog.
func (p *pair) keep(l habilis.Leak, limit int) {
	p.leaks = append(p.leaks, l)
	if len(p.leaks) >= 2*limit {
		p.trim(limit)
	}
}

// trim keeps the worst limit leaks.
func (p *pair) trim(limit int) {
	slices.SortFunc(p.leaks, leakOrder)
	if len(p.leaks) > limit {
		p.leaks = p.leaks[:limit]
	}
}

// severity applies the rule of the package documentation to the pair,
// whose tools hold out heldOut examples between them.
func (p *pair) severity(opts Options, heldOut int) habilis.Severity {
	switch {
	case p.bare:
		// Two descriptions alike show no request misrouted.
		return habilis.SeverityLow
	case p.sim >= opts.Threshold+highDelta:
		return habilis.SeverityHigh
	case p.misrouted() == 0 || !p.neighbours(heldOut):
		return habilis.SeverityLow
	case p.misrouted() >= opts.MinMisroutes:
		return habilis.SeverityHigh
	}
	return habilis.SeverityMedium
}

// neighbourShare is the share of two tools' held-out examples that must
// rank the other tool first of the others for their misroutes to count.
// On the sample catalog (16 tools, 6-7 examples each) the pairs that
// overlap in what they do reach 0.36-0.77; the pairs joined by one shared
// word ("how much is 7 times 8" to current_time) 0.07-0.21.
const neighbourShare = 0.25

// neighbours reports whether the pair's tools are each other's nearest for
// at least neighbourShare of their heldOut examples. Every misroute counts
// toward it (a misrouted example ranks the other tool first of all).
func (p *pair) neighbours(heldOut int) bool {
	return float64(p.nearest[0]+p.nearest[1]) >= neighbourShare*float64(heldOut)
}

// report turns the pairs into sorted collisions: by severity, then by the
// strongest evidence (the worst leak's lead or the centroid similarity),
// then by names.
func (c *catalog) report(ps pairSet, opts Options) []habilis.Collision {
	type ranked struct {
		col      habilis.Collision
		strength float32
	}
	rs := make([]ranked, 0, len(ps))
	for _, p := range ps {
		if p.nLeaks == 0 && !p.centroids {
			continue // only ever some example's nearest other tool
		}
		a, b := c.tools[p.i], c.tools[p.j]
		p.bare = a.bare && b.bare
		ab, ba := p.misroutes[0], p.misroutes[1]
		nab, nba := p.nearest[0], p.nearest[1]
		na, nb := c.heldOut(p.i), c.heldOut(p.j)
		if b.name < a.name {
			a, b, ab, ba, nab, nba, na, nb = b, a, ba, ab, nba, nab, nb, na
		}
		p.trim(opts.MaxLeaksPerPair)
		leaks := p.leaks
		if leaks == nil {
			leaks = []habilis.Leak{}
		}
		strength := p.sim
		if len(leaks) > 0 {
			strength = max(strength, leaks[0].Score-leaks[0].OwnScore)
		}
		rs = append(rs, ranked{
			col: habilis.Collision{
				A:                  a.name,
				B:                  b.name,
				CentroidSimilarity: p.sim,
				Overlap:            overlap(a.theta, b.theta, p.sim),
				Leaks:              leaks,
				MisroutesAB:        ab,
				MisroutesBA:        ba,
				MisrouteRate:       rate(ab+ba, na+nb),
				Severity:           p.severity(opts, na+nb),
				NearestAB:          nab,
				NearestBA:          nba,
			},
			strength: strength,
		})
	}
	slices.SortFunc(rs, func(x, y ranked) int {
		if c := cmp.Compare(y.col.Severity.Rank(), x.col.Severity.Rank()); c != 0 {
			return c
		}
		if c := cmp.Compare(y.strength, x.strength); c != 0 {
			return c
		}
		if c := cmp.Compare(x.col.A, y.col.A); c != 0 {
			return c
		}
		return cmp.Compare(x.col.B, y.col.B)
	})
	cols := make([]habilis.Collision, len(rs))
	for k, r := range rs {
		cols[k] = r.col
	}
	return cols
}

// heldOut returns how many of tool t's examples the leak analysis holds
// out: its nonzero examples, when it has at least two.
func (c *catalog) heldOut(t int) int {
	evs := c.recs[c.tools[t].rec].ExampleVectors
	if len(evs) < 2 {
		return 0
	}
	n := 0
	for _, ev := range evs {
		if !zero(ev) {
			n++
		}
	}
	return n
}

// rate returns k/n, 0 when n is 0.
func rate(k, n int) float32 {
	if n == 0 {
		return 0
	}
	return float32(k) / float32(n)
}

// capAngle is the angular radius of a gate g: arccos(g), clamped so a gate
// above 1 is a point and one below −1 the whole sphere.
func capAngle(g float32) float64 {
	return math.Acos(clamp(float64(g)))
}

// overlap is θ_a + θ_b − angle(c_a, c_b), in radians.
func overlap(thetaA, thetaB float64, sim float32) float32 {
	return float32(thetaA + thetaB - math.Acos(clamp(float64(sim))))
}

func clamp(x float64) float64 {
	return max(-1, min(1, x))
}

// HighSimilarity returns the centroid similarity at which a pair of tools
// collides at high severity on that evidence alone, under opts (its
// Threshold, DefaultThreshold when zero): what Pairs rests a high
// severity on above Options.MaxTools, for callers that look for one
// tool's pairs themselves.
func HighSimilarity(opts Options) (float32, error) {
	o, err := opts.resolved()
	if err != nil {
		return 0, err
	}
	return o.Threshold + highDelta, nil
}
