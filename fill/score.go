package fill

import (
	"strings"
	"time"
)

// Acceptable is a gold answer: for each argument, the values that count as
// correct. An empty string among them means the argument may be omitted
// (BFCL's convention). For list arguments each acceptable value is itself a
// list; for object arguments, a map whose values are again lists of
// acceptable values.
type Acceptable map[string][]any

// ScoreRow is how one filled call compares with its gold answer.
type ScoreRow struct {
	// Exact reports that every filled argument is acceptable, none is
	// unknown to the gold answer, and every argument it requires is there.
	Exact bool `json:"exact"`
	// Gold counts the arguments the gold answer requires (no "" allowed).
	Gold int `json:"gold"`
	// Predicted counts the filled arguments.
	Predicted int `json:"predicted"`
	// Correct counts filled arguments with an acceptable value.
	Correct int `json:"correct"`
	// Recalled counts required gold arguments filled acceptably.
	Recalled int `json:"recalled"`
	// Invented counts filled arguments whose value the query does not
	// support (see Check); extractive filling keeps it at zero.
	Invented int `json:"invented"`
}

// Score compares filled arguments with a gold answer for query. Strings
// compare like BFCL's checker: case-insensitive, ignoring spaces and
// ",./-_*^"; numbers by value. The tool's schema s (nil allowed) decides,
// as in Check, whether a value is supported by the query.
func Score(gold Acceptable, got map[string]any, query string, s *Schema) ScoreRow {
	var r ScoreRow
	q := analyse(query, time.Time{})
	for name, vals := range gold {
		if !optional(vals) {
			r.Gold++
			if v, ok := got[name]; ok && acceptableAny(vals, v) {
				r.Recalled++
			}
		}
	}
	r.Exact = r.Recalled == r.Gold
	for name, v := range got {
		r.Predicted++
		if vals, ok := gold[name]; ok && acceptableAny(vals, v) {
			r.Correct++
		} else {
			r.Exact = false
		}
		var ps *Schema
		if s != nil {
			ps = s.Properties[name]
		}
		c := &checker{q: q}
		if _, ok := c.value(ps, name, v, name); !ok || len(c.rejected) > 0 {
			r.Invented++
		}
	}
	return r
}

func optional(vals []any) bool {
	for _, v := range vals {
		if s, ok := v.(string); ok && s == "" {
			return true
		}
	}
	return false
}

func acceptableAny(vals []any, got any) bool {
	for _, want := range vals {
		if s, ok := want.(string); ok && s == "" {
			continue
		}
		if acceptable(want, got) {
			return true
		}
	}
	return false
}

// acceptable compares one gold value with one filled value.
func acceptable(want, got any) bool {
	if wf, ok := toFloat(want); ok {
		return acceptableNumber(wf, got)
	}
	switch w := want.(type) {
	case string:
		return acceptableString(w, got)
	case bool:
		g, ok := got.(bool)
		return ok && g == w
	case []any:
		return acceptableList(w, got)
	case map[string]any:
		return acceptableObject(w, got)
	}
	return false
}

// acceptableNumber compares by value, or a string by its standard form.
func acceptableNumber(want float64, got any) bool {
	if gf, ok := toFloat(got); ok {
		return closeTo(gf, want)
	}
	if gs, ok := got.(string); ok {
		return standardise(gs) == standardise(fmtNum(want))
	}
	return false
}

// acceptableString compares standard forms, of a number's too.
func acceptableString(want string, got any) bool {
	if g, ok := got.(string); ok {
		return standardise(want) == standardise(g)
	}
	if gf, ok := toFloat(got); ok {
		return standardise(want) == standardise(fmtNum(gf))
	}
	return false
}

// acceptableList compares item by item.
func acceptableList(want []any, got any) bool {
	g, ok := got.([]any)
	if !ok || len(g) != len(want) {
		return false
	}
	for i := range want {
		if !acceptable(want[i], g[i]) {
			return false
		}
	}
	return true
}

// acceptableObject compares member by member: every member of want must
// be acceptable or optional, and got must have no other.
func acceptableObject(want map[string]any, got any) bool {
	g, ok := got.(map[string]any)
	if !ok {
		return false
	}
	for k, wv := range want {
		gv, present := g[k]
		if !acceptableMember(wv, gv, present) {
			return false
		}
	}
	for k := range g {
		if _, ok := want[k]; !ok {
			return false
		}
	}
	return true
}

// acceptableMember compares one member of a gold object, which is a value
// or, in BFCL's format, a list of alternatives ("" for optional).
func acceptableMember(want, got any, present bool) bool {
	alts, isList := want.([]any)
	switch {
	case !present && isList && optional(alts):
		return true
	case !present:
		return false
	case isList:
		return acceptableAny(alts, got) || acceptable(want, got)
	}
	return acceptable(want, got)
}

// standardise mirrors BFCL's string normalisation.
func standardise(s string) string {
	s = strings.ToLower(s)
	return strings.Map(func(r rune) rune {
		if strings.ContainsRune(" ,./-_*^", r) {
			return -1
		}
		if r == '\'' {
			return '"'
		}
		return r
	}, s)
}

// ScoreTotals sums ScoreRows over a data set.
type ScoreTotals struct {
	Rows      int `json:"rows"`
	Exact     int `json:"exact"`
	Gold      int `json:"gold"`
	Predicted int `json:"predicted"`
	Correct   int `json:"correct"`
	Recalled  int `json:"recalled"`
	Invented  int `json:"invented"`
}

// Add counts one row.
func (t *ScoreTotals) Add(r ScoreRow) {
	t.Rows++
	if r.Exact {
		t.Exact++
	}
	t.Gold += r.Gold
	t.Predicted += r.Predicted
	t.Correct += r.Correct
	t.Recalled += r.Recalled
	t.Invented += r.Invented
}

// ExactRate is the share of rows filled exactly.
func (t ScoreTotals) ExactRate() float64 { return ratio(t.Exact, t.Rows) }

// Precision is the share of filled arguments that are acceptable.
func (t ScoreTotals) Precision() float64 { return ratio(t.Correct, t.Predicted) }

// Recall is the share of required gold arguments filled acceptably.
func (t ScoreTotals) Recall() float64 { return ratio(t.Recalled, t.Gold) }

// InventedRate is the share of filled arguments the query does not support.
func (t ScoreTotals) InventedRate() float64 { return ratio(t.Invented, t.Predicted) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
