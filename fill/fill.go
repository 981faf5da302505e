package fill

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/habilis-router/habilis"
)

// Filler proposes arguments for a tool from a user's request. Proposals
// are untrusted: Fill checks every value against the request before using
// it, so a filler may guess and a model may hallucinate without harm.
type Filler interface {
	// Fill returns proposed arguments, possibly incomplete. It returns an
	// error when it cannot answer at all (a model server that is down wraps
	// habilis.ErrUnavailable).
	Fill(ctx context.Context, tool habilis.Tool, query string) (map[string]any, error)
	// Name identifies the filler in results ("extractor", "ollama:qwen3:0.6b").
	Name() string
}

// Escalating is a Filler that asks Small first and Large only when Small's
// answer leaves a required argument missing or has a value rejected; Large
// then fills only what is still open. Given to Fill (directly or inside
// Options.Fillers) it is unrolled, so the result records which of the two
// filled each argument.
type Escalating struct {
	Small Filler
	// Large may be nil: Small's answer is then final.
	Large Filler
	// Now is the reference time for relative dates when Escalating runs as
	// a Filler of its own; inside Fill, Options.Now applies. Zero disables
	// relative dates.
	Now time.Time
}

// Name returns "small>large".
func (e Escalating) Name() string {
	return chainName(e.fillers())
}

// Fill runs the escalation and returns the checked arguments.
func (e Escalating) Fill(ctx context.Context, tool habilis.Tool, query string) (map[string]any, error) {
	r, err := Fill(ctx, tool, query, Options{Fillers: e.fillers(), Now: e.Now})
	if err != nil {
		return nil, err
	}
	return r.Arguments, nil
}

func (e Escalating) fillers() []Filler {
	var fs []Filler
	for _, f := range []Filler{e.Small, e.Large} {
		if f != nil {
			fs = append(fs, f)
		}
	}
	return fs
}

func chainName(fs []Filler) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name()
	}
	return strings.Join(names, ">")
}

// Options configure Fill.
type Options struct {
	// Fillers run in order: the first proposes arguments, and each later
	// one runs only while a required argument is missing or a value was
	// rejected, filling only what is still open. Nil means the built-in
	// extractor alone. With models, putting the Extractor last lets it
	// fill what they leave out.
	Fillers []Filler
	// Now is the reference time for relative dates ("tomorrow") and dates
	// without a year. Zero disables both: conservative and reproducible.
	Now time.Time
}

// MissingArg is a required argument the request does not supply, with a
// question to ask the user for it.
type MissingArg struct {
	// Name is the argument's path: "city" or "address.zip".
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Question    string `json:"question"`
}

// FillerError records a filler that failed; later fillers still ran.
type FillerError struct {
	Filler string `json:"filler"`
	Error  string `json:"error"`
}

// Result is the outcome of filling one tool's arguments.
type Result struct {
	Tool string `json:"tool"`
	// Arguments holds only values the request supports.
	Arguments map[string]any `json:"arguments"`
	// FilledBy maps each top-level argument to the filler that supplied it.
	FilledBy map[string]string `json:"filled_by"`
	// Rejected lists proposed values that were dropped, and why.
	Rejected []Rejection `json:"rejected"`
	// Missing lists required arguments nobody could support from the
	// request, each with a question for the user.
	Missing []MissingArg `json:"missing"`
	// Problems lists schema violations of the kept values (a number above
	// its maximum, a malformed e-mail address): the user said them, but the
	// tool will not accept them.
	Problems []Problem `json:"problems"`
	// Defaults holds the schema's defaults for arguments left unset. They
	// are not in Arguments: the user did not say them; an executor or the
	// tool may apply them.
	Defaults map[string]any `json:"defaults,omitempty"`
	// Errors lists fillers that failed while others answered.
	Errors []FillerError `json:"errors,omitempty"`
	// Complete reports that nothing is missing and there are no problems:
	// the tool can run.
	Complete bool `json:"complete"`
}

// Fill proposes arguments for tool from query with the configured fillers,
// keeps only values the query supports (see Check), escalates to later
// fillers while something is missing or rejected, and validates the result
// against the tool's schema. It returns an error wrapping habilis.ErrInvalid
// for an unreadable schema, the context's error when it ends, and the last
// filler's error when every filler failed.
func Fill(ctx context.Context, tool habilis.Tool, query string, opts Options) (*Result, error) {
	schema, err := ParseSchema(tool.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("fill %q: %w", tool.Name, err)
	}
	fillers := unroll(opts.Fillers)
	if len(fillers) == 0 {
		fillers = []Filler{&Extractor{Now: opts.Now}}
	}
	r := &Result{
		Tool:      tool.Name,
		Arguments: map[string]any{},
		FilledBy:  map[string]string{},
		Rejected:  []Rejection{},
		Missing:   []MissingArg{},
		Problems:  []Problem{},
	}
	var lastErr error
	answered := false
	for i, f := range fillers {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("fill %q: %w", tool.Name, err)
		}
		if i > 0 && answered && !needsMore(schema, r) {
			break
		}
		proposed, err := f.Fill(ctx, tool, query)
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, fmt.Errorf("fill %q: %w", tool.Name, ctxErr)
			}
			lastErr = err
			r.Errors = append(r.Errors, FillerError{Filler: f.Name(), Error: err.Error()})
			continue
		}
		answered = true
		kept, rejected := Check(schema, query, proposed, CheckOptions{Now: opts.Now})
		for j := range rejected {
			rejected[j].By = f.Name()
		}
		r.Rejected = append(r.Rejected, rejected...)
		for _, name := range orderedNames(schema, kept) {
			if _, done := r.Arguments[name]; !done {
				r.Arguments[name] = kept[name]
				r.FilledBy[name] = f.Name()
			}
		}
	}
	if !answered {
		return nil, fmt.Errorf("fill %q: %w", tool.Name, lastErr)
	}
	r.assess(schema)
	return r, nil
}

// Given returns the Result of arguments that a caller supplied itself, all
// attributed to by: what the schema requires and they lack (nested objects
// included), what breaks the schema, and the defaults of unset arguments,
// as Fill reports its own. It returns an error wrapping habilis.ErrInvalid
// for an unreadable schema.
func Given(tool habilis.Tool, args map[string]any, by string) (*Result, error) {
	schema, err := ParseSchema(tool.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("fill %q: %w", tool.Name, err)
	}
	r := &Result{
		Tool:      tool.Name,
		Arguments: args,
		FilledBy:  make(map[string]string, len(args)),
		Rejected:  []Rejection{},
		Missing:   []MissingArg{},
		Problems:  []Problem{},
	}
	for name := range args {
		r.FilledBy[name] = by
	}
	r.assess(schema)
	return r, nil
}

// assess fills in what r's arguments lack and break under schema: Missing,
// Problems (other than missing arguments), Defaults and Complete.
func (r *Result) assess(schema *Schema) {
	missingArgs(schema, r.Arguments, "", &r.Missing)
	for _, p := range Validate(schema, r.Arguments) {
		if p.Message != missingMessage {
			r.Problems = append(r.Problems, p)
		}
	}
	for _, name := range schema.Order {
		if ps := schema.Properties[name]; ps.HasDefault {
			if _, set := r.Arguments[name]; !set {
				if r.Defaults == nil {
					r.Defaults = map[string]any{}
				}
				r.Defaults[name] = ps.Default
			}
		}
	}
	r.Complete = len(r.Missing) == 0 && len(r.Problems) == 0
}

// unroll flattens Escalating fillers so Fill can attribute each argument.
func unroll(fs []Filler) []Filler {
	var out []Filler
	for _, f := range fs {
		switch e := f.(type) {
		case nil:
		case Escalating:
			out = append(out, unroll(e.fillers())...)
		case *Escalating:
			if e != nil {
				out = append(out, unroll(e.fillers())...)
			}
		default:
			out = append(out, f)
		}
	}
	return out
}

// needsMore reports whether a later filler should run: a required argument
// is missing or a proposed value was rejected and its argument is unset.
func needsMore(s *Schema, r *Result) bool {
	var missing []MissingArg
	missingArgs(s, r.Arguments, "", &missing)
	if len(missing) > 0 {
		return true
	}
	for _, rej := range r.Rejected {
		top, _, _ := strings.Cut(rej.Path, ".")
		top, _, _ = strings.Cut(top, "[")
		if _, set := r.Arguments[top]; !set {
			return true
		}
	}
	return false
}

func missingArgs(s *Schema, obj map[string]any, path string, out *[]MissingArg) {
	if s == nil {
		return
	}
	for _, name := range s.Required {
		ps := s.Properties[name]
		v, ok := obj[name]
		if !ok {
			m := MissingArg{Name: join(path, name), Question: Question(name, ps)}
			if ps != nil {
				m.Description = ps.Description
			}
			*out = append(*out, m)
			continue
		}
		if sub, isObj := v.(map[string]any); isObj && ps != nil {
			missingArgs(ps, sub, join(path, name), out)
		}
	}
}

// Question returns a question asking the user for argument name, built from
// its description: "The city to get the weather for" gives "Which city do
// you want the weather for?", "The base of the triangle" gives "What is the
// base of the triangle?". Enum arguments list their choices.
func Question(name string, s *Schema) string {
	var desc string
	if s != nil {
		desc = cleanDescription(s.Description)
	}
	subject := strings.Join(words(name), " ")
	var q string
	lower := lowerFirst(desc)
	wc := len(strings.Fields(desc))
	switch {
	case desc == "":
		q = fmt.Sprintf("What %s should I use?", subject)
	case strings.HasPrefix(lower, "whether to "):
		q = "Do you want to " + strings.TrimPrefix(lower, "whether to ") + "?"
	case wc > 12:
		q = fmt.Sprintf("What %s should I use (%s)?", subject, desc)
	default:
		if m := whichPattern.FindStringSubmatch(lower); m != nil && !strings.Contains(m[1], " of ") {
			rest := m[3]
			if m[2] == "to" {
				if v := leadingVerb(rest); v != "" {
					rest = strings.TrimPrefix(rest[len(v):], " ")
				} else {
					rest = "to " + rest
				}
			} else {
				rest = m[2] + " " + rest
			}
			q = fmt.Sprintf("Which %s do you want %s?", m[1], rest)
			break
		}
		if m := articlePattern.FindStringSubmatch(lower); m != nil {
			lower = m[1]
		}
		q = fmt.Sprintf("What is the %s?", lower)
	}
	if s != nil && len(s.Enum) > 0 {
		q += " (one of " + enumList(s.Enum) + ")"
	}
	return q
}

// leadingVerb returns the retrieval verb that starts s ("get", "look up"),
// which a question can drop: "to get the weather for" asks "the weather for".
func leadingVerb(s string) string {
	for _, v := range []string{"get", "fetch", "retrieve", "look up", "check", "find", "show"} {
		if strings.HasPrefix(s, v+" ") {
			return v
		}
	}
	return ""
}

// cleanDescription keeps the first clause of a description that matters for
// a question: it drops examples, type notes and trailing periods.
func cleanDescription(d string) string {
	d = strings.Join(strings.Fields(d), " ")
	low := strings.ToLower(d)
	for _, cut := range []string{"(type:", ", e.g.", " e.g.", "(e.g.", ", such as", " (default", ". ", ", for example", " - "} {
		if i := strings.Index(low, cut); i > 0 {
			d, low = d[:i], low[:i]
		}
	}
	return strings.TrimRight(strings.TrimSpace(d), ".:;, ")
}

// lowerFirst lowercases the first letter unless it starts an acronym.
func lowerFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	next, _ := utf8.DecodeRuneInString(s[n:])
	if unicode.IsUpper(next) {
		return s
	}
	return string(unicode.ToLower(r)) + s[n:]
}
