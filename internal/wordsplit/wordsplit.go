// Package wordsplit splits names and text into lower-case words of letters
// and digits, the reading that BM25 (eval) and argument filling (fill)
// share; where they differ, at acronyms, each names its own boundary.
package wordsplit

import (
	"strings"
	"unicode"
)

// Split returns the lower-case words of s: its runs of letters and digits,
// broken also before each letter or digit rs[i] of s's runes rs at which
// breakBefore(rs, i) is true.
func Split(s string, breakBefore func(rs []rune, i int) bool) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		if breakBefore(rs, i) {
			flush()
		}
		cur = append(cur, r)
	}
	flush()
	return out
}

// Camel breaks camelCase: before an upper-case letter that follows a
// lower-case one ("maxResults" is max results, "HTTPServer" one word).
func Camel(rs []rune, i int) bool {
	return i > 0 && unicode.IsUpper(rs[i]) && unicode.IsLower(rs[i-1])
}

// CamelAcronym breaks camelCase as Camel does, and also an acronym from
// the word after it, before its last capital ("HTTPServer" is http
// server).
func CamelAcronym(rs []rune, i int) bool {
	if Camel(rs, i) {
		return true
	}
	return i > 0 && i+1 < len(rs) && unicode.IsUpper(rs[i]) && unicode.IsUpper(rs[i-1]) && unicode.IsLower(rs[i+1])
}
