package lexical

import (
	"context"
	"fmt"

	"github.com/habilis-router/habilis"
)

// EmbedJoined returns, for each group, the vector Embed gives the texts
// the group names (indices into texts) joined by newlines, as documents:
// a group of one text is that text's vector. Each text is analysed once,
// however many groups name it: the documents of a tool left each without
// one of its n examples (calibration's held-out documents) cost n + 1
// analyses rather than about n². It returns ErrInvalid for an index out
// of range.
//
// A join gives the vector of the joined text because nothing the
// analysis reads crosses a line: values are whitespace-separated fields,
// tokens end at a newline, and the only features of two neighbouring
// tokens, the bigram and the concept pair, are added where the texts
// meet (TestEmbedJoined holds it to Embed).
func (e *Embedder) EmbedJoined(ctx context.Context, texts []string, groups [][]int) ([]habilis.Vector, error) {
	if err := inRange(groups, len(texts)); err != nil {
		return nil, err
	}
	parts := make([]joinPart, len(texts))
	err := e.each(ctx, len(texts), func(s *scratch, _, i int) { parts[i] = s.joinPart(texts[i], &e.weights) })
	if err != nil {
		return nil, fmt.Errorf("embed joined texts lexically: %w", err)
	}
	return e.embedParts(ctx, parts, groups)
}

// embedParts returns, for each group, the vector of the parts it names
// joined (see EmbedJoined); the parts were analysed with e's family
// weights and the groups' indices are in range.
func (e *Embedder) embedParts(ctx context.Context, parts []joinPart, groups [][]int) ([]habilis.Vector, error) {
	out := make([]habilis.Vector, len(groups))
	err := e.each(ctx, len(groups), func(s *scratch, _, g int) {
		s.join(parts, groups[g], &e.weights)
		out[g] = e.weigh(s, habilis.Document)
	})
	if err != nil {
		return nil, fmt.Errorf("embed joined texts lexically: %w", err)
	}
	return out, nil
}

// FitJoined is Fit, and also returns a function that embeds, as the
// fitted embedder's EmbedJoined would, groups of the corpus's texts
// (indices into corpus) from the analysis fitting made of them: a load
// fits the embedder to each tool's description and examples, then embeds
// those same texts and their joins (the tools' documents), which Fit and
// Embed analysed twice and three times. The function keeps each text's
// features until it is dropped.
func (e *Embedder) FitJoined(ctx context.Context, corpus []string) (habilis.CorpusEmbedder, []byte, func(ctx context.Context, groups [][]int) ([]habilis.Vector, error), error) {
	parts := make([]joinPart, len(corpus))
	fitted, state, err := e.fit(ctx, corpus, func(s *scratch, i int) []uint32 {
		parts[i] = s.joinPart(corpus[i], &e.weights)
		return parts[i].feats
	})
	if err != nil {
		return nil, nil, nil, err
	}
	f := fitted.(*Embedder)
	embed := func(ctx context.Context, groups [][]int) ([]habilis.Vector, error) {
		if err := inRange(groups, len(parts)); err != nil {
			return nil, err
		}
		return f.embedParts(ctx, parts, groups)
	}
	return fitted, state, embed, nil
}

// inRange checks that every index of groups names one of n texts.
func inRange(groups [][]int, n int) error {
	for g, idx := range groups {
		for _, i := range idx {
			if i < 0 || i >= n {
				return fmt.Errorf("embed joined texts lexically: group %d names text %d of %d: %w", g, i, n, habilis.ErrInvalid)
			}
		}
	}
	return nil
}

// joinPart is one text of EmbedJoined, analysed: its features, one per
// occurrence, and, when it has tokens, the stems a join pairs with its
// neighbours' (see features): its first token's and its last one's that
// is not a compound's joined form.
type joinPart struct {
	feats       []uint32
	tokens      bool
	first, last []byte
}

// joinPart analyses text into a part of its own memory.
func (s *scratch) joinPart(text string, weights *[numFamilies]float32) joinPart {
	s.analyse(text, weights)
	p := joinPart{feats: append([]uint32(nil), s.feats...), tokens: len(s.toks) > 0}
	if !p.tokens {
		return p
	}
	// Never nil, even when empty: hash reads a nil second word as none.
	stem := func(t *token) []byte {
		return append(make([]byte, 0, t.stemEnd-t.stemOff), s.buf[t.stemOff:t.stemEnd]...)
	}
	p.first = stem(&s.toks[0]) // a compound's joined form follows its parts
	for i := len(s.toks) - 1; i >= 0; i-- {
		if t := &s.toks[i]; !t.joined {
			p.last = stem(t)
			break
		}
	}
	return p
}

// join sets s.feats to the features of the parts named by idx joined by
// newlines: each part's, and where a part with tokens follows another,
// the bigram and concept pair of the two stems that meet, as features
// adds them between neighbouring tokens.
func (s *scratch) join(parts []joinPart, idx []int, weights *[numFamilies]float32) {
	s.feats = s.feats[:0]
	words, bigrams := weights[famWord] > 0, weights[famBigram] > 0
	cs := conceptTable()
	var prev []byte // nil until a part with tokens
	for _, i := range idx {
		p := &parts[i]
		if p.tokens && prev != nil && (bigrams || words) {
			h := hash(prev, p.first)
			if bigrams {
				s.feats = append(s.feats, famBigram<<famShift|h)
			}
			if id, ok := cs.pairs[h]; ok && words {
				s.feats = append(s.feats, id)
			}
		}
		s.feats = append(s.feats, p.feats...)
		if p.tokens {
			prev = p.last
		}
	}
}
