package lexical

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
)

// wordFeature is the word feature of a single word, as ContentTerms and
// Embed compute it.
func wordFeature(t *testing.T, w string) uint32 {
	t.Helper()
	var s scratch
	s.tokenize(w)
	if len(s.toks) != 1 {
		t.Fatalf("%q: %d tokens, want 1", w, len(s.toks))
	}
	return famWord<<famShift | hash(s.buf[s.toks[0].stemOff:s.toks[0].stemEnd], nil)
}

func TestContentTerms(t *testing.T) {
	e := New(Options{})
	for _, c := range []struct {
		text  string
		words []string // the content words, each one word feature
		grams int      // how many words have 4-gram groups
	}{
		// The operation and the asking are phrasing; the value is read as
		// its kind ("url"), which is content.
		{"Could you retrieve the comments for domain example.com?", []string{"comments", "domain", "url"}, 2},
		{"please get me the list", nil, 0},
		{"", nil, 0},
		// A word of three letters has two 4-grams ("<url", "url>"), too
		// few for a group; one of four has three.
		{"show the flowchart", []string{"flowchart"}, 1},
		{"the weather in Oslo", []string{"weather", "oslo"}, 2},
	} {
		words, grams := e.ContentTerms(c.text)
		var want []uint32
		for _, w := range c.words {
			want = append(want, wordFeature(t, w))
		}
		slices.Sort(want)
		if diff := cmp.Diff(want, words); diff != "" {
			t.Errorf("ContentTerms(%q) words (-want +got):\n%s", c.text, diff)
		}
		if len(grams) != c.grams {
			t.Errorf("ContentTerms(%q): %d gram groups, want %d", c.text, len(grams), c.grams)
		}
	}
}

// TestContentTermsConcepts checks that a content word with a concept
// brings the concept's feature, so that "repo" meets "repository", while
// an operation's words are phrasing, concept or not.
func TestContentTermsConcepts(t *testing.T) {
	e := New(Options{})
	repo, _ := e.ContentTerms("repo")
	repository, _ := e.ContentTerms("repository")
	if len(repo) != 2 || len(repository) != 2 {
		t.Fatalf("repo %v, repository %v: want a word and a concept each", repo, repository)
	}
	shared := 0
	for _, f := range repo {
		if slices.Contains(repository, f) {
			shared++
		}
	}
	if shared != 1 {
		t.Errorf("repo and repository share %d features, want their concept", shared)
	}
	if w, _ := e.ContentTerms("create fetch delete update list"); w != nil {
		t.Errorf("operations give content words %v, want none", w)
	}
}

// checkContent checks that every content term of text is a feature of
// its vector, words sorted and without repeats.
func checkContent(t *testing.T, e *Embedder, text string) {
	words, grams := e.ContentTerms(text)
	if !slices.IsSorted(words) || len(slices.Compact(slices.Clone(words))) != len(words) {
		t.Errorf("ContentTerms(%q) words %v: not sorted and unique", text, words)
	}
	vs, err := e.Embed(context.Background(), []string{text}, habilis.Query)
	if err != nil {
		t.Fatal(err)
	}
	in := func(f uint32) bool { _, ok := slices.BinarySearch(vs[0].Indices, f); return ok }
	for _, f := range words {
		if !in(f) {
			t.Errorf("ContentTerms(%q): word feature %x not in the text's vector", text, f)
		}
	}
	for _, g := range grams {
		if len(g) < minGrams {
			t.Errorf("ContentTerms(%q): a group of %d grams, fewer than %d", text, len(g), minGrams)
		}
		for _, f := range g {
			if f>>famShift != famChar || !in(f) {
				t.Errorf("ContentTerms(%q): gram %x not a character feature of the text's vector", text, f)
			}
		}
	}
}

func TestContentTermsInVector(t *testing.T) {
	e := New(Options{})
	for _, s := range fuzzSeeds {
		checkContent(t, e, s)
		checkName(t, e, s)
	}
	checkContent(t, e, "read src/main.go and mail alice@example.com the getWeatherForecast results")
}

func FuzzContentTerms(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	e := New(Options{})
	f.Fuzz(func(t *testing.T, text string) {
		checkContent(t, e, text)
		checkName(t, e, text)
		checkOperations(t, e, text)
	})
}

// checkOperations checks that Operations and Operation over NameTerms'
// word features read the same ways out of one text.
func checkOperations(t *testing.T, e *Embedder, text string) {
	reads, writes, _ := e.Operations(text)
	var r, w bool
	for _, f := range e.NameTerms(text) {
		fr, fw := e.Operation(f[0])
		r, w = r || fr, w || fw
	}
	if r != reads || w != writes {
		t.Errorf("%q: Operations reads %v, writes %v; its name terms %v, %v", text, reads, writes, r, w)
	}
}

// checkName checks that NameTerms gives at most a pair a token of name,
// each a word feature and a word or concept feature, and, for a name that
// reads as no value (which embedding would replace by its kind), features
// of the name's vector.
func checkName(t *testing.T, e *Embedder, name string) {
	terms := e.NameTerms(name)
	if len(terms) > len(Tokens(name)) {
		t.Errorf("NameTerms(%q): %d words for %d tokens", name, len(terms), len(Tokens(name)))
	}
	vs, err := e.Embed(context.Background(), []string{name}, habilis.Query)
	if err != nil {
		t.Fatal(err)
	}
	_, value := withValues(name)
	for _, w := range terms {
		if w[0]>>famShift != famWord || (w[1]>>famShift != famWord && w[1]>>famShift != famConcept) {
			t.Errorf("NameTerms(%q): %x, %x: want a word feature and a word or concept one", name, w[0], w[1])
		}
		for _, f := range w {
			if _, ok := slices.BinarySearch(vs[0].Indices, f); !ok && !value {
				t.Errorf("NameTerms(%q): feature %x not in the name's vector", name, f)
			}
		}
	}
}

func TestNameTerms(t *testing.T) {
	e := New(Options{})
	terms := e.NameTerms("create_repository")
	if len(terms) != 2 {
		t.Fatalf("NameTerms(create_repository) = %v, want two words (the joined form left out)", terms)
	}
	// Each word stands for itself and for its concept, so that a request
	// saying "make a repo" says both.
	for i, w := range []string{"make", "repo"} {
		vs, err := e.Embed(context.Background(), []string{w}, habilis.Query)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(vs[0].Indices, terms[i][1]) {
			t.Errorf("%q's vector lacks the concept of name word %d (%x)", w, i, terms[i][1])
		}
		if terms[i][0] == terms[i][1] {
			t.Errorf("name word %d has no concept of its own", i)
		}
	}
	if got := e.NameTerms("ping"); len(got) != 1 || got[0][0] != got[0][1] {
		t.Errorf("NameTerms(ping) = %v, want one word without a concept", got)
	}
}
