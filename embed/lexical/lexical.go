// Package lexical is habilis' built-in embedder: no model, deterministic and
// fast. A text becomes a sparse unit vector of TF-IDF weighted features from
// three families: stemmed words, character 3- and 4-grams inside words, and
// word bigrams. Each family is normalised on its own and weighted, so the
// score of two texts is a fixed blend of the families' cosines. A word of
// one of a small list of synonym classes also adds its class's feature,
// weighed with the words (concepts.go). Document frequencies come from the
// catalog (Fit) and travel with it (Restore).
package lexical

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"math"
	"sync"
	"unicode/utf8"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/par"
	"github.com/habilis-router/habilis/internal/radix"
	"github.com/habilis-router/habilis/internal/terms"
)

// Algorithm is the version of the tokeniser and weighting; it prefixes
// EmbedderInfo.Version and changes whenever the same text and state would
// give another vector. A store built with another algorithm is refused
// until it is re-embedded. Stores written under "1" may hold vectors of
// any of the tokenisers and weightings that releases used before the
// algorithm was checked, so "2" marks the first checked one.
const Algorithm = "4"

// Default family weights, chosen on half of the MetaTool dev queries and
// checked on the other half.
const (
	DefaultWordWeight   = 1.0
	DefaultCharWeight   = 1.0
	DefaultBigramWeight = 0.6
)

// Options tune an Embedder. The zero value uses the defaults.
type Options struct {
	// WordWeight is the weight of the stemmed-word family in a score; 0
	// means DefaultWordWeight, a negative value disables the family.
	WordWeight float64
	// CharWeight is the weight of the character n-gram family; 0 means
	// DefaultCharWeight, a negative value disables it.
	CharWeight float64
	// BigramWeight is the weight of the word-bigram family; 0 means
	// DefaultBigramWeight, a negative value disables it.
	BigramWeight float64
}

// Feature families occupy the top two bits of a feature id, so features
// of different families never collide. Concept features (concepts.go) have
// ids of their own but weigh and normalise with the words.
const (
	famWord = iota
	famChar
	famBigram
	numFamilies
	famConcept = numFamilies

	famShift = 30
	hashMask = 1<<famShift - 1
)

// minDF is the smallest document frequency a fitted state records. The
// features seen once get the idf of an unseen feature, nearly the same:
// leaving them out halves the state and changes no ranking on MetaTool
// (docs/quality.md, Earlier releases).
const minDF = 2

func resolve(o Options) [numFamilies]float32 {
	w := func(v, def float64) float32 {
		switch {
		case v < 0 || math.IsNaN(v):
			return 0
		case v == 0:
			return float32(def)
		}
		return float32(min(v, math.MaxFloat32))
	}
	return [numFamilies]float32{
		w(o.WordWeight, DefaultWordWeight),
		w(o.CharWeight, DefaultCharWeight),
		w(o.BigramWeight, DefaultBigramWeight),
	}
}

// Embedder is the lexical embedder. It is safe for concurrent use; Fit and
// Restore return new embedders and never change the receiver.
type Embedder struct {
	weights [numFamilies]float32
	docs    uint32 // documents in the fitted corpus; 0 when unfitted
	// keys and vals are an open-addressing hash table (linear probing, at
	// most half full) from feature id + 1 to idf; 0 marks an empty slot.
	// Ids use at most 31 bits, so id + 1 never wraps.
	keys    []uint32
	vals    []float32
	defIDF  float32 // idf of every feature not in the table
	version string
	pool    sync.Pool // *scratch
}

// New returns an unfitted embedder: every feature has the same idf, so it
// already ranks sensibly, and Fit adds the catalog's term statistics.
func New(opts Options) *Embedder {
	return restore(resolve(opts), 0, nil, nil)
}

// Info reports kind "lexical", sparse vectors, and a version that names the
// algorithm and the fitted state, so vectors of different fits never mix.
func (e *Embedder) Info() habilis.EmbedderInfo {
	return habilis.EmbedderInfo{Kind: "lexical", Dim: 0, Version: e.version}
}

// Embed returns one sparse unit vector per text; a text without features
// gives the zero vector. Queries and documents are embedded alike. Many
// texts are shared out over GOMAXPROCS goroutines; each text's vector is
// the same either way.
func (e *Embedder) Embed(ctx context.Context, texts []string, p habilis.Purpose) ([]habilis.Vector, error) {
	out := make([]habilis.Vector, len(texts))
	if len(texts) == 1 {
		// A query: no goroutine, closure or error slice for one text.
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("embed lexically: %w", err)
		}
		s := e.scratch()
		out[0] = e.embed(s, texts[0], p)
		e.pool.Put(s)
		return out, nil
	}
	err := e.each(ctx, len(texts), func(s *scratch, _, i int) { out[i] = e.embed(s, texts[i], p) })
	if err != nil {
		return nil, fmt.Errorf("embed lexically: %w", err)
	}
	return out, nil
}

// Fit returns an embedder fitted to corpus, the catalog's document texts,
// and its state: the family weights, the number of documents and the
// document frequency of every feature seen in at least two of them. The
// same corpus and options always give the same bytes.
func (e *Embedder) Fit(ctx context.Context, corpus []string) (habilis.CorpusEmbedder, []byte, error) {
	return e.fit(ctx, corpus, func(s *scratch, i int) []uint32 {
		s.analyse(corpus[i], &e.weights)
		return s.feats
	})
}

// fit is Fit, with analyse(s, i) giving the features of text i of the
// corpus, analysed with s.
func (e *Embedder) fit(ctx context.Context, corpus []string, analyse func(s *scratch, i int) []uint32) (habilis.CorpusEmbedder, []byte, error) {
	if uint64(len(corpus)) >= math.MaxUint32 {
		return nil, nil, fmt.Errorf("fit the lexical embedder: %d documents: %w", len(corpus), habilis.ErrInvalid)
	}
	// One counter per chunk of the corpus, summed afterwards: counts do
	// not depend on the order they are added in.
	dfs := make([]counter, chunks(len(corpus)))
	err := e.each(ctx, len(corpus), func(s *scratch, c, i int) {
		for _, id := range analyse(s, i) {
			dfs[c].addOnce(id, uint32(i))
		}
	})
	if err != nil {
		return nil, nil, fmt.Errorf("fit the lexical embedder: %w", err)
	}
	df := &dfs[0]
	for c := 1; c < len(dfs); c++ {
		df.merge(&dfs[c])
	}
	ids, counts := df.atLeast(minDF)
	state := encodeState(e.weights, uint32(len(corpus)), ids, counts)
	return restore(e.weights, uint32(len(corpus)), ids, counts), state, nil
}

// parallelMin is the fewest texts a goroutine of Embed or Fit takes: with
// fewer, starting it costs more than it saves.
const parallelMin = 64

// chunks returns how many contiguous chunks each splits n texts into: one
// per goroutine, GOMAXPROCS at most, each of parallelMin texts at least.
func chunks(n int) int { return max(1, min(par.Workers(n), n/parallelMin)) }

// each runs fn(s, c, i) for every text i in [0, n), the texts split into
// chunks(n) contiguous chunks run on goroutines of their own; c is the
// chunk and s the chunk's working memory. Every 256 texts a chunk checks
// ctx, and each returns the first chunk's error.
func (e *Embedder) each(ctx context.Context, n int, fn func(s *scratch, c, i int)) error {
	k := chunks(n)
	errs := make([]error, k)
	par.For(k, func(_, c int) {
		s := e.scratch()
		defer e.pool.Put(s)
		lo, hi := c*n/k, (c+1)*n/k
		for i := lo; i < hi; i++ {
			if (i-lo)%256 == 0 {
				if err := ctx.Err(); err != nil {
					errs[c] = err
					return
				}
			}
			fn(s, c, i)
		}
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Restore returns the embedder a Fit state describes, family weights
// included: the receiver's own options play no part. It returns ErrInvalid
// for a state it cannot read.
func (e *Embedder) Restore(state []byte) (habilis.CorpusEmbedder, error) {
	weights, docs, ids, dfs, err := decodeState(state)
	if err != nil {
		return nil, fmt.Errorf("restore the lexical embedder: %w: %w", err, habilis.ErrInvalid)
	}
	return restore(weights, docs, ids, dfs), nil
}

// restore builds an embedder from validated state: ids ascending, every
// df in [1, docs].
func restore(weights [numFamilies]float32, docs uint32, ids, dfs []uint32) *Embedder {
	e := &Embedder{weights: weights, docs: docs, defIDF: 1}
	if docs > 0 {
		// Smoothed idf, ln((N+1)/(df+1)) + 1; a feature not in the state
		// counts as seen once.
		n := float64(docs) + 1
		e.defIDF = float32(math.Log(n/2) + 1)
	}
	if len(ids) > 0 {
		size := 4
		for size < 2*len(ids) {
			size *= 2
		}
		e.keys, e.vals = make([]uint32, size), make([]float32, size)
		mask := uint32(size - 1)
		n := float64(docs) + 1
		for k, id := range ids {
			i := terms.Slot(id, mask)
			for e.keys[i] != 0 {
				i = (i + 1) & mask
			}
			e.keys[i] = id + 1
			e.vals[i] = float32(math.Log(n/(float64(dfs[k])+1)) + 1)
		}
	}
	h := fnv.New64a()
	h.Write(encodeState(weights, docs, ids, dfs))
	e.version = Algorithm + "-" + hex.EncodeToString(h.Sum(nil)[:6])
	return e
}

// lookupIDF returns the idf of feature id.
func (e *Embedder) lookupIDF(id uint32) float32 {
	if len(e.keys) == 0 {
		return e.defIDF
	}
	mask := uint32(len(e.keys) - 1)
	for i := terms.Slot(id, mask); ; i = (i + 1) & mask {
		switch e.keys[i] {
		case id + 1:
			return e.vals[i]
		case 0:
			return e.defIDF
		}
	}
}

func (e *Embedder) scratch() *scratch {
	if s, ok := e.pool.Get().(*scratch); ok {
		return s
	}
	return new(scratch)
}

// sublinear is 1 + ln(tf), so repeating a word adds little.
func sublinear(tf int) float64 {
	if tf < len(sublinears) {
		return sublinears[tf]
	}
	return 1 + math.Log(float64(tf))
}

// sublinears holds sublinear of the counts most features have, the same
// values: a tool's document repeats most of its features, and took a
// logarithm for each.
var sublinears = func() (t [64]float64) {
	for tf := range t {
		t[tf] = 1 + math.Log(float64(tf))
	}
	return t
}()

// embed computes the vector of one text with s as working memory.
//
// A feature weighs (1 + ln tf) · idf in a document and (1 + ln tf) · idf^1.5
// in a query, leaning queries further towards rare words: better ranking
// on MetaTool for a small cost in no-tool AUROC (docs/quality.md, Earlier
// releases).
func (e *Embedder) embed(s *scratch, text string, p habilis.Purpose) habilis.Vector {
	s.analyse(text, &e.weights)
	return e.weigh(s, p)
}

// weigh returns the vector of the features in s.feats, one per
// occurrence, as embed weighs them; s.feats is sorted and reused.
func (e *Embedder) weigh(s *scratch, p habilis.Purpose) habilis.Vector {
	if len(s.feats) == 0 {
		return habilis.Vector{}
	}
	s.tmp = radix.Sort(s.feats, s.tmp)
	query := p == habilis.Query
	var sumsq [numFamilies]float64
	s.w = s.w[:0]
	n := 0
	for i := 0; i < len(s.feats); {
		id := s.feats[i]
		j := i + 1
		for j < len(s.feats) && s.feats[j] == id {
			j++
		}
		idf := float64(e.lookupIDF(id))
		if query {
			idf *= math.Sqrt(idf)
		}
		w := sublinear(j-i) * idf
		if id>>famShift == famConcept {
			w *= conceptWeight
		}
		sumsq[family(id)] += w * w
		s.feats[n] = id
		s.w = append(s.w, w)
		n++
		i = j
	}
	// Each family becomes a unit vector scaled by the square root of its
	// share of the weights present, so the dot product of two texts that
	// have every family is the weighted mean of the families' cosines.
	var total float64
	for f, ss := range sumsq {
		if ss > 0 {
			total += float64(e.weights[f])
		}
	}
	var scale [numFamilies]float64
	for f, ss := range sumsq {
		if ss > 0 {
			scale[f] = math.Sqrt(float64(e.weights[f]) / total / ss)
		}
	}
	v := habilis.Vector{Indices: make([]uint32, n), Values: make([]float32, n)}
	copy(v.Indices, s.feats[:n])
	for i, id := range v.Indices {
		v.Values[i] = float32(s.w[i] * scale[family(id)])
	}
	return v
}

// family returns the family a feature weighs and normalises with.
func family(id uint32) uint32 {
	if f := id >> famShift; f != famConcept {
		return f
	}
	return famWord
}

// scratch is the working memory of one embedding, reused across texts.
type scratch struct {
	buf   []byte   // folded and stemmed token text
	toks  []token  // tokens of the text
	feats []uint32 // feature ids, one per occurrence
	tmp   []uint32 // working memory of radix.Sort
	w     []float64
	gram  []byte // a word with boundary marks, for character n-grams
	runes []int  // rune offsets in gram
}

func (s *scratch) reset() {
	s.buf = s.buf[:0]
	s.toks = s.toks[:0]
	s.feats = s.feats[:0]
}

// Character n-grams have 3 or 4 runes, not 5 (docs/quality.md, Earlier
// releases). Only the first maxGramWord bytes of a
// word yield n-grams, so that URLs, hashes and garbage stay cheap.
const (
	minGram     = 3
	maxGram     = 4
	maxGramWord = 48
)

// analyse sets s.feats to the feature ids of text, one per occurrence,
// its values read as the words of their kinds (withValues).
func (s *scratch) analyse(text string, weights *[numFamilies]float32) {
	s.reset()
	if v, ok := withValues(text); ok {
		text = v
	}
	s.tokenize(text)
	s.features(weights)
}

// features appends the feature ids of s.toks to s.feats.
func (s *scratch) features(weights *[numFamilies]float32) {
	words, chars, bigrams := weights[famWord] > 0, weights[famChar] > 0, weights[famBigram] > 0
	prev := -1 // previous part, for bigrams
	cs := conceptTable()
	for i := range s.toks {
		t := &s.toks[i]
		stem := s.buf[t.stemOff:t.stemEnd]
		if words {
			h := hash(stem, nil)
			s.feats = append(s.feats, famWord<<famShift|h)
			if id, ok := cs.words[h]; ok {
				s.feats = append(s.feats, id)
			}
		}
		if t.joined {
			continue
		}
		if prev >= 0 && (bigrams || words) {
			p := &s.toks[prev]
			h := hash(s.buf[p.stemOff:p.stemEnd], stem)
			if bigrams {
				s.feats = append(s.feats, famBigram<<famShift|h)
			}
			if id, ok := cs.pairs[h]; ok && words {
				s.feats = append(s.feats, id)
			}
		}
		prev = i
		if chars {
			s.charGrams(s.buf[t.rawOff:t.rawEnd])
		}
	}
}

// charGrams appends the character 3- and 4-grams of word, marked at both
// ends so that prefixes and suffixes are features of their own ("<ab",
// "ab>"). A one-rune word yields its marked form, "<a>".
func (s *scratch) charGrams(word []byte) {
	if len(word) > maxGramWord {
		cut := maxGramWord
		for cut > 0 && !utf8.RuneStart(word[cut]) {
			cut--
		}
		word = word[:cut]
	}
	s.gram = append(append(append(s.gram[:0], '<'), word...), '>')
	if ascii(word) {
		s.asciiGrams()
	} else {
		s.runeGrams()
	}
}

// runeGrams appends the character 3- and 4-grams of the marked word
// s.gram, rune by rune.
func (s *scratch) runeGrams() {
	s.runes = s.runes[:0]
	for i := 0; i < len(s.gram); {
		s.runes = append(s.runes, i)
		if s.gram[i] < utf8.RuneSelf {
			i++
			continue
		}
		_, size := utf8.DecodeRune(s.gram[i:])
		i += size
	}
	nr := len(s.runes)
	s.runes = append(s.runes, len(s.gram))
	// One pass per start rune hashes its 3-gram and extends the same hash
	// to the 4-gram.
	for i := 0; i+minGram <= nr; i++ {
		h := uint64(fnvOffset)
		for _, c := range s.gram[s.runes[i]:s.runes[i+minGram]] {
			h = (h ^ uint64(c)) * fnvPrime
		}
		s.feats = append(s.feats, famChar<<famShift|fold(h))
		if i+maxGram <= nr {
			for _, c := range s.gram[s.runes[i+minGram]:s.runes[i+maxGram]] {
				h = (h ^ uint64(c)) * fnvPrime
			}
			s.feats = append(s.feats, famChar<<famShift|fold(h))
		}
	}
}

// asciiGrams is runeGrams for a marked word of ASCII bytes, whose runes
// are its bytes: most words, which it hashes without a table of rune
// offsets.
func (s *scratch) asciiGrams() {
	g := s.gram
	for i := 0; i+minGram <= len(g); i++ {
		h := (uint64(fnvOffset) ^ uint64(g[i])) * fnvPrime
		h = (h ^ uint64(g[i+1])) * fnvPrime
		h = (h ^ uint64(g[i+2])) * fnvPrime
		s.feats = append(s.feats, famChar<<famShift|fold(h))
		if i+maxGram <= len(g) {
			h = (h ^ uint64(g[i+3])) * fnvPrime
			s.feats = append(s.feats, famChar<<famShift|fold(h))
		}
	}
}

// ascii reports whether b is all ASCII, eight bytes at a time.
func ascii(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b)&0x8080808080808080 != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// FNV-1a, 64 bits: fast, stable across platforms and releases, and good
// enough for 30-bit feature ids.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// fold reduces a 64-bit hash to the 30 bits of a feature id.
func fold(h uint64) uint32 { return uint32(h^h>>32) & hashMask }

// hash returns the feature hash of a, or of the pair a, b when b is not
// nil (0xff, never a byte of UTF-8, separates them).
func hash(a, b []byte) uint32 {
	h := uint64(fnvOffset)
	for _, c := range a {
		h = (h ^ uint64(c)) * fnvPrime
	}
	if b != nil {
		h = (h ^ 0xff) * fnvPrime
		for _, c := range b {
			h = (h ^ uint64(c)) * fnvPrime
		}
	}
	return fold(h)
}
