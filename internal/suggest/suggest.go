// Package suggest finds the names a misspelt one most likely meant: the
// "did you mean" of every layer that reads a name the user typed (a
// catalog's fields, a tool's name at the CLI, the API and the MCP
// gateway), so that they all suggest alike.
package suggest

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"unicode"

	"github.com/habilis-router/habilis"
)

// Max is the most names Names returns: a hint, not a listing.
const Max = 3

// Names returns the names of known closest to name, closest first (ties
// in alphabetical order, whatever known's), at most Max of them, or none
// when none is close. Names are compared ignoring case and the separators
// '_', '-', '.' and ' ', with an edit distance (a transposition counts one
// edit) of at most maxEdits of name's length: one for 3 to 5 letters, two
// beyond, none under 3, where any name would be "close". name itself is
// never suggested. It allocates nothing per name of known, and looks at
// the letters of those of a length within reach alone (BenchmarkNames).
func Names(name string, known []string) []string {
	target := appendNormalized(nil, name)
	limit := maxEdits(len(target))
	if limit < 0 || len(target) > maxRunes {
		return nil
	}
	type near struct {
		name string
		d    int
	}
	var found []near
	var buf []rune
	var rows [3][maxRunes + 1]int
	for _, k := range known {
		if k == name || len(k) < len(target)-limit { // a rune is at least a byte
			continue
		}
		buf = appendNormalized(buf[:0], k)
		if d := distance(target, buf, limit, &rows); d <= limit {
			found = append(found, near{k, d})
		}
	}
	slices.SortFunc(found, func(a, b near) int { return cmp.Or(cmp.Compare(a.d, b.d), strings.Compare(a.name, b.name)) })
	var out []string
	for _, f := range found {
		if len(out) == Max {
			break
		}
		if !slices.Contains(out, f.name) {
			out = append(out, f.name)
		}
	}
	return out
}

// Closest returns the name of known closest to name, or "" (Names' first).
func Closest(name string, known []string) string {
	if s := Names(name, known); len(s) > 0 {
		return s[0]
	}
	return ""
}

// maxEdits is the edit distance allowed for a name of n letters, or -1
// when a name that short is not matched at all.
func maxEdits(n int) int {
	switch {
	case n < 3:
		return -1
	case n <= 5:
		return 1
	}
	return 2
}

// appendNormalized appends s to buf lowered and without the separators
// names differ by alone ("get-weather", "GetWeather", "get_weather"),
// stopping past maxRunes.
func appendNormalized(buf []rune, s string) []rune {
	for _, r := range s {
		switch r {
		case '_', '-', '.', ' ':
			continue
		}
		if len(buf) > maxRunes {
			break
		}
		buf = append(buf, unicode.ToLower(r))
	}
	return buf
}

// maxRunes bounds the names compared: a longer one is pasted text, not a
// misspelt name.
const maxRunes = 64

// distance is the optimal string alignment distance between a and b, or
// limit+1 as soon as it must exceed limit. Only the cells within limit of
// the diagonal are computed: a path through any other costs more.
func distance(a, b []rune, limit int, rows *[3][maxRunes + 1]int) int {
	over := limit + 1
	if len(a) > maxRunes || len(b) > maxRunes || abs(len(a)-len(b)) > limit {
		return over
	}
	prev2, prev, cur := rows[0][:len(b)+1], rows[1][:len(b)+1], rows[2][:len(b)+1]
	for j := range prev {
		prev[j] = min(j, over)
	}
	prevBest := 0
	for i := 1; i <= len(a); i++ {
		lo, hi := max(1, i-limit), min(len(b), i+limit)
		cur[0] = min(i, over)
		if lo > 1 {
			cur[lo-1] = over
		}
		best := cur[0]
		for j := lo; j <= hi; j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			c := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				c = min(c, prev2[j-2]+1)
			}
			cur[j] = min(c, over)
			best = min(best, cur[j])
		}
		if hi < len(b) {
			cur[hi+1] = over
		}
		// A cell comes from the row above or, by a transposition, from
		// the one above that plus one: past two such rows none can come
		// back under the limit.
		if best >= over && prevBest >= limit {
			return over
		}
		prevBest = best
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// UnknownTool returns the error for a tool name that a catalog, whose
// names are known's keys, does not hold, suggesting the names it most
// likely misspells.
func UnknownTool[V any](name string, known map[string]V) *habilis.UnknownToolError {
	return &habilis.UnknownToolError{Name: name, Suggestions: Names(name, slices.Collect(maps.Keys(known)))}
}
