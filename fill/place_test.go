package fill

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
)

const (
	citySchema     = `{"properties":{"city":{"type":"string"}},"required":["city"]}`
	locationSchema = `{"properties":{"location":{"type":"string","description":"Where to look"}},"required":["location"]}`
	flightSchema   = `{"properties":{"origin":{"type":"string"},"destination":{"type":"string"},"date":{"type":"string","format":"date"}},"required":["origin","destination"]}`
	directedSchema = `{"properties":{"from":{"type":"string","description":"Departure city"},"to":{"type":"string","description":"Arrival city"}},"required":["from","to"]}`
	reminderSchema = `{"properties":{"text":{"type":"string"},"location":{"type":"string"}},"required":["text"]}`
	unitSchema     = `{"properties":{"value":{"type":"number"},"to_unit":{"type":"string"}},"required":["value","to_unit"]}`
)

// TestLowercasePlaces checks the places written in lower case that a
// locative phrase introduces, for arguments that are places.
func TestLowercasePlaces(t *testing.T) {
	now := time.Date(2024, 3, 14, 0, 0, 0, 0, time.UTC)
	testExtractor(t, []extractorTest{
		{"in", citySchema, "weather in porto", time.Time{}, `{"city":"porto"}`},
		{"ends at a time", citySchema, "will it rain in porto tomorrow?", time.Time{}, `{"city":"porto"}`},
		{"ends at punctuation", citySchema, "weather in porto, please", time.Time{}, `{"city":"porto"}`},
		{"ends at a stop word", citySchema, "what's it like in lisbon and porto", time.Time{}, `{"city":"lisbon"}`},
		{"multi-word", citySchema, "weather in new york right now", time.Time{}, `{"city":"new york"}`},
		{"three words", citySchema, "is it sunny in rio de janeiro today", time.Time{}, `{"city":"rio de janeiro"}`},
		{"hyphenated", citySchema, "weather in winston-salem", time.Time{}, `{"city":"winston-salem"}`},
		{"accented", citySchema, "weather in são paulo", time.Time{}, `{"city":"são paulo"}`},
		{"for", citySchema, "forecast for oslo", time.Time{}, `{"city":"oslo"}`},
		{"at", locationSchema, "any concerts at wembley tonight", time.Time{}, `{"location":"wembley"}`},
		{"capitalised wins", citySchema, "weather in porto or in Lisbon", time.Time{}, `{"city":"Lisbon"}`},
		{"from and to", flightSchema, "flights from oslo to lisbon tomorrow", now,
			`{"origin":"oslo","destination":"lisbon","date":"2024-03-15"}`},
		{"to after a verb", flightSchema, "I want to fly from berlin to go to rome", time.Time{},
			`{"origin":"berlin","destination":"rome"}`},
		{"by the description", directedSchema, "a train from porto to faro", time.Time{}, `{"from":"porto","to":"faro"}`},
		{"ends before a verb in -ing", citySchema, "how is the weather in porto looking", time.Time{}, `{"city":"porto"}`},
		{"not a verb in -ing", locationSchema, "I'm interested in going to a movie in mountain view", time.Time{}, `{"location":"mountain view"}`},
		{"not an infinitive", flightSchema, "I need to get from oslo to bergen", time.Time{}, `{"origin":"oslo","destination":"bergen"}`},
		{"a capitalised place first", locationSchema, "a trip to Paris, interested in museums", time.Time{}, `{"location":"Paris"}`},
	})
}

// TestLowercaseNotPlaces lists requests in which no place is written:
// words after "in", "at", "for", "to" that are times, amounts, languages,
// units, set phrases, what is sought or the tool's own topic are not
// taken for one.
func TestLowercaseNotPlaces(t *testing.T) {
	testExtractor(t, []extractorTest{
		{"in an hour", reminderSchema, "remind me in an hour", time.Time{}, `{}`},
		{"in minutes", reminderSchema, "remind me in 5 minutes", time.Time{}, `{}`},
		{"in number words", reminderSchema, "remind me in ten minutes", time.Time{}, `{}`},
		{"in the morning", citySchema, "call mom in the morning", time.Time{}, `{}`},
		{"for tomorrow", citySchema, "book a table for tomorrow", time.Time{}, `{}`},
		{"for two", citySchema, "book a table for two at noon", time.Time{}, `{}`},
		{"for cheap flights", locationSchema, "search for cheap flights", time.Time{}, `{}`},
		{"in french", citySchema, "say it in french", time.Time{}, `{}`},
		{"in celsius", citySchema, "give me the temperature in celsius", time.Time{}, `{}`},
		{"for example", citySchema, "for example, the weather", time.Time{}, `{}`},
		{"at least", citySchema, "at least tell me the weather", time.Time{}, `{}`},
		{"in march", citySchema, "what was the weather in march", time.Time{}, `{}`},
		{"at a number", citySchema, "wake me at 7", time.Time{}, `{}`},
		{"to a verb", citySchema, "I need to know the weather", time.Time{}, `{}`},
		{"in a date", citySchema, "weather in 2024-03-05", time.Time{}, `{}`},
		{"a direction that is no place", unitSchema, "convert 5 to kilometers", time.Time{}, `{"value":5}`},
		{"not a place argument", `{"properties":{"query":{"type":"string"}},"required":["query"]}`,
			"weather in porto", time.Time{}, `{}`},
		{"a place among other things", `{"properties":{"q":{"type":"string","description":"Search terms, such as a place or a dish"}},"required":["q"]}`,
			"search for sushi in porto", time.Time{}, `{}`},
	})
}

// TestLowercasePlaceTopic checks that the tool's own words (its name,
// its description) are what a request is about, not where.
func TestLowercasePlaceTopic(t *testing.T) {
	tool := habilis.Tool{Name: "search_hotels", Description: "Search hotels by city",
		InputSchema: json.RawMessage(`{"properties":{"city":{"type":"string"}},"required":["city"]}`)}
	for query, want := range map[string]map[string]any{
		"search for hotels":             {},
		"look for a hotel in porto":     {"city": "porto"},
		"search for hotels in lisbon":   {"city": "lisbon"},
		"search for hotel rooms please": {},
	} {
		got, err := (&Extractor{}).Fill(context.Background(), tool, query)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Fill(%q) mismatch (-want +got):\n%s", query, diff)
		}
	}
}
