package toolmap

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/habilis-router/habilis/internal/suggest"
)

// choose returns the indexes of the records to draw, in record order, and
// says which they are when not the whole catalog: the named tools and the
// tools they collide with; else, in a catalog larger than limit, the
// request's nearest tools or the colliding ones. The tools a request
// passes are drawn whenever there is room, so that its lines have ends.
func choose(in Input, limit int) ([]int, string, error) {
	byName := make(map[string]int, len(in.Records))
	for i := range in.Records {
		byName[in.Records[i].Tool.Name] = i
	}
	c := &chosen{byName: byName, seen: map[int]bool{}, limit: limit}
	var shown string
	switch {
	case len(in.Tools) > 0:
		for _, name := range in.Tools {
			if _, ok := byName[name]; !ok {
				return nil, "", suggest.UnknownTool(name, byName)
			}
			c.add(name)
		}
		for _, col := range in.Collisions {
			if slices.Contains(in.Tools, col.A) {
				c.add(col.B)
			}
			if slices.Contains(in.Tools, col.B) {
				c.add(col.A)
			}
		}
		shown = "the named tools and the tools they collide with"
	case len(in.Records) <= limit:
		for i := range in.Records {
			c.add(in.Records[i].Tool.Name)
		}
	case in.Query != nil:
		c.addPassed(in.Query)
		names := make([]string, 0, len(in.Records))
		for i := range in.Records {
			names = append(names, in.Records[i].Tool.Name)
		}
		slices.SortStableFunc(names, func(a, b string) int { return cmp.Compare(in.Query.Scores[b], in.Query.Scores[a]) })
		for _, n := range names {
			c.add(n)
		}
		shown = "the tools nearest the request"
	default:
		for _, col := range in.Collisions {
			c.add(col.A)
			c.add(col.B)
		}
		shown = "the colliding tools, worst collisions first"
		if len(c.order) == 0 {
			for i := range in.Records {
				c.add(in.Records[i].Tool.Name)
			}
			shown = "the first tools by name (none collide)"
		}
	}
	if in.Query != nil {
		c.addPassed(in.Query)
	}
	if len(c.order) == len(in.Records) {
		shown = ""
	} else if shown != "" {
		shown = fmt.Sprintf("%d of %d tools: %s", len(c.order), len(in.Records), shown)
	}
	slices.Sort(c.order)
	return c.order, shown, nil
}

// chosen collects record indexes up to a limit, each once.
type chosen struct {
	byName map[string]int
	seen   map[int]bool
	order  []int
	limit  int
}

// add adds the named tool when it exists, is new and there is room.
func (c *chosen) add(name string) {
	i, ok := c.byName[name]
	if !ok || c.seen[i] || len(c.order) >= c.limit {
		return
	}
	c.seen[i] = true
	c.order = append(c.order, i)
}

// addPassed adds the tools whose gate the request passes.
func (c *chosen) addPassed(q *Query) {
	if q.Decision == nil {
		return
	}
	for _, m := range q.Decision.Matches {
		if m.Passed {
			c.add(m.Tool)
		}
	}
}
