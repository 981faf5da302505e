package lexical

import (
	"strings"
	"sync"
)

// A request asks to know something or to change something, and a tool's
// name says which it does: get_file_contents reads, write_file writes,
// create_or_update_file writes. readingText and writingText list the
// common verbs of each: the words of conceptText's get, list, search,
// create, update, delete, run and send classes, and more. Left out are
// the verbs just as often nouns or adjectives in requests: "new" (a new
// phone; and "news" stems to it), "make", "see", "post" (a blog post),
// "set", "close", "stop", "copy", "drop", "apply", "transfer", "book",
// "order", "store", "share". Every word is stemmed as the tokeniser stems
// it, so "replaces" and "replacing" count too.
const (
	readingText = `get read show display view print fetch retrieve list enumerate ls search find
locate lookup seek check look query inspect describe count browse download`
	writingText = `create add insert update edit change modify alter delete remove erase forget
discard run execute launch trigger invoke send write save put upload push merge move rename
replace rewrite overwrite reply respond approve reject submit reopen kill cancel terminate start
restart publish invite assign install deploy reset`
	// askingText holds the words that open a question about what is, not
	// about how to do something ("how" often asks for the doing).
	askingText = `what what's whats which where where's when who who's whom whose why
is are was were does do did has have`
)

// Which way an operation goes.
const (
	opRead uint8 = 1 << iota
	opWrite
)

// operationTable maps the word feature of readingText's verbs to opRead
// and writingText's to opWrite.
var operationTable = sync.OnceValue(func() map[uint32]uint8 {
	out := map[uint32]uint8{}
	for _, h := range stemHashes(readingText) {
		out[famWord<<famShift|h] = opRead
	}
	for _, h := range stemHashes(writingText) {
		out[famWord<<famShift|h] = opWrite
	}
	return out
})

// askingStems holds the stem hashes of askingText's words.
var askingStems = sync.OnceValue(func() map[uint32]bool {
	out := map[uint32]bool{}
	for _, h := range stemHashes(askingText) {
		out[h] = true
	}
	return out
})

// stemHashes returns the stem hash of each token of each word of text,
// each word read by the tokeniser alone.
func stemHashes(text string) []uint32 {
	var out []uint32
	var s scratch
	for _, w := range strings.Fields(text) {
		s.reset()
		s.tokenize(w)
		for _, t := range s.toks {
			out = append(out, hash(s.buf[t.stemOff:t.stemEnd], nil))
		}
	}
	return out
}

// Operation reports which way the operation that a word feature (as
// NameTerms returns them) names goes: reads for readingText's verbs,
// writes for writingText's; neither for any other feature.
func (e *Embedder) Operation(feature uint32) (reads, writes bool) {
	op := operationTable()[feature]
	return op == opRead, op == opWrite
}

// Operations reports which ways the operations text names go (as
// Operation, over its words) and whether it asks a question: its first
// word is one of askingText's.
func (e *Embedder) Operations(text string) (reads, writes, asks bool) {
	s := e.scratch()
	defer e.pool.Put(s)
	s.reset()
	s.tokenize(text)
	table := operationTable()
	var ops uint8
	for k, t := range s.toks {
		if t.joined {
			continue
		}
		h := hash(s.buf[t.stemOff:t.stemEnd], nil)
		if k == 0 {
			asks = askingStems()[h]
		}
		ops |= table[famWord<<famShift|h]
	}
	return ops&opRead != 0, ops&opWrite != 0, asks
}
