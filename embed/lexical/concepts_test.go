package lexical

import (
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/vec"
)

// TestConcepts checks that a request meets a tool's text through a
// concept's synonym (word features alone share nothing there), and that
// the word itself still scores above its synonym.
func TestConcepts(t *testing.T) {
	e := New(Options{CharWeight: -1, BigramWeight: -1})
	score := func(query, doc string) float32 {
		q := embed(t, e, habilis.Query, query)[0]
		d := embed(t, e, habilis.Document, doc)[0]
		return vec.SparseDot(q.Indices, q.Values, d.Indices, d.Values)
	}
	tests := []struct {
		query, doc string
		related    bool
	}{
		{"make folder", "create directory", true},
		{"show the PR", "get pull request", true},
		{"get the pull requests", "show PR", true},
		{"remove photos", "delete images", true},
		{"repo", "repositories", true},
		{"make folder", "delete directory", true}, // folder~directory only
		{"make", "delete", false},
		{"show", "write", false},
		{"create", "remove", false},
		{"notes", "nodes", false},
	}
	for _, tt := range tests {
		if got := score(tt.query, tt.doc); (got > 0) != tt.related {
			t.Errorf("score(%q, %q) = %.3f, want related %v", tt.query, tt.doc, got, tt.related)
		}
	}
	if syn, same := score("make folder", "create directory"), score("create directory", "create directory"); syn >= same {
		t.Errorf("synonyms score %.3f, the same words %.3f: want less", syn, same)
	}
	if a, b := score("make folder", "create directory"), score("make folder", "delete directory"); a <= b {
		t.Errorf("make folder: create directory %.3f, delete directory %.3f: want create above", a, b)
	}
}

// TestConceptTable checks that every concept parses to one or two stems
// and that no word belongs to two classes.
func TestConceptTable(t *testing.T) {
	c := conceptTable()
	if len(c.words) < 50 || len(c.pairs) != 1 {
		t.Errorf("concepts: %d words and %d phrases, want at least 50 and 1", len(c.words), len(c.pairs))
	}
	seen := map[string]int{}
	for i, class := range conceptClasses() {
		for _, w := range class {
			if j, dup := seen[w]; dup {
				t.Errorf("word %q in classes %d and %d", w, j, i)
			}
			seen[w] = i
		}
	}
}
