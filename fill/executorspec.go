package fill

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/jsonform"
)

// Executor kinds.
const (
	ExecutorHTTP    = "http"
	ExecutorCommand = "command"
	ExecutorMCP     = "mcp"
)

// ExecutorSpec is a tool's executor, as written in the catalog (habilis.Tool's
// Executor field). Which fields apply depends on Kind.
type ExecutorSpec struct {
	// Kind is "http", "command" or "mcp".
	Kind string `json:"kind"`

	// Method (http) is the HTTP method; "" means POST. POST, PUT and PATCH
	// send the arguments as a JSON body, GET and DELETE as query parameters.
	Method string `json:"method,omitempty"`
	// URL is the endpoint (http) or the MCP server (mcp over http).
	URL string `json:"url,omitempty"`
	// Headers (http, mcp over http) are sent with every request. A value
	// "env:NAME" is replaced by the environment variable NAME, looked up
	// through the executor's LookupEnv option, so secrets never sit in the catalog.
	Headers map[string]string `json:"headers,omitempty"`

	// Argv (command) is the program and its arguments. An element that is
	// exactly "{name}" is replaced by argument name's value, as one
	// argument; templates inside a longer element are refused, so a value
	// can never become two arguments or an option.
	Argv []string `json:"argv,omitempty"`
	// Stdin (command) is "json" (the arguments as a JSON object; the
	// default) or "none".
	Stdin string `json:"stdin,omitempty"`
	// Dir (command, mcp over stdio) is the working directory; "" is the
	// caller's.
	Dir string `json:"dir,omitempty"`
	// Env (command, mcp over stdio) names the environment variables the
	// process receives, looked up through the executor's LookupEnv option. Nothing else
	// is passed, not even PATH.
	Env []string `json:"env,omitempty"`

	// Transport (mcp) is "stdio" or "http"; "" infers it from Command or URL.
	Transport string `json:"transport,omitempty"`
	// Command (mcp over stdio) starts the server.
	Command []string `json:"command,omitempty"`
	// Tool (mcp) is the tool's name on the server; "" means the catalog
	// name.
	Tool string `json:"tool,omitempty"`

	// Timeout bounds one run ("5s"); "" means the executor's default.
	Timeout string `json:"timeout,omitempty"`
	// MaxOutput caps the bytes of output kept; 0 means the executor's limit,
	// and it can only lower that limit.
	MaxOutput int `json:"max_output,omitempty"`

	timeout time.Duration
}

// ExecutorError is one problem of an executor spec: Field is its path
// inside the spec ("timeout", "env[1]"), "" for the spec as a whole. It
// unwraps to habilis.ErrInvalid.
type ExecutorError struct {
	Field, Msg string
}

func (e *ExecutorError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

// Unwrap makes every spec problem an habilis.ErrInvalid.
func (e *ExecutorError) Unwrap() error { return habilis.ErrInvalid }

// ExecutorFields returns the fields an executor spec may have, in the
// order ExecutorSpec declares them.
func ExecutorFields() []string {
	var out []string
	for _, f := range specFields() {
		out = append(out, f.name)
	}
	return out
}

// specField is a field of ExecutorSpec by its JSON name.
type specField struct {
	name string
	typ  reflect.Type
}

// specFields returns ExecutorSpec's JSON fields, in declaration order.
func specFields() []specField {
	t := reflect.TypeFor[ExecutorSpec]()
	var out []specField
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" {
			out = append(out, specField{name, t.Field(i).Type})
		}
	}
	return out
}

// ParseExecutorSpec reads and validates an executor spec, as a catalog
// loads it and as a run reads it again. Problems are *ExecutorError;
// unknown fields are errors, so a misspelt "timout" does not silently
// mean no timeout.
func ParseExecutorSpec(raw json.RawMessage) (*ExecutorSpec, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var s ExecutorSpec
	if err := dec.Decode(&s); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, &ExecutorError{Field: te.Field, Msg: fmt.Sprintf("must be %s, found %s", specType(te.Field, te.Type), te.Value)}
		}
		return nil, &ExecutorError{Msg: err.Error()}
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// specType names in an error the JSON form of the spec's field, whose
// value or element (of type t) did not decode.
func specType(field string, t reflect.Type) string {
	for _, f := range specFields() {
		if f.name == field {
			t = f.typ
		}
	}
	return jsonform.Of(t)
}

// RunTimeout is the spec's timeout, 0 when it sets none.
func (s *ExecutorSpec) RunTimeout() time.Duration { return s.timeout }

func invalid(field, format string, a ...any) error {
	return &ExecutorError{Field: field, Msg: fmt.Sprintf(format, a...)}
}

func (s *ExecutorSpec) validate() error {
	if err := s.validateLimits(); err != nil {
		return err
	}
	if err := s.validateEnv(); err != nil {
		return err
	}
	switch s.Kind {
	case ExecutorHTTP:
		return s.validateHTTP()
	case ExecutorCommand:
		return s.validateCommand()
	case ExecutorMCP:
		return s.validateMCP()
	case "":
		return invalid("kind", "required: \"http\", \"command\" or \"mcp\"")
	default:
		return invalid("kind", "%q: want \"http\", \"command\" or \"mcp\"", s.Kind)
	}
}

// validateLimits checks the timeout and the output cap, and keeps the
// parsed timeout.
func (s *ExecutorSpec) validateLimits() error {
	if s.Timeout != "" {
		d, err := time.ParseDuration(s.Timeout)
		if err != nil || d <= 0 {
			return invalid("timeout", "%q is not a positive duration like \"5s\"", s.Timeout)
		}
		s.timeout = d
	}
	if s.MaxOutput < 0 {
		return invalid("max_output", "must not be negative")
	}
	return nil
}

// validateEnv checks the names of environment variables, passed to a
// process or referred to by a header.
func (s *ExecutorSpec) validateEnv() error {
	for i, name := range s.Env {
		if !envName(name) {
			return invalid(fmt.Sprintf("env[%d]", i), "%q is not a variable name", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Headers)) {
		if name == "" || strings.ContainsAny(name, " :\r\n") {
			return invalid("headers", "%q is not a header name", name)
		}
		if ref, ok := strings.CutPrefix(s.Headers[name], "env:"); ok && !envName(ref) {
			return invalid("headers."+name, "%q is not a variable name", ref)
		}
	}
	return nil
}

// validateHTTP checks an http executor; the method defaults to POST.
func (s *ExecutorSpec) validateHTTP() error {
	if err := checkURL(s.URL); err != nil {
		return err
	}
	s.Method = strings.ToUpper(s.Method)
	if s.Method == "" {
		s.Method = "POST"
	}
	if !slices.Contains([]string{"GET", "POST", "PUT", "PATCH", "DELETE"}, s.Method) {
		return invalid("method", "%q: want GET, POST, PUT, PATCH or DELETE", s.Method)
	}
	return nil
}

// validateCommand checks a command executor; stdin defaults to "json".
func (s *ExecutorSpec) validateCommand() error {
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		return invalid("argv", "required for kind \"command\"")
	}
	if TemplateName(s.Argv[0]) != "" {
		return invalid("argv[0]", "the program cannot be a template")
	}
	for i, a := range s.Argv {
		if TemplateName(a) == "" && embeddedTemplate(a) {
			return invalid(fmt.Sprintf("argv[%d]", i), "%q: a template must be a whole argument", a)
		}
	}
	switch s.Stdin {
	case "":
		s.Stdin = "json"
	case "json", "none":
	default:
		return invalid("stdin", "%q: want \"json\" or \"none\"", s.Stdin)
	}
	return nil
}

// validateMCP checks an mcp executor; the transport, when not given,
// follows from Command or URL.
func (s *ExecutorSpec) validateMCP() error {
	if s.Transport == "" {
		switch {
		case len(s.Command) > 0:
			s.Transport = "stdio"
		case s.URL != "":
			s.Transport = "http"
		}
	}
	switch s.Transport {
	case "":
		return invalid("command", "required for kind \"mcp\" (or \"url\", for a server over http)")
	case "stdio":
		if len(s.Command) == 0 || s.Command[0] == "" {
			return invalid("command", "required for the stdio transport")
		}
	case "http":
		if err := checkURL(s.URL); err != nil {
			return err
		}
	default:
		return invalid("transport", "%q: want \"stdio\" or \"http\"", s.Transport)
	}
	return nil
}

func checkURL(raw string) error {
	if raw == "" {
		return invalid("url", "required")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return invalid("url", "%q is not an http or https URL", raw)
	}
	return nil
}

// Patterns of executor specs, compiled once; read-only.
var (
	envNamePattern  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	templatePattern = regexp.MustCompile(`^\{([A-Za-z0-9_.-]+)\}$`)
	embeddedPattern = regexp.MustCompile(`\{[A-Za-z0-9_.-]+\}`)
)

func envName(s string) bool { return envNamePattern.MatchString(s) }

// TemplateName returns name when an argv element s is exactly "{name}",
// else "".
func TemplateName(s string) string {
	if m := templatePattern.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return ""
}

func embeddedTemplate(s string) bool { return embeddedPattern.MatchString(s) }
