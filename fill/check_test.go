package fill

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const checkSchema = `{"type":"object","properties":{
	"city":{"type":"string"},
	"email":{"type":"string","format":"email"},
	"date":{"type":"string","format":"date"},
	"count":{"type":"integer"},
	"amount":{"type":"number"},
	"include_images":{"type":"boolean"},
	"unit":{"type":"string","enum":["celsius","fahrenheit"]},
	"status":{"type":"string","enum":["in_progress","done"]},
	"tags":{"type":"array","items":{"type":"string"}},
	"address":{"type":"object","properties":{"street":{"type":"string"},"zip":{"type":"string"}}}
},"required":["city"]}`

func TestCheck(t *testing.T) {
	s := mustSchema(t, checkSchema)
	now := time.Date(2024, 3, 14, 15, 0, 0, 0, time.UTC)
	tests := []struct {
		query    string
		args     string
		now      time.Time
		want     string
		rejected []Rejection
	}{
		{"what's the weather in Paris", `{"city":"Paris"}`, time.Time{}, `{"city":"Paris"}`, nil},
		{"WEATHER IN  new   york?", `{"city":"New York."}`, time.Time{}, `{"city":"New York."}`, nil},
		{"weather in Rome", `{"city":"Paris"}`, time.Time{}, `{}`, []Rejection{{Path: "city", Value: "Paris", Reason: "not found in the request"}}},
		{"a party in Rome", `{"city":"art"}`, time.Time{}, `{}`, []Rejection{{Path: "city", Value: "art", Reason: "not found in the request"}}},
		{"weather in Rome", `{"city":"  "}`, time.Time{}, `{}`, []Rejection{{Path: "city", Value: "  ", Reason: "empty value"}}},
		{"weather in Rome", `{"city":null}`, time.Time{}, `{}`, []Rejection{{Path: "city", Value: nil, Reason: "empty value"}}},
		{"mail alice@example.com", `{"email":"alice@example.com"}`, time.Time{}, `{"email":"alice@example.com"}`, nil},
		{"book for March 5, 2024", `{"date":"2024-03-05"}`, time.Time{}, `{"date":"2024-03-05"}`, nil},
		{"book for 5 March 2024", `{"date":"2024-03-05"}`, time.Time{}, `{"date":"2024-03-05"}`, nil},
		{"book for tomorrow", `{"date":"2024-03-15"}`, now, `{"date":"2024-03-15"}`, nil},
		{"book for tomorrow", `{"date":"2024-03-15"}`, time.Time{}, `{}`, []Rejection{{Path: "date", Value: "2024-03-15", Reason: "not found in the request"}}},
		{"book for March 6, 2024", `{"date":"2024-03-05"}`, time.Time{}, `{}`, []Rejection{{Path: "date", Value: "2024-03-05", Reason: "not found in the request"}}},
		{"show 10 results", `{"count":10}`, time.Time{}, `{"count":10}`, nil},
		{"show ten results", `{"count":10}`, time.Time{}, `{"count":10}`, nil},
		{"show twenty five results", `{"count":25}`, time.Time{}, `{"count":25}`, nil},
		{"transfer 1,000 dollars", `{"amount":1000}`, time.Time{}, `{"amount":1000}`, nil},
		{"transfer 1.5 dollars", `{"amount":"1.5"}`, time.Time{}, `{"amount":1.5}`, nil},
		{"a rate of 15%", `{"amount":0.15}`, time.Time{}, `{"amount":0.15}`, nil},
		{"two hundred and fifty apples", `{"amount":250}`, time.Time{}, `{"amount":250}`, nil},
		{"transfer 100 dollars", `{"amount":1000}`, time.Time{}, `{}`, []Rejection{{Path: "amount", Value: 1000.0, Reason: "the request does not mention this number"}}},
		{"show 12345678901 results", `{"count":12345678901}`, time.Time{}, `{"count":12345678901}`, nil},
		{"show 12345678901 results", `{"count":12345678905}`, time.Time{}, `{}`, []Rejection{{Path: "count", Value: 12345678905.0, Reason: "the request does not mention this number"}}},
		{"card 4111111111111111", `{"count":4111111111111112}`, time.Time{}, `{}`, []Rejection{{Path: "count", Value: 4111111111111112.0, Reason: "the request does not mention this number"}}},
		{"transfer 3 dollars", `{"amount":3.0000000000000004}`, time.Time{}, `{"amount":3.0000000000000004}`, nil}, // a float's rounding
		{"a rate of 0.7%", `{"amount":0.007}`, time.Time{}, `{"amount":0.007}`, nil},
		{"a rate of 33.3%", `{"amount":0.333}`, time.Time{}, `{"amount":0.333}`, nil},
		{"a rate of 33.3%", `{"amount":0.3331}`, time.Time{}, `{}`, []Rejection{{Path: "amount", Value: 0.3331, Reason: "the request does not mention this number"}}},
		{"show 3 results", `{"count":3.5}`, time.Time{}, `{}`, []Rejection{{Path: "count", Value: 3.5, Reason: "want integer, got number"}}},
		{"show images too", `{"include_images":true}`, time.Time{}, `{"include_images":true}`, nil},
		{"do not include images", `{"include_images":false}`, time.Time{}, `{"include_images":false}`, nil},
		{"results without images", `{"include_images":false}`, time.Time{}, `{"include_images":false}`, nil},
		{"show images too", `{"include_images":"True"}`, time.Time{}, `{"include_images":true}`, nil},
		{"no images please", `{"include_images":false}`, time.Time{}, `{"include_images":false}`, nil},
		{"never show any of the images", `{"include_images":false}`, time.Time{}, `{"include_images":false}`, nil},
		{"images turned off", `{"include_images":false}`, time.Time{}, `{"include_images":false}`, nil},
		{"images: no", `{"include_images":false}`, time.Time{}, `{"include_images":false}`, nil},
		{"images: yes", `{"include_images":true}`, time.Time{}, `{"include_images":true}`, nil},
		{"images on", `{"include_images":false}`, time.Time{}, `{}`, []Rejection{{Path: "include_images", Value: false, Reason: "the request says the opposite"}}},
		{"t shirts with images", `{"include_images":true}`, time.Time{}, `{"include_images":true}`, nil},
		{"don't show images", `{"include_images":true}`, time.Time{}, `{}`, []Rejection{{Path: "include_images", Value: true, Reason: "the request says the opposite"}}},
		{"weather in Rome", `{"include_images":true}`, time.Time{}, `{}`, []Rejection{{Path: "include_images", Value: true, Reason: `the request does not mention "images"`}}},
		{"in Fahrenheit please", `{"unit":"fahrenheit"}`, time.Time{}, `{"unit":"fahrenheit"}`, nil},
		{"tasks in progress", `{"status":"in_progress"}`, time.Time{}, `{"status":"in_progress"}`, nil},
		{"weather in Rome", `{"unit":"celsius"}`, time.Time{}, `{}`, []Rejection{{Path: "unit", Value: "celsius", Reason: "the request does not mention it"}}},
		{"in kelvin", `{"unit":"kelvin"}`, time.Time{}, `{}`, []Rejection{{Path: "unit", Value: "kelvin", Reason: `not one of the allowed values ("celsius", "fahrenheit")`}}},
		{"tag it red and blue", `{"tags":["red","green","blue"]}`, time.Time{}, `{"tags":["red","blue"]}`, []Rejection{{Path: "tags[1]", Value: "green", Reason: "not found in the request"}}},
		{"tag it red", `{"tags":"red"}`, time.Time{}, `{"tags":["red"]}`, nil},
		{"ship to 1 Main St", `{"address":{"street":"1 Main St","zip":"75001"}}`, time.Time{}, `{"address":{"street":"1 Main St"}}`, []Rejection{{Path: "address.zip", Value: "75001", Reason: "not found in the request"}}},
		{"weather in Rome", `{"city":"Rome","country":"Italy"}`, time.Time{}, `{"city":"Rome"}`, []Rejection{{Path: "country", Value: "Italy", Reason: "not an argument of this tool"}}},
		{"weather in Rome", `{"city":["Rome"]}`, time.Time{}, `{}`, []Rejection{{Path: "city", Value: []any{"Rome"}, Reason: "want string, got array"}}},
	}
	for _, tt := range tests {
		var args, want map[string]any
		if err := json.Unmarshal([]byte(tt.args), &args); err != nil {
			t.Fatal(err)
		}
		json.Unmarshal([]byte(tt.want), &want)
		got, rejected := Check(s, tt.query, args, CheckOptions{Now: tt.now})
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Check(%q, %s) kept mismatch (-want +got):\n%s", tt.query, tt.args, diff)
		}
		if diff := cmp.Diff(tt.rejected, rejected); diff != "" {
			t.Errorf("Check(%q, %s) rejected mismatch (-want +got):\n%s", tt.query, tt.args, diff)
		}
	}
}

// TestCheckSchemas: what the schema declares decides what is kept, and the
// reason a null or an enum value is refused.
func TestCheckSchemas(t *testing.T) {
	tests := []struct {
		schema, query, args, want string
		rejected                  []Rejection
	}{
		{`{"type":"object"}`, "weather in Lisbon", `{"city":"Lisbon"}`, `{"city":"Lisbon"}`, nil},
		{`{"type":"object","additionalProperties":false}`, "weather in Lisbon", `{"city":"Lisbon"}`, `{}`,
			[]Rejection{{Path: "city", Value: "Lisbon", Reason: "not an argument of this tool"}}},
		{`{"type":"object","properties":{"note":{"type":["string","null"]}}}`, "no note", `{"note":null}`, `{}`,
			[]Rejection{{Path: "note", Value: nil, Reason: "null carries nothing the user said"}}},
		{`{"type":"object","properties":{"note":{}}}`, "no note", `{"note":null}`, `{}`,
			[]Rejection{{Path: "note", Value: nil, Reason: "empty value"}}},
		{`{"type":"object","properties":{"pet":{"type":"string","enum":["dog","cat"]}}}`, "dogs please", `{"pet":"dog"}`, `{"pet":"dog"}`, nil},
		{`{"type":"object","properties":{"sep":{"type":"string","enum":["-","csv"]}}}`, "export it as csv", `{"sep":"-"}`, `{}`,
			[]Rejection{{Path: "sep", Value: "-", Reason: "the request does not mention it"}}},
	}
	for _, tt := range tests {
		var args, want map[string]any
		if err := json.Unmarshal([]byte(tt.args), &args); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
			t.Fatal(err)
		}
		got, rejected := Check(mustSchema(t, tt.schema), tt.query, args, CheckOptions{})
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Check(%s, %q, %s) kept mismatch (-want +got):\n%s", tt.schema, tt.query, tt.args, diff)
		}
		if diff := cmp.Diff(tt.rejected, rejected); diff != "" {
			t.Errorf("Check(%s, %q, %s) rejected mismatch (-want +got):\n%s", tt.schema, tt.query, tt.args, diff)
		}
	}
}
