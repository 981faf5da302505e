package eval_test

import (
	"path/filepath"
	"testing"

	"github.com/habilis-router/habilis/catalog"
	"github.com/habilis-router/habilis/eval"
)

// TestMCPSet checks the MCP development set in testdata/mcp: each
// catalog reads, every expected tool is one of its catalog's, and each
// row says which part it belongs to, so that the figures docs/quality.md
// gives for it are made by eval on what it says they are.
func TestMCPSet(t *testing.T) {
	counts := map[string]int{}
	for _, c := range []string{"A", "B", "C"} {
		tools, err := catalog.Read(filepath.Join("testdata", "mcp", c+"_tools.json"))
		if err != nil {
			t.Fatal(err)
		}
		names := make(map[string]bool, len(tools))
		for _, tool := range tools {
			names[tool.Name] = true
		}
		qs, err := eval.ReadQueries(filepath.Join("testdata", "mcp", c+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for i, q := range qs {
			for _, e := range q.Expected {
				if !names[e] {
					t.Errorf("%s.jsonl row %d (%q): expected tool %q is not in %s_tools.json", c, i+1, q.Query, e, c)
				}
			}
			part := string(q.Fields["set"])
			if part != `"tune"` && part != `"report"` {
				t.Errorf("%s.jsonl row %d (%q): set is %s, want \"tune\" or \"report\"", c, i+1, q.Query, part)
			}
			kind := "tool"
			if len(q.Expected) == 0 {
				kind = "none"
			}
			counts[part+" "+kind]++
		}
	}
	want := map[string]int{`"tune" tool`: 203, `"tune" none`: 51, `"report" tool`: 129, `"report" none`: 37}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("rows %s = %d, want %d (docs/quality.md's counts)", k, counts[k], n)
		}
	}
}
