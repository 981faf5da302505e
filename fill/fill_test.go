package fill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/habilis-router/habilis"
)

// fixedFiller proposes the same arguments for every request, like a model
// that always answers the same thing.
type fixedFiller struct {
	name  string
	args  map[string]any
	err   error
	calls int
}

func (f *fixedFiller) Name() string { return f.name }

func (f *fixedFiller) Fill(ctx context.Context, tool habilis.Tool, query string) (map[string]any, error) {
	f.calls++
	return f.args, f.err
}

const weatherSchema = `{"type":"object","properties":{
	"city":{"type":"string","description":"The city to get the weather for"},
	"days":{"type":"integer","minimum":1,"maximum":7,"description":"Number of days to forecast"},
	"unit":{"type":"string","enum":["celsius","fahrenheit"],"default":"celsius"}
},"required":["city"]}`

func weatherTool() habilis.Tool {
	return habilis.Tool{Name: "get_weather", Description: "Weather forecast for a city", InputSchema: json.RawMessage(weatherSchema)}
}

func TestFillOffline(t *testing.T) {
	tests := []struct {
		query string
		want  *Result
	}{
		{"what's the weather in Paris", &Result{
			Tool: "get_weather", Arguments: map[string]any{"city": "Paris"}, FilledBy: map[string]string{"city": "extractor"},
			Rejected: []Rejection{}, Missing: []MissingArg{}, Problems: []Problem{},
			Defaults: map[string]any{"unit": "celsius"}, Complete: true,
		}},
		{"what's the weather like for 3 days in fahrenheit", &Result{
			Tool: "get_weather", Arguments: map[string]any{"days": 3.0, "unit": "fahrenheit"},
			FilledBy: map[string]string{"days": "extractor", "unit": "extractor"},
			Rejected: []Rejection{},
			Missing: []MissingArg{{Name: "city", Description: "The city to get the weather for",
				Question: "Which city do you want the weather for?"}},
			Problems: []Problem{},
		}},
		{"weather in Paris for 10 days", &Result{
			Tool: "get_weather", Arguments: map[string]any{"city": "Paris", "days": 10.0},
			FilledBy: map[string]string{"city": "extractor", "days": "extractor"},
			Rejected: []Rejection{}, Missing: []MissingArg{},
			Problems: []Problem{{Path: "days", Message: "10 is more than the maximum 7"}},
			Defaults: map[string]any{"unit": "celsius"},
		}},
	}
	for _, tt := range tests {
		got, err := Fill(context.Background(), weatherTool(), tt.query, Options{})
		if err != nil {
			t.Fatalf("Fill(%q): %v", tt.query, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Fill(%q) mismatch (-want +got):\n%s", tt.query, diff)
		}
	}
}

// escalation is what an escalating Fill is judged on.
type escalation struct {
	Arguments  map[string]any
	FilledBy   map[string]string
	Rejected   []Rejection
	Missing    []string
	Errors     []FillerError
	LargeCalls int
	Complete   bool
}

func TestFillEscalation(t *testing.T) {
	tests := []struct {
		name         string
		query        string
		small, large *fixedFiller
		// want.Complete is implied by want.Missing.
		want escalation
	}{
		{
			name:  "small is enough",
			query: "weather in Paris", small: &fixedFiller{name: "small", args: map[string]any{"city": "Paris"}},
			large: &fixedFiller{name: "large", args: map[string]any{"city": "Paris"}},
			want: escalation{Arguments: map[string]any{"city": "Paris"}, FilledBy: map[string]string{"city": "small"},
				Rejected: []Rejection{}, LargeCalls: 0},
		},
		{
			name:  "small invents, large corrects",
			query: "weather in Rome for 2 days", small: &fixedFiller{name: "small", args: map[string]any{"city": "Paris", "days": 2}},
			large: &fixedFiller{name: "large", args: map[string]any{"city": "Rome", "days": 5}},
			want: escalation{Arguments: map[string]any{"city": "Rome", "days": 2.0}, FilledBy: map[string]string{"city": "large", "days": "small"},
				Rejected: []Rejection{{Path: "city", Value: "Paris", Reason: "not found in the request", By: "small"},
					{Path: "days", Value: 5.0, Reason: "the request does not mention this number", By: "large"}},
				LargeCalls: 1},
		},
		{
			name:  "both invent",
			query: "weather in Rome", small: &fixedFiller{name: "small", args: map[string]any{"city": "Paris"}},
			large: &fixedFiller{name: "large", args: map[string]any{"city": "Berlin"}},
			want: escalation{Arguments: map[string]any{}, FilledBy: map[string]string{},
				Rejected: []Rejection{{Path: "city", Value: "Paris", Reason: "not found in the request", By: "small"},
					{Path: "city", Value: "Berlin", Reason: "not found in the request", By: "large"}},
				Missing: []string{"city"}, LargeCalls: 1},
		},
		{
			name:  "small is down",
			query: "weather in Rome", small: &fixedFiller{name: "small", err: fmt.Errorf("connection refused: %w", habilis.ErrUnavailable)},
			large: &fixedFiller{name: "large", args: map[string]any{"city": "Rome"}},
			want: escalation{Arguments: map[string]any{"city": "Rome"}, FilledBy: map[string]string{"city": "large"},
				Rejected: []Rejection{}, LargeCalls: 1,
				Errors: []FillerError{{Filler: "small", Error: "connection refused: unavailable"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Fill(context.Background(), weatherTool(), tt.query,
				Options{Fillers: []Filler{Escalating{Small: tt.small, Large: tt.large}}})
			if err != nil {
				t.Fatal(err)
			}
			got := escalation{Arguments: r.Arguments, FilledBy: r.FilledBy, Rejected: r.Rejected,
				Errors: r.Errors, LargeCalls: tt.large.calls, Complete: r.Complete}
			for _, m := range r.Missing {
				got.Missing = append(got.Missing, m.Name)
			}
			want := tt.want
			want.Complete = len(want.Missing) == 0
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Fill(%q) mismatch (-want +got):\n%s", tt.query, diff)
			}
		})
	}
}

func TestEscalatingAsFiller(t *testing.T) {
	e := Escalating{Small: &fixedFiller{name: "small", args: map[string]any{"city": "Paris"}},
		Large: &fixedFiller{name: "large", args: map[string]any{"city": "Rome"}}}
	if e.Name() != "small>large" {
		t.Errorf("Name() = %q, want small>large", e.Name())
	}
	got, err := e.Fill(context.Background(), weatherTool(), "weather in Rome")
	if err != nil || !cmp.Equal(got, map[string]any{"city": "Rome"}) {
		t.Errorf("Fill(weather in Rome) = %v, %v, want city Rome", got, err)
	}
}

func TestFillErrors(t *testing.T) {
	down := &fixedFiller{name: "down", err: fmt.Errorf("refused: %w", habilis.ErrUnavailable)}
	if _, err := Fill(context.Background(), weatherTool(), "weather in Rome", Options{Fillers: []Filler{down}}); !errors.Is(err, habilis.ErrUnavailable) {
		t.Errorf("Fill(every filler down) error = %v, want ErrUnavailable", err)
	}
	bad := habilis.Tool{Name: "bad", InputSchema: json.RawMessage(`{"type":"nope"}`)}
	if _, err := Fill(context.Background(), bad, "x", Options{}); !errors.Is(err, habilis.ErrInvalid) {
		t.Errorf("Fill(bad schema) error = %v, want ErrInvalid", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Fill(ctx, weatherTool(), "weather in Rome", Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Fill(canceled) error = %v, want context.Canceled", err)
	}
}

func TestResultJSON(t *testing.T) {
	r, err := Fill(context.Background(), weatherTool(), "weather please", Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(r)
	var got map[string]any
	json.Unmarshal(b, &got)
	for _, key := range []string{"tool", "arguments", "filled_by", "rejected", "missing", "problems", "defaults", "complete"} {
		if _, ok := got[key]; !ok {
			t.Errorf("json.Marshal(Result) = %s, want key %q", b, key)
		}
	}
}

func TestQuestion(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   string
	}{
		{"city", `{"description":"The city to get the weather for"}`, "Which city do you want the weather for?"},
		{"city", `{"description":"The city for the forecast."}`, "Which city do you want for the forecast?"},
		{"base", `{"description":"The base of the triangle."}`, "What is the base of the triangle?"},
		{"location", `{"description":"The city and state, e.g. San Francisco, CA"}`, "What is the city and state?"},
		{"name", `{"description":"Name of the recipient (type: string)"}`, "What is the name of the recipient?"},
		{"images", `{"description":"Whether to include images"}`, "Do you want to include images?"},
		{"num_results", `{}`, "What num results should I use?"},
		{"unit", `{"description":"Temperature unit","enum":["celsius","fahrenheit"]}`, `What is the temperature unit? (one of "celsius", "fahrenheit")`},
		{"q", `{"description":"A long free text that explains in many many words what this field is really about"}`,
			"What q should I use (A long free text that explains in many many words what this field is really about)?"},
		{"id", `{"description":"ID of the order"}`, "What is the ID of the order?"},
	}
	for _, tt := range tests {
		if got := Question(tt.name, mustSchema(t, tt.schema)); got != tt.want {
			t.Errorf("Question(%q, %s) = %q, want %q", tt.name, tt.schema, got, tt.want)
		}
	}
}

func TestGiven(t *testing.T) {
	tool := habilis.Tool{Name: "ship", InputSchema: json.RawMessage(`{"type":"object","properties":{
		"to":{"type":"object","properties":{
			"city":{"type":"string"},
			"zip":{"type":"string","description":"The postal code of the address"}},"required":["city","zip"]},
		"weight":{"type":"number","minimum":0},
		"speed":{"type":"string","enum":["normal","express"],"default":"normal"}
	},"required":["to","weight"]}`)}
	r, err := Given(tool, map[string]any{"to": map[string]any{"city": "Oslo"}, "weight": -2.0}, "caller")
	if err != nil {
		t.Fatal(err)
	}
	want := &Result{
		Tool:      "ship",
		Arguments: map[string]any{"to": map[string]any{"city": "Oslo"}, "weight": -2.0},
		FilledBy:  map[string]string{"to": "caller", "weight": "caller"},
		Rejected:  []Rejection{},
		Missing: []MissingArg{{Name: "to.zip", Description: "The postal code of the address",
			Question: Question("zip", &Schema{Description: "The postal code of the address"})}},
		Problems: []Problem{{Path: "weight", Message: "-2 is less than the minimum 0"}},
		Defaults: map[string]any{"speed": "normal"},
	}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("Given (-want +got):\n%s", diff)
	}
	if _, err := Given(habilis.Tool{Name: "bad", InputSchema: json.RawMessage(`{"type":"nope"}`)}, map[string]any{}, "caller"); !errors.Is(err, habilis.ErrInvalid) {
		t.Errorf("Given(bad schema) error = %v, want ErrInvalid", err)
	}
}
