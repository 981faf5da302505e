package fill

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/habilis-router/habilis"
)

// Extractor is the built-in Filler: it needs no model and finds what rules
// can find reliably, so the whole pipeline works offline. It reads enum
// values, booleans named in the request, e-mail addresses, URLs, dates,
// numbers next to an argument's name ("base of 10", "5 years") or, for
// required numbers, in order of appearance, quoted strings, values after an
// argument's name ("city Paris"), places after a preposition ("in Paris")
// for location-like arguments (written in lower case too, for arguments
// that are places), and capitalised names for required strings.
// It is deterministic: the same tool and request give the same answer.
type Extractor struct {
	// Now is the reference time for relative dates ("tomorrow") and dates
	// without a year. Zero disables both.
	Now time.Time
}

// Name returns "extractor".
func (e *Extractor) Name() string { return "extractor" }

// Fill extracts arguments. It returns an error wrapping habilis.ErrInvalid
// only for an unreadable schema.
func (e *Extractor) Fill(ctx context.Context, tool habilis.Tool, query string) (map[string]any, error) {
	s, err := ParseSchema(tool.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("extractor: schema: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("extractor: %w", err)
	}
	x := &extraction{
		q:     analyse(query, e.Now),
		used:  map[int]bool{},
		topic: topicWords(tool.Name, tool.Description),
	}
	x.quotes = findQuotes(query)
	x.sentenceStarts = sentenceStarts(x.q)
	return x.object(s), nil
}

// extraction holds one request's analysis and which of its tokens already
// went into a value, so one span never fills two arguments.
type extraction struct {
	q              *query
	quotes         []mention
	used           map[int]bool // token indices
	sentenceStarts map[int]bool
	numberTokens   []bool // built on first use
	// topic holds the words of the tool's name and description, which a
	// place written in lower case may not hold (see lowercasePlace).
	topic map[string]bool
}

// arg is one property being filled.
type arg struct {
	name     string
	s        *Schema
	required bool
	subject  []string // the name's words that anchor values
	done     bool
	value    any
}

func (x *extraction) object(s *Schema) map[string]any {
	out := map[string]any{}
	if s == nil || len(s.Order) == 0 {
		return out
	}
	args := objectArgs(s)
	for _, a := range args { // unambiguous kinds first
		x.unambiguous(a)
	}
	x.numbers(args)
	x.strings(args)
	for _, a := range args {
		if a.done {
			out[a.name] = a.value
		}
	}
	return out
}

// objectArgs returns the properties of s to fill, in the schema's order.
func objectArgs(s *Schema) []*arg {
	args := make([]*arg, 0, len(s.Order))
	for _, name := range s.Order {
		ps := s.Properties[name]
		if ps == nil {
			continue
		}
		args = append(args, &arg{name: name, s: ps, required: s.isRequired(name), subject: anchorWords(name)})
	}
	return args
}

// unambiguous fills a when its kind leaves no doubt about which of the
// request's words can hold it: enums, booleans, nested objects, e-mail
// addresses, URLs, dates and file paths.
func (x *extraction) unambiguous(a *arg) {
	switch {
	case len(a.s.Enum) > 0:
		x.enum(a)
	case a.s.Items != nil && len(a.s.Items.Enum) > 0 && a.s.allows("array"):
		x.enumArray(a)
	case a.s.allows("object") && len(a.s.Types) == 1 && len(a.s.Properties) > 0:
		if sub := x.object(a.s); len(sub) > 0 {
			a.done, a.value = true, sub
		}
	case a.s.allows("boolean") && len(a.s.Types) == 1:
		x.boolean(a)
	case isKind(a, "email"):
		x.fromMentions(a, x.q.emails, "")
	case isKind(a, "uri"):
		x.fromMentions(a, x.q.urls, "")
	case isKind(a, "date"):
		x.fromMentions(a, x.q.dates, dateLayout(a.s))
	case isKind(a, "path"):
		x.fromMentions(a, x.q.paths, "")
	}
}

// anchorWords are the words of an argument name that locate its value in
// the request, without generic ones ("number", "value", "the").
func anchorWords(name string) []string {
	var ws []string
	for _, w := range words(name) {
		switch w {
		case "num", "number", "value", "val", "the", "of", "to", "in", "for", "is", "input", "param", "arg", "data", "info", "str", "string", "int", "integer", "float", "list", "array":
			continue
		}
		ws = append(ws, w)
	}
	return ws
}

// isKind reports whether a string argument holds an e-mail address, a URL
// or a date, by its format or its name.
func isKind(a *arg, kind string) bool {
	if !a.s.allows("string") {
		return false
	}
	switch a.s.Format {
	case "email":
		return kind == "email"
	case "uri", "url":
		return kind == "uri"
	case "date", "date-time":
		return kind == "date"
	}
	ws := words(a.name)
	has := func(cands ...string) bool {
		return slices.ContainsFunc(ws, func(w string) bool { return slices.Contains(cands, w) })
	}
	switch kind {
	case "email":
		return has("email", "mail", "recipient", "recipients", "sender", "cc", "bcc")
	case "uri":
		return has("url", "uri", "link", "website", "site", "endpoint", "href", "webpage", "homepage")
	case "date":
		return has("date", "day", "birthday", "deadline", "dob")
	case "path":
		return has("path", "file", "filename", "filepath", "dir", "directory", "folder")
	}
	return false
}

// dateLayout returns the layout a date argument asks for: ISO for
// format "date" or a description saying YYYY-MM-DD, MM/DD/YYYY or
// DD/MM/YYYY when described so, and "" to copy the user's words.
func dateLayout(s *Schema) string {
	d := strings.ToLower(s.Description)
	switch {
	case s.Format == "date" || strings.Contains(d, "yyyy-mm-dd") || strings.Contains(d, "iso"):
		return time.DateOnly
	case strings.Contains(d, "mm/dd/yyyy"):
		return "01/02/2006"
	case strings.Contains(d, "dd/mm/yyyy"):
		return "02/01/2006"
	case strings.Contains(d, "mm-dd-yyyy"):
		return "01-02-2006"
	case strings.Contains(d, "dd-mm-yyyy"):
		return "02-01-2006"
	}
	return ""
}

// tokenRange returns the token indices a byte span covers.
func (x *extraction) tokenRange(start, end int) []int {
	ts := x.q.tokens
	i := sort.Search(len(ts), func(i int) bool { return ts[i].end > start })
	var idx []int
	for ; i < len(ts) && ts[i].start < end; i++ {
		idx = append(idx, i)
	}
	return idx
}

func (x *extraction) free(idx []int) bool {
	for _, i := range idx {
		if x.used[i] {
			return false
		}
	}
	return true
}

func (x *extraction) take(idx []int) {
	for _, i := range idx {
		x.used[i] = true
	}
}

// fromMentions fills a with the first free mention, a date rewritten in
// layout when one is given.
func (x *extraction) fromMentions(a *arg, ms []mention, layout string) {
	for _, m := range ms {
		idx := x.tokenRange(m.start, m.end)
		if !x.free(idx) {
			continue
		}
		x.take(idx)
		a.done = true
		if layout != "" && m.iso != "" {
			t, _ := time.Parse(time.DateOnly, m.iso)
			a.value = t.Format(layout)
		} else {
			a.value = x.q.span(m)
		}
		if a.s.allows("array") && !a.s.allows("string") {
			a.value = []any{a.value}
		}
		return
	}
}

func isStopword(w string) bool {
	switch w {
	case "a", "an", "the", "in", "on", "of", "to", "for", "at", "by", "all", "any", "and", "or", "is",
		"it", "yes", "no", "me", "my", "i", "with", "from", "as", "be", "this", "that", "what", "which",
		"some", "get", "find", "show", "give", "tell", "please", "can", "you", "us", "we", "are", "was",
		"will", "would", "should", "could", "do", "does", "not", "none", "default", "other", "its", "their",
		"your", "our", "his", "her", "there", "then", "than", "also", "about", "into", "over", "under",
		"up", "down", "out", "so", "if", "when", "how", "why", "who", "where", "using", "use", "want", "need":
		return true
	}
	return false
}

func (x *extraction) enumMatches(enum []any) []int {
	var hits []int // enum indices, best first
	type hit struct{ i, at, n int }
	var hs []hit
	for i, e := range enum {
		str, ok := e.(string)
		if !ok {
			continue
		}
		ws := words(str)
		if len(ws) == 0 || (len(ws) == 1 && (isStopword(ws[0]) || len(ws[0]) < 2)) {
			continue
		}
		at := x.q.findWords(ws, 0)
		if at < 0 {
			continue
		}
		idx := make([]int, len(ws))
		for j := range ws {
			idx[j] = at + j
		}
		if !x.free(idx) {
			continue
		}
		hs = append(hs, hit{i, at, len(ws)})
	}
	sort.SliceStable(hs, func(a, b int) bool {
		if hs[a].n != hs[b].n {
			return hs[a].n > hs[b].n
		}
		return hs[a].at < hs[b].at
	})
	for _, h := range hs {
		hits = append(hits, h.i)
	}
	return hits
}

func (x *extraction) enum(a *arg) {
	hits := x.enumMatches(a.s.Enum)
	if len(hits) == 0 {
		for _, e := range a.s.Enum { // numeric enums
			if f, ok := toFloat(e); ok && x.q.supportsNumber(f) {
				a.done, a.value = true, f
				return
			}
		}
		return
	}
	a.done, a.value = true, a.s.Enum[hits[0]]
}

func (x *extraction) enumArray(a *arg) {
	hits := x.enumMatches(a.s.Items.Enum)
	if len(hits) == 0 {
		return
	}
	slices.Sort(hits)
	vals := make([]any, len(hits))
	for i, h := range hits {
		vals[i] = a.s.Items.Enum[h]
	}
	a.done, a.value = true, vals
}

func (x *extraction) boolean(a *arg) {
	if found, negated, hedged := x.q.boolMention(a.name); found && !hedged {
		a.done, a.value = true, !negated
	}
}

// numbers fills numeric arguments: first those whose name sits next to a
// number, nearest pairs first, then required ones in order of appearance.
func (x *extraction) numbers(args []*arg) {
	var nums []int // indices into x.q.numbers that are still free
	numTokens := make([][]int, len(x.q.numbers))
	for i, m := range x.q.numbers {
		numTokens[i] = x.tokenRange(m.start, m.end)
		if x.free(numTokens[i]) {
			nums = append(nums, i)
		}
	}
	taken := x.numbersByName(args, nums, numTokens)
	var rest []int
	for _, mi := range nums {
		if !taken[mi] && x.free(numTokens[mi]) {
			rest = append(rest, mi)
		}
	}
	rest = x.numbersInOrder(args, rest, numTokens)
	x.numberLists(args, rest, numTokens)
}

// numericSchema reports a schema that takes numbers and not strings.
func numericSchema(s *Schema) bool {
	return len(s.Enum) == 0 && (s.allows("number") || s.allows("integer")) && len(s.Types) > 0 && !s.allows("string")
}

// wantsNumber reports an argument still open that takes a number.
func wantsNumber(a *arg) bool { return !a.done && numericSchema(a.s) }

// fitsNumber reports whether s can take m: integers fit everywhere,
// fractions only where numbers do.
func fitsNumber(s *Schema, m mention) bool {
	return s.allows("number") || m.num == float64(int64(m.num))
}

// numbersByName fills numeric arguments whose name sits next to one of the
// free numbers nums, nearest pairs first, and returns the numbers taken.
func (x *extraction) numbersByName(args []*arg, nums []int, numTokens [][]int) map[int]bool {
	type pair struct {
		a    *arg
		m    int
		dist int
	}
	var pairs []pair
	for _, a := range args {
		if !wantsNumber(a) || len(a.subject) == 0 {
			continue
		}
		for _, mi := range nums {
			if d := x.anchorDistance(a.subject, x.q.numbers[mi], numTokens[mi]); d > 0 && fitsNumber(a.s, x.q.numbers[mi]) {
				pairs = append(pairs, pair{a, mi, d})
			}
		}
	}
	sort.SliceStable(pairs, func(i, j int) bool { return pairs[i].dist < pairs[j].dist })
	taken := map[int]bool{}
	for _, p := range pairs {
		if p.a.done || taken[p.m] {
			continue
		}
		taken[p.m] = true
		x.take(numTokens[p.m])
		p.a.done, p.a.value = true, x.q.numbers[p.m].num
	}
	return taken
}

// numbersInOrder gives the numbers rest to the required numeric arguments
// still open, in order of appearance, and returns the numbers left.
func (x *extraction) numbersInOrder(args []*arg, rest []int, numTokens [][]int) []int {
	for _, a := range args {
		if !wantsNumber(a) || !a.required {
			continue
		}
		for k, mi := range rest {
			if fitsNumber(a.s, x.q.numbers[mi]) {
				x.take(numTokens[mi])
				a.done, a.value = true, x.q.numbers[mi].num
				rest = append(rest[:k], rest[k+1:]...)
				break
			}
		}
	}
	return rest
}

// numberLists gives the numbers rest to the first required list of
// numbers still open that can take one of them.
func (x *extraction) numberLists(args []*arg, rest []int, numTokens [][]int) {
	for _, a := range args {
		if a.done || !a.required || a.s.Items == nil || !a.s.allows("array") || len(rest) == 0 {
			continue
		}
		if it := a.s.Items; numericSchema(it) {
			var vals []any
			for _, mi := range rest {
				if fitsNumber(it, x.q.numbers[mi]) {
					vals = append(vals, x.q.numbers[mi].num)
					x.take(numTokens[mi])
				}
			}
			if len(vals) > 0 {
				a.done, a.value = true, vals
				rest = nil
			}
		}
	}
}

// anchorDistance returns how close the argument's name is to the number,
// in tokens (1 is adjacent), or 0 when it is not close: "base of 10",
// "10 units base", "height: 5", "5 years".
func (x *extraction) anchorDistance(subject []string, m mention, numIdx []int) int {
	if len(numIdx) == 0 {
		return 0
	}
	first, last := numIdx[0], numIdx[len(numIdx)-1]
	best := 0
	closer := func(d int) {
		if best == 0 || d < best {
			best = d
		}
	}
	for d := 1; d <= 4 && first-d >= 0; d++ {
		ti := first - d
		if x.isNumberToken(ti) || x.breaks(ti, ti+1) {
			break
		}
		if x.names(subject, ti, m) {
			closer(d)
		}
	}
	for d := 1; d <= 2 && last+d < len(x.q.tokens); d++ {
		ti := last + d
		if x.isNumberToken(ti) || x.breaks(ti-1, ti) {
			break
		}
		if x.names(subject, ti, m) {
			closer(d)
		}
	}
	return best
}

// breaks reports punctuation between tokens a and b that ends a phrase: in
// "3 bedrooms, 2 bathrooms" the 2 belongs to bathrooms, not to bedrooms.
func (x *extraction) breaks(a, b int) bool {
	return strings.ContainsAny(x.q.raw[x.q.tokens[a].end:x.q.tokens[b].start], ",;.!?()")
}

// names reports whether token ti is one of the subject words naming the
// number m. A one-letter word counts only before the number, joined to it
// ("x = 4"), so the article in "a base of 10" does not.
func (x *extraction) names(subject []string, ti int, m mention) bool {
	t := x.q.tokens[ti]
	return slices.ContainsFunc(subject, func(s string) bool {
		if !sameWord(t.low, s) {
			return false
		}
		return len(s) != 1 || (t.end <= m.start && joinPattern.MatchString(x.q.raw[t.end:m.start]))
	})
}

func (x *extraction) isNumberToken(ti int) bool {
	if x.numberTokens == nil {
		x.numberTokens = make([]bool, len(x.q.tokens))
		for _, m := range x.q.numbers {
			for _, i := range x.tokenRange(m.start, m.end) {
				x.numberTokens[i] = true
			}
		}
	}
	return x.numberTokens[ti]
}

// findQuotes returns the spans inside quotation marks.
func findQuotes(raw string) []mention {
	var ms []mention
	for _, m := range quotePattern.FindAllStringSubmatchIndex(raw, -1) {
		for g := 2; g+1 < len(m); g += 2 {
			if m[g] >= 0 && strings.TrimSpace(raw[m[g]:m[g+1]]) != "" {
				ms = append(ms, mention{start: m[g], end: m[g+1]})
			}
		}
	}
	return ms
}

func sentenceStarts(q *query) map[int]bool {
	starts := map[int]bool{}
	for i, t := range q.tokens {
		if i == 0 {
			starts[i] = true
			continue
		}
		between := strings.TrimSpace(q.raw[q.tokens[i-1].end:t.start])
		if strings.ContainsAny(between, ".!?") || strings.HasSuffix(between, ":") {
			starts[i] = true
		}
	}
	return starts
}

func isLocationArg(a *arg) bool {
	for _, w := range words(a.name) {
		switch w {
		case "city", "location", "place", "country", "region", "destination", "origin", "address",
			"area", "state", "town", "venue", "loc", "where", "from", "to", "source", "target", "departure",
			"arrival", "province", "county", "neighborhood", "neighbourhood", "zone":
			return true
		}
	}
	return false
}

// isUnitArg reports an argument holding the unit of a number the user
// gives ("10 meters"), not a unit to convert to or from.
func isUnitArg(a *arg) bool {
	ws := words(a.name)
	for _, w := range ws {
		switch w {
		case "to", "from", "target", "source", "output", "input", "desired":
			return false
		}
	}
	return slices.Contains(ws, "unit") || slices.Contains(ws, "units")
}

// strings fills string arguments from quotes, values after their names,
// places after prepositions, people after the words introducing them,
// units after numbers and capitalised names, in that order.
func (x *extraction) strings(args []*arg) {
	x.quotesNearNames(args)
	x.valuesAfterNames(args)
	x.places(args)
	x.people(args)
	x.units(args)
	x.quotesInOrder(args)
	x.capitalisedNames(args)
}

// wantsString reports an argument still open that takes free text: not an
// enum, a date, an e-mail address or a URL, which have phases of their own.
func wantsString(a *arg) bool {
	return !a.done && len(a.s.Enum) == 0 && a.s.allows("string") && len(a.s.Types) > 0 &&
		!isKind(a, "date") && !isKind(a, "email") && !isKind(a, "uri")
}

// setString fills a with v, as a one-element list when a takes lists and
// not strings.
func setString(a *arg, v string) {
	a.done, a.value = true, v
	if a.s.allows("array") && !a.s.allows("string") {
		a.value = []any{v}
	}
}

// quotesNearNames fills string arguments with a quoted string that follows
// their name closely.
func (x *extraction) quotesNearNames(args []*arg) {
	for _, a := range args {
		if !wantsString(a) || len(a.subject) == 0 {
			continue
		}
		for _, m := range x.quotes {
			idx := x.tokenRange(m.start, m.end)
			if len(idx) == 0 || !x.free(idx) {
				continue
			}
			if x.nameBefore(a.subject, idx[0], 3) {
				x.take(idx)
				setString(a, x.q.span(m))
				break
			}
		}
	}
}

// valuesAfterNames fills string arguments with the value right after their
// name: "city Paris", "named Bob".
func (x *extraction) valuesAfterNames(args []*arg) {
	for _, a := range args {
		if !wantsString(a) || len(a.subject) == 0 || isUnitArg(a) {
			continue
		}
		if v, idx := x.afterName(a); v != "" {
			x.take(idx)
			setString(a, v)
		}
	}
}

// places fills location-like arguments with places after a preposition.
func (x *extraction) places(args []*arg) {
	for _, a := range args {
		if !wantsString(a) || !isLocationArg(a) {
			continue
		}
		if v, idx := x.place(a); v != "" {
			x.take(idx)
			setString(a, v)
		}
	}
}

// people fills arguments naming people with the name after the word that
// introduces them: "featuring Jack Carson", "directed by Jordan Peele",
// "songs by Taylor Swift".
func (x *extraction) people(args []*arg) {
	for _, a := range args {
		if !wantsString(a) {
			continue
		}
		if v, idx := x.person(a); v != "" {
			x.take(idx)
			setString(a, v)
		}
	}
}

// units fills unit arguments with the word right after a number: "10
// units", "5 meters".
func (x *extraction) units(args []*arg) {
	for _, a := range args {
		if !wantsString(a) || !isUnitArg(a) {
			continue
		}
		if next, ok := x.wordAfterNumber(); ok {
			t := x.q.tokens[next]
			x.take([]int{next})
			setString(a, x.q.raw[t.start:t.end])
		}
	}
}

// wordAfterNumber returns the first free token right after a number that
// is a word and not a stopword.
func (x *extraction) wordAfterNumber() (int, bool) {
	for _, m := range x.q.numbers {
		idx := x.tokenRange(m.start, m.end)
		if len(idx) == 0 {
			continue
		}
		next := idx[len(idx)-1] + 1
		if next < len(x.q.tokens) && !x.used[next] && isAlpha(x.q.tokens[next].low) && !isStopword(x.q.tokens[next].low) {
			return next, true
		}
	}
	return 0, false
}

// quotesInOrder gives the remaining quoted strings to required string
// arguments in order.
func (x *extraction) quotesInOrder(args []*arg) {
	for _, a := range args {
		if !wantsString(a) || !a.required {
			continue
		}
		for _, m := range x.quotes {
			idx := x.tokenRange(m.start, m.end)
			if len(idx) > 0 && x.free(idx) {
				x.take(idx)
				setString(a, x.q.span(m))
				break
			}
		}
	}
}

// capitalisedNames gives capitalised names to required string arguments
// in order.
func (x *extraction) capitalisedNames(args []*arg) {
	for _, a := range args {
		if !wantsString(a) || !a.required {
			continue
		}
		if v, idx := x.capitalised(0, len(a.s.Description) > 0 && wantsQualifier(a.s)); v != "" {
			x.take(idx)
			setString(a, v)
		}
	}
}

func isAlpha(s string) bool {
	for _, r := range s {
		if !unicode.IsLetter(r) {
			return false
		}
	}
	return s != ""
}

// nameBefore reports whether one of the subject words occurs within n
// tokens before token i.
func (x *extraction) nameBefore(subject []string, i, n int) bool {
	for j := max(0, i-n); j < i; j++ {
		if slices.ContainsFunc(subject, func(w string) bool { return len(w) > 1 && sameWord(x.q.tokens[j].low, w) }) {
			return true
		}
	}
	return false
}

// afterName finds the argument's name and returns the value that follows
// it: a capitalised name, or one word joined by "is", "=", ":", "named",
// "called". "city Paris" gives Paris; "the city is Rome" gives Rome.
func (x *extraction) afterName(a *arg) (string, []int) {
	if v, idx := x.afterWords(a, a.subject, false); v != "" {
		return v, idx
	}
	if len(a.subject) > 1 { // "id is 1234" for employee_id
		return x.afterWords(a, a.subject[len(a.subject)-1:], true)
	}
	return "", nil
}

// afterWords returns the value after the words ws; with needJoin, only
// when a joining word or sign ("is", "=", ":") stands between.
func (x *extraction) afterWords(a *arg, ws []string, needJoin bool) (string, []int) {
	if len(ws) == 1 && (isStopword(ws[0]) || (len(ws[0]) < 3 && !needJoin && ws[0] != "id")) {
		return "", nil // too common a word to anchor a value
	}
	for from := 0; ; {
		at := x.q.findWords(ws, from)
		if at < 0 {
			return "", nil
		}
		from = at + 1
		if v, idx := x.valueAfter(a, at+len(ws), needJoin); idx != nil {
			return v, idx
		}
	}
}

// valueAfter returns the value starting at token i, right after an
// argument's name, skipping joining words ("is", "named"); idx is nil when
// there is none.
func (x *extraction) valueAfter(a *arg, i int, needJoin bool) (v string, idx []int) {
	if i >= len(x.q.tokens) {
		return "", nil
	}
	i, joined, ok := x.skipJoin(i)
	if !ok || (needJoin && !joined) {
		return "", nil
	}
	if v, idx := x.capitalisedAt(i, wantsQualifier(a.s)); v != "" && !x.allStopwords(idx) {
		return v, idx
	}
	t := x.q.tokens[i]
	if (joined || strings.ContainsAny(t.low, "0123456789")) && !x.used[i] && !isStopword(t.low) {
		return x.q.raw[t.start:t.end], []int{i}
	}
	return "", nil
}

// skipJoin skips the sign ("=", ":") and the words ("is", "named") that
// join a name, ending before token i, to its value. It returns the value's
// first token and whether anything joined; ok is false when a comma or a
// full stop ends the phrase first, or the request ends.
func (x *extraction) skipJoin(i int) (next int, joined, ok bool) {
	between := strings.TrimSpace(x.q.raw[x.q.tokens[i-1].end:x.q.tokens[i].start])
	joined = between == "=" || between == ":"
	for ; i < len(x.q.tokens) && isJoinWord(x.q.tokens[i].low); i++ {
		joined = true
	}
	return i, joined, i < len(x.q.tokens) && between != "," && between != "."
}

// isJoinWord reports a word that joins a name to its value: "the city is
// Rome", "a file named notes".
func isJoinWord(w string) bool {
	switch w {
	case "is", "named", "called", "titled", "equals", "as", "of":
		return true
	}
	return false
}

// place returns the capitalised name after a preposition suited to the
// argument: "from" for origins, "to" for destinations, else "in", "at",
// "near", "for"; failing one, for an argument that is a place, a place
// written in lower case (lowercasePlace).
func (x *extraction) place(a *arg) (string, []int) {
	preps := []string{"in", "at", "near", "for", "around", "of"}
	ws := words(a.name)
	switch {
	case slices.ContainsFunc(ws, func(w string) bool {
		return slices.Contains([]string{"origin", "from", "source", "departure", "start"}, w)
	}):
		preps = []string{"from"}
	case slices.ContainsFunc(ws, func(w string) bool {
		return slices.Contains([]string{"destination", "to", "target", "arrival", "end"}, w)
	}):
		preps = []string{"to"}
	}
	for _, p := range preps {
		for i, t := range x.q.tokens {
			if t.low != p || i+1 >= len(x.q.tokens) {
				continue
			}
			j := i + 1
			if x.q.tokens[j].low == "the" && j+1 < len(x.q.tokens) {
				j++
			}
			if v, idx := x.capitalisedAt(j, wantsQualifier(a.s)); v != "" {
				return v, idx
			}
		}
	}
	if isPlaceArg(a) {
		return x.lowercasePlace(preps)
	}
	return "", nil
}

// person returns the capitalised name after the words that introduce the
// argument's kind of person, or "".
func (x *extraction) person(a *arg) (string, []int) {
	var intros [][]string
	for _, w := range words(a.name) {
		switch w {
		case "cast", "actor", "actors", "actress", "starring", "star", "stars":
			intros = append(intros, []string{"featuring"}, []string{"starring"}, []string{"stars"}, []string{"with"})
		case "director", "directors":
			intros = append(intros, []string{"directed", "by"})
		case "artist", "author", "singer", "band", "composer", "performer", "writer", "creator":
			intros = append(intros, []string{"by"})
		}
	}
	for _, intro := range intros {
		for from := 0; ; {
			at := x.q.findWords(intro, from)
			if at < 0 {
				break
			}
			from = at + 1
			if v, idx := x.capitalisedAt(at+len(intro), false); v != "" && !x.allStopwords(idx) {
				return v, idx
			}
		}
	}
	return "", nil
}

// wantsQualifier reports whether a place should keep its ", CA" or ",
// France": the description asks for a state or country, or shows an
// example with a comma.
func wantsQualifier(s *Schema) bool {
	d := strings.ToLower(s.Description)
	return strings.Contains(d, "state") || strings.Contains(d, "country") ||
		examplePairPattern.MatchString(d) || strings.Contains(d, "city, ")
}

// capitalisedAt returns the run of capitalised words starting at token i
// ("New York City"), with a ", CA" or ", France" qualifier when wanted.
func (x *extraction) capitalisedAt(i int, qualifier bool) (string, []int) {
	ts := x.q.tokens
	if i >= len(ts) || x.used[i] || !x.capitalisedToken(i) {
		return "", nil
	}
	j := i
	for j+1 < len(ts) && !x.used[j+1] && ((x.capitalisedToken(j+1) && x.joins(j)) || x.elided(j)) {
		j++
	}
	if qualifier {
		j = x.qualified(j)
	}
	idx := make([]int, 0, j-i+1)
	for k := i; k <= j; k++ {
		idx = append(idx, k)
	}
	return x.q.raw[ts[i].start:ts[j].end], idx
}

func (x *extraction) capitalisedToken(i int) bool {
	return capitalised(x.q.raw[x.q.tokens[i].start:x.q.tokens[i].end])
}

// joins reports whether tokens j and j+1 belong to one name: only spaces
// stand between them, or a full stop after an initial ("U.S. Bank").
func (x *extraction) joins(j int) bool {
	ts := x.q.tokens
	between := strings.TrimSpace(x.q.raw[ts[j].end:ts[j+1].start])
	return between == "" || (between == "." && len(ts[j].low) == 1)
}

// elided reports an apostrophe inside a name between tokens j and j+1
// ("Nyong'o", "O'Neil"), but not a possessive or a contraction
// ("Swift's").
func (x *extraction) elided(j int) bool {
	ts := x.q.tokens
	between := x.q.raw[ts[j].end:ts[j+1].start]
	if between != "'" && between != "’" {
		return false
	}
	switch ts[j+1].low {
	case "s", "ll", "re", "ve", "d", "t", "m":
		return false
	}
	return true
}

// qualified extends a name ending at token j with a ", CA" or ", France"
// that follows it, and returns the new last token.
func (x *extraction) qualified(j int) int {
	ts := x.q.tokens
	if j+1 >= len(ts) || x.used[j+1] || strings.TrimSpace(x.q.raw[ts[j].end:ts[j+1].start]) != "," || !x.capitalisedToken(j+1) {
		return j
	}
	j++
	for j+1 < len(ts) && !x.used[j+1] && x.capitalisedToken(j+1) &&
		strings.TrimSpace(x.q.raw[ts[j].end:ts[j+1].start]) == "" {
		j++
	}
	return j
}

// capitalised returns the first run of capitalised words from token from
// on that does not start a sentence (where every word is capitalised).
func (x *extraction) capitalised(from int, qualifier bool) (string, []int) {
	for i := from; i < len(x.q.tokens); i++ {
		if x.sentenceStarts[i] || x.used[i] {
			continue
		}
		if i > 0 && !x.used[i-1] && capitalised(x.q.raw[x.q.tokens[i-1].start:x.q.tokens[i-1].end]) &&
			!x.sentenceStarts[i-1] {
			continue // inside a run that started earlier
		}
		if v, idx := x.capitalisedAt(i, qualifier); v != "" && !x.allStopwords(idx) {
			return v, idx
		}
	}
	return "", nil
}

func (x *extraction) allStopwords(idx []int) bool {
	for _, i := range idx {
		if !isStopword(x.q.tokens[i].low) {
			return false
		}
	}
	return true
}

// capitalised reports whether a word starts with an upper-case letter and
// is not the pronoun "I".
func capitalised(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	return unicode.IsUpper(r) && w != "I"
}
