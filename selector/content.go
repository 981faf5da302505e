package selector

import (
	"slices"

	"github.com/habilis-router/habilis"

	"github.com/habilis-router/habilis/internal/vec"
)

// contentTermer is the lexical embedder's view of a text's content words
// (lexical.Embedder.ContentTerms).
type contentTermer interface {
	ContentTerms(text string) (words []uint32, grams [][]uint32)
}

// content is a query's content terms: see contentTermer.
type content struct {
	words []uint32
	grams [][]uint32
}

// contentTerms returns the query's content terms when the gates of mode
// look at them, nil when they do not.
//
// They do when the lexical embedder is the main one: its evidence is
// shared words, and a request that shares only function words and common
// operations with a tool ("retrieve comments for this domain" and
// "Retrieves the current temperature for a location") shares how it is
// phrased, not what it is about, however rare those words are among
// generic requests. Such a tool fails its gate (signals.plain). On the
// tuning parts of the description-only development sets this raised
// decision accuracy by 0.1 to 1.4 points and cut the generic requests
// the sample catalog accepts from 20.0 to 15.7 %, for up to 2.3 points
// more wrong abstentions, and changed nothing on MetaTool, whose tools
// have examples (docs/quality.md, the phrasing rule). With a model they
// do in hybrid mode, for tools without examples (see index.phrasedOnly).
func (ix *index) contentTerms(query string, mode habilis.Mode) *content {
	if !ix.sameLex && mode != habilis.ModeHybrid {
		return nil
	}
	ct, ok := ix.lex.(contentTermer)
	if !ok {
		return nil
	}
	c := &content{}
	c.words, c.grams = ct.ContentTerms(query)
	return c
}

// phrasedOnly reports whether tool i, whose scores reach its gate, fails
// it for sharing only phrasing with the query of content c (see
// contentTerms and shares).
//
// With a model the rule holds for tools without examples gated on their
// evidence (bareEvidence), and only where neither of the evidence's
// signals stands out from the background alone: the model's description
// score stays below the background's mean plus the bare gates' z (the
// description share's, backgroundZ), and the evidence below the mean plus
// twice that z. A model's evidence is semantic, and a request need not
// share a word with a tool it names in other words; but where the model
// is not sure either, a request sharing only phrasing is as generic as
// with the lexical embedder. On the tuning parts of the description-only
// development sets with the Universal Sentence Encoder, the rule raised
// decisions by 1.1 points on the sub-catalogs and on BFCL's even half and
// left MCP's unchanged; applied whatever the model's score, it cost MCP
// 1.2 points, and with the model's condition alone 0.8 (docs/models.md,
// the phrasing rule with a model). Tools with examples keep their
// evidence whole: their gates rest on their own requests.
func (ix *index) phrasedOnly(sg signals, c *content) bool {
	i := sg.tool
	if c == nil {
		return false
	}
	if !ix.sameLex {
		if ix.tools[i].examples > 0 || !ix.bareEvidence(i) {
			return false
		}
		b, zg := ix.background[i], backgroundZ(ix.n(), descriptionShare)
		if b.z(bgDescription, sg.desc) >= zg || b.z(bgEvidence, sg.gateScore) >= evidenceStandOut*zg {
			return false
		}
	}
	return !ix.shares(i, c)
}

// evidenceStandOut is how many times the bare gates' z above the
// background's mean a model catalog's evidence must stand for a tool
// without examples to pass on phrasing alone. Chosen on the tuning parts
// among 1.5, 2 and 3 (docs/models.md): 2 decides as well as 1.5 on the
// sub-catalogs and MCP and 0.2 points better on BFCL; 3 costs MCP 0.8.
const evidenceStandOut = 2

// shares reports whether tool i's lexical vectors hold one of the content
// terms; always for nil content.
func (ix *index) shares(i int, c *content) bool {
	if c == nil {
		return true
	}
	sh := ix.sh
	if n := sh.rows(); i >= n && sh.patch != nil {
		sh, i = sh.patch, i-n
	}
	for _, t := range c.words {
		if sh.holds(i, t) {
			return true
		}
	}
	for _, g := range c.grams {
		held := 0
		for _, t := range g {
			if sh.holds(i, t) {
				held++
			}
		}
		if held >= minGrams {
			return true
		}
	}
	return false
}

// minGrams is how many character 4-grams of one content word a tool must
// hold to share the word without its exact form.
const minGrams = 3

// holds reports whether row i of sh's spaces holds term t: in a merged
// space any of its three vectors, else its document (which holds every
// word of the tool's text). Dense spaces hold no terms; they answer true,
// which leaves the gate to the scores.
func (sh *shared) holds(i int, t uint32) bool {
	if tri := sh.tri; tri != nil {
		k, ok := tri.terms.Find(t)
		if !ok {
			return false
		}
		ps := tri.postings[tri.offsets[k]:tri.offsets[k+1]]
		_, found := slices.BinarySearchFunc(ps, int32(i)*vec.RowBytes, func(p vec.Posting, at int32) int { return int(p.At - at) })
		return found
	}
	d := sh.doc
	if d == nil || d.dense != nil {
		return true
	}
	k, ok := d.terms.Find(t)
	if !ok {
		return false
	}
	return d.prow.Has(int(d.offsets[k]), int(d.offsets[k+1]), int32(i))
}
