// Package eval measures a router on labelled queries: top-1 accuracy,
// recall at k, mean reciprocal rank, decision accuracy, no-tool detection
// (AUROC of the confidence that some tool applies) and latency, with
// per-tool accuracy and confusions a catalog author can act on. It also
// measures BM25 as a baseline (RunBM25) and argument filling against gold
// arguments (Fill), and learns hybrid mode's settings from labelled
// queries (Fit), which `habilis fit` stores.
package eval

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/jsonform"
	"github.com/habilis-router/habilis/selector"
)

// Query is one labelled request: the tools that should handle it, none
// meaning that no tool should be chosen.
type Query struct {
	Query    string   `json:"query"`
	Expected []string `json:"expected"`
	// Arguments are gold arguments for single-call queries, when known.
	Arguments map[string]any `json:"arguments,omitempty"`
	// Acceptable lists, for each argument of a single-call query, every
	// value that counts as correct, an empty string meaning the argument may
	// be omitted (BFCL's convention). It is read from the row's
	// calls[0].acceptable when the row has exactly one call: with several
	// calls there is no single gold answer. Nil when the row has none.
	Acceptable map[string][]any `json:"acceptable,omitempty"`
	// Candidates, when the row has a "candidates" list, is the query's own
	// catalog (HasCandidates tells an empty list from none): the names of
	// the tools offered to it, each a tool of the evaluated catalog or one
	// of Inline, the definitions the list held in place of names.
	Candidates    []string       `json:"candidates,omitempty"`
	Inline        []habilis.Tool `json:"-"`
	HasCandidates bool           `json:"-"`
	// Fields holds the row's fields as read, for Where.
	Fields map[string]json.RawMessage `json:"-"`
}

// maxLine bounds one JSONL line.
const maxLine = 16 << 20

// ReadQueries reads a JSONL file of labelled queries. Errors name the file
// and line.
func ReadQueries(path string) ([]Query, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err // "open PATH: ..." names the file
	}
	defer f.Close()
	return ParseQueries(path, f)
}

// ParseQueries reads labelled queries from r; file names them in errors.
func ParseQueries(file string, r io.Reader) ([]Query, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var qs []Query
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if line == 1 {
			// Editors on Windows start UTF-8 files with a byte order mark;
			// catalogs accept it too (catalog.Parse).
			text = strings.TrimPrefix(text, "\uFEFF")
		}
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		var raw struct {
			Query    *string         `json:"query"`
			Expected json.RawMessage `json:"expected"`
			Args     map[string]any  `json:"arguments"`
			Calls    json.RawMessage `json:"calls"`
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal([]byte(text), &fields); err != nil {
			return nil, rowError(file, line, err)
		}
		if err := json.Unmarshal([]byte(text), &raw); err != nil {
			return nil, rowError(file, line, err)
		}
		if raw.Query == nil || strings.TrimSpace(*raw.Query) == "" {
			return nil, fmt.Errorf("%s:%d: field \"query\": must be a non-empty string: %w", file, line, habilis.ErrInvalid)
		}
		q := Query{Query: *raw.Query, Arguments: raw.Args, Fields: fields}
		if c, ok := fields["candidates"]; ok {
			if err := q.parseCandidates(fmt.Sprintf("%s:%d", file, line), c); err != nil {
				return nil, err
			}
		}
		acc, err := parseCalls(raw.Calls)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: field \"calls\": %v: %w", file, line, err, habilis.ErrInvalid)
		}
		q.Acceptable = acc
		if len(raw.Expected) == 0 || string(raw.Expected) == "null" {
			return nil, fmt.Errorf("%s:%d: field \"expected\": missing (use [] for no tool): %w", file, line, habilis.ErrInvalid)
		}
		if err := json.Unmarshal(raw.Expected, &q.Expected); err != nil {
			return nil, fmt.Errorf("%s:%d: field \"expected\": must be an array of tool names: %w", file, line, habilis.ErrInvalid)
		}
		qs = append(qs, q)
	}
	if err := readError(file, line+1, sc.Err()); err != nil {
		return nil, err
	}
	if len(qs) == 0 {
		return nil, fmt.Errorf("%s: holds no queries: %w", file, habilis.ErrInvalid)
	}
	return qs, nil
}

// readError returns the error of a scan of file that stopped at line, or
// nil: a line too long, or the reader's own error, which names the file
// when it is one ("read PATH: is a directory").
func readError(file string, line int, err error) error {
	var pathErr *fs.PathError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, bufio.ErrTooLong):
		return fmt.Errorf("%s:%d: longer than %d MiB: %w", file, line, maxLine>>20, habilis.ErrInvalid)
	case errors.As(err, &pathErr):
		return err
	}
	return fmt.Errorf("read %s: %w", file, err)
}

// rowError words why a row of a queries file does not decode: a field of
// the wrong type is named, as the checks after decoding name theirs.
func rowError(file string, line int, err error) error {
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te) && te.Field == "":
		return fmt.Errorf("%s:%d: a row must be a JSON object, got %s: %w", file, line, te.Value, habilis.ErrInvalid)
	case errors.As(err, &te):
		want := map[string]string{"query": "a non-empty string", "arguments": "an object of argument values"}[te.Field]
		if want == "" {
			want = jsonform.Of(te.Type)
		}
		return fmt.Errorf("%s:%d: field %q: must be %s, got %s: %w", file, line, te.Field, want, te.Value, habilis.ErrInvalid)
	}
	return fmt.Errorf("%s:%d: %v: %w", file, line, err, habilis.ErrInvalid)
}

// parseCalls reads a row's optional "calls" (BFCL's gold calls) and returns
// the acceptable values of its only call. Absent or null calls, or a call
// without "acceptable", give nil; a malformed one is an error.
func parseCalls(raw json.RawMessage) (map[string][]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var calls []struct {
		Acceptable json.RawMessage `json:"acceptable"`
	}
	if err := json.Unmarshal(raw, &calls); err != nil {
		return nil, fmt.Errorf("must be an array of call objects")
	}
	for i, c := range calls {
		if len(c.Acceptable) == 0 || string(c.Acceptable) == "null" {
			continue
		}
		var acc map[string][]any
		if err := json.Unmarshal(c.Acceptable, &acc); err != nil {
			return nil, fmt.Errorf("[%d].acceptable: must map each argument to an array of values", i)
		}
		if len(calls) == 1 {
			return acc, nil
		}
	}
	return nil, nil
}

// Options tune an evaluation.
type Options struct {
	// Mode is the selection mode; "" means hybrid.
	Mode habilis.Mode
	// K is the recall cut-off; zero means 5.
	K int
	// Progress, when set, is called after each query.
	Progress func(done, total int)
	// MaxExamples bounds how many misrouted queries a confusion keeps, and
	// how many queries each list of wrong or missed abstentions keeps;
	// zero keeps every one, so that two runs' reports can be compared
	// query by query (the text report shows the first few).
	MaxExamples int
}

// Report is the outcome of an evaluation. Every rate is in [0, 1].
type Report struct {
	Queries int          `json:"queries"`
	Tools   int          `json:"tools"`
	Mode    habilis.Mode `json:"mode"`
	K       int          `json:"k"`
	// AccAt1 is the share of queries expecting a tool whose decision's
	// first tool is expected; abstaining counts as wrong.
	AccAt1 float64 `json:"acc_at_1"`
	// RankAccAt1 is the share of queries expecting a tool whose ranking,
	// before the gates, puts an expected tool first: accuracy as a ranker
	// that never abstains (the way keyword search is measured).
	RankAccAt1 float64 `json:"rank_acc_at_1"`
	// RecallAtK is the mean share of expected tools among the ranking's top
	// k, before the gates.
	RecallAtK float64 `json:"recall_at_k"`
	// MRR is the mean reciprocal rank of the first expected tool in the
	// ranking (0 when it is not in the top k).
	MRR float64 `json:"mrr"`
	// DecisionAccuracy is over all queries: the first tool is expected, or
	// the router abstained on a query expecting none.
	DecisionAccuracy float64   `json:"decision_accuracy"`
	NoTool           NoTool    `json:"no_tool"`
	Latency          Latency   `json:"latency_us"`
	PerTool          []PerTool `json:"per_tool"`
	// Baseline names the baseline measured instead of habilis ("bm25"),
	// and Threshold is the score it decided at.
	Baseline  string  `json:"baseline,omitempty"`
	Threshold float64 `json:"threshold,omitempty"`
	// Confusions are the misroutes, the most frequent first, each with its
	// queries.
	Confusions []Confusion `json:"confusions"`
	// WrongAbstentions are queries that expected a tool but got none.
	WrongAbstentions []Miss `json:"wrong_abstentions"`
	// MissedAbstentions are no-tool queries that got a tool.
	MissedAbstentions []Miss `json:"missed_abstentions"`
}

// NoTool measures abstention.
type NoTool struct {
	// Queries is how many queries expect no tool.
	Queries int `json:"queries"`
	// AUROC of the confidence that some tool applies, with no-tool queries
	// as negatives; 0 when either class is empty.
	AUROC float64 `json:"auroc"`
	// AbstainPrecision is the share of abstentions on no-tool queries;
	// AbstainRecall the share of no-tool queries abstained on.
	AbstainPrecision float64 `json:"abstain_precision"`
	AbstainRecall    float64 `json:"abstain_recall"`
	// WrongAbstainRate is the share of tool queries abstained on.
	WrongAbstainRate float64 `json:"wrong_abstain_rate"`
	// AcceptedRate is the share of no-tool queries that got a tool:
	// 1 − AbstainRecall when there are any, else 0.
	AcceptedRate float64 `json:"accepted_rate"`
}

// Latency holds selection latency percentiles in microseconds. Queries
// are embedded in batches (model embedders answer batches at a fraction
// of the cost of one request a query); a query's latency is its selection
// plus its share of embedding its batch.
type Latency struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

// PerTool is one tool's accuracy over the queries that expect it.
type PerTool struct {
	Tool    string  `json:"tool"`
	Queries int     `json:"queries"`
	AccAt1  float64 `json:"acc_at_1"`
}

// Confusion is a tool chosen instead of the expected one.
type Confusion struct {
	Expected string   `json:"expected"`
	Chosen   string   `json:"chosen"`
	Count    int      `json:"count"`
	Queries  []string `json:"queries"`
}

// Miss is one wrong abstention decision.
type Miss struct {
	Query    string   `json:"query"`
	Expected []string `json:"expected"`
	Chosen   string   `json:"chosen,omitempty"`
}

// Run evaluates r on qs.
func Run(ctx context.Context, r *selector.Router, qs []Query, opts Options) (*Report, error) {
	opts, mode, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	t := newTally(opts)
	idx := make([]int, len(qs))
	for i := range idx {
		idx[i] = i
	}
	done := 0
	if err := t.routeAll(ctx, r, qs, idx, mode, &done, len(qs)); err != nil {
		return nil, err
	}
	return t.report(len(r.Tools()), mode), nil
}

// embedBatch is how many queries are embedded together: enough for a
// model embedder to fill its requests, few enough to report progress.
const embedBatch = 256

// routeAll selects the queries qs[idx...] with r, embedding them in
// batches of embedBatch, and adds the outcomes; done counts the queries
// routed so far, of total, for progress.
func (t *tally) routeAll(ctx context.Context, r *selector.Router, qs []Query, idx []int, mode habilis.Mode, done *int, total int) error {
	for lo := 0; lo < len(idx); lo += embedBatch {
		chunk := idx[lo:min(lo+embedBatch, len(idx))]
		texts := make([]string, len(chunk))
		for j, qi := range chunk {
			texts[j] = qs[qi].Query
		}
		start := time.Now()
		b, err := r.EmbedQueries(ctx, texts)
		if err != nil {
			return fmt.Errorf("eval: queries %d to %d: %w", chunk[0]+1, chunk[len(chunk)-1]+1, err)
		}
		share := time.Since(start) / time.Duration(len(chunk))
		for j, qi := range chunk {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := t.route(ctx, b, j, share, qi, qs[qi], mode); err != nil {
				return err
			}
			*done++
			if t.opts.Progress != nil {
				t.opts.Progress(*done, total)
			}
		}
	}
	return nil
}

// resolve fills in the defaults of opts and parses its mode.
func (opts Options) resolve() (Options, habilis.Mode, error) {
	if opts.K <= 0 {
		opts.K = selector.DefaultK
	}
	mode, err := habilis.ParseMode(string(opts.Mode))
	return opts, mode, err
}

// tally accumulates the figures of a Report one query at a time.
type tally struct {
	opts                           Options
	queries, toolQ, correct        int
	decided, rank1                 int
	recallSum, mrrSum              float64
	lat                            []float64
	pos, neg                       []float64
	abstainRight, abstainAll       int
	wrongAbstain                   int
	perTool                        map[string]*PerTool
	conf                           map[[2]string]*Confusion
	wrongAbstentions, missedAbstns []Miss
}

func newTally(opts Options) *tally {
	return &tally{opts: opts, perTool: map[string]*PerTool{}, conf: map[[2]string]*Confusion{}}
}

// route selects q, the qi-th query and the j-th of the batch b, and adds
// the outcome. Its latency is the selection's plus share, its part of
// embedding the batch.
func (t *tally) route(ctx context.Context, b *selector.QueryBatch, j int, share time.Duration, qi int, q Query, mode habilis.Mode) error {
	start := time.Now()
	// One embedding and one scan give the decision (first match or
	// abstention) and the ranking before the gates (recall, rank and
	// confidence).
	d, rk, err := b.SelectRanked(ctx, j, habilis.SelectOptions{K: t.opts.K, Mode: mode})
	t.lat = append(t.lat, float64((time.Since(start)+share).Nanoseconds())/1e3)
	if err != nil {
		return fmt.Errorf("eval: query %d %q: %w", qi+1, q.Query, err)
	}
	var top string
	if !d.Abstained && len(d.Matches) > 0 {
		top = d.Matches[0].Tool
	}
	ranked := make([]string, len(rk.Matches))
	for i, m := range rk.Matches {
		ranked[i] = m.Tool
	}
	t.add(q, top, d.Abstained, ranked, float64(rk.Confidence))
	return nil
}

// add counts one query: the decision's tool (top, "" when abstained), the
// ranking before the gates, best first, and the confidence that some tool
// applies.
func (t *tally) add(q Query, top string, abstained bool, ranking []string, confidence float64) {
	t.queries++
	if abstained {
		t.abstainAll++
	}
	if len(q.Expected) == 0 {
		t.neg = append(t.neg, confidence)
		if abstained {
			t.abstainRight++
			t.decided++
		} else {
			t.missedAbstns = appendUpTo(t.missedAbstns, Miss{Query: q.Query, Expected: []string{}, Chosen: top}, t.opts.MaxExamples)
		}
		return
	}
	t.toolQ++
	t.pos = append(t.pos, confidence)
	hit := top != "" && slices.Contains(q.Expected, top)
	if hit {
		t.correct++
		t.decided++
	}
	if abstained {
		t.wrongAbstain++
		t.wrongAbstentions = appendUpTo(t.wrongAbstentions, Miss{Query: q.Query, Expected: q.Expected}, t.opts.MaxExamples)
	}
	t.addRanking(q, ranking)
	t.addTools(q, top, hit)
}

// addRanking counts where a tool query's ranking puts its expected tools.
func (t *tally) addRanking(q Query, ranking []string) {
	found, first := 0, 0
	for rank, m := range ranking {
		if slices.Contains(q.Expected, m) {
			found++
			if first == 0 {
				first = rank + 1
			}
		}
	}
	if first == 1 {
		t.rank1++
	}
	t.recallSum += float64(found) / float64(len(q.Expected))
	if first > 0 {
		t.mrrSum += 1 / float64(first)
	}
}

// addTools counts a tool query for each tool it expects, and its misroute
// to top, when hit is false and top is not "", as a confusion.
func (t *tally) addTools(q Query, top string, hit bool) {
	for _, e := range q.Expected {
		pt := t.perTool[e]
		if pt == nil {
			pt = &PerTool{Tool: e}
			t.perTool[e] = pt
		}
		pt.Queries++
		if hit {
			pt.AccAt1++
		}
	}
	if !hit && top != "" {
		key := [2]string{q.Expected[0], top}
		c := t.conf[key]
		if c == nil {
			c = &Confusion{Expected: key[0], Chosen: key[1]}
			t.conf[key] = c
		}
		c.Count++
		c.Queries = appendUpTo(c.Queries, q.Query, t.opts.MaxExamples)
	}
}

// report returns the figures counted so far, over a catalog of tools.
func (t *tally) report(tools int, mode habilis.Mode) *Report {
	rep := &Report{Queries: t.queries, Tools: tools, Mode: mode, K: t.opts.K,
		WrongAbstentions: t.wrongAbstentions, MissedAbstentions: t.missedAbstns}
	if t.toolQ > 0 {
		n := float64(t.toolQ)
		rep.AccAt1 = float64(t.correct) / n
		rep.RankAccAt1 = float64(t.rank1) / n
		rep.RecallAtK = t.recallSum / n
		rep.MRR = t.mrrSum / n
		rep.NoTool.WrongAbstainRate = float64(t.wrongAbstain) / n
	}
	if t.queries > 0 {
		rep.DecisionAccuracy = float64(t.decided) / float64(t.queries)
	}
	rep.NoTool.Queries = len(t.neg)
	rep.NoTool.AUROC = AUROC(t.pos, t.neg)
	if t.abstainAll > 0 {
		rep.NoTool.AbstainPrecision = float64(t.abstainRight) / float64(t.abstainAll)
	}
	if len(t.neg) > 0 {
		rep.NoTool.AbstainRecall = float64(t.abstainRight) / float64(len(t.neg))
		rep.NoTool.AcceptedRate = 1 - rep.NoTool.AbstainRecall
	}
	rep.Latency = Latency{P50: percentile(t.lat, 0.5), P99: percentile(t.lat, 0.99)}
	for _, pt := range t.perTool {
		pt.AccAt1 /= float64(pt.Queries)
		rep.PerTool = append(rep.PerTool, *pt)
	}
	for _, c := range t.conf {
		rep.Confusions = append(rep.Confusions, *c)
	}
	rep.Order()
	rep.nonNil()
	return rep
}

// nonNil makes the report's lists empty rather than null in JSON.
func (rep *Report) nonNil() {
	if rep.PerTool == nil {
		rep.PerTool = []PerTool{}
	}
	if rep.Confusions == nil {
		rep.Confusions = []Confusion{}
	}
	if rep.WrongAbstentions == nil {
		rep.WrongAbstentions = []Miss{}
	}
	if rep.MissedAbstentions == nil {
		rep.MissedAbstentions = []Miss{}
	}
}

// Order sorts the report's lists for reading: the worst tools first, then
// the most frequent confusions first (ties by name, so output is stable).
func (rep *Report) Order() {
	sort.Slice(rep.PerTool, func(i, j int) bool {
		a, b := rep.PerTool[i], rep.PerTool[j]
		if a.AccAt1 != b.AccAt1 {
			return a.AccAt1 < b.AccAt1
		}
		return a.Tool < b.Tool
	})
	sort.Slice(rep.Confusions, func(i, j int) bool {
		a, b := rep.Confusions[i], rep.Confusions[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.Expected+"\x00"+a.Chosen < b.Expected+"\x00"+b.Chosen
	})
}

// appendUpTo appends v to s unless s holds limit values already; a limit
// of zero bounds nothing.
func appendUpTo[T any](s []T, v T, limit int) []T {
	if limit > 0 && len(s) >= limit {
		return s
	}
	return append(s, v)
}

// AUROC returns the area under the ROC curve of scores with pos as
// positives and neg as negatives (ties count half), or 0 when either is
// empty.
func AUROC(pos, neg []float64) float64 {
	if len(pos) == 0 || len(neg) == 0 {
		return 0
	}
	type item struct {
		s   float64
		pos bool
	}
	all := make([]item, 0, len(pos)+len(neg))
	for _, s := range pos {
		all = append(all, item{s, true})
	}
	for _, s := range neg {
		all = append(all, item{s, false})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].s < all[j].s })
	// Mann-Whitney U with average ranks for ties.
	var rankSum float64
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].s == all[i].s {
			j++
		}
		avg := float64(i+j+1) / 2 // ranks are 1-based: (i+1 + j) / 2
		for k := i; k < j; k++ {
			if all[k].pos {
				rankSum += avg
			}
		}
		i = j
	}
	np, nn := float64(len(pos)), float64(len(neg))
	return (rankSum - np*(np+1)/2) / (np * nn)
}

// percentile returns the q-quantile of xs (nearest rank), sorting a copy.
func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
