package fill

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/habilis-router/habilis/internal/wordsplit"
)

// token is a run of letters and digits in the query, with its byte offsets
// in the original text so spans can be copied verbatim.
type token struct {
	low        string
	start, end int
}

// mention is a value found in the query (a number, a date) with its span.
type mention struct {
	num        float64
	iso        string // dates: YYYY-MM-DD
	percent    bool
	start, end int
}

// query is a user's request analysed once: normalised text, tokens, and the
// numbers, dates, e-mail addresses, URLs and file paths it mentions.
type query struct {
	raw     string
	norm    string
	tokens  []token
	numbers []mention
	dates   []mention
	emails  []mention
	urls    []mention
	paths   []mention
}

func analyse(raw string, now time.Time) *query {
	q := &query{raw: raw, norm: normalise(raw)}
	q.tokens = tokenise(raw)
	q.numbers = findNumbers(raw, q.tokens)
	q.dates = findDates(raw, q.tokens, now)
	for _, m := range emailPattern.FindAllStringIndex(raw, -1) {
		if whole(raw, m[0], m[1]) {
			q.emails = append(q.emails, mention{start: m[0], end: m[1]})
		}
	}
	for _, m := range urlPattern.FindAllStringIndex(raw, -1) {
		end := m[1]
		for end > m[0] && strings.ContainsRune(".,;:!?)]}'\"", rune(raw[end-1])) {
			end--
		}
		if whole(raw, m[0], end) {
			q.urls = append(q.urls, mention{start: m[0], end: end})
		}
	}
	for _, m := range pathPattern.FindAllStringSubmatchIndex(raw, -1) {
		end := m[3]
		for end > m[2] && strings.ContainsRune(".,;:!?)]}'\"", rune(raw[end-1])) {
			end--
		}
		if !strings.Contains(raw[m[2]:end], "://") && whole(raw, m[2], end) {
			q.paths = append(q.paths, mention{start: m[2], end: end})
		}
	}
	return q
}

// whole reports that raw[start:end] is not part of a longer word: the
// ASCII patterns of e-mail addresses, URLs and paths stop at a letter
// they do not know ("0@0.0Ԑ" matches "0@0.0"), and a value cut from a
// word is not what the user wrote, which Check (containsPhrase) refuses.
func whole(raw string, start, end int) bool {
	before, _ := utf8.DecodeLastRuneInString(raw[:start])
	after, _ := utf8.DecodeRuneInString(raw[end:])
	return (start == 0 || !isWordRune(before)) && (end == len(raw) || !isWordRune(after))
}

func (q *query) span(m mention) string { return q.raw[m.start:m.end] }

// normalise lowercases s, turns typographic quotes and dashes into ASCII and
// collapses runs of white space into one space.
func normalise(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		switch r {
		case '\u2018', '\u2019', '\u201b', '\u00b4', '`':
			r = '\''
		case '\u201c', '\u201d', '\u201e':
			r = '"'
		case '\u2013', '\u2014', '\u2212':
			r = '-'
		}
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// trimEdges removes punctuation and spaces at both ends of a normalised
// value: "Paris." and "'Paris'" are the user's "Paris".
func trimEdges(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) })
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// containsPhrase reports whether the normalised value occurs in the
// normalised query without splitting a word: "art" is not in "party".
func containsPhrase(normQuery, value string) bool {
	v := trimEdges(normalise(value))
	if v == "" {
		return false
	}
	first, _ := utf8.DecodeRuneInString(v)
	last, _ := utf8.DecodeLastRuneInString(v)
	for from := 0; from <= len(normQuery)-len(v); {
		i := strings.Index(normQuery[from:], v)
		if i < 0 {
			return false
		}
		i += from
		before, _ := utf8.DecodeLastRuneInString(normQuery[:i])
		after, _ := utf8.DecodeRuneInString(normQuery[i+len(v):])
		okBefore := i == 0 || !isWordRune(first) || !isWordRune(before)
		okAfter := i+len(v) == len(normQuery) || !isWordRune(last) || !isWordRune(after)
		if okBefore && okAfter {
			return true
		}
		_, size := utf8.DecodeRuneInString(normQuery[i:])
		from = i + size
	}
	return false
}

func tokenise(s string) []token {
	var ts []token
	start := -1
	for i, r := range s {
		if isWordRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			ts = append(ts, token{strings.ToLower(s[start:i]), start, i})
			start = -1
		}
	}
	if start >= 0 {
		ts = append(ts, token{strings.ToLower(s[start:]), start, len(s)})
	}
	return ts
}

// words splits an argument name or enum value into lowercase words:
// "maxResults", "max_results" and "max-results" all give [max results],
// and "HTTPServer" gives [http server].
func words(s string) []string { return wordsplit.Split(s, wordsplit.CamelAcronym) }

// numberWord returns the value of a number word and whether it multiplies
// (hundred, thousand, ...).
func numberWord(w string) (float64, bool, bool) {
	small := []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
		"eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"}
	for i, s := range small {
		if w == s {
			return float64(i), false, true
		}
	}
	tens := []string{"twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"}
	for i, s := range tens {
		if w == s {
			return float64(20 + 10*i), false, true
		}
	}
	switch w {
	case "hundred":
		return 100, true, true
	case "thousand":
		return 1e3, true, true
	case "million":
		return 1e6, true, true
	case "billion":
		return 1e9, true, true
	case "dozen":
		return 12, true, true
	}
	return 0, false, false
}

// findNumbers returns the numbers written in digits ("1,000", "1.5", "-3",
// "15%") and in words ("twenty five", "two hundred", "a thousand").
func findNumbers(raw string, ts []token) []mention {
	return append(digitNumbers(raw), wordNumbers(ts)...)
}

// digitNumbers returns the numbers written in digits, in order.
func digitNumbers(raw string) []mention {
	var ms []mention
	for _, m := range numberPattern.FindAllStringSubmatchIndex(raw, -1) {
		digits := strings.ReplaceAll(raw[m[4]:m[5]], ",", "")
		f, err := strconv.ParseFloat(digits, 64)
		if err != nil || math.IsInf(f, 0) {
			continue
		}
		start := m[4]
		if m[3] > m[2] {
			f, start = -f, m[2]
		}
		ms = append(ms, mention{num: f, percent: m[7] > m[6], start: start, end: m[5]})
	}
	return ms
}

// wordNumbers returns the numbers written in words among ts, in order.
func wordNumbers(ts []token) []mention {
	var ms []mention
	for i := 0; i < len(ts); {
		v, j, ok := wordNumberAt(ts, i)
		if !ok {
			i++
			continue
		}
		ms = append(ms, mention{num: v, start: ts[i].start, end: ts[j-1].end})
		i = j
	}
	return ms
}

// wordNumberAt reads the number written in words from token i on ("a
// thousand", "two hundred and five") and returns its value and the index
// after its last token; ok is false when token i starts no number.
func wordNumberAt(ts []token, i int) (v float64, next int, ok bool) {
	total, cur, any := 0.0, 0.0, false
	j := i
	if ts[j].low == "a" && j+1 < len(ts) {
		if _, mult, ok := numberWord(ts[j+1].low); ok && mult {
			cur, j = 1, j+1
		}
	}
	for ; j < len(ts); j++ {
		v, mult, ok := numberWord(ts[j].low)
		if !ok {
			if ts[j].low == "and" && any && j+1 < len(ts) {
				if _, _, next := numberWord(ts[j+1].low); next {
					continue
				}
			}
			break
		}
		any = true
		switch {
		case mult && v >= 1000:
			total += max(cur, 1) * v
			cur = 0
		case mult:
			cur = max(cur, 1) * v
		default:
			cur += v
		}
	}
	return total + cur, j, any
}

func monthNumber(w string) int {
	w = strings.ToLower(strings.TrimSuffix(w, "."))
	months := []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
	for i, m := range months {
		if strings.HasPrefix(w, m) && (len(w) == 3 || strings.HasPrefix(fullMonth(i), w)) {
			return i + 1
		}
	}
	if w == "sept" {
		return 9
	}
	return 0
}

func fullMonth(i int) string {
	return strings.ToLower(time.Month(i + 1).String())
}

// findDates returns the calendar dates the query names, in order:
// "2024-03-14" (also with dots or slashes), "3/14/2024" (month first, or
// day first when the month would exceed 12), "March 14, 2024",
// "14 March 2024", "2024 March 14th". A date without a year takes the year
// the query gives elsewhere ("from March 3rd, 2024 to March 9th"), else
// now's year; with neither it is skipped. "today", "tomorrow" and
// "yesterday" count only when now is set; ts are raw's tokens.
func findDates(raw string, ts []token, now time.Time) []mention {
	ms := calendarDates(writtenDates(raw), now)
	if !now.IsZero() {
		ms = append(ms, relativeDates(ts, now)...)
	}
	return longestReadings(ms)
}

// dateParts is a date as written, before it is checked; y is 0 when no
// year is written.
type dateParts struct {
	y, m, d, start, end int
}

// writtenDates returns the dates raw writes in each of the forms
// findDates reads, form by form.
func writtenDates(raw string) []dateParts {
	var fs []dateParts
	group := func(m []int, g int) string {
		if m[2*g] < 0 {
			return ""
		}
		return raw[m[2*g]:m[2*g+1]]
	}
	num := func(m []int, g int) int { n, _ := strconv.Atoi(group(m, g)); return n }
	month := func(m []int, g int) int { return monthNumber(group(m, g)) }
	for _, m := range isoDatePattern.FindAllStringSubmatchIndex(raw, -1) {
		fs = append(fs, dateParts{num(m, 1), num(m, 2), num(m, 3), m[0], m[1]})
	}
	for _, m := range slashDatePattern.FindAllStringSubmatchIndex(raw, -1) {
		a, b := num(m, 1), num(m, 2)
		if a > 12 {
			a, b = b, a
		}
		fs = append(fs, dateParts{num(m, 3), a, b, m[0], m[1]})
	}
	for _, m := range yearMonthDayPattern.FindAllStringSubmatchIndex(raw, -1) {
		fs = append(fs, dateParts{num(m, 1), month(m, 2), num(m, 3), m[0], m[1]})
	}
	for _, m := range monthDayPattern.FindAllStringSubmatchIndex(raw, -1) {
		fs = append(fs, dateParts{num(m, 3), month(m, 1), num(m, 2), m[0], m[1]})
	}
	for _, m := range dayMonthPattern.FindAllStringSubmatchIndex(raw, -1) {
		fs = append(fs, dateParts{num(m, 3), month(m, 2), num(m, 1), m[0], m[1]})
	}
	return fs
}

// calendarDates keeps the dates of fs that exist, a missing year taken
// from the first date that has one, else from now.
func calendarDates(fs []dateParts, now time.Time) []mention {
	year := 0
	for _, f := range fs {
		if f.y > 0 {
			year = f.y
			break
		}
	}
	if year == 0 && !now.IsZero() {
		year = now.Year()
	}
	var ms []mention
	for _, f := range fs {
		if f.y == 0 {
			f.y = year
		}
		t := time.Date(f.y, time.Month(f.m), f.d, 0, 0, 0, 0, time.UTC)
		if f.m < 1 || f.m > 12 || f.d < 1 || t.Day() != f.d || f.y < 1 || f.y > 9999 {
			continue
		}
		ms = append(ms, mention{iso: t.Format(time.DateOnly), start: f.start, end: f.end})
	}
	return ms
}

// relativeDates returns "today", "tomorrow" and "yesterday" among ts as
// dates relative to now.
func relativeDates(ts []token, now time.Time) []mention {
	var ms []mention
	for _, t := range ts {
		var d int
		switch t.low {
		case "today":
		case "tomorrow":
			d = 1
		case "yesterday":
			d = -1
		default:
			continue
		}
		ms = append(ms, mention{iso: now.AddDate(0, 0, d).Format(time.DateOnly), start: t.start, end: t.end})
	}
	return ms
}

// longestReadings orders ms by position, the longest first where several
// start together, and drops each reading that overlaps one kept before it.
func longestReadings(ms []mention) []mention {
	sort.SliceStable(ms, func(i, j int) bool {
		if ms[i].start != ms[j].start {
			return ms[i].start < ms[j].start
		}
		return ms[i].end > ms[j].end
	})
	var out []mention
	for _, m := range ms {
		if len(out) > 0 && m.start < out[len(out)-1].end {
			continue
		}
		out = append(out, m)
	}
	return out
}
