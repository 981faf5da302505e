package fill

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestScore(t *testing.T) {
	s := mustSchema(t, `{"properties":{"base":{"type":"integer"},"height":{"type":"integer"},"unit":{"type":"string"},
		"avoid":{"type":"array","items":{"type":"string","enum":["tolls","highways"]}},
		"body":{"type":"object","properties":{"mode":{"type":"string"},"temp":{"type":"integer"}}}}}`)
	query := "area of a triangle with base 10 units and height 5, avoid highways and tolls, mode COOL"
	gold := `{"base":[10],"height":[5],"unit":["units",""],"avoid":[["highways","tolls"]],
		"body":[{"mode":["COOL"],"temp":["",24]}]}`
	tests := []struct {
		name string
		got  string
		want ScoreRow
	}{
		{"empty", `{}`, ScoreRow{Gold: 4}},
		{"exact", `{"base":10,"height":5,"avoid":["highways","tolls"],"body":{"mode":"cool"}}`,
			ScoreRow{Exact: true, Gold: 4, Predicted: 4, Correct: 4, Recalled: 4}},
		{"optional too", `{"base":10,"height":5,"unit":"Units","avoid":["highways","tolls"],"body":{"mode":"COOL"}}`,
			ScoreRow{Exact: true, Gold: 4, Predicted: 5, Correct: 5, Recalled: 4}},
		{"wrong and invented", `{"base":5,"height":7,"avoid":["tolls","highways"]}`,
			ScoreRow{Gold: 4, Predicted: 3, Correct: 0, Recalled: 0, Invented: 1}},
		{"unknown argument", `{"base":10,"height":5,"avoid":["highways","tolls"],"body":{"mode":"COOL"},"extra":"area"}`,
			ScoreRow{Gold: 4, Predicted: 5, Correct: 4, Recalled: 4}},
		{"numbers as strings", `{"base":"10","height":5.0,"avoid":["highways","tolls"],"body":{"mode":"COOL","temp":3}}`,
			ScoreRow{Gold: 4, Predicted: 4, Correct: 3, Recalled: 3, Invented: 1}},
	}
	var acc Acceptable
	if err := json.Unmarshal([]byte(gold), &acc); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		var got map[string]any
		if err := json.Unmarshal([]byte(tt.got), &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, Score(acc, got, query, s)); diff != "" {
			t.Errorf("Score(%s) %s mismatch (-want +got):\n%s", tt.got, tt.name, diff)
		}
	}
}

func TestScoreTotals(t *testing.T) {
	var tot ScoreTotals
	tot.Add(ScoreRow{Exact: true, Gold: 2, Predicted: 2, Correct: 2, Recalled: 2})
	tot.Add(ScoreRow{Gold: 2, Predicted: 2, Correct: 1, Recalled: 1, Invented: 1})
	got := []float64{tot.ExactRate(), tot.Precision(), tot.Recall(), tot.InventedRate()}
	want := []float64{0.5, 0.75, 0.75, 0.25}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ScoreTotals rates mismatch (-want +got):\n%s", diff)
	}
	if (ScoreTotals{}).Precision() != 0 {
		t.Errorf("ScoreTotals{}.Precision() = %v, want 0", (ScoreTotals{}).Precision())
	}
}

// TestAcceptable checks how one gold value is compared with one filled
// value, as eval --fill scores BFCL rows: strings by BFCL's standard form
// (case, spaces and ",./-_*^" ignored, ' read as "), numbers by value
// whatever their Go type or whether one side is a string, booleans
// exactly, lists item by item in order, objects member by member with
// BFCL's alternatives and "" for an optional member.
func TestAcceptable(t *testing.T) {
	for _, tt := range []struct {
		want, got any
		ok        bool
	}{
		{"New York", "new york", true},
		{"New York, NY", "NewYork NY.", true},
		{"2024-03-05", "2024/03/05", true},
		{"it's", `it"s`, true},
		{"New York", "New Jersey", false},
		{"10", 10.0, true},
		{"10.5", float32(10.5), true},
		{"ten", 10, false},
		{10.0, 10, true},
		{10.0, int64(10), true},
		{10.0, uint(10), true},
		{10.0, json.Number("10.0"), true},
		{10.0, "10", true},
		{0.1, 0.1 + 1e-12, true},
		{10.0, 10.5, false},
		{10.0, "ten", false},
		{10.0, true, false},
		{true, true, true},
		{true, "true", false},
		{[]any{"a", "b"}, []any{"A", "b"}, true},
		{[]any{"a", "b"}, []any{"b", "a"}, false},
		{[]any{"a", "b"}, []any{"a"}, false},
		{[]any{"a"}, "a", false},
		{map[string]any{"mode": []any{"cool", "cold"}, "temp": []any{"", 24.0}}, map[string]any{"mode": "COLD"}, true},
		{map[string]any{"mode": []any{"cool"}, "temp": []any{"", 24.0}}, map[string]any{"mode": "cool", "temp": 25.0}, false},
		{map[string]any{"mode": []any{"cool"}}, map[string]any{}, false},
		{map[string]any{"mode": []any{"cool"}}, map[string]any{"mode": "cool", "fan": "high"}, false},
		{map[string]any{"mode": "cool"}, map[string]any{"mode": "Cool"}, true},
		{map[string]any{"mode": "cool"}, "cool", false},
		{nil, nil, false},
	} {
		if got := acceptable(tt.want, tt.got); got != tt.ok {
			t.Errorf("acceptable(%#v, %#v) = %v, want %v", tt.want, tt.got, got, tt.ok)
		}
	}
}
