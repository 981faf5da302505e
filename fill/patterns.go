package fill

import "regexp"

// The package's regular expressions, compiled once. A compiled Regexp is
// immutable and safe for concurrent use, so these are constants in all but
// name.
const monthPattern = `(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?`

var (
	numberPattern = regexp.MustCompile(`(?:^|[^\w.])(-?)((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(%?)`)
	emailPattern  = regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)+`)
	urlPattern    = regexp.MustCompile(`(?i)\b(?:https?|ftp)://[^\s<>"']+|\bwww\.[^\s<>"']+`)
	// pathPattern is a file path: with a directory separator (/etc/hosts,
	// ./notes/todo.md, ~/a, C:\x) or a file name with an extension of
	// letters (notes.txt).
	pathPattern         = regexp.MustCompile(`(?:^|[\s("'])((?:~|\.{1,2})?/[^\s<>"'()]+|[A-Za-z]:\\[^\s<>"']+|[\w\-]+(?:/[\w.\-]+)+|[\w\-]+\.[A-Za-z][A-Za-z0-9]{0,4})(?:[\s)"',;:!?]|\.(?:\s|$)|$)`)
	isoDatePattern      = regexp.MustCompile(`\b(\d{4})[-./](\d{1,2})[-./](\d{1,2})\b`)
	yearMonthDayPattern = regexp.MustCompile(`(?i)\b(\d{4}),?\s+` + monthPattern + `\s*(\d{1,2})(?:st|nd|rd|th)?\b`)
	slashDatePattern    = regexp.MustCompile(`\b(\d{1,2})/(\d{1,2})/(\d{4})\b`)
	monthDayPattern     = regexp.MustCompile(`(?i)\b` + monthPattern + `\s*(\d{1,2})(?:st|nd|rd|th)?(?:,?\s*(\d{4}))?\b`)
	dayMonthPattern     = regexp.MustCompile(`(?i)\b(\d{1,2})(?:st|nd|rd|th)?(?:\s+of)?\s+` + monthPattern + `(?:,?\s+(\d{4}))?\b`)
	quotePattern        = regexp.MustCompile(`"([^"]+)"|\x{201c}([^\x{201d}]+)\x{201d}|(?:^|[^\w])'([^']+)'(?:[^\w]|$)|\x{2018}([^\x{2019}]+)\x{2019}`)
	joinPattern         = regexp.MustCompile(`^\s*(=|:|is|of|equals?|as)?\s*$`)
	examplePairPattern  = regexp.MustCompile(`e\.g\.,? [^,]+, \w`)
	whichPattern        = regexp.MustCompile(`^(?:the|a|an) ([\w'-]+(?: [\w'-]+){0,2}?) (to|for) (.+)$`)
	articlePattern      = regexp.MustCompile(`^(?:the|a|an) (.+)$`)
)
