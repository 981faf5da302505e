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
