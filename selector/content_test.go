package selector_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/memstore"
)

// TestPhrasingAloneFailsGate checks that a tool sharing only function
// words and common operations with a request fails its gate whatever its
// score, in every mode, that one sharing a content word (exactly, or by
// its 4-grams) does not, and that the abstention says why.
func TestPhrasingAloneFailsGate(t *testing.T) {
	ctx := context.Background()
	r, err := selector.New(ctx, memstore.New(), selector.Config{Embedder: lexical.New(lexical.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	tools := []habilis.Tool{
		{Name: "get_current_weather", Description: "Retrieves the current temperature and humidity for a specific location."},
		{Name: "chart_tool", Description: "Draws a chart of numbers."},
	}
	if _, err := r.Load(ctx, tools, selector.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	phrasing := "could you retrieve the comments for that domain, please"
	for _, mode := range []habilis.Mode{habilis.ModeHybrid, habilis.ModeDescription, habilis.ModeCentroid} {
		d, err := r.Select(ctx, phrasing, habilis.SelectOptions{K: 2, Mode: mode, FailOpen: true})
		if err != nil {
			t.Fatal(err)
		}
		if !d.Abstained {
			t.Errorf("%s: %q selected %v, want an abstention", mode, phrasing, d.Matches)
		}
		for _, m := range d.Matches {
			if m.Tool == "get_current_weather" {
				// The request's only shared word is rare among generic
				// requests: without the rule it would pass.
				if m.GateScore < m.Gate {
					t.Errorf("%s: get_current_weather gate score %.3f < gate %.3f: the test no longer shows the rule", mode, m.GateScore, m.Gate)
				}
				if m.Passed {
					t.Errorf("%s: get_current_weather passed on phrasing alone", mode)
				}
			}
		}
		if mode == habilis.ModeHybrid && !strings.Contains(d.Reason, "shares no word") {
			t.Errorf("reason %q does not say the best tool shares no word with the request", d.Reason)
		}
	}
	for q, want := range map[string]string{
		"retrieve the temperature in Oslo":        "get_current_weather",
		"make a flowchart of the release process": "chart_tool",
	} {
		d, err := r.Select(ctx, q, habilis.SelectOptions{K: 2})
		if err != nil {
			t.Fatal(err)
		}
		if d.Abstained || d.Matches[0].Tool != want {
			t.Errorf("%q: abstained %v (%s), matches %v; want %s", q, d.Abstained, d.Reason, d.Matches, want)
		}
	}
}

// TestNameWordsRank checks that a request saying a tool's name words
// ranks it first where its description and arguments alone do not:
// create_issue's text names repositories more than create_repository's
// own, whose name says what it does. Without the name's words both
// embedders rank create_issue first.
func TestNameWordsRank(t *testing.T) {
	ctx := context.Background()
	schema := func(props string) json.RawMessage {
		return json.RawMessage(`{"type":"object","properties":{` + props + `}}`)
	}
	tools := []habilis.Tool{
		{Name: "create_issue", Description: "Open a new issue in a GitHub repository, given the repository owner.", InputSchema: schema(
			`"owner":{"type":"string","description":"Repository owner"},"repo":{"type":"string","description":"Repository name"},"title":{"type":"string","description":"Issue title"}`)},
		{Name: "create_repository", Description: "Set up a new project space on GitHub.", InputSchema: schema(
			`"name":{"type":"string","description":"Name of the project"},"private":{"type":"boolean","description":"Whether it is private"}`)},
		{Name: "list_commits", Description: "Get the list of commits of a branch in a GitHub repository."},
		{Name: "send_email", Description: "Send an email to one or more recipients."},
		{Name: "get_weather", Description: "Get the current weather for a city."},
		{Name: "play_music", Description: "Play a song or a playlist."},
		{Name: "translate_text", Description: "Translate text into another language."},
		{Name: "set_reminder", Description: "Remind the user of something at a given time."},
	}
	for _, emb := range []struct {
		name string
		cfg  selector.Config
	}{
		{"lexical", selector.Config{Embedder: lexical.New(lexical.Options{})}},
		{"model", selector.Config{Embedder: &testutil.HashEmbedder{Dim: 32}, Lexical: lexical.New(lexical.Options{})}},
	} {
		r, err := selector.New(ctx, memstore.New(), emb.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Load(ctx, tools, selector.LoadOptions{}); err != nil {
			t.Fatal(err)
		}
		d, err := r.Select(ctx, "make a repository on GitHub", habilis.SelectOptions{K: 3, FailOpen: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Matches) == 0 || d.Matches[0].Tool != "create_repository" {
			t.Errorf("%s: matches %v, want create_repository first", emb.name, d.Matches)
		}
	}
}

// TestOperationWay checks that a question does not go to a tool whose
// name only writes, nor a request for a change to a tool whose name only
// reads, when the words of both tools' texts would put it there.
func TestOperationWay(t *testing.T) {
	ctx := context.Background()
	tools := []habilis.Tool{
		{Name: "get_page_text", Description: "Returns the text of a page in markdown."},
		{Name: "update_page", Description: "Changes the text of a page."},
		{Name: "write_notes", Description: "Writes the notes of a meeting, in the meeting."},
		{Name: "get_notes", Description: "Returns the notes of a meeting."},
		{Name: "get_weather", Description: "Get the current weather for a city."},
		{Name: "play_music", Description: "Play a song or a playlist."},
	}
	r, err := selector.New(ctx, memstore.New(), selector.Config{Embedder: lexical.New(lexical.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Load(ctx, tools, selector.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ query, want string }{
		{"rewrite the text of the page", "update_page"},
		{"what are the notes of the meeting?", "get_notes"},
	} {
		d, err := r.Select(ctx, c.query, habilis.SelectOptions{K: 3, FailOpen: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Matches) == 0 || d.Matches[0].Tool != c.want {
			t.Errorf("%q: matches %v, want %s first", c.query, d.Matches, c.want)
		}
	}
}
