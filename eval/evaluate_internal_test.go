package eval

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
)

func TestHoldOut(t *testing.T) {
	tools := []habilis.Tool{
		{Name: "a", Examples: []string{"a0", "a1", "a2", "a3", "a4", "a5", "a6"}},
		{Name: "b", Examples: []string{"b0", "b1"}},
		{Name: "c"},
	}
	tests := []struct {
		fold     int
		wantKept map[string][]string
		wantHeld []Query
	}{
		{0, map[string][]string{"a": {"a1", "a2", "a3", "a4", "a6"}, "b": {"b1"}, "c": nil},
			[]Query{{Query: "a0", Expected: []string{"a"}}, {Query: "a5", Expected: []string{"a"}}, {Query: "b0", Expected: []string{"b"}}}},
		{4, map[string][]string{"a": {"a0", "a1", "a2", "a3", "a5", "a6"}, "b": {"b0", "b1"}, "c": nil},
			[]Query{{Query: "a4", Expected: []string{"a"}}}},
	}
	for _, tt := range tests {
		kept, held := holdOut(tools, tt.fold)
		got := map[string][]string{}
		for _, k := range kept {
			got[k.Name] = k.Examples
		}
		if diff := cmp.Diff(tt.wantKept, got); diff != "" {
			t.Errorf("holdOut(fold %d) kept (-want +got):\n%s", tt.fold, diff)
		}
		if diff := cmp.Diff(tt.wantHeld, held); diff != "" {
			t.Errorf("holdOut(fold %d) held (-want +got):\n%s", tt.fold, diff)
		}
	}
	if len(tools[0].Examples) != 7 {
		t.Errorf("holdOut changed its input: %v", tools[0].Examples)
	}
}

func TestMergeReports(t *testing.T) {
	a := &Report{Queries: 4, Mode: habilis.ModeHybrid, K: 5, AccAt1: 1, RecallAtK: 1, MRR: 1, DecisionAccuracy: 1,
		Latency:    Latency{P50: 10, P99: 20},
		PerTool:    []PerTool{{Tool: "x", Queries: 4, AccAt1: 1}},
		Confusions: []Confusion{}}
	b := &Report{Queries: 4, Mode: habilis.ModeHybrid, K: 5, AccAt1: 0.5, RecallAtK: 0.75, MRR: 0.5, DecisionAccuracy: 0.5,
		Latency:    Latency{P50: 30, P99: 50},
		PerTool:    []PerTool{{Tool: "x", Queries: 2, AccAt1: 1}, {Tool: "y", Queries: 2, AccAt1: 0}},
		Confusions: []Confusion{{Expected: "y", Chosen: "x", Count: 2, Queries: []string{"q1", "q2"}}}}
	got := merge([]*Report{a, b}, 2)
	want := &Report{Queries: 8, Tools: 2, Mode: habilis.ModeHybrid, K: 5, AccAt1: 0.75, RecallAtK: 0.875, MRR: 0.75, DecisionAccuracy: 0.75,
		Latency:           Latency{P50: 20, P99: 50},
		PerTool:           []PerTool{{Tool: "y", Queries: 2, AccAt1: 0}, {Tool: "x", Queries: 6, AccAt1: 1}},
		Confusions:        []Confusion{{Expected: "y", Chosen: "x", Count: 2, Queries: []string{"q1", "q2"}}},
		WrongAbstentions:  []Miss{},
		MissedAbstentions: []Miss{}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("merge (-want +got):\n%s", diff)
	}
}

// TestMergeKeepsEveryQuery checks that merged folds keep every misrouted
// query of each fold, as each fold's report does.
func TestMergeKeepsEveryQuery(t *testing.T) {
	fold := func(qs ...string) *Report {
		return &Report{Queries: len(qs), Confusions: []Confusion{{Expected: "y", Chosen: "x", Count: len(qs), Queries: qs}}}
	}
	got := merge([]*Report{fold("q1", "q2", "q3"), fold("q4", "q5")}, 2).Confusions
	want := []Confusion{{Expected: "y", Chosen: "x", Count: 5, Queries: []string{"q1", "q2", "q3", "q4", "q5"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("merge's confusions (-want +got):\n%s", diff)
	}
}
