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
	"unicode/utf8"

	"github.com/habilis-router/habilis"
)

// Max is the most names Names returns: a hint, not a listing.
const Max = 3

// Names returns the names of known closest to name, closest first (ties
// in alphabetical order, whatever known's), at most Max of them, or none when none is close.
// Names are compared ignoring case and the separators '_', '-', '.' and
// ' ', with an edit distance (a transposition counts one edit) of at
// most maxEdits of name's length: one for 3 to 5 letters, two beyond,
// none under 3, where any name would be "close". name itself is never
// suggested.
func Names(name string, known []string) []string {
	nk := normalize(name)
	limit := maxEdits(utf8.RuneCountInString(nk))
	if limit < 0 {
		return nil
	}
	type near struct {
		name string
		d    int
	}
	var found []near
	for _, k := range known {
		if k == name {
			continue
		}
		if d := distance(nk, normalize(k), limit); d <= limit {
			found = append(found, near{k, d})
		}
	}
	slices.SortFunc(found, func(a, b near) int { return cmp.Or(cmp.Compare(a.d, b.d), strings.Compare(a.name, b.name)) })
	out := make([]string, 0, min(len(found), Max))
	for _, f := range found {
		if len(out) == Max {
			break
		}
		if !slices.Contains(out, f.name) {
			out = append(out, f.name)
		}
	}
	if len(out) == 0 {
		return nil
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

// normalize lowers s and drops the separators names differ by alone
// ("get-weather", "GetWeather", "get_weather").
func normalize(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '_', '-', '.', ' ':
			return -1
		}
		return r
	}, strings.ToLower(s))
}

// maxRunes bounds the names compared: a longer one is pasted text, not a
// misspelt name, and the distance's cost grows with the square of it.
const maxRunes = 64

// distance is the optimal string alignment distance between a and b, in
// runes, or limit+1 as soon as it must exceed limit.
func distance(a, b string, limit int) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > maxRunes || len(rb) > maxRunes || abs(len(ra)-len(rb)) > limit {
		return limit + 1
	}
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	prevBest := 0
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		best := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			best = min(best, cur[j])
		}
		// A cell comes from the row above or, by a transposition, from
		// the one above that plus one: past two such rows none can come
		// back under the limit.
		if best > limit && prevBest >= limit {
			return limit + 1
		}
		prevBest = best
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
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
