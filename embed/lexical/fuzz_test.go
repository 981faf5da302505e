package lexical

import (
	"context"
	"testing"
	"unicode/utf8"

	"github.com/habilis-router/habilis"
)

var fuzzSeeds = []string{
	"", "a", "What's the weather in Paris?", "getWeatherForecast_v2.json",
	"3.5 1,000 -1. .5 ..", "\xff\xfe\x00", "東京の天気", "ÇAFÉ ﬁ ǅ", "'''", "a-b_c.d",
	"HTTPServerURL2Go", "\u0301\u0301x", "İstanbul ΣΑΣ",
}

func FuzzTokens(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, tok := range Tokens(text) {
			if tok == "" {
				t.Errorf("Tokens(%q) has an empty token", text)
			}
			if utf8.ValidString(text) && !utf8.ValidString(tok) {
				t.Errorf("Tokens(%q) has invalid UTF-8 token %q", text, tok)
			}
		}
	})
}

func FuzzEmbed(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, s)
	}
	unfitted := New(Options{})
	fitted, _, err := New(Options{}).Fit(context.Background(), testCorpus())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, doc, query string) {
		ctx := context.Background()
		refit, _, err := unfitted.Fit(ctx, []string{doc, query, doc})
		if err != nil {
			t.Fatalf("Fit(%q, %q) error = %v", doc, query, err)
		}
		for _, e := range []habilis.CorpusEmbedder{unfitted, fitted, refit} {
			for _, p := range []habilis.Purpose{habilis.Document, habilis.Query} {
				vs, err := e.Embed(ctx, []string{doc, query}, p)
				if err != nil {
					t.Fatalf("Embed(%q, %q) error = %v", doc, query, err)
				}
				for _, v := range vs {
					if msg := checkVector(v); msg != "" {
						t.Errorf("Embed(%q, %q, %v): %s", doc, query, p, msg)
					}
				}
			}
		}
	})
}

func FuzzRestore(f *testing.F) {
	_, state, err := New(Options{}).Fit(context.Background(), testCorpus())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(state)
	f.Add([]byte(stateMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := New(Options{}).Restore(b)
		if err != nil {
			return
		}
		vs, err := e.Embed(context.Background(), []string{"weather in Paris", ""}, habilis.Query)
		if err != nil {
			t.Fatalf("Embed() after Restore error = %v", err)
		}
		for _, v := range vs {
			if msg := checkVector(v); msg != "" {
				t.Errorf("Embed() after Restore(%x): %s", b, msg)
			}
		}
	})
}
