package lexical

import (
	"unicode"
	"unicode/utf8"
)

// token is one word of a text, as ranges of the scratch buffer: raw is the
// case-folded form, stem the stemmed one (equal to raw when the stemmer
// leaves the word alone).
type token struct {
	rawOff, rawEnd   int32
	stemOff, stemEnd int32
	// joined marks the concatenated form of a compound ("getWeather" →
	// "getweather"), emitted after its parts. It is a word feature only:
	// its characters and neighbours are already covered by the parts.
	joined bool
}

// Tokens returns the word tokens of text as the embedder uses them: split
// at anything that is not a letter or digit and inside identifiers
// (camelCase, snake_case, kebab-case, dotted names, each followed by its
// joined form), case-folded, apostrophes dropped and lightly stemmed.
// Function words stay, no stopword list (docs/quality.md, Earlier
// releases). It returns nil for a text without words.
func Tokens(text string) []string {
	var s scratch
	s.tokenize(text)
	var out []string
	for _, t := range s.toks {
		out = append(out, string(s.buf[t.stemOff:t.stemEnd]))
	}
	return out
}

// Rune classes for splitting identifiers at case changes.
const (
	classNone = iota
	classLower
	classUpper
	classDigit
	classOther // letters without case, marks
)

func runeClass(r rune) int {
	if r < utf8.RuneSelf {
		switch {
		case 'a' <= r && r <= 'z':
			return classLower
		case 'A' <= r && r <= 'Z':
			return classUpper
		case '0' <= r && r <= '9':
			return classDigit
		}
		return classNone
	}
	switch {
	case unicode.IsUpper(r) || unicode.IsTitle(r):
		return classUpper
	case unicode.IsLower(r):
		return classLower
	case unicode.IsNumber(r):
		return classDigit
	case unicode.IsLetter(r) || unicode.IsMark(r):
		return classOther
	}
	return classNone
}

// isApostrophe reports the characters dropped inside words, so that
// "what's" and "whats" meet.
func isApostrophe(r rune) bool {
	return r == '\'' || r == '\u2019' || r == '\u2018' || r == '\u02bc' || r == '`' || r == '\u00b4'
}

// isJoiner reports the characters that join the parts of an identifier.
func isJoiner(r rune) bool { return r == '_' || r == '-' || r == '.' }

// decode returns the rune at text[i] and its size; invalid bytes decode as
// utf8.RuneError, which is neither a letter nor a digit.
func decode(text string, i int) (rune, int) {
	if c := text[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(text[i:])
}

// tokenize appends the tokens of text to s.toks.
func (s *scratch) tokenize(text string) {
	for i := 0; i < len(text); {
		r, size := decode(text, i)
		if runeClass(r) == classNone && !isApostrophe(r) {
			i += size
			continue
		}
		i = s.chunk(text, i)
	}
}

// chunk tokenizes the compound starting at text[i] (a maximal run of
// letters, digits, apostrophes and joiners) and returns where it ends.
func (s *scratch) chunk(text string, i int) int {
	first := len(s.toks)
	start := len(s.buf)
	prev := classNone
loop:
	for i < len(text) {
		// Most characters are lower-case ASCII letters, which are copied
		// as they are, a run at a time.
		if c := text[i]; 'a' <= c && c <= 'z' {
			j := i + 1
			for j < len(text) && 'a' <= text[j] && text[j] <= 'z' {
				j++
			}
			s.buf = append(s.buf, text[i:j]...)
			prev = classLower
			i = j
			continue
		}
		r, size := decode(text, i)
		cls := runeClass(r)
		switch {
		case cls != classNone:
			if startsPart(cls, prev, text, i+size) {
				s.endPart(start)
				start = len(s.buf)
			}
			s.buf = appendFolded(s.buf, r)
			prev = cls
		case isApostrophe(r):
			// Dropped without splitting.
		case inNumber(r, prev, text, i+size):
			// Numbers stay whole: "3.5" keeps its point, "1,000" drops the
			// comma.
			if r == '.' {
				s.buf = append(s.buf, '.')
			}
		case isJoiner(r):
			s.endPart(start)
			start = len(s.buf)
			prev = classNone
		default:
			break loop
		}
		i += size
	}
	s.endPart(start)
	s.joinParts(first)
	return i
}

// startsPart reports whether a character of class cls after one of class
// prev starts a new part of a compound, text[next:] following it: a case
// change does ("getWeather", "HTTPServer", "mp3Player"), while runs of
// capitals stay whole ("URL").
func startsPart(cls, prev int, text string, next int) bool {
	return cls == classUpper && (prev == classLower || prev == classDigit ||
		prev == classUpper && nextIsLower(text, next))
}

// inNumber reports whether r, after a character of class prev and before
// text[next:], is a number's point or comma: numbers stay whole.
func inNumber(r rune, prev int, text string, next int) bool {
	return (r == '.' || r == ',') && prev == classDigit && nextIsDigit(text, next)
}

// joinParts appends the joined form of a compound whose parts are the
// tokens from first on, when it has two or more.
func (s *scratch) joinParts(first int) {
	if len(s.toks)-first < 2 {
		return
	}
	off := len(s.buf)
	for k := first; k < len(s.toks); k++ {
		t := s.toks[k]
		s.buf = append(s.buf, s.buf[t.rawOff:t.rawEnd]...)
	}
	s.push(off, true)
}

// endPart closes the part that started at buf[start], if it has any
// characters.
func (s *scratch) endPart(start int) {
	if len(s.buf) > start {
		s.push(start, false)
	}
}

// push records buf[off:] as a token and stems it.
func (s *scratch) push(off int, joined bool) {
	end := len(s.buf)
	w := s.buf[off:end]
	t := token{rawOff: int32(off), rawEnd: int32(end), stemOff: int32(off), stemEnd: int32(end), joined: joined}
	if keep, add, ok := stem(w); ok {
		t.stemOff = int32(len(s.buf))
		s.buf = append(s.buf, s.buf[off:off+keep]...)
		s.buf = append(s.buf, add...)
		t.stemEnd = int32(len(s.buf))
	}
	s.toks = append(s.toks, t)
}

func nextIsLower(text string, i int) bool {
	if i >= len(text) {
		return false
	}
	r, _ := decode(text, i)
	return runeClass(r) == classLower
}

func nextIsDigit(text string, i int) bool {
	if i >= len(text) {
		return false
	}
	r, _ := decode(text, i)
	return runeClass(r) == classDigit
}

// appendFolded appends the lower-case form of r.
func appendFolded(b []byte, r rune) []byte {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		return append(b, byte(r))
	}
	return utf8.AppendRune(b, unicode.ToLower(r))
}

// stem is a light English suffix stemmer for lower-case ASCII words: it
// removes plural and verb endings (-s, -es, -ies, -ed, -ing), undoubles the
// final consonant they leave ("running" → "run"), and drops a final e and
// maps a final consonant-y to i so that "make", "makes", "making" and
// "study", "studies", "studied" meet. The result is a hash key, not a word.
// It returns the prefix of w to keep, a suffix to add, and whether w
// changed.
func stem(w []byte) (keep int, add string, changed bool) {
	n := len(w)
	if n <= 3 || !lowerASCII(w) {
		return n, "", false
	}
	k, add := plural(w)
	if add == "" {
		k, add = finalLetter(w, verbEnding(w, k))
	}
	return k, add, k != n || add != ""
}

// lowerASCII reports whether w is all lower-case ASCII letters.
func lowerASCII(w []byte) bool {
	for _, c := range w {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// plural returns the length of w without its plural ending, and "i" to
// add for -ies.
func plural(w []byte) (int, string) {
	n := len(w)
	switch {
	case hasSuffix(w, "ies") && n > 4:
		return n - 3, "i"
	case hasSuffix(w, "sses"), hasSuffix(w, "xes"), hasSuffix(w, "ches"), hasSuffix(w, "shes"), hasSuffix(w, "zes"):
		return n - 2, ""
	case hasSuffix(w, "ss"), hasSuffix(w, "us"), hasSuffix(w, "is"):
		return n, ""
	case w[n-1] == 's':
		return n - 1, ""
	}
	return n, ""
}

// verbEnding returns the length of w[:k] without -ing or -ed, the final
// consonant they leave undoubled ("running" → "run"; "studied" →
// "studi").
func verbEnding(w []byte, k int) int {
	switch {
	case hasSuffix(w[:k], "ing") && k-3 >= 3 && hasVowel(w[:k-3]):
		return undouble(w, k-3)
	case hasSuffix(w[:k], "ed") && k-2 >= 3 && hasVowel(w[:k-2]):
		if k -= 2; w[k-1] == 'i' {
			return k
		}
		return undouble(w, k)
	}
	return k
}

// finalLetter returns the length of w[:k] without a final e, and a final
// consonant-y dropped with "i" to add.
func finalLetter(w []byte, k int) (int, string) {
	switch {
	case k > 3 && w[k-1] == 'e':
		return k - 1, ""
	case k > 3 && w[k-1] == 'y' && !isVowel(w[k-2]):
		return k - 1, "i"
	}
	return k, ""
}

// undouble drops the second of two equal final consonants left by a
// removed suffix, except l, s and z ("fall", "miss", "buzz").
func undouble(w []byte, k int) int {
	if k >= 3 && w[k-1] == w[k-2] && !isVowel(w[k-1]) {
		switch w[k-1] {
		case 'l', 's', 'z':
			return k
		}
		return k - 1
	}
	return k
}

func hasSuffix(w []byte, suf string) bool {
	return len(w) >= len(suf) && string(w[len(w)-len(suf):]) == suf
}

func isVowel(c byte) bool {
	switch c {
	case 'a', 'e', 'i', 'o', 'u':
		return true
	}
	return false
}

func hasVowel(w []byte) bool {
	for _, c := range w {
		if isVowel(c) || c == 'y' {
			return true
		}
	}
	return false
}
