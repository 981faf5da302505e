package selector_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/habilis-router/habilis"
)

// TestAbstainReasons checks the reason an abstention gives against the
// decision's own figures: a catalog without tools says so, and a request
// every tool fails names the best tool with the gate score and gate its
// match shows, or that it shares no word with the request when its score
// reached the gate.
func TestAbstainReasons(t *testing.T) {
	empty, _ := open(t)
	d, err := empty.Select(t.Context(), "convert 10 dollars", habilis.SelectOptions{})
	if err != nil || !d.Abstained || d.Reason != "the catalog is empty" || d.Matches == nil || len(d.Matches) != 0 {
		t.Errorf("Select over an empty catalog = %+v, %v; want an abstention saying the catalog is empty, with no matches", d, err)
	}
	r, _ := loaded(t)
	abstained := 0
	for _, mode := range []habilis.Mode{habilis.ModeHybrid, habilis.ModeCentroid, habilis.ModeDescription} {
		for _, q := range contractQueries {
			d, err := r.Select(t.Context(), q, habilis.SelectOptions{Mode: mode, FailOpen: true})
			if err != nil {
				t.Fatal(err)
			}
			if !d.Abstained {
				continue
			}
			abstained++
			best := d.Matches[0]
			want := fmt.Sprintf("no tool fits: every candidate fails its gate (best %s: gate score %.3f < gate %.3f)", best.Tool, best.GateScore, best.Gate)
			if best.GateScore >= best.Gate {
				want = fmt.Sprintf("no tool fits: every candidate fails its gate (best %s shares no word with the request", best.Tool)
			}
			if !strings.HasPrefix(d.Reason, want) {
				t.Errorf("Select(%q, %s) abstained saying %q; its best match %+v says %q", q, mode, d.Reason, best, want)
			}
		}
	}
	if abstained == 0 {
		t.Fatal("no request abstained: the test checks nothing")
	}
}
