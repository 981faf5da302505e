// Command synth writes a synthetic but realistic habilis catalog for load
// tests: N tools named after a domain, an action and an object, each with
// a description, a JSON Schema of one to three arguments and five example
// requests (-examples) built from word lists. The same -n and -seed always give the
// same file.
//
//	go run ./api/internal/synth -n 10000 -o tools.json -queries queries.json
//
// With -queries it also writes requests for load generators: a JSON array
// of {"query": "..."} objects (ghz's -D format), each a fresh paraphrase of
// a random tool's examples.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
)

func main() {
	n := flag.Int("n", 200, "number of tools")
	out := flag.String("o", "-", "output file (- for stdout)")
	seed := flag.Uint64("seed", 1, "random seed")
	queries := flag.String("queries", "", "also write this many -nq queries to this file")
	nq := flag.Int("nq", 1000, "number of queries for -queries")
	nEx := flag.Int("examples", 5, "examples a tool")
	flag.Parse()
	if err := run(*n, *nEx, *out, *seed, *queries, *nq); err != nil {
		fmt.Fprintf(os.Stderr, "synth: %v\n", err)
		os.Exit(1)
	}
}

func run(n, nEx int, out string, seed uint64, queriesFile string, nq int) error {
	if n < 1 {
		return fmt.Errorf("-n %d: want at least 1", n)
	}
	if nEx < 0 {
		return fmt.Errorf("-examples %d: want at least 0", nEx)
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	tools, specs := generate(n, nEx, r)
	if err := writeJSON(out, tools, " "); err != nil {
		return err
	}
	if queriesFile == "" {
		return nil
	}
	v := vocabulary()
	type request struct {
		Query string `json:"query"`
	}
	reqs := make([]request, nq)
	for i := range reqs {
		sp := specs[r.IntN(len(specs))]
		reqs[i].Query = pick(r, examples(r, v, sp.domain, sp.action, sp.object, 5))
	}
	return writeJSON(queriesFile, reqs, "")
}

// writeJSON writes v to the file out ("-" for stdout).
func writeJSON(out string, v any, indent string) (err error) {
	var w io.Writer = os.Stdout
	if out != "-" {
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}()
		w = f
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", indent)
	return enc.Encode(v)
}

// spec is what a tool was made of.
type spec struct{ domain, action, object string }

// tool is a catalog entry in habilis' shape.
type tool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Examples    []string       `json:"examples"`
	InputSchema map[string]any `json:"inputSchema"`
}

// words are the lists tools are made of.
type words struct {
	domains, actions, objects, adjectives, places, times, openers []string
}

func vocabulary() words {
	return words{
		domains: strings.Fields(`calendar email crm billing invoice payroll inventory shipping weather maps travel
			flights hotel restaurant recipe fitness health pharmacy bank stocks crypto insurance tax legal hr
			recruiting ticketing support chat sms phone contacts notes docs spreadsheet slides drive photos
			video music podcast news search translate dictionary math unit currency timezone github gitlab jira
			kubernetes docker database analytics logging monitoring alerts dns cdn storage backup security vpn
			iot thermostat lights garden car parking transit bike ride energy solar school library course quiz`),
		actions: strings.Fields(`create update delete list find get search send cancel schedule book archive
			export import share sync summarize translate convert calculate check track approve reject assign
			close reopen merge restore compare rename move tag`),
		objects: strings.Fields(`event meeting reminder message invoice order payment refund report ticket
			issue task note document file folder photo playlist contact account user team project budget
			forecast record entry booking reservation subscription alert backup deployment container query
			dashboard route address review comment label policy claim receipt shipment package`),
		adjectives: strings.Fields(`new old latest pending overdue urgent monthly weekly daily shared private
			recent draft final important unread archived public quarterly annual`),
		places: strings.Fields(`Paris Berlin Tokyo Lisbon Madrid Oslo Chicago Toronto Sydney Nairobi Seoul
			Mumbai Lima Dublin Prague Austin Denver Cairo Rome Vienna`),
		times:   []string{"today", "tomorrow", "this week", "next Monday", "by Friday", "tonight", "at 9am", "next month", "right now", "this weekend"},
		openers: []string{"please", "can you", "I need to", "help me", "could you", "I want to", "quickly", "go ahead and"},
	}
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// generate makes n tools with unique names: every (domain, action,
// object) triple first, then the same with a numeric suffix.
func generate(n, nEx int, r *rand.Rand) ([]tool, []spec) {
	v := vocabulary()
	tools := make([]tool, 0, n)
	specs := make([]spec, 0, n)
	seen := map[string]bool{}
	for len(tools) < n {
		d, a, o := pick(r, v.domains), pick(r, v.actions), pick(r, v.objects)
		name := d + "_" + a + "_" + o
		for i := 2; seen[name]; i++ {
			name = fmt.Sprintf("%s_%s_%s_%d", d, a, o, i)
		}
		seen[name] = true
		tools = append(tools, tool{
			Name:        name,
			Description: description(r, v, d, a, o),
			Examples:    examples(r, v, d, a, o, nEx),
			InputSchema: schema(r, o),
		})
		specs = append(specs, spec{d, a, o})
	}
	return tools, specs
}

func description(r *rand.Rand, v words, d, a, o string) string {
	templates := []string{
		"%s %s in the %s service.",
		"%s %s stored in %s, with filters for %s items.",
		"Use this to %s the %s of a %s account; works on %s entries.",
	}
	t := pick(r, templates)
	title := strings.ToUpper(a[:1]) + a[1:]
	switch {
	case strings.Count(t, "%s") == 3:
		return fmt.Sprintf(t, title, article(o)+" "+o, d)
	case strings.HasPrefix(t, "Use"):
		return fmt.Sprintf(t, a, o, d, pick(r, v.adjectives))
	}
	return fmt.Sprintf(t, title, plural(o), d, pick(r, v.adjectives))
}

// plural is good enough for the object words.
func plural(w string) string {
	switch {
	case strings.HasSuffix(w, "y") && !strings.HasSuffix(w, "ey"):
		return w[:len(w)-1] + "ies"
	case strings.HasSuffix(w, "s"), strings.HasSuffix(w, "x"), strings.HasSuffix(w, "ch"), strings.HasSuffix(w, "sh"):
		return w + "es"
	}
	return w + "s"
}

// article returns "a" or "an" for w.
func article(w string) string {
	if strings.ContainsRune("aeiou", rune(w[0])) {
		return "an"
	}
	return "a"
}

// examples returns n requests for the tool, from the templates in turn.
func examples(r *rand.Rand, v words, d, a, o string, n int) []string {
	templates := []func() string{
		func() string {
			return fmt.Sprintf("%s %s the %s %s in %s", pick(r, v.openers), a, pick(r, v.adjectives), o, d)
		},
		func() string { return fmt.Sprintf("%s my %s %s for %s", a, d, o, pick(r, v.places)) },
		func() string {
			return fmt.Sprintf("%s %s %s %s %s", pick(r, v.openers), a, article(o), o, pick(r, v.times))
		},
		func() string { return fmt.Sprintf("in %s, %s every %s %s", d, a, pick(r, v.adjectives), o) },
		func() string {
			return fmt.Sprintf("%s %s the %s from %s %s", pick(r, v.openers), a, o, pick(r, v.places), pick(r, v.times))
		},
	}
	out := make([]string, 0, n)
	seen := map[string]bool{}
	for i := 0; len(out) < n; i++ {
		// A catalog refuses a tool with the same example twice: draw
		// again, and after a few tries number it.
		e := templates[i%len(templates)]()
		for try := 0; seen[e] && try < 8; try++ {
			e = templates[(i+try)%len(templates)]()
		}
		if seen[e] {
			e = fmt.Sprintf("%s, take %d", e, len(out)+1)
		}
		seen[e] = true
		out = append(out, e)
	}
	return out
}

func schema(r *rand.Rand, o string) map[string]any {
	props := map[string]any{
		o + "_id": map[string]any{"type": "string", "description": "Identifier of the " + o},
	}
	required := []string{o + "_id"}
	if r.IntN(2) == 0 {
		props["limit"] = map[string]any{"type": "integer", "description": "Maximum number of results"}
	}
	if r.IntN(3) == 0 {
		props["when"] = map[string]any{"type": "string", "description": "Date or time, e.g. tomorrow at 9am"}
	}
	return map[string]any{"type": "object", "properties": props, "required": required}
}
