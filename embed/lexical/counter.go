package lexical

import (
	"github.com/habilis-router/habilis/internal/radix"
	"github.com/habilis-router/habilis/internal/terms"
)

// counter counts document frequencies during Fit: an open-addressing hash
// table from feature id + 1 to a count, kept at most half full. It is
// several times smaller and faster than a map for this one job.
type counter struct {
	keys   []uint32
	counts []uint32
	// last holds, by slot, 1 + the last document addOnce counted the id
	// of (0 for none).
	last []uint32
	n    int
}

func (c *counter) add(id uint32) { c.addN(id, 1) }

// addOnce counts id once for document doc, however often doc holds it:
// a document's features are counted in one pass over their occurrences,
// without sorting them to find the distinct ones. Documents are added in
// ascending order, so only the last one to count an id can repeat it.
func (c *counter) addOnce(id, doc uint32) {
	if i := c.slot(id); c.last[i] != doc+1 {
		c.counts[i]++
		c.last[i] = doc + 1
	}
}

// addN counts id n more times.
func (c *counter) addN(id, n uint32) { c.counts[c.slot(id)] += n }

// slot returns id's slot, taking an empty one (count 0, no last
// document) for an id not counted yet.
func (c *counter) slot(id uint32) uint32 {
	if 2*(c.n+1) > len(c.keys) {
		c.grow()
	}
	mask := uint32(len(c.keys) - 1)
	for i := terms.Slot(id, mask); ; i = (i + 1) & mask {
		switch c.keys[i] {
		case id + 1:
			return i
		case 0:
			c.keys[i] = id + 1
			c.n++
			return i
		}
	}
}

// merge adds o's counts to c's.
func (c *counter) merge(o *counter) {
	for i, k := range o.keys {
		if k != 0 {
			c.addN(k-1, o.counts[i])
		}
	}
}

func (c *counter) grow() {
	keys, counts, last := c.keys, c.counts, c.last
	size := max(1024, 2*len(keys))
	c.keys, c.counts, c.last = make([]uint32, size), make([]uint32, size), make([]uint32, size)
	mask := uint32(size - 1)
	for j, k := range keys {
		if k == 0 {
			continue
		}
		i := terms.Slot(k-1, mask)
		for c.keys[i] != 0 {
			i = (i + 1) & mask
		}
		c.keys[i], c.counts[i], c.last[i] = k, counts[j], last[j]
	}
}

// atLeast returns the ids counted at least `least` times, ascending, and their
// counts.
func (c *counter) atLeast(least uint32) (ids, counts []uint32) {
	for i, k := range c.keys {
		if k != 0 && c.counts[i] >= least {
			ids = append(ids, k-1)
		}
	}
	radix.Sort(ids, nil) // a large catalog's hundreds of thousands, on one core
	counts = make([]uint32, len(ids))
	mask := uint32(len(c.keys) - 1)
	for j, id := range ids {
		i := terms.Slot(id, mask)
		for c.keys[i] != id+1 {
			i = (i + 1) & mask
		}
		counts[j] = c.counts[i]
	}
	return ids, counts
}
