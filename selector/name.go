package selector

import (
	"cmp"
	"slices"

	"github.com/habilis-router/habilis"
)

// nameTermer is the lexical embedder's view of a tool's name
// (lexical.Embedder.NameTerms): for each of its words, the word's feature
// and its concept's.
type nameTermer interface {
	NameTerms(name string) [][2]uint32
}

// A tool's name is the shortest statement of what it does, an operation
// and its object (create_repository, list_pull_requests), which its
// description and arguments then dilute: create_issue's text names
// repositories as often as create_repository's. Hybrid mode therefore
// adds to a candidate's fused score nameWeight times the share of its
// name's words the request says (a word, or one of its concept: "make a
// new repo" says both of create_repository's), and reorders the namePool
// best by it. Chosen on the tuning parts among weights 0.5, 1 and 2 and
// pools of 5, 10 and 20: ranking top-1 on MetaTool half a 66.6 -> 67.0 %,
// BFCL even 93.8 -> 94.4 %, the sub-catalogs 83.2 -> 83.3 %, the MCP set
// 62.1 -> 63.1 % (docs/quality.md, the name's words).
const (
	nameWeight = 1
	namePool   = 10
)

// operationer is the lexical embedder's view of which way the operations
// of a request and of a tool's name go (lexical.Embedder.Operations and
// Operation).
type operationer interface {
	Operations(text string) (reads, writes, asks bool)
	Operation(feature uint32) (reads, writes bool)
}

// A request that asks a question and names nothing to change wants to
// know something, and a tool whose name only writes (write_file,
// create_pull_request_review) would change something on its behalf; a
// request that names a change and asks nothing wants it made, not read
// back by a tool whose name only reads (get_file_contents, get_issue).
// The same words fill both tools' texts, so hybrid mode takes
// mismatchWeight from such a candidate's fused score, beside its name
// bonus. Chosen on the tuning parts among 0.5, 1 and 2, and against the
// concept classes' verbs alone: MCP ranking top-1 63.1 -> 66.0 %,
// decisions 68.1 -> 70.1 %; MetaTool half a, BFCL even and the
// sub-catalogs within 0.1 point (docs/quality.md, the way of an
// operation).
const mismatchWeight = 1

// intent is which way a request's operations go: whether it asks a
// question, and whether it names an operation that writes.
type intent struct {
	asks, writes bool
}

// intentOf returns query's intent, nil when the lexical embedder does not
// read one.
func (ix *index) intentOf(query string) *intent {
	op, ok := ix.lex.(operationer)
	if !ok {
		return nil
	}
	var in intent
	_, in.writes, in.asks = op.Operations(query)
	return &in
}

// mismatch reports whether a tool whose name's words are words goes the
// other way than a request of intent in: see mismatchWeight. A verb is
// read from its word feature (the first of each pair).
func mismatch(op operationer, words [][2]uint32, in *intent) bool {
	if in == nil {
		return false
	}
	var reads, writes bool
	for _, w := range words {
		r, wr := op.Operation(w[0])
		reads, writes = reads || r, writes || wr
	}
	switch {
	case in.asks && !in.writes:
		return writes && !reads
	case in.writes && !in.asks:
		return reads && !writes
	}
	return false
}

// namer returns the lexical embedder when it reads names, else nil.
func (ix *index) namer() nameTermer {
	n, _ := ix.lex.(nameTermer)
	return n
}

// nameBonus adds each candidate's name bonus to its fused score, the
// request's lexical vector being ql and its intent in, less
// mismatchWeight where the name goes the other way, and sorts the
// candidates by it.
func (ix *index) nameBonus(sgs []signals, ql habilis.Vector, in *intent) {
	n := ix.namer()
	if n == nil || len(sgs) == 0 || len(ql.Indices) == 0 {
		return
	}
	op, _ := n.(operationer)
	says := func(f uint32) bool {
		_, ok := slices.BinarySearch(ql.Indices, f)
		return ok
	}
	for j := range sgs {
		words := n.NameTerms(ix.tools[sgs[j].tool].name)
		said := 0
		for _, w := range words {
			if says(w[0]) || says(w[1]) {
				said++
			}
		}
		if said > 0 {
			sgs[j].fused += nameWeight * float32(said) / float32(len(words))
		}
		if op != nil && mismatch(op, words, in) {
			sgs[j].fused -= mismatchWeight
		}
	}
	slices.SortStableFunc(sgs, func(a, b signals) int { return cmp.Compare(b.fused, a.fused) })
}
