package selector_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/selector"
)

// contractQueries are requests the test catalog routes, one it should
// abstain on, one between two neighbouring tools and one sharing no
// word with it.
var contractQueries = []string{
	"convert 10 dollars to euros",
	"please email alice that the report is ready",
	"will it rain in Paris tomorrow",
	"weather in Paris",
	"definition of the word serendipity",
	"what time is it in Tokyo",
	"write a sonnet about autumn leaves",
	"zzqx vlorp",
}

// randomOptions draws a selection's options over the tools: a few denied,
// a few pinned among the others, sometimes one of them named twice, any k
// from the default to past the catalog's size, fail-open or not.
func randomOptions(rng *rand.Rand, tools []string, mode habilis.Mode) habilis.SelectOptions {
	opts := habilis.SelectOptions{Mode: mode, K: rng.IntN(len(tools) + 3), FailOpen: rng.IntN(2) == 0}
	for _, i := range rng.Perm(len(tools)) {
		switch rng.IntN(5) {
		case 0:
			opts.Denied = append(opts.Denied, tools[i])
		case 1:
			opts.Pinned = append(opts.Pinned, tools[i])
		}
	}
	// A name given twice means it once.
	if len(opts.Pinned) > 0 && rng.IntN(4) == 0 {
		opts.Pinned = append(opts.Pinned, opts.Pinned[0])
	}
	if len(opts.Denied) > 0 && rng.IntN(4) == 0 {
		opts.Denied = append(opts.Denied, opts.Denied[0])
	}
	return opts
}

// checkContract returns what d breaks of the decision's contract for opts
// over a catalog of n tools, or nil.
func checkContract(d *habilis.Decision, query string, opts habilis.SelectOptions, n int) []string {
	bad := checkMatches(d, opts, n)
	if p := outcomeProblem(d, opts); p != "" {
		bad = append(bad, p)
	}
	for _, t := range opts.Denied {
		if strings.Contains(d.Reason, " and "+t+" both fit") {
			bad = append(bad, "ambiguous with denied "+t)
		}
	}
	if d.Query != query || d.Mode != opts.Mode {
		bad = append(bad, fmt.Sprintf("echoed %q in mode %s", d.Query, d.Mode))
	}
	return bad
}

// checkMatches checks d's matches: each once, none denied, every pinned
// one there and after the ranked ones, at most k ranked ones (exactly k
// of those not denied with fail-open), best first.
func checkMatches(d *habilis.Decision, opts habilis.SelectOptions, n int) []string {
	var bad []string
	seen := map[string]bool{}
	var scores []float32
	for i, m := range d.Matches {
		if p := matchProblem(d, i, opts); p != "" {
			bad = append(bad, p)
		}
		if seen[m.Tool] {
			bad = append(bad, m.Tool+" returned twice")
		}
		seen[m.Tool] = true
		if !m.Pinned {
			scores = append(scores, m.Score)
		}
	}
	for _, p := range opts.Pinned {
		if !seen[p] {
			bad = append(bad, "pinned "+p+" missing")
		}
	}
	k := opts.K
	if k == 0 {
		k = selector.DefaultK
	}
	// Without fail-open only the tools that pass are listed; with it, the
	// k best whatever their scores.
	denied := map[string]bool{}
	for _, d := range opts.Denied {
		denied[d] = true
	}
	if want := min(k, n-len(denied)); len(scores) > want || (opts.FailOpen && len(scores) != want) {
		bad = append(bad, fmt.Sprintf("%d ranked matches with fail-open %v, want %d at most or, with fail-open, exactly", len(scores), opts.FailOpen, want))
	}
	if !slices.IsSortedFunc(scores, func(a, b float32) int { return -cmpFloat(a, b) }) {
		bad = append(bad, fmt.Sprintf("ranked matches not best first: %v", scores))
	}
	return bad
}

// matchProblem returns what match i of d breaks, or "".
func matchProblem(d *habilis.Decision, i int, opts habilis.SelectOptions) string {
	m := d.Matches[i]
	switch {
	case slices.Contains(opts.Denied, m.Tool):
		return "denied " + m.Tool + " returned"
	case m.Pinned && !slices.Contains(opts.Pinned, m.Tool):
		return m.Tool + " marked pinned without being pinned"
	case m.Pinned && slices.ContainsFunc(d.Matches[i+1:], func(x habilis.Match) bool { return !x.Pinned }):
		return "pinned " + m.Tool + " before a ranked match"
	case !m.Pinned && !opts.FailOpen && !m.Passed:
		return m.Tool + " returned without fail-open though it fails its gate"
	case !m.Pinned && opts.FailOpen && d.Abstained && m.Passed:
		return m.Tool + " passed in an abstention"
	}
	return ""
}

// outcomeProblem returns what d's abstention, ambiguity and reason break,
// or "".
func outcomeProblem(d *habilis.Decision, opts habilis.SelectOptions) string {
	ranked := len(passedNames(d))
	if opts.FailOpen {
		ranked = slices.IndexFunc(d.Matches, func(m habilis.Match) bool { return m.Pinned })
		if ranked < 0 {
			ranked = len(d.Matches)
		}
	}
	switch {
	case d.Abstained && (d.Reason == "" || d.Ambiguous):
		return fmt.Sprintf("abstained with reason %q, ambiguous %v", d.Reason, d.Ambiguous)
	case d.Abstained && !opts.FailOpen && ranked > 0:
		return "abstained with ranked matches, without fail-open"
	case !d.Abstained && ranked == 0:
		return "neither abstained nor returned a tool"
	case d.Ambiguous && !strings.Contains(d.Reason, d.Matches[0].Tool):
		return fmt.Sprintf("ambiguous with reason %q not naming the first match", d.Reason)
	case !d.Abstained && !d.Ambiguous && d.Reason != "":
		return fmt.Sprintf("a clear decision with reason %q", d.Reason)
	}
	return ""
}

func cmpFloat(a, b float32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestDecisionContract selects with random options (denied and pinned
// tools, k, fail-open) in every mode and checks what a decision promises
// whatever they are: a denied tool never returned, a pinned one always,
// once, after the ranked ones; at most k ranked matches, best first, each
// passing its gate unless fail-open asked for them; an abstention or an
// ambiguity with its reason, a clear decision without one; with fail-open,
// exactly the k best of the tools not denied, as Prefilter hands them over.
func TestDecisionContract(t *testing.T) {
	r, _ := loaded(t)
	var names []string
	for _, tool := range r.Tools() {
		names = append(names, tool.Name)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, mode := range []habilis.Mode{habilis.ModeHybrid, habilis.ModeCentroid, habilis.ModeDescription} {
		for range 150 {
			opts := randomOptions(rng, names, mode)
			q := contractQueries[rng.IntN(len(contractQueries))]
			d, err := r.Select(t.Context(), q, opts)
			if err != nil {
				t.Fatalf("Select(%q, %+v): %v", q, opts, err)
			}
			if bad := checkContract(d, q, opts, len(names)); bad != nil {
				t.Errorf("Select(%q, %+v) = %+v:\n%s", q, opts, d, strings.Join(bad, "\n"))
			}
			if d.CatalogVersion != r.Version() {
				t.Errorf("Select(%q) catalog version %d, want the router's %d", q, d.CatalogVersion, r.Version())
			}
		}
	}
}

// outcome is what a decision decides, apart from how many tools it
// lists.
type outcome struct {
	Abstained, Ambiguous bool
	Reason               string
	First                string
}

func outcomeOf(d *habilis.Decision) outcome {
	o := outcome{Abstained: d.Abstained, Ambiguous: d.Ambiguous, Reason: d.Reason}
	if len(d.Matches) > 0 {
		o.First = d.Matches[0].Tool
	}
	return o
}

// TestDecisionIndependentOfK checks that k and fail-open change how many
// tools a decision lists, not the decision: whether it abstains or is
// ambiguous, why, and which tool comes first; and that the tools listed
// without fail-open are those listed with it that pass their gates.
func TestDecisionIndependentOfK(t *testing.T) {
	r, _ := loaded(t)
	for _, mode := range []habilis.Mode{habilis.ModeHybrid, habilis.ModeCentroid, habilis.ModeDescription} {
		for _, q := range contractQueries {
			base, err := r.Select(t.Context(), q, habilis.SelectOptions{Mode: mode, K: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []int{2, 3, 5, 7, 20} {
				for _, failOpen := range []bool{false, true} {
					d, err := r.Select(t.Context(), q, habilis.SelectOptions{Mode: mode, K: k, FailOpen: failOpen})
					if err != nil {
						t.Fatal(err)
					}
					want, got := outcomeOf(base), outcomeOf(d)
					if failOpen && want.First == "" {
						want.First = got.First // an abstention lists the best tools with fail-open alone
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("Select(%q, %s, k %d, fail-open %v) decides otherwise than with k 1 (-k 1 +k %d):\n%s", q, mode, k, failOpen, k, diff)
					}
					if failOpen {
						continue
					}
					open, err := r.Select(t.Context(), q, habilis.SelectOptions{Mode: mode, K: k, FailOpen: true})
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(passedNames(open), passedNames(d)); diff != "" {
						t.Errorf("Select(%q, %s, k %d): tools without fail-open differ from those passing with it (-fail-open +without):\n%s", q, mode, k, diff)
					}
				}
			}
		}
	}
}

func passedNames(d *habilis.Decision) []string {
	var out []string
	for _, m := range d.Matches {
		if m.Passed && !m.Pinned {
			out = append(out, m.Tool)
		}
	}
	return out
}
