package lexical

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Values. A request names its arguments' values as they are: a web
// address, a path, a file name, an e-mail address, a channel. Their
// characters say little of what the request wants ("/var/log" is not
// about logging, "logo.png" not about logos) while their kind says much: a
// request with a URL in it is one for a tool that takes a URL. So a value
// is read as the word of its kind (url, path, file, email, channel), in
// requests and tool texts alike, which meets the tools that name those
// kinds in their descriptions and arguments. Only values that cannot be
// mistaken are read so: a web address with its scheme, "www." or a common
// domain ending; a path from the root, the home or the working directory,
// or of two separators or more; a name with a well-known file extension;
// an address with one "@"; "#" and a letter. Dotted API names
// ("weather.get"), "and/or" and "owner/repo" stay words. docs/quality.md
// has the measurements.

// Value kinds: the words a value reads as.
const (
	kindURL     = "url"
	kindPath    = "path"
	kindFile    = "file"
	kindEmail   = "email"
	kindChannel = "channel"
)

// topLevelDomains are the endings that make a dotted name a web address
// ("example.com"): the generic domains people type.
var topLevelDomains = wordSet("com org net io dev gov edu ai app co info")

// fileExtensions are well-known file extensions: documents, data, images,
// sound, video, archives, source code and configuration.
var fileExtensions = wordSet(`txt md rst pdf doc docx odt rtf xls xlsx ods ppt pptx csv tsv json jsonl
	yaml yml toml xml ini cfg conf env log sql db sqlite png jpg jpeg gif svg webp bmp ico tif tiff
	mp3 wav flac ogg m4a mp4 mov avi mkv webm zip tar gz tgz bz2 xz 7z rar go py js ts tsx jsx java
	kt c h cc cpp hpp cs rb rs php swift scala sh bash ps1 bat html htm css scss vue ipynb lock mod`)

func wordSet(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// isOpener and isCloser report what may surround a value: brackets,
// quotes and markdown's code and emphasis marks, and after it punctuation.
func isOpener(c byte) bool {
	switch c {
	case '(', '[', '{', '<', '\'', '"', '`', '*':
		return true
	}
	return false
}

func isCloser(c byte) bool {
	switch c {
	case ',', '.', ';', ':', '!', '?', ')', ']', '}', '>', '\'', '"', '`', '*':
		return true
	}
	return false
}

// isMark reports the characters one of which every value holds (a dot,
// "@", "#" or a separator) and most words do not.
func isMark(c byte) bool { return c == '.' || c == '@' || c == '#' || c == '/' || c == '\\' }

// withValues returns text with each value replaced by the word of its
// kind (a path to a file by both), and whether it held any. It looks
// closer only at the fields that hold a mark (isMark), and allocates only
// for a text with a value.
func withValues(text string) (string, bool) {
	var b strings.Builder
	done := 0 // text[:done] is in b
	for start := 0; start < len(text); {
		r, size := utf8.DecodeRuneInString(text[start:])
		if unicode.IsSpace(r) {
			start += size
			continue
		}
		end, marked := fieldEnd(text, start)
		if marked {
			lead, stop := trimField(text, start, end)
			if kinds := fieldKinds(text[lead:stop]); kinds != nil {
				b.WriteString(text[done:lead])
				b.WriteString(strings.Join(kinds, " "))
				done = stop
			}
		}
		start = end
	}
	if done == 0 {
		return text, false
	}
	b.WriteString(text[done:])
	return b.String(), true
}

// fieldEnd returns where the whitespace-separated field that starts at
// text[start] ends, and whether it holds a mark (isMark).
func fieldEnd(text string, start int) (end int, marked bool) {
	for end = start; end < len(text); {
		c := text[end]
		if c < utf8.RuneSelf {
			if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' {
				break
			}
			marked = marked || isMark(c)
			end++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[end:])
		if unicode.IsSpace(r) {
			break
		}
		end += size
	}
	return end, marked
}

// trimField returns the bounds of the field text[start:end] without
// what surrounds a value (isOpener, isCloser).
func trimField(text string, start, end int) (lead, stop int) {
	lead, stop = start, end
	for lead < stop && isOpener(text[lead]) {
		lead++
	}
	for stop > lead && isCloser(text[stop-1]) {
		stop--
	}
	return lead, stop
}

// fieldKinds returns the kinds of the value f, a whitespace-separated
// field without its surrounding punctuation, or nil when it is none.
func fieldKinds(f string) []string {
	if len(f) < 3 || !strings.ContainsFunc(f, unicode.IsLetter) {
		return nil
	}
	lower := strings.ToLower(f)
	switch at := strings.IndexByte(f, '@'); {
	case strings.Contains(f, "://") || strings.HasPrefix(lower, "www."):
		return []string{kindURL}
	case f[0] == '#' && unicode.IsLetter(rune(f[1])):
		return []string{kindChannel}
	case at > 0 && strings.Count(f, "@") == 1 && strings.Contains(f[at:], "."):
		return []string{kindEmail}
	case strings.ContainsAny(f, "/\\"):
		return pathKinds(f)
	}
	switch ext := extension(lower); {
	case topLevelDomains[ext]:
		return []string{kindURL}
	case fileExtensions[ext]:
		return []string{kindFile}
	}
	return nil
}

// pathKinds returns the kinds of f, which holds a separator: a path when
// it starts at the root, the home or the working directory (or a drive),
// has two separators or more, or ends in a file name; a file too when it
// ends in one.
func pathKinds(f string) []string {
	last := f[strings.LastIndexAny(f, "/\\")+1:]
	file := fileExtensions[extension(strings.ToLower(last))]
	rooted := f[0] == '/' || f[0] == '\\' || f[0] == '~' || strings.HasPrefix(f, "./") || strings.HasPrefix(f, "../") ||
		(len(f) > 2 && f[1] == ':' && (f[2] == '\\' || f[2] == '/'))
	switch {
	case file:
		return []string{kindPath, kindFile}
	case rooted || strings.Count(f, "/")+strings.Count(f, "\\") >= 2:
		return []string{kindPath}
	}
	return nil
}

// extension returns what follows the last dot of name, after at least one
// character, or "".
func extension(name string) string {
	if dot := strings.LastIndexByte(name, '.'); dot > 0 {
		return name[dot+1:]
	}
	return ""
}
