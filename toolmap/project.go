package toolmap

import (
	"math"

	"gonum.org/v1/gonum/mat"
)

// project returns 2-D coordinates for n points given their pairwise
// similarities (cosines of unit vectors, sim[i*n+j]): t-SNE started from
// classical MDS. Equal inputs give equal outputs.
//
// Classical MDS alone keeps the directions of largest variance, which suit
// points that lie near a plane. Tool centroids do not: they are nearly
// orthogonal, so the spectrum is flat and the plane separates half the
// tools from their nearest; t-SNE keeps nearly all of them together (as
// measured on the sample catalog, docs/map.md). It matches the distribution
// of each tool's similarities to the others (a Gaussian kernel on the
// sphere, whose width is set per tool by a perplexity) with one of distances
// on the map (a Student-t kernel, whose heavy tail lets unrelated tools lie
// far apart). Classical MDS gives it a deterministic start that
// keeps the coarse layout.
func project(sim []float64, n int) [][2]float64 {
	switch n {
	case 0:
		return nil
	case 1:
		return [][2]float64{{0, 0}}
	}
	start := classicalMDS(sim, n)
	if n <= 3 {
		// Three points or fewer fit a plane exactly.
		return start
	}
	return tsne(affinities(sim, n, perplexity(n)), n, start)
}

// perplexity is the effective number of neighbours t-SNE matches for each
// tool: a fifth of the others, between 2 and 10. Tools overlap in small
// groups, and a perplexity above a group's size spreads each tool's
// affinity over unrelated tools: on the test's catalogs of 30 clusters of
// 8 tools, the usual 30 drew the whole map into one point in the
// exaggerated stage; caps of 5 and 10 kept every cluster whole over 40
// seeds of each test catalog. On the sample catalog, 3 and 5 keep 14
// nearest neighbours of 16, 4 keeps 13.
func perplexity(n int) float64 {
	return min(max(float64(n-1)/5, 2), 10)
}

// classicalMDS returns the two leading principal coordinates of the points
// whose Gram matrix is sim: the eigenvectors of the double-centred Gram
// matrix, scaled by the roots of their eigenvalues. Squared distances of
// unit vectors are 2 − 2·sim, so this is classical MDS on the chord
// distances.
func classicalMDS(sim []float64, n int) [][2]float64 {
	rowMean := make([]float64, n)
	var all float64
	for i := range n {
		for j := range n {
			rowMean[i] += sim[i*n+j]
		}
		all += rowMean[i]
		rowMean[i] /= float64(n)
	}
	all /= float64(n * n)
	b := mat.NewSymDense(n, nil)
	for i := range n {
		for j := i; j < n; j++ {
			s := (sim[i*n+j] + sim[j*n+i]) / 2
			b.SetSym(i, j, s-rowMean[i]-rowMean[j]+all)
		}
	}
	out := make([][2]float64, n)
	var es mat.EigenSym
	if !es.Factorize(b, true) {
		// No decomposition: a circle keeps the points apart for t-SNE
		// to arrange.
		for i := range out {
			a := 2 * math.Pi * float64(i) / float64(n)
			out[i] = [2]float64{math.Cos(a), math.Sin(a)}
		}
		return out
	}
	vals := es.Values(nil) // ascending
	var vecs mat.Dense
	es.VectorsTo(&vecs)
	for d := range 2 {
		k := n - 1 - d
		scale := math.Sqrt(max(vals[k], 0))
		// An eigenvector's sign is arbitrary; fix it so that the largest
		// coordinate is positive and the picture does not flip between
		// runs of different LAPACK builds.
		sign := 1.0
		var big float64
		for i := range n {
			if v := vecs.At(i, k); math.Abs(v) > math.Abs(big) {
				big = v
			}
		}
		if big < 0 {
			sign = -1
		}
		for i := range n {
			out[i][d] = sign * scale * vecs.At(i, k)
		}
	}
	return out
}

// affinities returns t-SNE's joint probabilities p_ij: each row's
// conditional p_j|i ∝ exp(β_i·sim_ij), with β_i found by bisection so that
// the row's perplexity (2 to the power of its entropy in bits) is perp,
// then symmetrised and normalised to sum to 1. exp(β·sim) is a Gaussian
// kernel on unit vectors, whose squared distance is 2 − 2·sim.
func affinities(sim []float64, n int, perp float64) []float64 {
	p := make([]float64, n*n)
	row := make([]float64, n)
	target := math.Log(perp)
	for i := range n {
		top := math.Inf(-1)
		for j := range n {
			if j != i {
				top = max(top, sim[i*n+j])
			}
		}
		lo, hi := 0.0, math.Inf(1)
		beta := 1.0
		for range 200 {
			h := conditional(sim[i*n:i*n+n], i, top, beta, row)
			if math.Abs(h-target) < 1e-9 {
				break
			}
			if h > target {
				// Too flat: sharpen.
				lo = beta
				if math.IsInf(hi, 1) {
					beta *= 2
				} else {
					beta = (lo + hi) / 2
				}
			} else {
				hi = beta
				beta = (lo + hi) / 2
			}
		}
		for j := range n {
			p[i*n+j] = row[j]
		}
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			s := (p[i*n+j] + p[j*n+i]) / float64(2*n)
			p[i*n+j], p[j*n+i] = s, s
		}
		p[i*n+i] = 0
	}
	return p
}

// conditional fills row with p_j|i for kernel width beta and returns the
// row's entropy in nats. top is the row's largest similarity, subtracted
// before exponentiating so that no term overflows.
func conditional(sim []float64, i int, top, beta float64, row []float64) float64 {
	var sum float64
	for j, s := range sim {
		if j == i {
			row[j] = 0
			continue
		}
		row[j] = math.Exp(beta * (s - top))
		sum += row[j]
	}
	var h float64
	for j := range row {
		row[j] /= sum
		if row[j] > 0 {
			h -= row[j] * math.Log(row[j])
		}
	}
	return h
}

// t-SNE's optimisation, as its authors and later studies run it
// (van der Maaten and Hinton 2008; Belkina et al. 2019; Kobak and Berens
// 2019): gradient descent with momentum and per-coordinate gains from a
// start of small spread, the affinities exaggerated in a first stage so
// that neighbours gather before the map spreads, and a learning rate of
// n/12 (Belkina et al.), here at least 10. With the clustered catalogs the
// tests draw (toolmap_test.go), the usual floors of 50 to 200 split a
// cluster in 5 to 13 of 120 (four sizes, 30 seeds each); 10 split none of
// 400, nor of 200 with the settings here.
const (
	exaggeration     = 12
	exaggeratedSteps = 250
	steps            = 1000
	startSpread      = 1e-4
)

// tsne returns the map that minimises the Kullback-Leibler divergence
// between the affinities p (n×n) and the map's Student-t similarities,
// from start, or start itself should the descent fail (a map that is not
// finite, or that has shrunk to a point).
func tsne(p []float64, n int, start [][2]float64) [][2]float64 {
	y := make([]float64, 2*n)
	var ss float64
	for _, pt := range start {
		ss += pt[0]*pt[0] + pt[1]*pt[1]
	}
	scale := startSpread / math.Sqrt(max(ss/float64(n), 1e-300))
	for i, pt := range start {
		y[2*i], y[2*i+1] = pt[0]*scale, pt[1]*scale
	}
	rate := max(float64(n)/exaggeration, 10)
	grad := make([]float64, 2*n)
	step := make([]float64, 2*n)
	gain := make([]float64, 2*n)
	for k := range gain {
		gain[k] = 1
	}
	for it := range steps {
		ex, momentum := 1.0, 0.8
		if it < exaggeratedSteps {
			ex, momentum = exaggeration, 0.5
		}
		klGradient(p, n, ex, y, grad)
		for k := range y {
			// Grow the gain of a coordinate whose gradient changed
			// sign from the last step's direction, shrink it otherwise.
			if (grad[k] > 0) != (step[k] > 0) {
				gain[k] += 0.2
			} else {
				gain[k] = max(gain[k]*0.8, 0.01)
			}
			step[k] = momentum*step[k] - rate*gain[k]*grad[k]
			y[k] += step[k]
		}
		if !allFinite(y) {
			return start
		}
	}
	out := make([][2]float64, n)
	var spread float64
	for i := range out {
		out[i] = [2]float64{y[2*i], y[2*i+1]}
		spread = max(spread, math.Abs(y[2*i]-y[0]), math.Abs(y[2*i+1]-y[1]))
	}
	if spread < startSpread {
		return start
	}
	return out
}

// klGradient stores in g the gradient of the divergence at the map y, with
// the affinities multiplied by ex: 4 Σ_j (ex·p_ij − q_ij)·w_ij·(y_i − y_j),
// where w_ij = 1/(1 + |y_i − y_j|²) and q_ij = w_ij / Σ w.
func klGradient(p []float64, n int, ex float64, y, g []float64) {
	var z float64
	for i := range n {
		for j := i + 1; j < n; j++ {
			dx, dy := y[2*i]-y[2*j], y[2*i+1]-y[2*j+1]
			z += 2 / (1 + dx*dx + dy*dy)
		}
	}
	clear(g)
	for i := range n {
		for j := range n {
			if i == j {
				continue
			}
			dx, dy := y[2*i]-y[2*j], y[2*i+1]-y[2*j+1]
			w := 1 / (1 + dx*dx + dy*dy)
			f := 4 * (ex*p[i*n+j] - w/z) * w
			g[2*i] += f * dx
			g[2*i+1] += f * dy
		}
	}
}

func allFinite(x []float64) bool {
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
