// Package terms numbers the terms of an inverted index: a Set gathers the
// distinct ones, and a Table maps each to its slot.
package terms

import (
	"fmt"

	"github.com/habilis-router/habilis/internal/par"
	"github.com/habilis-router/habilis/internal/radix"
	"github.com/habilis-router/habilis/internal/vec"
)

// Table maps the terms of an inverted index to their slots: an
// open-addressing hash table with linear probing, a third to two thirds
// full, so that it takes about as much memory as a Go map. Selection
// looks up every query term in it, and at a few hundred tools those
// lookups were an eighth of a selection with a Go map; here they cost a
// quarter to a third of that.
type Table struct {
	entries []entry
}

// entry is one entry of a Table, its term beside its slot so that a probe
// reads one cache line.
type entry struct {
	term uint32
	slot int32 // slot + 1; 0 marks an empty entry, so any uint32 is a term
}

// New returns the table in which term terms[k] has slot k; terms must be
// distinct.
func New(terms []uint32) Table {
	if len(terms) == 0 {
		return Table{}
	}
	size := 1
	for size < len(terms)+len(terms)/2+1 {
		size <<= 1
	}
	t := Table{entries: make([]entry, size)}
	mask := uint32(size - 1)
	for k, term := range terms {
		i := Slot(term, mask)
		for t.entries[i].slot != 0 {
			i = (i + 1) & mask
		}
		t.entries[i] = entry{term: term, slot: int32(k) + 1}
	}
	return t
}

// Touch reads the entry where each term's probe starts and returns a sum
// of what it read, for the caller to discard. Looking terms up one by one,
// each lookup's branches depend on what it read, and a mispredicted one
// stops the processor from running ahead to the next lookup's read, so
// their cache misses come one after another; Touch's reads do not wait on
// each other, and the lookups after it find their entries in the cache.
//
//go:noinline
func (t *Table) Touch(terms []uint32) uint32 {
	if len(t.entries) == 0 {
		return 0
	}
	mask := uint32(len(t.entries) - 1)
	var sum uint32
	for _, term := range terms {
		sum += t.entries[Slot(term, mask)].term
	}
	return sum
}

// Find returns term's slot, or false when the table does not hold it.
func (t *Table) Find(term uint32) (int32, bool) {
	if len(t.entries) == 0 {
		return 0, false
	}
	mask := uint32(len(t.entries) - 1)
	for i := Slot(term, mask); ; i = (i + 1) & mask {
		switch e := t.entries[i]; {
		case e.slot == 0:
			return 0, false
		case e.term == term:
			return e.slot - 1, true
		}
	}
}

// Slot is where the probe for term starts in an open-addressing table of
// mask+1 entries (Fibonacci hashing, so that nearby terms spread out).
func Slot(term, mask uint32) uint32 {
	return uint32(uint64(term)*0x9e3779b97f4a7c15>>32) & mask
}

// Set gathers distinct terms: an open-addressing hash set that doubles
// when half full. An index has many occurrences of each term, and the set
// of them stays small enough to sit in cache, so gathering them in it and
// sorting only the distinct ones is faster than sorting every occurrence.
type Set struct {
	keys    []uint32 // 0 marks an empty slot; term 0 is hasZero
	n       int
	hasZero bool
}

// Add puts term in the set.
func (s *Set) Add(term uint32) {
	if term == 0 {
		s.hasZero = true
		return
	}
	if 2*(s.n+1) > len(s.keys) {
		s.grow()
	}
	mask := uint32(len(s.keys) - 1)
	for i := Slot(term, mask); ; i = (i + 1) & mask {
		switch s.keys[i] {
		case term:
			return
		case 0:
			s.keys[i] = term
			s.n++
			return
		}
	}
}

func (s *Set) grow() {
	old := s.keys
	s.keys = make([]uint32, max(64, 2*len(old)))
	mask := uint32(len(s.keys) - 1)
	for _, term := range old {
		if term == 0 {
			continue
		}
		i := Slot(term, mask)
		for s.keys[i] != 0 {
			i = (i + 1) & mask
		}
		s.keys[i] = term
	}
}

// Sorted returns the set's terms in ascending order.
func (s *Set) Sorted() []uint32 {
	out := make([]uint32, 0, s.n+1)
	if s.hasZero {
		out = append(out, 0)
	}
	for _, term := range s.keys {
		if term != 0 {
			out = append(out, term)
		}
	}
	radix.Sort(out, nil)
	return out
}

// Gather returns the distinct terms add puts in a set for rows 0 to n-1,
// in ascending order: the same terms whatever the number of cores. Each
// worker gathers a share of the rows into a set of its own, and the sorted
// sets are merged. Gathering every row on one goroutine kept the other
// core idle: 0.03 s of a 2,000-tool load, in the merged space and the
// collision pass's index (docs/benchmarks.md).
func Gather(n int, add func(s *Set, row int)) []uint32 {
	nw := par.Workers(n)
	sorted := make([][]uint32, nw)
	par.For(nw, func(_, w int) {
		var s Set
		for r := w * n / nw; r < (w+1)*n/nw; r++ {
			add(&s, r)
		}
		sorted[w] = s.Sorted()
	})
	out := sorted[0]
	for _, next := range sorted[1:] {
		out = union(out, next)
	}
	return out
}

// union merges two ascending lists of distinct terms into one.
func union(a, b []uint32) []uint32 {
	out := make([]uint32, 0, max(len(a), len(b)))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			out = append(out, a[i])
			i++
		case b[j] < a[i]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i, j = i+1, j+1
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// Raw returns the table's entries as it keeps them, two words each (the
// term, then its slot + 1, 0 for an empty entry), without copying: the
// form a stored index keeps the table in.
func (t *Table) Raw() []uint32 {
	raw, err := vec.View[uint32](vec.Bytes(t.entries))
	if err != nil {
		panic("terms: " + err.Error()) // an entry is two words, aligned as one
	}
	return raw
}

// FromRaw returns the table whose Raw is raw, using raw in place, for
// terms in slots [0, slots). It returns an error for words that no table
// has: a number of entries other than a power of two, a slot out of
// range, or no empty entry (Find would search forever).
func FromRaw(raw []uint32, slots int) (Table, error) {
	if len(raw) == 0 {
		return Table{}, nil
	}
	n := len(raw) / 2
	if len(raw)%2 != 0 || n&(n-1) != 0 {
		return Table{}, fmt.Errorf("terms: %d words make no table", len(raw))
	}
	entries, err := vec.View[entry](vec.Bytes(raw))
	if err != nil {
		return Table{}, fmt.Errorf("terms: table: %v", err)
	}
	empty := false
	for _, e := range entries {
		switch {
		case e.slot == 0:
			empty = true
		case e.slot < 0 || int(e.slot) > slots:
			return Table{}, fmt.Errorf("terms: slot %d of %d", e.slot-1, slots)
		}
	}
	if !empty {
		return Table{}, fmt.Errorf("terms: a table without an empty entry")
	}
	return Table{entries: entries}, nil
}

// Terms returns the table's terms in slot order, for a table of slots
// slots, or an error unless every slot has one term and they ascend, as
// New's do.
func (t *Table) Terms(slots int) ([]uint32, error) {
	out := make([]uint32, slots)
	seen := 0
	for _, e := range t.entries {
		if e.slot == 0 {
			continue
		}
		if int(e.slot) > slots {
			return nil, fmt.Errorf("terms: slot %d of %d", e.slot-1, slots)
		}
		out[e.slot-1] = e.term
		seen++
	}
	if seen != slots {
		return nil, fmt.Errorf("terms: %d entries for %d slots", seen, slots)
	}
	for k := 1; k < slots; k++ {
		if out[k] <= out[k-1] {
			return nil, fmt.Errorf("terms: slots out of order at %d", k)
		}
	}
	return out, nil
}
