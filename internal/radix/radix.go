// Package radix sorts uint32 keys by their bytes, least significant first.
// On keys spread like hashes it beats comparison sorting from a few dozen
// keys up: the lexical embedder sorts each text's feature ids with it, and
// the selector a catalog's terms.
package radix

import "slices"

// Sort sorts ids ascending, using tmp (grown as needed and returned) as
// working memory. Fewer than 64 ids are sorted by comparison.
func Sort(ids, tmp []uint32) []uint32 {
	if len(ids) < 64 {
		slices.Sort(ids)
		return tmp
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
