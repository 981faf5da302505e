package habilis

import (
	"errors"
	"testing"
)

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
}

// TestMismatchError checks the one message every layer gives a store
// built by other embedders, and that it is ErrEmbedderMismatch.
func TestMismatchError(t *testing.T) {
	lex := func(v string) EmbedderInfo { return EmbedderInfo{Kind: "lexical", Version: v} }
	model := EmbedderInfo{Kind: "ollama", Model: "nomic", Dim: 768}
	unprobed := EmbedderInfo{Kind: "ollama", Model: "nomic"}
	const tail = ": embedder does not match the store"
	for _, c := range []struct {
		name string
		err  MismatchError
		want string
	}{
		{"lexical algorithms", MismatchError{Stored: lex("1-aaa"), Configured: lex("2-bbb")},
			"built with embedder lexical (sparse, algorithm 1), not lexical (algorithm 2)"},
		{"model store, lexical asked", MismatchError{Stored: model, Configured: lex("2")},
			"built with embedder ollama:nomic (dim 768), not lexical"},
		{"another model, not yet probed", MismatchError{Stored: model, Configured: EmbedderInfo{Kind: "openai", Model: "small"}},
			"built with embedder ollama:nomic (dim 768), not openai:small"},
		{"another dimension", MismatchError{Stored: model, Configured: EmbedderInfo{Kind: "ollama", Model: "nomic", Dim: 384}},
			"built with embedder ollama:nomic (dim 768), not ollama:nomic (dim 384)"},
		{"paired lexical algorithms", MismatchError{Stored: model, Configured: unprobed, StoredLexical: &EmbedderInfo{Kind: "lexical", Version: "1"}, ConfiguredLexical: &EmbedderInfo{Kind: "lexical", Version: "2-x"}},
			"built with embedder ollama:nomic (dim 768) and lexical algorithm 1, not ollama:nomic and lexical algorithm 2"},
	} {
		if got := c.err.Error(); got != c.want+tail {
			t.Errorf("%s: Error() = %q, want %q", c.name, got, c.want+tail)
		}
		if !errors.Is(&c.err, ErrEmbedderMismatch) {
			t.Errorf("%s: errors.Is(ErrEmbedderMismatch) = false", c.name)
		}
	}
}
