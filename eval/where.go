package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/habilis-router/habilis"
)

// Filter keeps the query rows whose field Field holds Value: a string
// field equal to Value, or any other field whose compact JSON is Value
// (true, 3, null).
type Filter struct {
	Field, Value string
}

// ParseFilter reads "FIELD=VALUE".
func ParseFilter(s string) (Filter, error) {
	f, v, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(f) == "" {
		return Filter{}, fmt.Errorf("filter %q: want FIELD=VALUE: %w", s, habilis.ErrInvalid)
	}
	return Filter{Field: strings.TrimSpace(f), Value: v}, nil
}

// Match reports whether q's row has the field with the value.
func (f Filter) Match(q Query) bool {
	raw, ok := q.Fields[f.Field]
	if !ok {
		return false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s == f.Value
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return false
	}
	return buf.String() == f.Value
}

// Where returns the queries every filter matches.
func Where(qs []Query, filters []Filter) []Query {
	if len(filters) == 0 {
		return qs
	}
	var out []Query
	for _, q := range qs {
		ok := true
		for _, f := range filters {
			ok = ok && f.Match(q)
		}
		if ok {
			out = append(out, q)
		}
	}
	return out
}

// WithoutExamples drops the queries that are examples of the catalog,
// ignoring case and spacing, and says how many it dropped.
func WithoutExamples(tools []habilis.Tool, qs []Query) ([]Query, int) {
	ex := map[string]bool{}
	for _, t := range tools {
		for _, e := range t.Examples {
			ex[normal(e)] = true
		}
	}
	var kept []Query
	for _, q := range qs {
		if !ex[normal(q.Query)] {
			kept = append(kept, q)
		}
	}
	return kept, len(qs) - len(kept)
}

// Halves splits queries in two by the low bit of a 32-bit FNV-1a hash of
// their text: a stable split anyone can reproduce. Queries equal ignoring
// case and spacing go to the half of the first of them: fitted on one
// half, the other is measured, and a query must not be measured against
// a catalog holding it as an example.
func Halves(qs []Query) (a, b []Query) {
	return splitBy(qs, func(text string) bool {
		h := fnv.New32a()
		h.Write([]byte(text))
		return h.Sum32()&1 == 1
	})
}

// splitBy splits qs in two, into b the queries whose text second holds
// for; a query equal to an earlier one ignoring case and spacing goes
// where that one went, whatever second says of it.
func splitBy(qs []Query, second func(text string) bool) (a, b []Query) {
	inB := map[string]bool{}
	for _, q := range qs {
		n := normal(q.Query)
		s, ok := inB[n]
		if !ok {
			s = second(q.Query)
			inB[n] = s
		}
		if s {
			b = append(b, q)
		} else {
			a = append(a, q)
		}
	}
	return a, b
}
