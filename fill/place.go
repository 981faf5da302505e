package fill

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// Places the user did not capitalise ("weather in porto", "flights from
// oslo to lisbon") are taken only for an argument that is a place by its
// name or description, and only from a locative phrase: the words right
// after "in", "at", "near", "for", "from" or "to", up to a stop word, a
// word of time or number, punctuation or the end. Without capitals
// nothing tells a place from any other word, so the words that follow
// these prepositions in requests that name no place ("in an hour", "for
// tomorrow", "for cheap flights", "in french", "to book a flight") end or
// refuse the phrase, and so do the words of the tool's own name and
// description, the object a request is about ("search for hotels").

// maxPlaceWords bounds a place written in lower case: "rio de janeiro",
// "santa cruz de tenerife".
const maxPlaceWords = 4

// lowerPlacePrepositions are the prepositions that introduce a place
// written in lower case; "of" and "around" ("around five") say too little.
var lowerPlacePrepositions = []string{"in", "at", "near", "for", "from", "to"}

// isPlaceArg reports an argument that holds a place, by its name ("city",
// "destination") or, for one named for a direction or nothing in
// particular ("to", "q"), by the first words of its description, which
// say what it is ("Departure city", "The city and state"), where later
// ones may name a place among other things ("Search terms, such as a
// place or a dish").
func isPlaceArg(a *arg) bool {
	if slices.ContainsFunc(words(a.name), isPlaceNoun) {
		return true
	}
	desc := words(a.s.Description)
	return slices.ContainsFunc(desc[:min(len(desc), 4)], func(w string) bool {
		return isPlaceNoun(w) || w == "airport" || w == "airports"
	})
}

func isPlaceNoun(w string) bool {
	switch w {
	case "city", "cities", "town", "village", "location", "locations", "place", "places", "destination",
		"origin", "country", "region", "venue", "loc", "province", "county", "neighborhood", "neighbourhood",
		"locality", "municipality":
		return true
	}
	return false
}

// lowercasePlace returns the first place written in lower case that one
// of preps introduces, and its tokens, or "". An argument for no direction
// (preps holds neither "from" nor "to") yields to a capitalised name that
// any locative preposition introduces ("a trip to Paris ... interested in
// museums"), which later phases take.
func (x *extraction) lowercasePlace(preps []string) (string, []int) {
	if !slices.Contains(preps, "from") && !slices.Contains(preps, "to") && x.capitalisedPlace() {
		return "", nil
	}
	for _, p := range preps {
		if !slices.Contains(lowerPlacePrepositions, p) {
			continue
		}
		for i, t := range x.q.tokens {
			if t.low != p || i+1 >= len(x.q.tokens) || x.breaks(i, i+1) || x.infinitive(i) {
				continue
			}
			if idx := x.placeRun(i + 1); idx != nil {
				ts := x.q.tokens
				return x.q.raw[ts[idx[0]].start:ts[idx[len(idx)-1]].end], idx
			}
		}
	}
	return "", nil
}

// capitalisedPlace reports a free capitalised name right after one of
// lowerPlacePrepositions.
func (x *extraction) capitalisedPlace() bool {
	for i, t := range x.q.tokens[:max(0, len(x.q.tokens)-1)] {
		if slices.Contains(lowerPlacePrepositions, t.low) && !x.used[i+1] && x.capitalisedToken(i+1) && !isStopword(x.q.tokens[i+1].low) {
			return true
		}
	}
	return false
}

// infinitive reports a "to" at token i that a verb follows by what comes
// before it: "need to", "want to", "how to".
func (x *extraction) infinitive(i int) bool {
	if x.q.tokens[i].low != "to" || i == 0 {
		return false
	}
	switch x.q.tokens[i-1].low {
	case "need", "needs", "want", "wants", "wanted", "have", "has", "had", "going", "trying", "try", "able",
		"like", "love", "would", "how", "what", "where", "when", "plan", "planning", "plans", "hope", "wish",
		"ought", "used", "about", "supposed", "got", "gotta", "decided", "helps", "help":
		return true
	}
	return false
}

// placeRun returns the tokens of the place starting at token i, or nil:
// words joined by spaces or hyphens, each one a place may hold, none of
// them the tool's own.
func (x *extraction) placeRun(i int) []int {
	var idx []int
	for j := i; j < len(x.q.tokens) && len(idx) < maxPlaceWords; j++ {
		if j > i && !x.placeJoins(j-1) || !x.placeWord(j) {
			break
		}
		idx = append(idx, j)
	}
	for _, j := range idx {
		if x.topic[x.q.tokens[j].low] {
			return nil
		}
	}
	return idx
}

// placeJoins reports whether only spaces or a hyphen stand between tokens
// j and j+1 ("winston-salem").
func (x *extraction) placeJoins(j int) bool {
	between := strings.TrimSpace(x.q.raw[x.q.tokens[j].end:x.q.tokens[j+1].start])
	return between == "" || between == "-"
}

// placeWord reports whether token j may be part of a place: a free word
// of letters that is no stop word, time, number or word of the lists
// below, and does not end in "ing" ("interested in visiting museums", "in
// porto looking for"; "beijing" is lost with them).
func (x *extraction) placeWord(j int) bool {
	w := x.q.tokens[j].low
	switch {
	case x.used[j], !isAlpha(w), utf8.RuneCountInString(w) < 2, isStopword(w), x.isNumberToken(j), x.inDate(j),
		strings.HasSuffix(w, "ing"):
		return false
	}
	if _, _, ok := numberWord(w); ok || monthNumber(w) != 0 {
		return false
	}
	return !notPlaceWord(w)
}

// inDate reports whether token j is part of a date the request mentions.
func (x *extraction) inDate(j int) bool {
	t := x.q.tokens[j]
	return slices.ContainsFunc(x.q.dates, func(m mention) bool { return t.start >= m.start && t.end <= m.end })
}

// notPlaceWord reports the words that follow a locative preposition in requests
// that name no place: times ("in the morning", "for tomorrow"), amounts
// ("in a few", "for half"), pronouns, languages and units ("in french",
// "in celsius"), set phrases ("in total", "for example", "at least"),
// adjectives before what is sought ("for cheap flights") and verbs after
// "to" ("to book", "to go").
func notPlaceWord(w string) bool {
	switch w {
	// Times.
	case "today", "tonight", "tomorrow", "yesterday", "now", "later", "soon", "morning", "afternoon",
		"evening", "night", "noon", "midnight", "weekend", "weekends", "week", "weeks", "month",
		"months", "year", "years", "day", "days", "hour", "hours", "minute", "minutes", "min", "mins",
		"second", "seconds", "sec", "secs", "monday", "tuesday", "wednesday", "thursday", "friday",
		"saturday", "sunday", "am", "pm", "next", "last", "every", "each", "early", "late", "right",
		"moment", "while", "time", "times", "once", "twice", "ago", "dinner", "lunch", "breakfast",
		"brunch", "christmas", "summer", "winter", "spring", "autumn", "fall":
		return true
	// Amounts and pronouns.
	case "few", "couple", "half", "several", "single", "lot", "lots", "more", "less", "least", "most",
		"much", "many", "both", "another", "these", "those", "here", "him", "them", "he", "she",
		"they", "everyone", "someone", "anyone", "nobody", "everybody", "somebody", "something",
		"anything", "everything", "nothing", "mine", "yours", "myself", "yourself", "one", "ones":
		return true
	// Languages and units.
	case "english", "french", "spanish", "german", "italian", "portuguese", "chinese", "japanese",
		"korean", "russian", "arabic", "dutch", "hindi", "celsius", "fahrenheit", "kelvin", "metric",
		"imperial", "km", "miles", "meters", "metres", "feet", "dollars", "euros", "usd", "eur",
		"percent", "bulk", "cash":
		return true
	// Set phrases.
	case "total", "general", "detail", "details", "order", "case", "advance", "fact", "addition",
		"particular", "short", "full", "example", "instance", "free", "sure", "good", "real", "sale",
		"rent", "help", "information", "info", "work", "home", "school", "bed", "line", "mind",
		"person", "public", "private", "charge", "front", "back", "top", "bottom", "side", "end",
		"start", "beginning", "middle":
		return true
	// Adjectives before what is sought.
	case "cheap", "cheaper", "cheapest", "best", "better", "popular", "nearby", "local",
		"great", "similar", "recent", "latest", "old", "big", "small", "fast", "quick", "easy",
		"simple", "healthy", "vegan", "vegetarian", "kids", "family":
		return true
	// Verbs after "to".
	case "go", "fly", "travel", "drive", "walk", "get", "book", "buy", "see", "visit", "know", "find",
		"make", "take", "have", "be", "do", "check", "leave", "move", "return", "stay", "eat", "meet",
		"send", "call", "pay", "play", "watch", "read", "write", "learn", "cook", "reserve", "search", "catch",
		"look", "set", "add", "remove", "change", "convert", "translate", "show", "tell", "give",
		"keep", "open":
		return true
	}
	return false
}

// topicWords are the words of the tool's name and description: what a
// request is about rather than where ("find hotels" for search_hotels).
func topicWords(name, description string) map[string]bool {
	m := map[string]bool{}
	for _, w := range append(words(name), words(description)...) {
		if len(w) > 2 && !isStopword(w) {
			m[w] = true
			m[strings.TrimSuffix(w, "s")] = true
			m[w+"s"] = true
		}
	}
	return m
}
