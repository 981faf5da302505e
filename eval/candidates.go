package eval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/catalog"
	"github.com/habilis-router/habilis/internal/suggest"
	"github.com/habilis-router/habilis/selector"
)

// parseCandidates reads a row's "candidates": an array whose elements are
// tool names (strings) or tool definitions in any shape catalog.Parse
// reads (objects); where names the row in errors, which name a definition
// by its place in the list.
func (q *Query) parseCandidates(where string, raw json.RawMessage) error {
	q.HasCandidates = true
	if string(raw) == "null" {
		q.HasCandidates = false
		return nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return fmt.Errorf("%s: field \"candidates\": must be an array of tool names or definitions: %w", where, habilis.ErrInvalid)
	}
	file := where + `: field "candidates"`
	defined := map[string]int{} // an inline tool's place in the list
	var errs []error
	for i, e := range elems {
		var name string
		switch {
		case json.Unmarshal(e, &name) == nil:
			if strings.TrimSpace(name) == "" {
				return fmt.Errorf("%s: field \"candidates\"[%d]: empty tool name: %w", where, i, habilis.ErrInvalid)
			}
			q.Candidates = append(q.Candidates, name)
		case len(e) > 0 && e[0] == '{':
			t, err := parseDefinition(file, i, e)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if j, dup := defined[t.Name]; dup {
				errs = append(errs, &catalog.Error{File: file, Index: i, Tool: t.Name, Field: "name", Msg: fmt.Sprintf("duplicates the name of tool %d", j)})
				continue
			}
			defined[t.Name] = i
			q.Inline = append(q.Inline, t)
			q.Candidates = append(q.Candidates, t.Name)
		default:
			return fmt.Errorf("%s: field \"candidates\"[%d]: want a tool name or a tool definition: %w", where, i, habilis.ErrInvalid)
		}
	}
	return errors.Join(errs...)
}

// parseDefinition parses the tool definition at place i of a candidates
// list, its problems named by that place as catalog.Parse names a tool
// by its place in a catalog.
func parseDefinition(file string, i int, def json.RawMessage) (habilis.Tool, error) {
	tools, err := catalog.Parse(file, append(append([]byte{'['}, def...), ']'))
	if err == nil {
		return tools[0], nil
	}
	var problems []error
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		problems = joined.Unwrap()
	} else {
		problems = []error{err}
	}
	for _, p := range problems {
		if ce, ok := p.(*catalog.Error); ok && ce.Index == 0 {
			ce.Index = i
		}
	}
	return habilis.Tool{}, err
}

// NewRouter returns an empty router to load one catalog into; candidates
// mode calls it once per distinct candidate list.
type NewRouter func(ctx context.Context) (*selector.Router, error)

// RunCandidates evaluates queries that carry their own catalogs: each query
// with a candidates list is routed within those tools only (names resolve
// against tools, the evaluated catalog, unless the list defines them
// inline), and a query without one within tools. Queries that share a
// candidate list share one router.
func RunCandidates(ctx context.Context, newRouter NewRouter, tools []habilis.Tool, qs []Query, opts Options) (*Report, error) {
	opts, mode, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	groups, order, err := groupByCatalog(tools, qs)
	if err != nil {
		return nil, err
	}
	t := newTally(opts)
	done := 0
	for _, key := range order {
		g := groups[key]
		r, err := newRouter(ctx)
		if err != nil {
			return nil, err
		}
		if _, err := r.Load(ctx, g.tools, selector.LoadOptions{}); err != nil {
			r.Close()
			return nil, fmt.Errorf("eval: load the catalog of query %d: %w", g.queries[0]+1, err)
		}
		err = t.routeAll(ctx, r, qs, g.queries, mode, &done, len(qs))
		r.Close()
		if err != nil {
			return nil, err
		}
	}
	return t.report(len(tools), mode), nil
}

// catalogGroup is the queries that share one catalog.
type catalogGroup struct {
	tools   []habilis.Tool
	queries []int
}

// groupByCatalog resolves each query's catalog and groups the queries by
// it, in order of first appearance.
func groupByCatalog(tools []habilis.Tool, qs []Query) (map[string]*catalogGroup, []string, error) {
	byName := make(map[string]habilis.Tool, len(tools))
	for _, t := range tools {
		byName[t.Name] = t
	}
	groups := map[string]*catalogGroup{}
	var order []string
	for qi, q := range qs {
		cat := tools
		key := "catalog"
		if q.HasCandidates {
			var err error
			if cat, err = q.catalog(byName); err != nil {
				return nil, nil, fmt.Errorf("eval: query %d %q: %w", qi+1, q.Query, err)
			}
			key = catalogKey(cat)
		}
		g := groups[key]
		if g == nil {
			g = &catalogGroup{tools: cat}
			groups[key] = g
			order = append(order, key)
		}
		g.queries = append(g.queries, qi)
	}
	return groups, order, nil
}

// catalog returns the tools of q's candidates list.
func (q *Query) catalog(byName map[string]habilis.Tool) ([]habilis.Tool, error) {
	out := make([]habilis.Tool, 0, len(q.Candidates))
	seen := map[string]bool{}
	for _, n := range q.Candidates {
		if seen[n] {
			continue
		}
		seen[n] = true
		if i := slices.IndexFunc(q.Inline, func(t habilis.Tool) bool { return t.Name == n }); i >= 0 {
			out = append(out, q.Inline[i])
			continue
		}
		t, ok := byName[n]
		if !ok {
			names := slices.Collect(maps.Keys(byName))
			for _, t := range q.Inline {
				names = append(names, t.Name)
			}
			return nil, fmt.Errorf("candidate %q: not in the catalog (--tools) and not defined inline%s: %w", n, habilis.DidYouMean(suggest.Names(n, names)), habilis.ErrNotFound)
		}
		out = append(out, t)
	}
	return out, nil
}

// catalogKey identifies a catalog by its tools' hashes, in name order.
func catalogKey(tools []habilis.Tool) string {
	hs := make([]string, len(tools))
	for i, t := range tools {
		hs[i] = t.Name + "\x00" + t.Hash()
	}
	slices.Sort(hs)
	sum := sha256.Sum256([]byte(strings.Join(hs, "\n")))
	return hex.EncodeToString(sum[:])
}
