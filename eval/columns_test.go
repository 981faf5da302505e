package eval

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/catalog"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/selector"
)

// TestReportColumns counts six decisions whose figures are worked out by
// hand, one of each kind the report tells apart.
func TestReportColumns(t *testing.T) {
	tl := newTally(Options{K: 2, MaxExamples: 3})
	rows := []struct {
		q          Query
		top        string // "" when abstained
		ranking    []string
		confidence float64
	}{
		// 1: right, and first in the ranking.
		{Query{Query: "q1", Expected: []string{"a"}}, "a", []string{"a", "b"}, 0.9},
		// 2: abstained wrongly, though the ranking had it first.
		{Query{Query: "q2", Expected: []string{"a"}}, "", []string{"a", "b"}, 0.4},
		// 3: misrouted to a; b second in the ranking.
		{Query{Query: "q3", Expected: []string{"b"}}, "a", []string{"a", "b"}, 0.7},
		// 4: no tool, abstained: right.
		{Query{Query: "q4", Expected: []string{}}, "", []string{"a", "b"}, 0.3},
		// 5: no tool, but a tool chosen.
		{Query{Query: "q5", Expected: []string{}}, "a", []string{"a", "b"}, 0.8},
		// 6: abstained wrongly, c nowhere in the ranking.
		{Query{Query: "q6", Expected: []string{"c"}}, "", []string{"a", "b"}, 0.2},
	}
	for _, r := range rows {
		tl.add(r.q, r.top, r.top == "", r.ranking, r.confidence)
	}
	rep := tl.report(3, "hybrid")
	// Four tool queries (1, 2, 3, 6) and two without (4, 5); three
	// abstentions (2, 4, 6), one of them right (4). Confidence pairs (tool,
	// no tool): 0.9 beats 0.3 and 0.8, 0.4 and 0.7 beat 0.3 only, 0.2
	// neither: 4 of 8.
	want := []struct {
		name      string
		got, want float64
	}{
		{"acc_at_1: 1 of 4", rep.AccAt1, 0.25},
		{"rank_acc_at_1: 1 and 2 of 4", rep.RankAccAt1, 0.5},
		{"recall_at_k: (1 + 1 + 1 + 0) / 4", rep.RecallAtK, 0.75},
		{"mrr: (1 + 1 + 1/2 + 0) / 4", rep.MRR, 0.625},
		{"decision_accuracy: 1 and 4 of 6", rep.DecisionAccuracy, 2.0 / 6},
		{"wrong_abstain_rate: 2 and 6 of 4", rep.NoTool.WrongAbstainRate, 0.5},
		{"abstain_precision: 4 of 2, 4, 6", rep.NoTool.AbstainPrecision, 1.0 / 3},
		{"abstain_recall: 4 of 4, 5", rep.NoTool.AbstainRecall, 0.5},
		{"accepted_rate: 5 of 4, 5", rep.NoTool.AcceptedRate, 0.5},
		{"auroc: 4 of 8 pairs", rep.NoTool.AUROC, 0.5},
	}
	for _, w := range want {
		if math.Abs(w.got-w.want) > 1e-12 {
			t.Errorf("%s = %v, want %v", w.name, w.got, w.want)
		}
	}
	if rep.Queries != 6 || rep.NoTool.Queries != 2 {
		t.Errorf("report counts %d queries, %d without a tool; want 6 and 2", rep.Queries, rep.NoTool.Queries)
	}
	var wrong, missed []string
	for _, m := range rep.WrongAbstentions {
		wrong = append(wrong, m.Query)
	}
	for _, m := range rep.MissedAbstentions {
		missed = append(missed, m.Query+"→"+m.Chosen)
	}
	if !slices.Equal(wrong, []string{"q2", "q6"}) || !slices.Equal(missed, []string{"q5→a"}) {
		t.Errorf("wrong abstentions %v, missed %v; want [q2 q6] and [q5→a]", wrong, missed)
	}
	if len(rep.Confusions) != 1 || rep.Confusions[0].Expected != "b" || rep.Confusions[0].Chosen != "a" {
		t.Errorf("confusions %+v, want one: b misrouted to a", rep.Confusions)
	}
}

// fnv1a32 is the 32-bit FNV-1a hash, written out from its definition.
func fnv1a32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// TestHalves checks the split --half and --fit-split make: the two halves
// cover the queries, in order, each where the low bit of the FNV-1a hash
// of its text puts it, except that queries equal ignoring case and
// spacing stay together (in the half of the first of them), so that no
// query is measured in one half and fitted on, as an example, in the other.
func TestHalves(t *testing.T) {
	texts := []string{"what is the weather in Oslo", "send an email to Ann", "convert 20 dollars to euros",
		"tell me a joke", "book a table for two", "what time is it in Lima", "translate hello into French",
		"remind me to call mum", "play some jazz", "how far is the moon"}
	var qs []Query
	for _, s := range texts {
		qs = append(qs, Query{Query: s})
	}
	// Twins of the first four that hash to the other half: the same words
	// in other spacing. (The low bit of FNV-1a is the parity of the odd
	// bytes, which neither ASCII case nor spaces change, but a tab does.)
	var twins int
	for _, s := range texts[:4] {
		for _, v := range []string{strings.ToUpper(s), strings.Replace(s, " ", "\t", 1), "\t" + s} {
			if fnv1a32(v)&1 != fnv1a32(s)&1 {
				qs = append(qs, Query{Query: v})
				twins++
				break
			}
		}
	}
	if twins == 0 {
		t.Fatal("no twin hashes to the other half; the test needs one")
	}
	a, b := Halves(qs)
	if len(a) == 0 || len(b) == 0 {
		t.Fatalf("Halves = %d and %d queries, want both halves used", len(a), len(b))
	}
	first := map[string]uint32{}
	var wantA, wantB []string
	for _, q := range qs {
		n := strings.Join(strings.Fields(strings.ToLower(q.Query)), " ")
		if _, ok := first[n]; !ok {
			first[n] = fnv1a32(q.Query) & 1
		}
		if first[n] == 0 {
			wantA = append(wantA, q.Query)
		} else {
			wantB = append(wantB, q.Query)
		}
	}
	if got := queryTexts(a); !slices.Equal(got, wantA) {
		t.Errorf("half a = %q, want %q", got, wantA)
	}
	if got := queryTexts(b); !slices.Equal(got, wantB) {
		t.Errorf("half b = %q, want %q", got, wantB)
	}
}

func queryTexts(qs []Query) []string {
	var out []string
	for _, q := range qs {
		out = append(out, q.Query)
	}
	return out
}

// TestFitSplitKeepsTwinsTogether checks the split of fit: a query tuned
// on is never, in other case or spacing, an example of the trial catalog
// it is tuned against.
func TestFitSplitKeepsTwinsTogether(t *testing.T) {
	var qs []Query
	for i := range 40 {
		s := "request number " + strings.Repeat("x", i)
		qs = append(qs, Query{Query: s}, Query{Query: strings.ToUpper(s)}, Query{Query: " " + s + " "})
	}
	tune, examples := splitFit(qs)
	if len(tune)+len(examples) != len(qs) || len(tune) == 0 || len(examples) == 0 {
		t.Fatalf("splitFit = %d to tune on and %d examples of %d, want both parts of all", len(tune), len(examples), len(qs))
	}
	held := map[string]bool{}
	for _, q := range examples {
		held[normal(q.Query)] = true
	}
	for _, q := range tune {
		if held[normal(q.Query)] {
			t.Errorf("%q is tuned on against a catalog holding it as an example", q.Query)
		}
	}
}

// TestFitLeavesOutWhatIsMeasured checks that a labelled query fitted on is
// never measured too: with --self, the fit queries that are (in other
// case or spacing) the examples a fold holds out are left out of that
// fold's fit, and of no other.
func TestFitLeavesOutWhatIsMeasured(t *testing.T) {
	tools, err := catalog.Read("../selector/testdata/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	var weather habilis.Tool
	for _, tool := range tools {
		if tool.Name == "get_weather" {
			weather = tool
		}
	}
	// Examples 0 and 1 of get_weather are held out in folds 1 and 2.
	fit := []Query{
		{Query: strings.ToUpper(weather.Examples[0]), Expected: []string{"get_weather"}},
		{Query: "  " + weather.Examples[1], Expected: []string{"get_weather"}},
		{Query: "mail the slides to Ann", Expected: []string{"send_email"}},
		{Query: "knit a scarf pattern", Expected: []string{}},
	}
	res, err := Evaluate(context.Background(), &Setup{Config: selector.Config{Embedder: lexical.New(lexical.Options{})}, Tools: tools, Self: true, Fit: fit})
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, f := range res.FitFolds {
		got = append(got, f.Queries)
	}
	if want := []int{3, 3, 4, 4, 4}; !slices.Equal(got, want) {
		t.Errorf("queries fitted on in each fold = %v, want %v", got, want)
	}
}

// TestFitImproves checks that fitting teaches what the catalog does not
// say: "ping" is no word of it, and after fitting on requests that ping
// someone by email, requests to ping others go to send_email.
func TestFitImproves(t *testing.T) {
	tools, err := catalog.Read("../selector/testdata/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	measured := []Query{
		{Query: "ping Dave", Expected: []string{"send_email"}},
		{Query: "ping Erin", Expected: []string{"send_email"}},
		{Query: "compose a sonnet about autumn leaves", Expected: []string{}},
	}
	var fit []Query
	for _, q := range []string{"ping Ann", "ping Bob", "ping Carol", "ping the team", "ping my boss", "ping Zoe", "ping Tom", "ping Lee"} {
		fit = append(fit, Query{Query: q, Expected: []string{"send_email"}})
	}
	fit = append(fit, Query{Query: "convert 5 francs to yen", Expected: []string{"convert_currency"}},
		Query{Query: "knit a scarf pattern", Expected: []string{}}, Query{Query: "paint my fence blue", Expected: []string{}})
	cfg := selector.Config{Embedder: lexical.New(lexical.Options{})}
	before, err := Evaluate(context.Background(), &Setup{Config: cfg, Tools: tools, Queries: measured})
	if err != nil {
		t.Fatal(err)
	}
	after, err := Evaluate(context.Background(), &Setup{Config: cfg, Tools: tools, Queries: measured, Fit: fit})
	if err != nil {
		t.Fatal(err)
	}
	// After fitting, "ping" is a word of send_email's examples alone: both
	// requests go there, and the sonnet still finds no tool.
	if after.AccAt1 != 1 || after.NoTool.AbstainRecall != 1 || after.DecisionAccuracy != 1 {
		t.Errorf("after fit: acc@1 %v, abstain recall %v, decision accuracy %v; want 1, 1, 1", after.AccAt1, after.NoTool.AbstainRecall, after.DecisionAccuracy)
	}
	if before.AccAt1 >= after.AccAt1 || before.DecisionAccuracy >= after.DecisionAccuracy {
		t.Errorf("fit improved nothing: acc@1 %v → %v, decision accuracy %v → %v", before.AccAt1, after.AccAt1, before.DecisionAccuracy, after.DecisionAccuracy)
	}
}

// TestReportKeepsEveryQuery checks that a report lists every misrouted
// query, wrong and missed abstention by default, in order, and at most
// MaxExamples of each when it is set.
func TestReportKeepsEveryQuery(t *testing.T) {
	const n = 40
	for _, tt := range []struct {
		maxExamples, want int
	}{{0, n}, {2, 2}} {
		tl := newTally(Options{K: 2, MaxExamples: tt.maxExamples})
		for i := range n {
			q := fmt.Sprint("q", i)
			tl.add(Query{Query: q, Expected: []string{}}, "a", false, []string{"a"}, 0.9)
			tl.add(Query{Query: q, Expected: []string{"a"}}, "", true, []string{"a"}, 0.1)
			tl.add(Query{Query: q, Expected: []string{"b"}}, "a", false, []string{"a"}, 0.9)
		}
		rep := tl.report(2, "hybrid")
		if len(rep.Confusions) != 1 || rep.Confusions[0].Count != n {
			t.Fatalf("MaxExamples %d: confusions %+v, want b -> a %d times", tt.maxExamples, rep.Confusions, n)
		}
		got := []int{len(rep.Confusions[0].Queries), len(rep.WrongAbstentions), len(rep.MissedAbstentions)}
		if diff := cmp.Diff([]int{tt.want, tt.want, tt.want}, got); diff != "" {
			t.Errorf("MaxExamples %d: queries kept of the confusion, wrong and missed abstentions (-want +got):\n%s", tt.maxExamples, diff)
		}
		if ms := rep.MissedAbstentions; len(ms) > 0 && ms[len(ms)-1].Query != fmt.Sprint("q", len(ms)-1) {
			t.Errorf("MaxExamples %d: missed abstentions %v, want the first ones, in order", tt.maxExamples, ms)
		}
	}
}
