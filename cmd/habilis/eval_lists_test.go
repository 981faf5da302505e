package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/habilis-router/habilis/eval"
)

// TestEvalJSONKeepsEveryQuery checks that eval --json lists every misrouted
// query, every wrong abstention and every missed one, so that two runs can
// be compared query by query, while the text report shows the first few
// of each.
func TestEvalJSONKeepsEveryQuery(t *testing.T) {
	const n = 40 // of each kind, more than any list kept before
	var rows strings.Builder
	for i := range n {
		fmt.Fprintf(&rows, "{\"query\": \"is it sunny in Rome right now, take %d\", \"expected\": []}\n", i)
		fmt.Fprintf(&rows, "{\"query\": \"what's the temperature in Vienna today, take %d\", \"expected\": [\"send_email\"]}\n", i)
		fmt.Fprintf(&rows, "{\"query\": \"compose a sonnet about autumn leaves, take %d\", \"expected\": [\"translate_text\"]}\n", i)
	}
	qpath := filepath.Join(t.TempDir(), "q.jsonl")
	if err := os.WriteFile(qpath, []byte(rows.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"eval", "--tools", testdata("tools.json"), "--queries", qpath}
	rep := decode[eval.Result](t, mustRun(t, append(args, "--json")...))
	misrouted, listed := 0, 0
	for _, c := range rep.Confusions {
		misrouted += c.Count
		listed += len(c.Queries)
	}
	toolQ := float64(rep.Queries - rep.NoTool.Queries)
	wrong := int(math.Round(rep.NoTool.WrongAbstainRate * toolQ))
	missed := int(math.Round(rep.NoTool.AcceptedRate * float64(rep.NoTool.Queries)))
	if misrouted < n || wrong < n || missed < n {
		t.Fatalf("eval: %d misrouted, %d wrong and %d missed abstentions; want %d of each for this test to mean anything", misrouted, wrong, missed, n)
	}
	if listed != misrouted || len(rep.WrongAbstentions) != wrong || len(rep.MissedAbstentions) != missed {
		t.Errorf("eval --json lists %d of %d misrouted queries, %d of %d wrong and %d of %d missed abstentions; want all",
			listed, misrouted, len(rep.WrongAbstentions), wrong, len(rep.MissedAbstentions), missed)
	}

	text := mustRun(t, args...)
	for _, want := range []string{
		fmt.Sprintf("abstained on tool queries (10 of %d shown):", wrong),
		fmt.Sprintf("chose a tool for no-tool queries (10 of %d shown):", missed),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("eval's text report lacks %q:\n%s", want, text)
		}
	}
	if lines := strings.Count(text, "\n"); lines > 80 {
		t.Errorf("eval's text report has %d lines, want it short (at most 80):\n%s", lines, text)
	}
}
