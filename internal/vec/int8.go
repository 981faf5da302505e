package vec

import "math"

// Dense vectors are stored on an 8-bit grid where only writes read them
// (the examples' vectors: centroids, calibration and collisions), as
// vector databases store them: symmetric scalar quantisation with one
// float32 scale a vector. A coordinate is q·s for an integer q in
// [-127, 127]; the grid's step is the largest magnitude over 127, and s is
// that step adjusted so the vector keeps its length (a unit vector stays
// one). Round8 puts a vector on the grid where it is embedded, before
// anything is computed from it, and Quantize8 finds its q and s again
// exactly, so a store that keeps q and s gives back the very vector the
// router computed with.

// Round8 returns v on the 8-bit grid, in a slice of its own. A vector
// already on it, or zero, empty or not finite (with no grid to put it
// on), is returned as it is.
func Round8(v []float32) []float32 {
	step, ok := gridStep(v)
	if !ok {
		return v
	}
	if _, on := Quantize8(make([]int8, len(v)), v); on {
		return v // already on it: rounding again would move the scale
	}
	var nv, nq float64
	q := make([]float32, len(v))
	for i, x := range v {
		// math.Round keeps the sign of a coordinate that rounds to zero;
		// +0 is what q·s gives back.
		if q[i] = float32(math.Round(float64(x) / step)); q[i] == 0 {
			q[i] = 0
		}
		nv += float64(x) * float64(x)
		nq += float64(q[i]) * float64(q[i])
	}
	s := float32(math.Sqrt(nv) / math.Sqrt(nq))
	if !(s > 0) || math.IsInf(float64(s), 0) {
		return v
	}
	for i := range q {
		q[i] = float32(q[i] * s)
	}
	return q
}

// gridStep returns the largest magnitude of v over 127, or false for a
// vector with no grid.
func gridStep(v []float32) (float64, bool) {
	var m float64
	for _, x := range v {
		a := math.Abs(float64(x))
		if math.IsNaN(a) || math.IsInf(a, 0) {
			return 0, false
		}
		m = max(m, a)
	}
	return m / 127, m > 0
}

// Quantize8 writes into q (of len(v)) the integers of v on the 8-bit
// grid and returns its scale, such that Dequantize8 gives back v bit for
// bit; ok is false when v is on no such grid (a vector Round8 did not
// make). The scale of a vector Round8 made is within two units in the
// last place of its largest magnitude over 127, where it is looked for.
func Quantize8(q []int8, v []float32) (scale float32, ok bool) {
	step, ok := gridStep(v)
	if !ok || len(q) != len(v) {
		return 0, false
	}
	s0 := float32(step)
	for _, s := range [...]float32{s0, math.Nextafter32(s0, 0), math.Nextafter32(s0, 1), math.Nextafter32(math.Nextafter32(s0, 0), 0), math.Nextafter32(math.Nextafter32(s0, 1), 1)} {
		if s > 0 && on8(q, v, s) {
			return s, true
		}
	}
	return 0, false
}

// on8 reports whether every coordinate of v is q·s for an integer q in
// [-127, 127], which it writes into q.
func on8(q []int8, v []float32, s float32) bool {
	for i, x := range v {
		r := math.Round(float64(x) / float64(s))
		if r < -127 || r > 127 {
			return false
		}
		q[i] = int8(r)
		if math.Float32bits(float32(float32(q[i])*s)) != math.Float32bits(x) {
			return false
		}
	}
	return true
}

// Dequantize8 writes into out (of len(q)) the coordinates q·scale, q
// given as int8 or as the bytes of its two's complement (as a store
// keeps it).
func Dequantize8[Q int8 | byte](out []float32, q []Q, scale float32) {
	out = out[:len(q)]
	for i, x := range q {
		out[i] = float32(float32(int8(x)) * scale)
	}
}
