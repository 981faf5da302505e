package selector

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/habilis-router/habilis"
)

// descriptionText is what a tool's description vector embeds: its name,
// description and argument names, so a request that names an argument
// ("in celsius", "to alice@…") finds the tool that takes it.
func descriptionText(t habilis.Tool) string {
	var b strings.Builder
	b.WriteString(t.Name)
	b.WriteString(". ")
	b.WriteString(t.Description)
	if args := argumentNames(t.InputSchema); len(args) > 0 {
		b.WriteString(" Arguments: ")
		b.WriteString(strings.Join(args, ", "))
		b.WriteString(".")
	}
	return b.String()
}

// documentText is the whole tool as one document, the lexical signal's view.
func documentText(t habilis.Tool) string {
	var b strings.Builder
	b.WriteString(descriptionText(t))
	for _, e := range t.Examples {
		b.WriteString("\n")
		b.WriteString(e)
	}
	return b.String()
}

// argumentNames returns the top-level property names of a JSON Schema,
// sorted; a schema that does not parse has none.
func argumentNames(schema json.RawMessage) []string {
	if len(schema) == 0 {
		return nil
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
