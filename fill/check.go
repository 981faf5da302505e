package fill

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// CheckOptions tune the extractive check. The zero value is strict and has
// no reference time, so relative dates ("tomorrow") support nothing.
type CheckOptions struct {
	// Now is the reference time for relative dates and for dates written
	// without a year. Zero disables both.
	Now time.Time
}

// Rejection is a proposed value the query does not support, or that does
// not fit the schema, and that was therefore dropped.
type Rejection struct {
	// Path names the argument: "city", "address.zip", "tags[2]".
	Path   string `json:"path"`
	Value  any    `json:"value"`
	Reason string `json:"reason"`
	// By names the filler that proposed the value, when known.
	By string `json:"by,omitempty"`
}

// Check keeps the proposed arguments that the query supports and rejects
// the rest, so nothing reaches a tool that the user did not say:
//   - strings must occur in the query, ignoring case, runs of spaces and
//     punctuation at the value's edges, without splitting words; a date
//     string is also supported by the same date written another way;
//   - numbers must appear in the query in digits ("1,000", "1.5", "15%"
//     also supports 0.15) or in words ("twenty five");
//   - booleans need the argument name's words in the query, negated
//     ("without images", "do not include images") for false;
//   - enum values must be allowed and mentioned (also as words: "in_progress"
//     is supported by "in progress");
//   - array items and nested objects are checked one by one.
//
// Values of the wrong type are converted when nothing is lost (the string
// "10" for a number), else rejected; arguments the schema does not declare
// are rejected. Check never adds a value and never modifies args.
func Check(s *Schema, query string, args map[string]any, opts CheckOptions) (map[string]any, []Rejection) {
	c := &checker{q: analyse(query, opts.Now)}
	kept := c.object(s, args, "")
	return kept, c.rejected
}

type checker struct {
	q        *query
	rejected []Rejection
}

func (c *checker) reject(path string, v any, format string, a ...any) {
	c.rejected = append(c.rejected, Rejection{Path: path, Value: v, Reason: fmt.Sprintf(format, a...)})
}

// orderedNames returns obj's keys in s's property order, then the others
// sorted, so rejections come out deterministically.
func orderedNames(s *Schema, obj map[string]any) []string {
	var names []string
	if s != nil {
		for _, n := range s.Order {
			if _, ok := obj[n]; ok {
				names = append(names, n)
			}
		}
	}
	for _, n := range slices.Sorted(maps.Keys(obj)) {
		if s == nil || s.Properties[n] == nil {
			names = append(names, n)
		}
	}
	return names
}

func (c *checker) object(s *Schema, obj map[string]any, path string) map[string]any {
	kept := map[string]any{}
	for _, name := range orderedNames(s, obj) {
		v := obj[name]
		p := join(path, name)
		var ps *Schema
		if s != nil {
			ps = s.Properties[name]
			if ps == nil && (len(s.Properties) > 0 || !s.AdditionalProperties) {
				c.reject(p, v, "not an argument of this tool")
				continue
			}
		}
		if out, ok := c.value(ps, name, v, p); ok {
			kept[name] = out
		}
	}
	return kept
}

// value checks one value and returns it, possibly converted to the
// schema's type.
func (c *checker) value(s *Schema, name string, v any, path string) (any, bool) {
	if v == nil {
		if s != nil && s.allows("null") && len(s.Types) > 0 {
			c.reject(path, v, "null carries nothing the user said")
		} else {
			c.reject(path, v, "empty value")
		}
		return nil, false
	}
	v = coerce(s, v)
	kind := jsonType(v)
	if !s.allows(kind) {
		c.reject(path, v, "want %s, got %s", strings.Join(s.Types, " or "), kind)
		return nil, false
	}
	if s != nil && len(s.Enum) > 0 {
		return c.enumValue(s, v, path)
	}
	switch kind {
	case "string":
		return c.stringValue(v.(string), path)
	case "number", "integer":
		return c.numberValue(v, path)
	case "boolean":
		return c.boolValue(name, v.(bool), path)
	case "array":
		return c.arrayValue(s, name, v.([]any), path)
	case "object":
		return c.objectValue(s, v.(map[string]any), path)
	default:
		c.reject(path, v, "unsupported value type %s", kind)
		return nil, false
	}
}

// enumValue keeps v when it is one of the schema's values and the request
// mentions it.
func (c *checker) enumValue(s *Schema, v any, path string) (any, bool) {
	if !inEnum(s.Enum, v) {
		c.reject(path, v, "not one of the allowed values (%s)", enumList(s.Enum))
		return nil, false
	}
	if !c.q.supportsEnum(v) {
		c.reject(path, v, "the request does not mention it")
		return nil, false
	}
	return v, true
}

func (c *checker) stringValue(v string, path string) (any, bool) {
	if trimEdges(normalise(v)) == "" {
		c.reject(path, v, "empty value")
		return nil, false
	}
	if !c.q.supportsString(v) {
		c.reject(path, v, "not found in the request")
		return nil, false
	}
	return v, true
}

func (c *checker) numberValue(v any, path string) (any, bool) {
	f, _ := toFloat(v)
	if !c.q.supportsNumber(f) {
		c.reject(path, v, "the request does not mention this number")
		return nil, false
	}
	return v, true
}

func (c *checker) boolValue(name string, v bool, path string) (any, bool) {
	if ok, why := c.q.supportsBool(name, v); !ok {
		c.reject(path, v, "%s", why)
		return nil, false
	}
	return v, true
}

// arrayValue keeps the items the request supports, and the array when one
// is left.
func (c *checker) arrayValue(s *Schema, name string, items []any, path string) (any, bool) {
	if len(items) == 0 {
		c.reject(path, items, "empty value")
		return nil, false
	}
	var is *Schema
	if s != nil {
		is = s.Items
	}
	var kept []any
	for i, item := range items {
		if out, ok := c.value(is, name, item, fmt.Sprintf("%s[%d]", path, i)); ok {
			kept = append(kept, out)
		}
	}
	if len(kept) == 0 {
		return nil, false
	}
	return kept, true
}

// objectValue keeps the members the request supports, and the object when
// one is left.
func (c *checker) objectValue(s *Schema, obj map[string]any, path string) (any, bool) {
	if len(obj) == 0 {
		c.reject(path, obj, "empty value")
		return nil, false
	}
	kept := c.object(s, obj, path)
	if len(kept) == 0 {
		return nil, false
	}
	return kept, true
}

// coerce converts v to the schema's type when the conversion loses nothing:
// the string "10" for a number, "true" for a boolean, 12345 for a string.
func coerce(s *Schema, v any) any {
	if s == nil || len(s.Types) == 0 || s.allows(jsonType(v)) {
		if f, ok := toFloat(v); ok {
			return f
		}
		return v
	}
	switch x := v.(type) {
	case string:
		return coerceString(s, x)
	case bool:
		if s.allows("string") {
			return strconv.FormatBool(x)
		}
	default:
		if f, ok := toFloat(v); ok {
			if s.allows("string") {
				return fmtNum(f)
			}
			return f
		}
	}
	return v
}

// coerceString reads x as the number, boolean or one-element list the
// schema wants, or returns it unchanged.
func coerceString(s *Schema, x string) any {
	t := strings.TrimSpace(x)
	if s.allows("number") || s.allows("integer") {
		if f, err := strconv.ParseFloat(strings.ReplaceAll(t, ",", ""), 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f
		}
	}
	if s.allows("boolean") {
		if b, err := strconv.ParseBool(strings.ToLower(t)); err == nil {
			return b
		}
	}
	if s.allows("array") {
		return []any{x}
	}
	return x
}

func (q *query) supportsString(s string) bool {
	if containsPhrase(q.norm, s) {
		return true
	}
	// A date the user wrote another way: "March 5, 2024" supports
	// "2024-03-05" and "03/05/2024".
	for _, layout := range []string{time.DateOnly, "01/02/2006", "02/01/2006", "01-02-2006", "02-01-2006"} {
		t, err := time.Parse(layout, strings.TrimSpace(s))
		if err != nil {
			continue
		}
		iso := t.Format(time.DateOnly)
		for _, d := range q.dates {
			if d.iso == iso {
				return true
			}
		}
	}
	return false
}

func (q *query) supportsNumber(f float64) bool {
	for _, m := range q.numbers {
		if closeTo(m.num, f) || (m.percent && closeTo(m.num/100, f)) {
			return true
		}
	}
	return false
}

// closeTo reports whether a and b are one number up to the rounding of
// parsing it and of dividing a percentage by 100. Whole numbers must be
// equal: an order or account number one digit off is another one, which a
// relative tolerance accepted from ten digits on (12345678905 for
// "12345678901" within 1e-9).
func closeTo(a, b float64) bool {
	if a == b {
		return true
	}
	if a == math.Trunc(a) && b == math.Trunc(b) {
		return false
	}
	return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b))
}

func (q *query) supportsEnum(v any) bool {
	switch x := v.(type) {
	case string:
		if q.supportsString(x) {
			return true
		}
		ws := words(x)
		return len(ws) > 0 && (containsPhrase(q.norm, strings.Join(ws, " ")) || q.findWords(ws, 0) >= 0)
	case bool:
		return false
	}
	if f, ok := toFloat(v); ok {
		return q.supportsNumber(f)
	}
	return false
}

// findWords returns the index of the first token from from on where ws
// start as consecutive tokens, allowing a plural on either side, or -1.
func (q *query) findWords(ws []string, from int) int {
	for i := from; i+len(ws) <= len(q.tokens); i++ {
		ok := true
		for j, w := range ws {
			if !sameWord(q.tokens[i+j].low, w) {
				ok = false
				break
			}
		}
		if ok {
			return i
		}
	}
	return -1
}

func sameWord(a, b string) bool {
	if a == b {
		return true
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	return len(a) >= 3 && (b == a+"s" || b == a+"es")
}

// boolVerbs are words in argument names that carry the polarity rather than
// the subject: "include_images" is about images.
func isBoolVerb(w string) bool {
	switch w {
	case "is", "has", "have", "should", "do", "does", "to", "enable", "enabled", "include", "includes",
		"including", "use", "show", "with", "allow", "allowed", "get", "return", "flag", "want", "need", "add":
		return true
	}
	return false
}

func isNegator(w string) bool {
	switch w {
	case "not", "no", "without", "dont", "never", "exclude", "excluding", "disable", "disabled",
		"off", "false", "skip", "hide", "nor", "non", "neither", "omit", "none":
		return true
	}
	return false
}

// subjectWords are the words of an argument name that the query must
// mention for a boolean to be supported: "include_images" is about images,
// "has_late_check_in" about late check.
func subjectWords(name string) []string {
	ws := words(name)
	var subj []string
	for _, w := range ws {
		if !isBoolVerb(w) && !isStopword(w) {
			subj = append(subj, w)
		}
	}
	if len(subj) == 0 {
		for _, w := range ws {
			switch w {
			case "is", "has", "have", "should", "do", "does", "to":
			default:
				subj = append(subj, w)
			}
		}
	}
	return subj
}

// boolMention looks for every subject word of the argument name in the
// query. found reports that all occur; negated that some occurrence is
// negated; hedged that some occurrence follows "whether", "if", "or" and
// the like, where the user states no preference.
func (q *query) boolMention(name string) (found, negated, hedged bool) {
	subj := subjectWords(name)
	if len(subj) == 0 {
		return false, false, false
	}
	seen := make([]bool, len(subj))
	for i, t := range q.tokens {
		hit := false
		for k, w := range subj {
			if sameWord(t.low, w) {
				seen[k], hit = true, true
			}
		}
		if !hit {
			continue
		}
		negated = negated || q.negatedAt(i)
		for j := max(0, i-4); j < i; j++ {
			switch q.tokens[j].low {
			case "whether", "if", "or", "maybe", "optionally", "concerned", "care", "matter":
				hedged = true
			}
		}
	}
	return !slices.Contains(seen, false), negated, hedged
}

// supportsBool reports whether the query states b for the argument name:
// all its subject words appear, negated nearby for false. It returns the
// reason when it does not.
func (q *query) supportsBool(name string, b bool) (bool, string) {
	found, negated, _ := q.boolMention(name)
	switch {
	case !found:
		return false, fmt.Sprintf("the request does not mention %q", strings.Join(subjectWords(name), " "))
	case negated == b:
		return false, "the request says the opposite"
	}
	return true, ""
}

// negatedAt reports whether the token at i is negated: a negator up to
// five tokens before it in the same clause ("do not include images", "no
// need for a garage") or a "false"/"off"/"no" right after it ("images:
// no").
func (q *query) negatedAt(i int) bool {
	for j := i - 1; j >= 0 && j >= i-5; j-- {
		if strings.ContainsAny(q.raw[q.tokens[j].end:q.tokens[j+1].start], ",;.!?") {
			break
		}
		w := q.tokens[j].low
		if w == "but" || w == "and" {
			break
		}
		if isNegator(w) {
			return true
		}
		if w == "t" && j > 0 && strings.HasSuffix(q.tokens[j-1].low, "n") {
			return true // don't, doesn't, can't, won't
		}
	}
	for j := i + 1; j < len(q.tokens) && j <= i+2; j++ {
		switch q.tokens[j].low {
		case "false", "off", "no", "disabled":
			return true
		case "true", "on", "yes", "enabled":
			return false
		}
	}
	return false
}
