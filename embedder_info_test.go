package habilis

import "testing"

// TestEmbedderInfo checks how an embedder's version splits into its
// algorithm and fitted state, which infos share a space, and the names
// messages give them.
func TestEmbedderInfo(t *testing.T) {
	lex := func(v string) EmbedderInfo { return EmbedderInfo{Kind: "lexical", Version: v} }
	model := EmbedderInfo{Kind: "ollama", Model: "nomic", Dim: 768}
	for _, c := range []struct {
		v, want string
	}{{"2-a1b2c3", "2"}, {"2-a-b", "2"}, {"2", "2"}, {"", ""}} {
		if got := lex(c.v).Algorithm(); got != c.want {
			t.Errorf("Algorithm of version %q = %q, want %q", c.v, got, c.want)
		}
	}
	for _, c := range []struct {
		a, b EmbedderInfo
		want bool
	}{
		{lex("2-aaa"), lex("2-bbb"), true}, // another fit, same space
		{lex("1-aaa"), lex("2-aaa"), false},
		{lex(""), lex("2-aaa"), false},
		{model, model, true},
		{model, EmbedderInfo{Kind: "ollama", Model: "nomic", Dim: 384}, false},
		{model, EmbedderInfo{Kind: "ollama", Model: "other", Dim: 768}, false},
		{model, lex("2-aaa"), false},
	} {
		if got := c.a.Space(c.b); got != c.want || c.b.Space(c.a) != got {
			t.Errorf("%+v.Space(%+v) = %v, want %v both ways", c.a, c.b, got, c.want)
		}
	}
	for _, c := range []struct {
		info          EmbedderInfo
		str, withAlgo string
	}{
		{lex("2-aaa"), "lexical (sparse)", "lexical (sparse, algorithm 2)"},
		{lex(""), "lexical (sparse)", "lexical (sparse)"},
		{model, "ollama:nomic (dim 768)", "ollama:nomic (dim 768)"},
	} {
		if got := c.info.String(); got != c.str {
			t.Errorf("String() = %q, want %q", got, c.str)
		}
		if got := c.info.Detail(); got != c.withAlgo {
			t.Errorf("Detail() = %q, want %q", got, c.withAlgo)
		}
	}
	for _, c := range []struct {
		a, b         EmbedderInfo
		wantA, wantB string
	}{
		{lex("1-aaa"), lex("2-bbb"), "lexical (sparse, algorithm 1)", "lexical (sparse, algorithm 2)"},
		{lex("2-aaa"), model, "lexical (sparse)", "ollama:nomic (dim 768)"},
	} {
		if a, b := Names(c.a, c.b); a != c.wantA || b != c.wantB {
			t.Errorf("Names(%+v, %+v) = %q, %q; want %q, %q", c.a, c.b, a, b, c.wantA, c.wantB)
		}
	}
}
