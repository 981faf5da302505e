package api

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
)

// TestPrefilterCountsK checks what a Prefilter hands over for every k,
// over the server's catalog and an inline one, for requests a tool fits
// and one none does: without fail_closed, the definitions of exactly the
// k best tools (all of them when k passes the catalog's size), the pinned
// one added when it is not among them, in the decision's order; with
// fail_closed, those that pass their gates alone; and the token figures
// adding up.
func TestPrefilterCountsK(t *testing.T) {
	_, _, c := fixture(t)
	tools := testTools(t)
	_, inline := openAICatalog(t, tools)
	pinned := tools[len(tools)-1].Name
	for _, cat := range [][]byte{nil, inline} {
		for _, q := range []string{"send an email to bob about the meeting", "quantum chromodynamics lattice gluon"} {
			for k := 1; k <= len(tools)+1; k++ {
				for _, closed := range []bool{false, true} {
					opts := habilis.SelectOptions{K: k}
					if k%2 == 0 {
						opts.Pinned = []string{pinned}
					}
					got, err := c.Prefilter(t.Context(), PrefilterRequest{Query: q, Catalog: cat, Options: opts, FailClosed: closed})
					if err != nil {
						t.Fatal(err)
					}
					where := fmt.Sprintf("Prefilter(%q, inline %v, k %d, pinned %v, fail_closed %v)", q, cat != nil, k, opts.Pinned, closed)
					checkPrefiltered(t, where, got, min(k, len(tools)), closed)
				}
			}
		}
	}
}

// checkPrefiltered checks one Prefilter answer for k tools.
func checkPrefiltered(t *testing.T, where string, got *Prefiltered, k int, closed bool) {
	t.Helper()
	var defs []struct {
		Function struct{ Name string } `json:"function"`
	}
	if err := json.Unmarshal(got.Tools, &defs); err != nil {
		t.Fatalf("%s: tools %s: %v", where, got.Tools, err)
	}
	var names, want []string
	for _, d := range defs {
		names = append(names, d.Function.Name)
	}
	ranked := 0
	for _, m := range got.Decision.Matches {
		want = append(want, m.Tool)
		if !m.Pinned {
			ranked++
			if closed && !m.Passed {
				t.Errorf("%s: handed over %s, which fails its gate", where, m.Tool)
			}
		}
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("%s: definitions differ from the decision's matches (-matches +definitions):\n%s", where, diff)
	}
	if !closed && ranked != k {
		t.Errorf("%s: %d ranked tools handed over, want %d", where, ranked, k)
	}
	if got.TokensBefore-got.TokensAfter != got.TokensSaved || got.TokensAfter < 0 || (len(defs) > 0) != (got.TokensAfter > 0) {
		t.Errorf("%s: tokens before %d, after %d, saved %d", where, got.TokensBefore, got.TokensAfter, got.TokensSaved)
	}
}
