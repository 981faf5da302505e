package selector_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/selector"
)

// collisionKeys and leakKeys are the JSON keys of a collision and of one
// of its leaks, as `habilis collisions --json` and the HTTP API write
// them: checks outside the repository read them, so they are extended,
// never renamed.
var (
	collisionKeys = []string{"a", "b", "centroid_similarity", "overlap", "leaks", "misroutes_a_to_b", "misroutes_b_to_a",
		"misroute_rate", "severity", "nearest_a_to_b", "nearest_b_to_a"}
	leakKeys = []string{"from", "into", "example", "score", "own_score", "ranks_first", "passes_gate"}
)

// jsonKeys returns the sorted keys of v written as a JSON object.
func jsonKeys(t *testing.T, v any) []string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// collisionProblem returns what c breaks of a collision's contract in a
// catalog whose tools have the given examples, or "".
func collisionProblem(c habilis.Collision, examples map[string][]string) string {
	exA, okA := examples[c.A]
	exB, okB := examples[c.B]
	switch {
	case !okA || !okB || c.A == c.B:
		return "names no pair of the catalog's tools"
	case c.Severity.Rank() == 0:
		return fmt.Sprintf("severity %q", c.Severity)
	case c.MisroutesAB > len(exA) || c.MisroutesBA > len(exB) || c.NearestAB > len(exA) || c.NearestBA > len(exB):
		return "counts more misroutes or nearest examples than the tools have examples"
	case c.MisrouteRate < 0 || c.MisrouteRate > 1:
		return fmt.Sprintf("misroute rate %v", c.MisrouteRate)
	case c.Leaks == nil:
		return "leaks null rather than a list"
	}
	for _, l := range c.Leaks {
		ok := (l.From == c.A && l.Into == c.B) || (l.From == c.B && l.Into == c.A)
		if !ok || !slices.Contains(examples[l.From], l.Example) {
			return fmt.Sprintf("leak %+v is not an example of one of the pair leaking into the other", l)
		}
	}
	return ""
}

// TestCollisionsReport checks the collisions the router reports on the
// test catalog, and on a catalog whose tool without examples takes one
// tool's requests: their JSON keys; each a pair of its tools, once, worst
// first, with counts its tools' examples bound and leaks that are their
// examples; and the high ones exactly the tools each tool's gate info
// says it collides with, which decisions call ambiguous.
func TestCollisionsReport(t *testing.T) {
	t.Run("examples", func(t *testing.T) {
		r, _ := loaded(t)
		checkCollisionsReport(t, r)
	})
	t.Run("mixed", func(t *testing.T) {
		r, _ := open(t)
		if _, err := r.Load(t.Context(), mixedCatalog(), selector.LoadOptions{}); err != nil {
			t.Fatal(err)
		}
		high := checkCollisionsReport(t, r)
		if !slices.Contains(high["get_weather"], "weather_forecast") {
			t.Errorf("high collisions %v: want get_weather, which has no examples, with weather_forecast, whose requests its description takes", high)
		}
	})
}

// mixedCatalog is a catalog of tools with examples and one without
// (get_weather), whose description reads as weather_forecast's requests:
// they are a high collision made by examples routed to a tool without
// any.
func mixedCatalog() []habilis.Tool {
	return []habilis.Tool{
		{Name: "weather_forecast", Description: "Forecast for the coming days.", Examples: []string{
			"weather forecast for Paris tomorrow", "will it rain in Oslo tomorrow", "weather forecast for Rome this weekend",
			"is it going to snow in Bern tomorrow", "weather in Lisbon tomorrow", "forecast for Madrid on Sunday"}},
		{Name: "get_weather", Description: "Weather forecast for a city: rain, snow and temperature tomorrow and this weekend."},
		{Name: "send_email", Description: "Send an email.", Examples: []string{
			"email Bob the report", "send a mail to my boss", "write an email to Anna saying hi",
			"send an email to the team", "mail the invoice to Carl", "email my landlord about the rent"}},
		{Name: "play_music", Description: "Play a song.", Examples: []string{
			"play some jazz", "put on Bohemian Rhapsody", "play my running playlist",
			"play music by Adele", "start the chill playlist", "play a song by Queen"}},
	}
}

// checkCollisionsReport checks r's collisions as TestCollisionsReport
// says and returns the high ones by tool.
func checkCollisionsReport(t *testing.T, r *selector.Router) map[string][]string {
	t.Helper()
	cols, err := r.Collisions(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	examples := map[string][]string{}
	for _, tool := range r.Tools() {
		examples[tool.Name] = tool.Examples
	}
	leaked := false
	pairs := map[[2]string]bool{}
	high := map[string][]string{}
	for i, c := range cols {
		if diff := cmp.Diff(sortedCopy(collisionKeys), jsonKeys(t, c)); diff != "" {
			t.Errorf("collision %s/%s JSON keys (-want +got):\n%s", c.A, c.B, diff)
		}
		for _, l := range c.Leaks {
			leaked = true
			if diff := cmp.Diff(sortedCopy(leakKeys), jsonKeys(t, l)); diff != "" {
				t.Errorf("leak %s->%s JSON keys (-want +got):\n%s", l.From, l.Into, diff)
			}
		}
		if p := collisionProblem(c, examples); p != "" {
			t.Errorf("collision %+v: %s", c, p)
		}
		key := [2]string{min(c.A, c.B), max(c.A, c.B)}
		if pairs[key] {
			t.Errorf("collision %s/%s reported twice", c.A, c.B)
		}
		pairs[key] = true
		if i > 0 && c.Severity.Rank() > cols[i-1].Severity.Rank() {
			t.Errorf("collision %d (%s) after a less severe one (%s): want worst first", i, c.Severity, cols[i-1].Severity)
		}
		if c.Severity == habilis.SeverityHigh {
			high[c.A] = append(high[c.A], c.B)
			high[c.B] = append(high[c.B], c.A)
		}
	}
	if len(cols) == 0 || !leaked || len(high) == 0 {
		t.Fatalf("Collisions = %+v: want some, a high one and leaks, for the checks above to mean anything", cols)
	}
	for name := range examples {
		info, err := r.Tool(name)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(sortedCopy(high[name]), info.CollidesWith, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Tool(%s).CollidesWith differs from its high collisions (-collisions +tool):\n%s", name, diff)
		}
	}
	return high
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
