package lexical

import (
	"strings"
	"sync"
)

// conceptText lists the concepts: classes of words that tool catalogs and
// the people who use them say for one operation or one thing, one class a
// line, its words or two-word phrases separated by commas. A word of a
// class, in a query or in a tool's text, adds the class's feature beside
// its own, so that "make a folder" meets create_directory ("Create a new
// directory") through create~make and folder~directory, while the word
// itself still counts for more (its own feature and the class's) than a
// synonym (the class's alone).
//
// The operations are the verbs that start tool names in the development
// catalogs (MetaTool's, BFCL's and the MCP reference servers': get 245,
// calculate 106, search 30, find 26, create 25, list 12, add 8, update 7,
// fetch 7, delete 5, read 5, run 4, send 5), grouped as the create, read,
// update, delete, list and search of APIs, with the everyday words people
// use for them in requests; the things are common computing synonyms and
// abbreviations. Each class keeps apart what routing must tell apart,
// creating from deleting and reading from writing, and no word is in two
// classes. The list is small and general on purpose, never a benchmark's
// phrasing; docs/quality.md has the measurements that chose it.
const conceptText = `
create, add, make, insert, new
get, read, show, display, view, print, fetch, retrieve, see
update, edit, change, modify, alter
delete, remove, erase, drop, forget, discard
list, enumerate, ls
search, find, locate, lookup, seek
run, execute, launch, trigger, invoke
send, post
calculate, compute, calc
sum, plus, total
directory, folder, dir
repository, repo
pull request, pr
image, picture, photo, pic, img
message, msg
document, doc
configuration, config
environment, env
information, info
database, db
application, app
`

// conceptWeight is a concept feature's weight against a word's.
const conceptWeight = 1.0

// concepts maps the hash of a word's stem (hash(stem, nil)) or of a
// phrase's two stems (hash(first, second)) to its class's feature id.
type concepts struct {
	words, pairs map[uint32]uint32
}

// conceptClasses returns conceptText's classes, each a list of words and
// phrases.
func conceptClasses() [][]string {
	var out [][]string
	for _, line := range strings.Split(strings.TrimSpace(conceptText), "\n") {
		var class []string
		for _, e := range strings.Split(line, ",") {
			class = append(class, strings.TrimSpace(e))
		}
		out = append(out, class)
	}
	return out
}

// conceptID is the feature of the class whose first word is first.
func conceptID(first string) uint32 {
	return famConcept<<famShift | hash([]byte{0xfe}, []byte(first))
}

// conceptTable parses conceptText once.
var conceptTable = sync.OnceValue(func() *concepts {
	c := &concepts{words: map[uint32]uint32{}, pairs: map[uint32]uint32{}}
	var s scratch
	for _, entries := range conceptClasses() {
		// A class's feature is the hash of its first word after a byte
		// that no stem holds.
		id := conceptID(entries[0])
		for _, e := range entries {
			s.reset()
			s.tokenize(e)
			var stems [][]byte
			for _, t := range s.toks {
				if !t.joined {
					stems = append(stems, s.buf[t.stemOff:t.stemEnd])
				}
			}
			switch len(stems) {
			case 1:
				c.words[hash(stems[0], nil)] = id
			case 2:
				c.pairs[hash(stems[0], stems[1])] = id
			default:
				panic("lexical: concept " + e + ": want one or two words")
			}
		}
	}
	return c
})
