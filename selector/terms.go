package selector

// termTable maps the terms of an inverted index to their slots: an
// open-addressing hash table with linear probing, a third to two thirds
// full, so that it takes about as much memory as a Go map. Selection
// looks up every query term in it, and at a few hundred tools those
// lookups were an eighth of a selection with a Go map; here they cost a
// quarter to a third of that.
type termTable struct {
	entries []termEntry
}

// termEntry is one entry of a termTable, its term beside its slot so that
// a probe reads one cache line.
type termEntry struct {
	term uint32
	slot int32 // slot + 1; 0 marks an empty entry, so any uint32 is a term
}

// newTermTable returns the table in which term terms[k] has slot k; terms
// must be distinct.
func newTermTable(terms []uint32) termTable {
	if len(terms) == 0 {
		return termTable{}
	}
	size := 1
	for size < len(terms)+len(terms)/2+1 {
		size <<= 1
	}
	t := termTable{entries: make([]termEntry, size)}
	mask := uint32(size - 1)
	for k, term := range terms {
		i := termHash(term, mask)
		for t.entries[i].slot != 0 {
			i = (i + 1) & mask
		}
		t.entries[i] = termEntry{term: term, slot: int32(k) + 1}
	}
	return t
}

// find returns term's slot, or false when the index does not hold it.
func (t *termTable) find(term uint32) (int32, bool) {
	if len(t.entries) == 0 {
		return 0, false
	}
	mask := uint32(len(t.entries) - 1)
	for i := termHash(term, mask); ; i = (i + 1) & mask {
		switch e := t.entries[i]; {
		case e.slot == 0:
			return 0, false
		case e.term == term:
			return e.slot - 1, true
		}
	}
}

// termHash is where the probe for term starts in a table of mask+1
// entries (Fibonacci hashing, so that nearby terms spread out).
func termHash(term, mask uint32) uint32 {
	return uint32(uint64(term)*0x9e3779b97f4a7c15>>32) & mask
}
