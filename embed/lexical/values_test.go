package lexical

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/vec"
)

func TestWithValues(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"go to https://news.ycombinator.com", "go to url"},
		{"open www.example.org now", "open url now"},
		{"open example.com in the browser", "open url in the browser"},
		{"mail alice@example.com the notes", "mail email the notes"},
		{"post it to #general please", "post it to channel please"},
		{"list the contents of /var/log", "list the contents of path"},
		{"what is in ~/notes and ./build", "what is in path and path"},
		{"create build/output/tmp here", "create path here"},
		{`look at C:\Users\me`, "look at path"},
		{"read src/main.go", "read path file"},
		{"show me README.md and logo.png, then data.csv.", "show me file and file, then file."},
		{"(see notes.txt)", "(see file)"},
		{"write it to `out/report.md`, or **~/notes**", "write it to `path file`, or **path**"},
		// Not values: words, numbers, API names, ratios, slugs, mentions.
		{"summarise and/or translate it", ""},
		{"what PRs are open in golang/go", ""},
		{"call weather.get and math.factorial", ""},
		{"e.g. version 1.2.3 at 3/4 of #1 for @alice", ""},
		{"just some words here", ""},
		{"", ""},
	} {
		want, wantOK := c.want, c.want != ""
		if !wantOK {
			want = c.in
		}
		if got, ok := withValues(c.in); got != want || ok != wantOK {
			t.Errorf("withValues(%q) = %q, %v; want %q, %v", c.in, got, ok, want, wantOK)
		}
	}
}

// TestValueMeetsItsKind: a request's URL meets the tool that takes a URL
// rather than the one sharing the address's words.
func TestValueMeetsItsKind(t *testing.T) {
	ctx := context.Background()
	docs := []string{
		"browser_navigate. Navigate the browser to a URL",
		"get_news. Latest news headlines and stories of the day",
	}
	e, _, err := New(Options{}).Fit(ctx, docs)
	if err != nil {
		t.Fatal(err)
	}
	dv, err := e.Embed(ctx, docs, habilis.Document)
	if err != nil {
		t.Fatal(err)
	}
	qv, err := e.Embed(ctx, []string{"go to https://news.example.com/stories"}, habilis.Query)
	if err != nil {
		t.Fatal(err)
	}
	nav, news := vec.DotVectors(qv[0], dv[0]), vec.DotVectors(qv[0], dv[1])
	if nav <= news {
		t.Errorf("go to https://news.example.com/stories: %.3f at browser_navigate, %.3f at get_news; want browser_navigate ahead", nav, news)
	}
}

func FuzzWithValues(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Add("see https://x.io/a, ~/b.md and #c for a@b.c")
	f.Fuzz(func(t *testing.T, text string) {
		got, ok := withValues(text)
		if !ok && got != text {
			t.Fatalf("withValues(%q) = %q without a value, want the text unchanged", text, got)
		}
		if utf8.ValidString(text) && !utf8.ValidString(got) {
			t.Errorf("withValues(%q) = %q, invalid UTF-8", text, got)
		}
		// Kinds are plain words: reading values twice changes nothing.
		if again, _ := withValues(got); again != got {
			t.Errorf("withValues(%q) = %q, and again %q", text, got, again)
		}
		if n, m := len(strings.Fields(text)), len(strings.Fields(got)); m < n || m > 2*n {
			t.Errorf("withValues(%q) = %q: %d fields from %d, want each field one or two (a path to a file)", text, got, m, n)
		}
	})
}
