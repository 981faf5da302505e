// Package radix sorts uint32 keys by their bytes. On keys spread like
// hashes it beats comparison sorting from a few dozen keys up: the lexical
// embedder sorts each text's feature ids with it, and terms.Set the
// distinct terms of an index.
package radix

import "slices"

// Sort sorts ids ascending, using tmp (grown as needed and returned) as
// working memory. Fewer than 64 ids are sorted by comparison, fewer than
// topMax by their top byte and insertion, and more by four passes, one a
// byte.
func Sort(ids, tmp []uint32) []uint32 {
	switch {
	case len(ids) < 64:
		slices.Sort(ids)
		return tmp
	case len(ids) < topMax:
		return sortTop(ids, tmp)
	}
	var counts [4][256]uint32
	for _, id := range ids {
		counts[0][id&0xff]++
		counts[1][id>>8&0xff]++
		counts[2][id>>16&0xff]++
		counts[3][id>>24]++
	}
	tmp = slices.Grow(tmp[:0], len(ids))[:len(ids)]
	src, dst := ids, tmp
	for pass := range 4 {
		c := &counts[pass]
		shift := 8 * pass
		if int(c[src[0]>>shift&0xff]) == len(src) {
			continue // every id has the same digit
		}
		var sum uint32
		for d, n := range c {
			c[d] = sum
			sum += n
		}
		for _, id := range src {
			d := id >> shift & 0xff
			dst[c[d]] = id
			c[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &ids[0] {
		copy(ids, src)
	}
	return tmp
}

// topMax is where four byte passes overtake sortTop, on feature ids (two
// family bits above hash bits, one family holding most ids), as each
// bucket's insertion sort grows with the square of its size
// (docs/benchmarks.md). A query has a few hundred feature ids.
const topMax = 400

// sortTop sorts ids by distributing them on their top byte, which leaves
// only ids of one bucket out of order, and then by insertion, which moves
// each id past those few alone. Ids crowded into few buckets (a text made
// to hash that way) would make insertion quadratic, so past a budget of
// moves it leaves the rest to a comparison sort.
func sortTop(ids, tmp []uint32) []uint32 {
	var next [256]uint32
	for _, id := range ids {
		next[id>>24]++
	}
	var sum uint32
	for d, n := range next {
		next[d] = sum
		sum += n
	}
	tmp = slices.Grow(tmp[:0], len(ids))[:len(ids)]
	for _, id := range ids {
		d := id >> 24
		tmp[next[d]] = id
		next[d]++
	}
	budget := 16 * len(ids)
	for i, id := range tmp {
		j := i
		for j > 0 && ids[j-1] > id {
			ids[j] = ids[j-1]
			j--
		}
		ids[j] = id
		if budget -= i - j; budget < 0 {
			copy(ids[i+1:], tmp[i+1:])
			slices.Sort(ids)
			break
		}
	}
	return tmp
}
