package lexical

import (
	"slices"
	"sync"
)

// plainText lists the words that say nothing about which tool a request
// is for: function words, the words of asking ("please", "can", "want",
// "tell"), the operations every API has (the create, read, update, delete
// and list of conceptText's first lines) and the words every schema uses
// for the shape of its data (name, type, id, value, details). A request
// and a tool that share only such words share how they are phrased, not
// what they are about: "retrieve comments for this domain" and "Retrieves
// the current temperature for a location" both retrieve. Verbs that name
// what a tool is for (search, send, run, translate, calculate) are not
// here: a search tool's topic is searching.
const plainText = `
a an the and or but nor if then else so than too very just also only not no yes
of to in on at by for with from into onto about as over under up down out off via per
is are was were be been being am do does did doing done have has had having
i me my mine myself we us our ours you your yours he him his she her hers it its
they them their theirs this that these those there here
what which who whom whose when where why how
can could would should will shall may might must
please thanks thank hi hello hey ok okay
some any all each every both few more most other another such same own
one get got give gave tell told let need needs want wanted like know use using used
help make made see show find
create add insert new
read display view print fetch retrieve
update edit change modify alter set
delete remove erase drop discard
list enumerate
name type id value string number integer boolean default optional required
parameter data information info detail details result results
`

// plainStems returns the stem hashes of plainText's words, as the
// tokeniser stems them.
var plainStems = sync.OnceValue(func() map[uint32]bool {
	out := map[uint32]bool{}
	for _, h := range stemHashes(plainText) {
		out[h] = true
	}
	return out
})

// ContentTerms returns the features of text's content words, the words
// not in plainText: words holds the word feature of each (and the concept
// of those that have one), sorted and without repeats; grams holds, for
// each content word of minGrams 4-grams or more, its character 4-gram
// features, by which a tool that writes the word otherwise ("flowchart"
// and "chart", "historic" and "history") still shares it.
func (e *Embedder) ContentTerms(text string) (words []uint32, grams [][]uint32) {
	s := e.scratch()
	defer e.pool.Put(s)
	s.reset()
	if v, ok := withValues(text); ok {
		text = v
	}
	s.tokenize(text)
	plain := plainStems()
	cs := conceptTable()
	words = make([]uint32, 0, 2*len(s.toks))
	// Every group is a part of one array; ends marks where each stops.
	var all []uint32
	var ends []int
	for _, t := range s.toks {
		h := hash(s.buf[t.stemOff:t.stemEnd], nil)
		if plain[h] {
			continue
		}
		words = append(words, famWord<<famShift|h)
		if id, ok := cs.words[h]; ok {
			words = append(words, id)
		}
		if t.joined {
			continue
		}
		s.feats = s.feats[:0]
		s.charGrams(s.buf[t.rawOff:t.rawEnd])
		// charGrams appends each start's 3-gram, then its 4-gram when
		// the word has one: the 4-grams are every second feature.
		if len(s.feats)/2 < minGrams {
			continue
		}
		for j := 1; j < len(s.feats); j += 2 {
			all = append(all, s.feats[j])
		}
		ends = append(ends, len(all))
	}
	if len(words) == 0 {
		words = nil
	}
	slices.Sort(words)
	if len(ends) > 0 {
		grams = make([][]uint32, len(ends))
		for i, end := range ends {
			start := 0
			if i > 0 {
				start = ends[i-1]
			}
			grams[i] = all[start:end:end]
		}
	}
	return slices.Compact(words), grams
}

// minGrams is how many character 4-grams of one content word a tool must
// hold to share the word without its exact form.
const minGrams = 3

// NameTerms returns, for each word of a tool's name but the joined forms
// of compounds, the features that stand for it: its word feature and its
// concept's, if any.
func (e *Embedder) NameTerms(name string) [][2]uint32 {
	s := e.scratch()
	defer e.pool.Put(s)
	s.reset()
	s.tokenize(name)
	cs := conceptTable()
	var out [][2]uint32
	for _, t := range s.toks {
		if t.joined {
			continue
		}
		h := hash(s.buf[t.stemOff:t.stemEnd], nil)
		w := famWord<<famShift | h
		c := w
		if id, ok := cs.words[h]; ok {
			c = id
		}
		out = append(out, [2]uint32{w, c})
	}
	return out
}
