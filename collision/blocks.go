package collision

import (
	"hash/fnv"
	"math"
	"slices"
	"sort"

	"github.com/habilis-router/habilis/internal/par"
	"github.com/habilis-router/habilis/internal/vec"
)

// Blocking of dense centroids, for catalogs too large to compare every
// pair (denseAbove).
const (
	// blockSize is the number of tools a block holds on average: the
	// number of centres is the number of tools over it.
	blockSize = 256
	// maxProbes bounds the blocks a tool is compared with: those that can
	// hold a tool near enough, nearest first. Comparing a tool costs one
	// comparison a centre and at most maxProbes × blockSize on average.
	maxProbes = 8
	// kmeansRounds is how many rounds of spherical k-means place the
	// centres, over a sample of kmeansSample tools a centre.
	kmeansRounds = 4
	kmeansSample = 32
)

// denseAbove finds the pairs of dense centroids with similarity at least
// threshold without comparing every pair. Centres are placed among the
// centroids by spherical k-means, and each centroid goes to the block of
// its nearest centre. Angles obey the triangle inequality, so a centroid
// within the threshold's angle of x lies in a block whose centre is at
// most that angle plus the block's radius (its farthest member's angle)
// from x: x is compared with the members of those blocks only. That is
// exact, and costs little where tools cluster; where they do not, many
// blocks qualify, and x is compared with the probes nearest of them only
// (Pairs passes maxProbes), so a pair may then be missed: 0.1-1.3 % of
// them on the clustered catalogs of TestDenseAbove. The exact pass runs up to
// Options.MaxTools.
func (c *catalog) denseAbove(threshold float32, probes int) []hit {
	n, d := len(c.tools), c.dim
	if n < 2 {
		return nil
	}
	cs := c.centres(max(1, n/blockSize))
	k := cs.Rows()
	home := make([]int32, n)
	homeCos := make([]float32, n)
	par.For(n, func(_, i int) {
		b := nearestCentre(cs, c.slab.Row(i))
		home[i], homeCos[i] = b, vec.Dot(cs.Row(int(b)), c.slab.Row(i))
	})
	members := make([][]int32, k)
	radius := make([]float64, k) // each block's farthest member's angle from its centre
	for i, b := range home {
		members[b] = append(members[b], int32(i))
		radius[b] = max(radius[b], angle(homeCos[i]))
	}
	slabs := make([]*vec.Slab, k)
	for b, ms := range members {
		slabs[b] = vec.NewSlab(d, len(ms))
		for _, i := range ms {
			slabs[b].Append(c.slab.Row(int(i)))
		}
	}
	// Each tool's reachable blocks, then per block the tools that reach
	// it: a block's members are compared with those tools while its rows
	// stay in cache.
	reach := angle(threshold)
	probing := make([][]int32, n)
	par.For(n, func(_, i int) {
		toCentres := make([]float32, k)
		cs.Scores(c.slab.Row(i), toCentres)
		probing[i] = reachable(toCentres, radius, reach, probes)
	})
	visitors := make([][]int32, k)
	for i, bs := range probing {
		for _, b := range bs {
			visitors[b] = append(visitors[b], int32(i))
		}
	}
	nw := par.Workers(k)
	outs := make([][]hit, nw)
	par.For(k, func(w, b int) {
		ms := members[b]
		scores := make([]float32, len(ms))
		for _, i := range visitors[b] {
			slabs[b].Scores(c.slab.Row(int(i)), scores)
			for m, j := range ms {
				if j > i && scores[m] >= threshold {
					outs[w] = append(outs[w], hit{i, j, scores[m]})
				}
			}
		}
	})
	return slices.Concat(outs...)
}

// angle returns the angle of cosine s, in radians.
func angle(s float32) float64 { return math.Acos(min(max(float64(s), -1), 1)) }

// reachable returns the blocks that may hold a centroid within reach of x,
// whose similarities to the centres are toCentres: those whose centre is
// within reach plus their radius, by the nearest such bound first, at most
// probes of them.
func reachable(toCentres []float32, radius []float64, reach float64, probes int) []int32 {
	type cand struct {
		b     int
		bound float64 // the least angle a member can be from x
	}
	var cands []cand
	for b, s := range toCentres {
		if lb := angle(s) - radius[b]; lb <= reach {
			cands = append(cands, cand{b, lb})
		}
	}
	slices.SortFunc(cands, func(a, b cand) int {
		if a.bound != b.bound {
			if a.bound < b.bound {
				return -1
			}
			return 1
		}
		return a.b - b.b
	})
	out := make([]int32, 0, min(len(cands), probes))
	for _, c := range cands[:min(len(cands), probes)] {
		out = append(out, int32(c.b))
	}
	return out
}

// centres places k centres among the catalog's dense centroids: k of them
// taken in an order set by a hash of the tools' names, then moved by
// rounds of spherical k-means (each centre to the normalised mean of the
// sampled centroids nearest it) over a sample taken the same way.
func (c *catalog) centres(k int) *vec.Slab {
	n, d := len(c.tools), c.dim
	order := make([]int, n)
	keys := make([]uint64, n)
	for i := range order {
		order[i] = i
		h := fnv.New64a()
		h.Write([]byte(c.tools[i].name))
		keys[i] = h.Sum64()
	}
	sort.Slice(order, func(a, b int) bool { return keys[order[a]] < keys[order[b]] })
	k = min(k, n)
	cs := vec.NewSlab(d, k)
	for _, i := range order[:k] {
		cs.Append(c.slab.Row(i))
	}
	sample := order[:min(n, kmeansSample*k)]
	for range kmeansRounds {
		sums := make([]float64, k*d)
		nearest := make([]int32, len(sample))
		par.For(len(sample), func(_, s int) {
			nearest[s] = nearestCentre(cs, c.slab.Row(sample[s]))
		})
		for s, i := range sample {
			row, sum := c.slab.Row(i), sums[int(nearest[s])*d:]
			for x, v := range row {
				sum[x] += float64(v)
			}
		}
		for b := range k {
			sum := sums[b*d : (b+1)*d]
			var norm float64
			for _, v := range sum {
				norm += v * v
			}
			if norm == 0 {
				continue // no sampled centroid: the centre stays
			}
			norm = math.Sqrt(norm)
			row := cs.Row(b)
			for x, v := range sum {
				row[x] = float32(v / norm)
			}
		}
	}
	return cs
}

// nearestCentre returns the centre of cs most similar to x (ties to the
// lower centre).
func nearestCentre(cs *vec.Slab, x []float32) int32 {
	scores := make([]float32, cs.Rows())
	cs.Scores(x, scores)
	best := 0
	for b, s := range scores {
		if s > scores[best] {
			best = b
		}
	}
	return int32(best)
}
