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

// namer returns the lexical embedder when it reads names, else nil.
func (ix *index) namer() nameTermer {
	n, _ := ix.lex.(nameTermer)
	return n
}

// nameBonus adds each candidate's name bonus to its fused score, the
// request's lexical vector being ql, and sorts the candidates by it.
func (ix *index) nameBonus(sgs []signals, ql habilis.Vector) {
	n := ix.namer()
	if n == nil || len(sgs) == 0 || len(ql.Indices) == 0 {
		return
	}
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
	}
	slices.SortStableFunc(sgs, func(a, b signals) int { return cmp.Compare(b.fused, a.fused) })
}
