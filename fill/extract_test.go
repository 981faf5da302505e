package fill

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/habilis-router/habilis"
)

func toolWith(schema string) habilis.Tool {
	return habilis.Tool{Name: "t", Description: "test tool", InputSchema: json.RawMessage(schema)}
}

// extractorTest is one request filled by the Extractor.
type extractorTest struct {
	name   string
	schema string
	query  string
	now    time.Time
	want   string
}

// testExtractor fills each request and compares with want; whatever the
// extractor finds, the extractive check must keep.
func testExtractor(t *testing.T, tests []extractorTest) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &Extractor{Now: tt.now}
			got, err := e.Fill(context.Background(), toolWith(tt.schema), tt.query)
			if err != nil {
				t.Fatal(err)
			}
			var want map[string]any
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Fill(%q) mismatch (-want +got):\n%s", tt.query, diff)
			}
			kept, rejected := Check(mustSchema(t, tt.schema), tt.query, got, CheckOptions{Now: tt.now})
			if len(rejected) > 0 || !cmp.Equal(kept, got) {
				t.Errorf("Check(Fill(%q)) rejected %v", tt.query, rejected)
			}
		})
	}
}

// TestExtractorNames covers strings: places, values after an argument's
// name, people, quotes and capitalised names.
func TestExtractorNames(t *testing.T) {
	testExtractor(t, []extractorTest{
		{"place after in", `{"properties":{"city":{"type":"string"}},"required":["city"]}`,
			"what's the weather in Paris", time.Time{}, `{"city":"Paris"}`},
		{"multi-word place", `{"properties":{"location":{"type":"string","description":"The city and state, e.g. San Francisco, CA"}},"required":["location"]}`,
			"Is it raining in San Francisco, CA right now?", time.Time{}, `{"location":"San Francisco, CA"}`},
		{"lowercase place", `{"properties":{"city":{"type":"string"}},"required":["city"]}`,
			"what's the weather in rome", time.Time{}, `{"city":"rome"}`},
		{"value after name", `{"properties":{"city":{"type":"string"}}}`,
			"forecast for the city Lyon", time.Time{}, `{"city":"Lyon"}`},
		{"origin and destination", `{"properties":{"origin":{"type":"string"},"destination":{"type":"string"}}}`,
			"Flights from Boston to Denver", time.Time{}, `{"origin":"Boston","destination":"Denver"}`},
		{"cast and director", `{"properties":{"directed_by":{"type":"string"},"cast":{"type":"string"}}}`,
			"a movie directed by Jordan Peele featuring Lupita Nyong'o", time.Time{}, `{"directed_by":"Jordan Peele","cast":"Lupita Nyong'o"}`},
		{"quoted", `{"properties":{"title":{"type":"string"}},"required":["title"]}`,
			`find the book "the old man and the sea"`, time.Time{}, `{"title":"the old man and the sea"}`},
		{"capitalised name", `{"properties":{"artist":{"type":"string"}},"required":["artist"]}`,
			"play something by Taylor Swift", time.Time{}, `{"artist":"Taylor Swift"}`},
		{"nested object", `{"properties":{"body":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}}}}}`,
			"weather in Paris for 3 days", time.Time{}, `{"body":{"city":"Paris","days":3}}`},
		{"nothing to find", `{"properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city","days"]}`,
			"what's the weather like", time.Time{}, `{}`},
	})
}

// TestExtractorNumbers covers numbers by name and in order, in digits and
// in words, and lists of numbers.
func TestExtractorNumbers(t *testing.T) {
	testExtractor(t, []extractorTest{
		{"numbers by name", `{"properties":{"base":{"type":"integer"},"height":{"type":"integer"},"unit":{"type":"string"}},"required":["base","height"]}`,
			"Find the area of a triangle with a base of 10 units and height of 5 units.", time.Time{}, `{"base":10,"height":5,"unit":"units"}`},
		{"numbers in order", `{"properties":{"x":{"type":"integer"},"y":{"type":"integer"}},"required":["x","y"]}`,
			"hypotenuse of a right triangle with sides 4 and 5", time.Time{}, `{"x":4,"y":5}`},
		{"letters with equals", `{"properties":{"a":{"type":"integer"},"b":{"type":"integer"},"c":{"type":"integer"}},"required":["a","b","c"]}`,
			"roots of a quadratic with c=2, a=1 and b=-3", time.Time{}, `{"a":1,"b":-3,"c":2}`},
		{"number after", `{"properties":{"years":{"type":"integer"},"principal":{"type":"number"}}}`,
			"invest 2,500.50 dollars principal for 5 years", time.Time{}, `{"years":5,"principal":2500.5}`},
		{"optional number needs its name", `{"properties":{"limit":{"type":"integer"}}}`,
			"top 3 restaurants", time.Time{}, `{}`},
		{"number words", `{"properties":{"count":{"type":"integer"}},"required":["count"]}`,
			"roll twelve dice", time.Time{}, `{"count":12}`},
		{"integer skips fractions", `{"properties":{"n":{"type":"integer"}},"required":["n"]}`,
			"round 2.5 and then 7", time.Time{}, `{"n":7}`},
		{"list of numbers", `{"properties":{"numbers":{"type":"array","items":{"type":"number"}}},"required":["numbers"]}`,
			"sum of 1, 2.5 and 4", time.Time{}, `{"numbers":[1,2.5,4]}`},
		{"list of integers", `{"properties":{"ids":{"type":"array","items":{"type":"integer"}}},"required":["ids"]}`,
			"delete orders 12, 7.5 and 40", time.Time{}, `{"ids":[12,40]}`},
	})
}

// TestExtractorEnumsAndBooleans covers enum values, lists of them and
// booleans named in the request.
func TestExtractorEnumsAndBooleans(t *testing.T) {
	testExtractor(t, []extractorTest{
		{"enum", `{"properties":{"unit":{"type":"string","enum":["celsius","fahrenheit"]}}}`,
			"weather in Oslo in Fahrenheit", time.Time{}, `{"unit":"fahrenheit"}`},
		{"enum words", `{"properties":{"status":{"type":"string","enum":["open","in_progress"]}}}`,
			"tickets that are in progress", time.Time{}, `{"status":"in_progress"}`},
		{"enum array", `{"properties":{"avoid":{"type":"array","items":{"type":"string","enum":["tolls","highways","ferries"]}}}}`,
			"avoid highways and toll roads", time.Time{}, `{"avoid":["tolls","highways"]}`},
		{"boolean", `{"properties":{"include_images":{"type":"boolean"}}}`,
			"search cats with images", time.Time{}, `{"include_images":true}`},
		{"negated boolean", `{"properties":{"include_images":{"type":"boolean"}}}`,
			"search cats but don't include images", time.Time{}, `{"include_images":false}`},
		{"unmentioned boolean", `{"properties":{"include_images":{"type":"boolean"}}}`,
			"search cats", time.Time{}, `{}`},
		// A question whether to do it sets nothing; a condition several
		// words before the request does not hedge it.
		{"hedged boolean", `{"properties":{"include_images":{"type":"boolean"}}}`,
			"tell me whether to include images", time.Time{}, `{}`},
		{"far condition", `{"properties":{"include_images":{"type":"boolean"}}}`,
			"if it rains tomorrow in the city show images", time.Time{}, `{"include_images":true}`},
	})
}

// TestExtractorFormats covers e-mail addresses, URLs and dates.
func TestExtractorFormats(t *testing.T) {
	now := time.Date(2024, 3, 14, 15, 0, 0, 0, time.UTC)
	testExtractor(t, []extractorTest{
		{"email", `{"properties":{"to":{"type":"string","format":"email"},"subject":{"type":"string"}}}`,
			"send a mail to alice@example.com with subject 'Lunch'", time.Time{}, `{"to":"alice@example.com","subject":"Lunch"}`},
		{"url", `{"properties":{"url":{"type":"string"}},"required":["url"]}`,
			"summarise https://example.com/a?b=c.", time.Time{}, `{"url":"https://example.com/a?b=c"}`},
		{"iso date", `{"properties":{"date":{"type":"string","format":"date"}}}`,
			"meetings on March 5th, 2024", time.Time{}, `{"date":"2024-03-05"}`},
		{"date as written", `{"properties":{"date":{"type":"string"}}}`,
			"meetings on 03/05/2024", time.Time{}, `{"date":"03/05/2024"}`},
		{"relative date", `{"properties":{"date":{"type":"string","format":"date"}}}`,
			"meetings tomorrow", now, `{"date":"2024-03-15"}`},
		{"relative date without now", `{"properties":{"date":{"type":"string","format":"date"}}}`,
			"meetings tomorrow", time.Time{}, `{}`},
		{"two dates", `{"properties":{"start_date":{"type":"string","format":"date"},"end_date":{"type":"string","format":"date"}}}`,
			"from 2024-01-02 to 2024-01-09", time.Time{}, `{"start_date":"2024-01-02","end_date":"2024-01-09"}`},
		{"year from the other date", `{"properties":{"start_date":{"type":"string","format":"date"},"end_date":{"type":"string","format":"date"}}}`,
			"rent a car from March 3rd, 2024 to March 9th", time.Time{}, `{"start_date":"2024-03-03","end_date":"2024-03-09"}`},
		{"dotted date in the described layout", `{"properties":{"show_date":{"type":"string","description":"Date in MM/DD/YYYY"}}}`,
			"two tickets on 2023.11.15 please", time.Time{}, `{"show_date":"11/15/2023"}`},
	})
}

// TestExtractorPaths: an argument named for a file or a directory takes
// the path the request names, unquoted (the filesystem MCP server's tools
// take "path"); a URL or a number is no path.
func TestExtractorPaths(t *testing.T) {
	path := `{"properties":{"path":{"type":"string"}},"required":["path"]}`
	testExtractor(t, []extractorTest{
		{"absolute", path, "show me what is in the file /etc/hosts", time.Time{}, `{"path":"/etc/hosts"}`},
		{"after its name", path, "read the file at path /tmp/notes/todo.md.", time.Time{}, `{"path":"/tmp/notes/todo.md"}`},
		{"relative", path, "list the folder ./src/app please", time.Time{}, `{"path":"./src/app"}`},
		{"home", path, "what is in ~/Documents/plan.txt?", time.Time{}, `{"path":"~/Documents/plan.txt"}`},
		{"file name", path, "open notes.txt", time.Time{}, `{"path":"notes.txt"}`},
		{"windows", path, `open C:\Users\me\a.doc`, time.Time{}, `{"path":"C:\\Users\\me\\a.doc"}`},
		{"named directory", `{"properties":{"directory":{"type":"string"}}}`, "make the directory build/out", time.Time{}, `{"directory":"build/out"}`},
		{"a URL is no path", path, "read https://example.com/a.txt", time.Time{}, `{}`},
		{"a number is no path", path, "read 3.14 of it", time.Time{}, `{}`},
	})
}

func TestExtractorBadSchema(t *testing.T) {
	_, err := (&Extractor{}).Fill(context.Background(), toolWith(`{"type":7}`), "x")
	if !errors.Is(err, habilis.ErrInvalid) {
		t.Errorf("Fill(bad schema) error = %v, want ErrInvalid", err)
	}
}
