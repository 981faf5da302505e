package lexical

import "testing"

// TestOperations checks which way a text's operations go and whether it
// asks, over the verb lists and their inflections, and that the words
// left out as too often nouns or adjectives ("new", "post") name none.
func TestOperations(t *testing.T) {
	e := New(Options{})
	for _, c := range []struct {
		text                string
		reads, writes, asks bool
	}{
		{"what does config.yaml say", false, false, true},
		{"What's in my Documents folder", false, false, true},
		{"replace the contents of version.txt with 2.0.1", false, true, false},
		{"approving pull request 20", false, true, false},
		{"list the open issues?", true, false, false},
		{"Can you generate a QR code for me?", false, false, false},
		{"How can I crop this image?", false, false, false},
		{"find a bus to New York, news included", true, false, false},
		{"a new blog post", false, false, false},
		{"is there a way to delete it", false, true, true},
		{"check the build and restart the server", true, true, false},
		{"find entities related to machine learning", true, false, false},
		{"the weather in Oslo", false, false, false},
		{"", false, false, false},
	} {
		r, w, a := e.Operations(c.text)
		if r != c.reads || w != c.writes || a != c.asks {
			t.Errorf("Operations(%q) = reads %v, writes %v, asks %v; want %v, %v, %v", c.text, r, w, a, c.reads, c.writes, c.asks)
		}
	}
}

// TestOperationOfNameTerms checks that Operation reads the features
// NameTerms returns: a name's verbs, and nothing for its other words
// (NewsTool's "news" stems to "new", which names no operation).
func TestOperationOfNameTerms(t *testing.T) {
	e := New(Options{})
	for _, c := range []struct {
		name          string
		reads, writes bool
	}{
		{"write_file", false, true},
		{"create_or_update_file", false, true},
		{"API-retrieve-a-block", true, false},
		{"get_pull_request_reviews", true, false},
		{"kill_process", false, true},
		{"searchAndReplace", true, true},
		{"weather_forecast", false, false},
		{"NewsTool", false, false},
	} {
		var r, w bool
		for _, f := range e.NameTerms(c.name) {
			for _, x := range f {
				fr, fw := e.Operation(x)
				r, w = r || fr, w || fw
			}
		}
		if r != c.reads || w != c.writes {
			t.Errorf("%s: reads %v, writes %v; want %v, %v", c.name, r, w, c.reads, c.writes)
		}
	}
}

// BenchmarkOperations measures reading a request's operations, which
// hybrid selection does once a request.
func BenchmarkOperations(b *testing.B) {
	e := New(Options{})
	for b.Loop() {
		e.Operations("approve pull request 20 in golang/go with a review saying looks good")
	}
}
