package lexical

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
)

// joinWords are what joined texts are made of: plain and stemmed words,
// compounds, values, numbers, apostrophes, non-ASCII words, the two
// words of a concept phrase ("pull request") and punctuation, so that
// the features two texts make where they meet are exercised.
var joinWords = []string{
	"get", "the", "weather", "forecasts", "running", "make", "folder", "pull", "request", "pr",
	"getWeather", "HTTPServer", "snake_case_name", "kebab-case", "weather.get", "mp3Player",
	"https://example.com/a?b=1", "/var/log/app.log", "~/notes", "`out/report.md`", "**~/notes**",
	"a@b.com", "#general", "report.pdf", "owner/repo", "3.5", "1,000", "what's", "it’s", "'",
	"café", "Straße", "東京", "ÉCOLE", "x", "(", ")", ",", ".", "-", "_", "\t", "\u00a0", "\xe2",
}

// joinText returns a random text of up to n words, sometimes empty or of
// spaces alone, sometimes with a newline of its own.
func joinText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for range rng.IntN(n + 1) {
		if rng.IntN(8) == 0 {
			b.WriteString("\n")
		} else if b.Len() > 0 {
			b.WriteString(" ")
		}
		b.WriteString(joinWords[rng.IntN(len(joinWords))])
	}
	if rng.IntN(10) == 0 {
		b.WriteString("  ")
	}
	return b.String()
}

// TestEmbedJoined checks that EmbedJoined gives every group the vector
// Embed gives its texts joined by newlines, to the bit, with the default
// weights, fitted, and with families turned off.
func TestEmbedJoined(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 5))
	corpus := make([]string, 200)
	for i := range corpus {
		corpus[i] = joinText(rng, 12)
	}
	fitted, _, err := New(Options{}).Fit(ctx, corpus)
	if err != nil {
		t.Fatal(err)
	}
	embedders := map[string]habilis.Embedder{
		"unfitted":   New(Options{}),
		"fitted":     fitted,
		"no bigrams": New(Options{BigramWeight: -1}),
		"no words":   New(Options{WordWeight: -1}),
		"chars only": New(Options{WordWeight: -1, BigramWeight: -1}),
	}
	for name, emb := range embedders {
		texts := make([]string, 150)
		for i := range texts {
			texts[i] = joinText(rng, 10)
		}
		var groups [][]int
		for range 120 {
			g := make([]int, rng.IntN(6))
			for k := range g {
				g[k] = rng.IntN(len(texts))
			}
			groups = append(groups, g)
		}
		groups = append(groups, []int{0}, []int{1, 1})
		got, err := emb.(interface {
			EmbedJoined(context.Context, []string, [][]int) ([]habilis.Vector, error)
		}).EmbedJoined(ctx, texts, groups)
		if err != nil {
			t.Fatalf("%s: EmbedJoined: %v", name, err)
		}
		joined := make([]string, len(groups))
		for g, idx := range groups {
			parts := make([]string, len(idx))
			for k, i := range idx {
				parts[k] = texts[i]
			}
			joined[g] = strings.Join(parts, "\n")
		}
		want, err := emb.Embed(ctx, joined, habilis.Document)
		if err != nil {
			t.Fatal(err)
		}
		for g := range groups {
			if diff := cmp.Diff(want[g], got[g]); diff != "" {
				t.Errorf("%s: EmbedJoined of %q differs from Embed of the join (-want +got):\n%s", name, joined[g], diff)
			}
		}
	}
}

// TestFitJoined checks that FitJoined fits as Fit does, to the same
// state, and that its function gives each group of the corpus the vector
// the fitted embedder's Embed gives its texts joined, to the bit, with the
// default weights and with families turned off; an index out of range is
// refused.
func TestFitJoined(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(4, 6))
	corpus := make([]string, 300)
	for i := range corpus {
		corpus[i] = joinText(rng, 12)
	}
	groups := [][]int{{0}, {1, 1}, {}}
	for range 120 {
		g := make([]int, 1+rng.IntN(6))
		for k := range g {
			g[k] = rng.IntN(len(corpus))
		}
		groups = append(groups, g)
	}
	for name, opts := range map[string]Options{"default": {}, "no bigrams": {BigramWeight: -1}, "chars only": {WordWeight: -1, BigramWeight: -1}} {
		e := New(opts)
		fitted, state, embed, err := e.FitJoined(ctx, corpus)
		if err != nil {
			t.Fatalf("%s: FitJoined: %v", name, err)
		}
		wantFitted, wantState, err := e.Fit(ctx, corpus)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(state, wantState) || fitted.Info() != wantFitted.Info() {
			t.Errorf("%s: FitJoined's state or info differs from Fit's", name)
		}
		got, err := embed(ctx, groups)
		if err != nil {
			t.Fatalf("%s: embed: %v", name, err)
		}
		joined := make([]string, len(groups))
		for g, idx := range groups {
			parts := make([]string, len(idx))
			for k, i := range idx {
				parts[k] = corpus[i]
			}
			joined[g] = strings.Join(parts, "\n")
		}
		want, err := wantFitted.Embed(ctx, joined, habilis.Document)
		if err != nil {
			t.Fatal(err)
		}
		for g := range groups {
			if diff := cmp.Diff(want[g], got[g]); diff != "" {
				t.Errorf("%s: group %v differs from Embed of the join (-want +got):\n%s", name, groups[g], diff)
			}
		}
		if _, err := embed(ctx, [][]int{{len(corpus)}}); !errors.Is(err, habilis.ErrInvalid) {
			t.Errorf("%s: a group naming text %d of %d: %v, want ErrInvalid", name, len(corpus), len(corpus), err)
		}
	}
}

// TestEmbedJoinedInvalid checks that an index out of range is refused.
func TestEmbedJoinedInvalid(t *testing.T) {
	_, err := New(Options{}).EmbedJoined(context.Background(), []string{"a"}, [][]int{{0, 1}})
	if err == nil {
		t.Fatal("EmbedJoined of a group naming text 1 of 1: no error")
	}
}

// FuzzEmbedJoined holds EmbedJoined of two texts to Embed of their join.
func FuzzEmbedJoined(f *testing.F) {
	f.Add("get the weather", "getWeather forecast")
	f.Add("see /var/log/app.log", "pull request")
	f.Add("", "  ")
	f.Fuzz(func(t *testing.T, a, b string) {
		e := New(Options{})
		ctx := context.Background()
		got, err := e.EmbedJoined(ctx, []string{a, b}, [][]int{{0, 1}, {1, 0, 1}})
		if err != nil {
			t.Fatal(err)
		}
		want, err := e.Embed(ctx, []string{a + "\n" + b, b + "\n" + a + "\n" + b}, habilis.Document)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("EmbedJoined(%q, %q) differs from Embed of the join (-want +got):\n%s", a, b, diff)
		}
	})
}
