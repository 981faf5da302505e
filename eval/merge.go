package eval

// merge combines the reports of a self-evaluation's folds, over a catalog
// of tools. Rates over tool queries are averaged weighted by each fold's
// tool queries, which is exact; no-tool figures by each fold's no-tool
// queries; latency takes the weighted mean of the medians and the worst
// p99.
func merge(reps []*Report, tools int) *Report {
	m := &merger{out: &Report{Tools: tools, Mode: reps[0].Mode, K: reps[0].K,
		PerTool: []PerTool{}, Confusions: []Confusion{}, WrongAbstentions: []Miss{}, MissedAbstentions: []Miss{}},
		perTool: map[string]*PerTool{}, conf: map[[2]string]*Confusion{}}
	for _, r := range reps {
		m.add(r)
	}
	return m.report()
}

// merger sums the folds' figures, each weighted by the queries it is a
// rate over, until report divides them.
type merger struct {
	out         *Report
	toolQ, negQ int
	perTool     map[string]*PerTool
	conf        map[[2]string]*Confusion
}

// add counts one fold's report.
func (m *merger) add(r *Report) {
	out := m.out
	tq, nq := r.Queries-r.NoTool.Queries, r.NoTool.Queries
	m.toolQ += tq
	m.negQ += nq
	out.Queries += r.Queries
	out.AccAt1 += r.AccAt1 * float64(tq)
	out.RankAccAt1 += r.RankAccAt1 * float64(tq)
	out.RecallAtK += r.RecallAtK * float64(tq)
	out.MRR += r.MRR * float64(tq)
	out.DecisionAccuracy += r.DecisionAccuracy * float64(r.Queries)
	out.NoTool.WrongAbstainRate += r.NoTool.WrongAbstainRate * float64(tq)
	out.NoTool.AUROC += r.NoTool.AUROC * float64(nq)
	out.NoTool.AbstainPrecision += r.NoTool.AbstainPrecision * float64(nq)
	out.NoTool.AbstainRecall += r.NoTool.AbstainRecall * float64(nq)
	out.Latency.P50 += r.Latency.P50 * float64(r.Queries)
	out.Latency.P99 = max(out.Latency.P99, r.Latency.P99)
	for _, pt := range r.PerTool {
		s := m.perTool[pt.Tool]
		if s == nil {
			s = &PerTool{Tool: pt.Tool}
			m.perTool[pt.Tool] = s
		}
		s.Queries += pt.Queries
		s.AccAt1 += pt.AccAt1 * float64(pt.Queries)
	}
	for _, c := range r.Confusions {
		key := [2]string{c.Expected, c.Chosen}
		s := m.conf[key]
		if s == nil {
			s = &Confusion{Expected: c.Expected, Chosen: c.Chosen}
			m.conf[key] = s
		}
		s.Count += c.Count
		s.Queries = append(s.Queries, c.Queries...)
	}
	out.WrongAbstentions = append(out.WrongAbstentions, r.WrongAbstentions...)
	out.MissedAbstentions = append(out.MissedAbstentions, r.MissedAbstentions...)
}

// report divides the sums by what they are rates over.
func (m *merger) report() *Report {
	out := m.out
	out.AccAt1, out.RecallAtK, out.MRR = div(out.AccAt1, m.toolQ), div(out.RecallAtK, m.toolQ), div(out.MRR, m.toolQ)
	out.RankAccAt1 = div(out.RankAccAt1, m.toolQ)
	out.NoTool.WrongAbstainRate = div(out.NoTool.WrongAbstainRate, m.toolQ)
	out.DecisionAccuracy = div(out.DecisionAccuracy, out.Queries)
	out.Latency.P50 = div(out.Latency.P50, out.Queries)
	out.NoTool.Queries = m.negQ
	out.NoTool.AUROC = div(out.NoTool.AUROC, m.negQ)
	out.NoTool.AbstainPrecision = div(out.NoTool.AbstainPrecision, m.negQ)
	out.NoTool.AbstainRecall = div(out.NoTool.AbstainRecall, m.negQ)
	for _, pt := range m.perTool {
		pt.AccAt1 = div(pt.AccAt1, pt.Queries)
		out.PerTool = append(out.PerTool, *pt)
	}
	for _, c := range m.conf {
		out.Confusions = append(out.Confusions, *c)
	}
	out.Order()
	return out
}

// div is x / n, or 0 when n is.
func div(x float64, n int) float64 {
	if n == 0 {
		return 0
	}
	return x / float64(n)
}
