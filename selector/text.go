package selector

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strings"

	"github.com/habilis-router/habilis"
)

// descriptionText is what a tool's description vector embeds: its name,
// description and arguments (names and descriptions), so a request that
// names an argument ("in celsius", "the base of the triangle") finds the
// tool that takes it.
func descriptionText(t habilis.Tool) string {
	var b strings.Builder
	b.WriteString(t.Name)
	b.WriteString(". ")
	b.WriteString(t.Description)
	for _, a := range arguments(t.InputSchema) {
		b.WriteString("\n")
		b.WriteString(a.name)
		if a.description != "" {
			b.WriteString(": ")
			b.WriteString(a.description)
		}
	}
	return b.String()
}

// modelDescriptionWords is the length of description beyond which a
// model embeds its first sentence alone (modelDescriptionText).
const modelDescriptionWords = 50

// descriptionVectorText is the text of a tool's description vector, desc
// being its description text (descriptionText): desc itself with the
// lexical embedder, modelDescriptionText with a model.
func descriptionVectorText(t habilis.Tool, desc string, lexical bool) string {
	if lexical {
		return desc
	}
	return modelDescriptionText(t)
}

// modelDescriptionText is what a model embedder's description vector
// embeds: the tool's name and description without its arguments, and of a
// description over modelDescriptionWords words its first sentence. A
// sentence encoder reads the text as one statement of what the tool does;
// argument lists and the paragraphs of usage notes MCP tools carry pull
// that statement away from the requests the tool serves. The lexical
// signal keeps the arguments (descriptionText), where a request naming
// one finds them word for word. Chosen on the tuning parts of the
// description-only sets with a semantic model: MCP ranking top-1 57.1 ->
// 59.6 %, the others within half a point (docs/models.md).
func modelDescriptionText(t habilis.Tool) string {
	d := strings.TrimSpace(t.Description)
	if len(strings.Fields(d)) > modelDescriptionWords {
		d = firstSentence(d)
	}
	if d == "" {
		return t.Name
	}
	return t.Name + ". " + d
}

// firstSentence returns d up to its first full stop or line break, or d
// when it has none.
func firstSentence(d string) string {
	if i := strings.IndexAny(d, ".\n"); i > 0 {
		return d[:i]
	}
	return d
}

// documentText is the whole tool as one document, the lexical signal's
// view: its description text (descriptionText) and its examples.
func documentText(desc string, examples []string) string {
	var b strings.Builder
	b.WriteString(desc)
	for _, e := range examples {
		b.WriteString("\n")
		b.WriteString(e)
	}
	return b.String()
}

// toolDocument is the text of tool t's document vector, desc being its
// description text: documentText with its examples, or summaryText
// without any.
func toolDocument(desc string, t habilis.Tool) string {
	if len(t.Examples) == 0 {
		return summaryText(t)
	}
	return documentText(desc, t.Examples)
}

// heldOutDocuments returns, for each of t's first maxCalibrationExamples
// examples, the lexical vector of t's document without that example: what
// the document signal would be had the example been a new request. It
// returns nil when embedding fails (only a cancelled ctx can make the
// lexical embedder fail), and calibration then leaves the document out.
//
// An embedder of joins (joinedEmbedder) makes each document from the
// description and the examples it joins, analysed once each, rather
// than from its text.
func heldOutDocuments(ctx context.Context, lex habilis.Embedder, t habilis.Tool) []habilis.Vector {
	n := min(len(t.Examples), maxCalibrationExamples)
	desc := descriptionText(t)
	var vs []habilis.Vector
	var err error
	if je, ok := lex.(joinedEmbedder); ok {
		vs, err = je.EmbedJoined(ctx, append([]string{desc}, t.Examples...), leaveOneOutGroups(len(t.Examples), n))
	} else {
		texts := make([]string, n)
		for k := range n {
			texts[k] = documentText(desc, slices.Delete(slices.Clone(t.Examples), k, k+1))
		}
		vs, err = lex.Embed(ctx, texts, habilis.Document)
	}
	if err != nil || len(vs) != n {
		return nil
	}
	return vs
}

// joinedEmbedder is an embedder of texts joined by newlines that
// analyses each text once however many joins name it (the lexical one's
// EmbedJoined): a group's vector is Embed's of its texts joined.
type joinedEmbedder interface {
	EmbedJoined(ctx context.Context, texts []string, groups [][]int) ([]habilis.Vector, error)
}

// leaveOneOutGroups returns, for each of the first n of m examples, the
// parts of the document without it: the description (0) and every other
// example (k + 1 for example k).
func leaveOneOutGroups(m, n int) [][]int {
	groups := make([][]int, n)
	for k := range groups {
		g := make([]int, 0, m)
		g = append(g, 0)
		for j := range m {
			if j != k {
				g = append(g, j+1)
			}
		}
		groups[k] = g
	}
	return groups
}

// heldOutQueries returns the lexical vectors of t's first
// maxCalibrationExamples examples, embedded as requests, or nil when they
// cannot be embedded: what calibration scores held-out examples with
// against the documents when the main embedder is a model.
func heldOutQueries(ctx context.Context, lex habilis.Embedder, t habilis.Tool) []habilis.Vector {
	n := min(len(t.Examples), maxCalibrationExamples)
	vs, err := lex.Embed(ctx, t.Examples[:n], habilis.Query)
	if err != nil || len(vs) != n {
		return nil
	}
	return vs
}

type argument struct{ name, description string }

// arguments returns the top-level properties of a JSON Schema with their
// descriptions, sorted by name; a schema that does not parse has none.
func arguments(schema json.RawMessage) []argument {
	if len(schema) == 0 {
		return nil
	}
	var s struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	args := make([]argument, 0, len(s.Properties))
	for n, p := range s.Properties {
		args = append(args, argument{n, p.Description})
	}
	sort.Slice(args, func(i, j int) bool { return args[i].name < args[j].name })
	return args
}

// summaryText is the document of a tool without examples, the lexical
// signal's view of it beside its description text: its name, twice, and
// the first sentence of its description. Descriptions of MCP tools run to
// paragraphs of usage notes, in which the few words that say what the tool
// does weigh little once the vector is normalised; the name and the first
// sentence say it. Chosen on the tuning parts over the other documents
// docs/quality.md lists (a summary document for tools without examples).
func summaryText(t habilis.Tool) string {
	d := firstSentence(strings.TrimSpace(t.Description))
	return t.Name + ". " + t.Name + ". " + d
}
