// Package ollamafill is a fill.Filler backed by a chat model on an Ollama
// server. The model sees the tool's arguments and only the user's words,
// and its answer is constrained to the tool's JSON Schema; fill.Fill then
// keeps only the values the user's words support, so a model that guesses
// cannot put words in the user's mouth.
package ollamafill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/ollama/ollama/api"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/fill"
)

// Options tune a Filler. The zero value caps answers at 256 tokens.
type Options struct {
	// NumPredict caps the tokens the model may generate; 0 means 256. The
	// cap also ends an answer that a grammar would let run on.
	NumPredict int
}

// Filler asks one Ollama chat model for a tool's arguments.
type Filler struct {
	client *api.Client
	model  string
	opts   Options
}

// New returns a Filler that asks model through client.
func New(client *api.Client, model string, opts Options) *Filler {
	return &Filler{client: client, model: model, opts: opts}
}

// Name returns "ollama:" and the model name.
func (f *Filler) Name() string { return "ollama:" + f.model }

// Fill asks the model for tool's arguments from query. It returns an error
// wrapping habilis.ErrInvalid for an unreadable schema, habilis.ErrNotFound
// when the server does not have the model, habilis.ErrUnavailable when the
// server cannot be reached or fails, and a plain error when the answer is
// not a JSON object.
func (f *Filler) Fill(ctx context.Context, tool habilis.Tool, query string) (map[string]any, error) {
	s, err := fill.ParseSchema(tool.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("schema of %q: %w", tool.Name, err)
	}
	numPredict := f.opts.NumPredict
	if numPredict <= 0 {
		numPredict = 256
	}
	stream := false
	req := &api.ChatRequest{
		Model: f.model,
		Messages: []api.Message{
			{Role: "system", Content: systemPrompt(tool, s)},
			{Role: "user", Content: query},
		},
		Stream:  &stream,
		Format:  fill.GrammarSchema(s),
		Options: map[string]any{"temperature": 0, "num_predict": numPredict},
	}
	var answer strings.Builder
	err = f.client.Chat(ctx, req, func(r api.ChatResponse) error {
		answer.WriteString(r.Message.Content)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ask ollama model %s: %w", f.model, classify(ctx, err))
	}
	args, err := parseAnswer(answer.String())
	if err != nil {
		return nil, fmt.Errorf("ollama model %s: %w", f.model, err)
	}
	return args, nil
}

// classify wraps a client error with the sentinel that says what to do
// about it, keeping the original text.
func classify(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var se api.StatusError
	if errors.As(err, &se) && se.StatusCode == http.StatusNotFound {
		return fmt.Errorf("%v: %w", err, habilis.ErrNotFound)
	}
	return fmt.Errorf("%v: %w", err, habilis.ErrUnavailable)
}

// parseAnswer reads the model's answer as a JSON object, tolerating a
// Markdown code fence around it.
func parseAnswer(s string) (map[string]any, error) {
	t := strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(t, "```"); ok {
		rest = strings.TrimPrefix(rest, "json")
		t = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "```"))
	}
	dec := json.NewDecoder(strings.NewReader(t))
	var args map[string]any
	if err := dec.Decode(&args); err != nil || args == nil {
		return nil, fmt.Errorf("answer is not a JSON object: %q", cut(s, 200))
	}
	return args, nil
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// systemPrompt describes the tool and its arguments and tells the model to
// copy values from the user's words and to leave out what is not there.
// The user's message is the only source of values.
func systemPrompt(tool habilis.Tool, s *fill.Schema) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You fill in the arguments of the tool %q: %s\n", tool.Name, strings.TrimSpace(tool.Description))
	if len(s.Order) > 0 {
		b.WriteString("Arguments:\n")
		for _, name := range s.Order {
			p := s.Properties[name]
			kind := strings.Join(p.Types, " or ")
			if kind == "" {
				kind = "any"
			}
			req := ""
			if slices.Contains(s.Required, name) {
				req = ", required"
			}
			fmt.Fprintf(&b, "- %s (%s%s)", name, kind, req)
			if d := strings.TrimSpace(p.Description); d != "" {
				fmt.Fprintf(&b, ": %s", d)
			}
			b.WriteByte('\n')
		}
	}
	b.WriteString("The user's message is the only source of values. Copy each value exactly as the user wrote it. " +
		"Leave out every argument the message does not state: never guess, never use examples or defaults. " +
		"Answer with one JSON object.")
	return b.String()
}
