package mcpgate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/catalog"
)

// Transports an upstream is reached by.
const (
	// TransportStdio starts the server as a child process and speaks over
	// its stdin and stdout.
	TransportStdio = "stdio"
	// TransportHTTP is MCP's streamable HTTP transport.
	TransportHTTP = "http"
	// TransportSSE is the older HTTP+SSE transport, which some hosted
	// servers still speak.
	TransportSSE = "sse"
)

// maxConfigSize bounds a config or overlay file, so that a wrong path (a
// log, a database) fails fast instead of being read into memory.
const maxConfigSize = 4 << 20

// Server is one upstream MCP server, as an entry of the mcpServers file
// that MCP clients use.
type Server struct {
	// Name is the entry's key; it names the server in logs, in answers and
	// in the prefix of a tool name that two servers share.
	Name string `json:"name"`
	// Transport is TransportStdio, TransportHTTP or TransportSSE.
	Transport string `json:"transport"`
	// Command, Args, Env and Dir start a stdio server. Env adds to the
	// environment the gateway passes on (Options.Environ).
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"-"`
	Dir     string            `json:"cwd,omitempty"`
	// URL and Headers reach an HTTP server.
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"-"`
}

// ConfigError is one problem in a config or overlay file. It unwraps to
// habilis.ErrInvalid.
type ConfigError struct {
	File string
	// Server is the entry's name, "" for a problem of the whole file.
	Server string
	// Tool is the overlay entry's tool name.
	Tool string
	// Field is the entry's field ("args", "examples[2]"), "" for the
	// entry.
	Field   string
	Message string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Server != "" {
		fmt.Fprintf(&b, ": server %q", e.Server)
	}
	if e.Tool != "" {
		fmt.Fprintf(&b, ": tool %q", e.Tool)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %q", e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Message)
	return b.String()
}

// Unwrap makes every config problem an habilis.ErrInvalid.
func (e *ConfigError) Unwrap() error { return habilis.ErrInvalid }

// ReadConfig reads the mcpServers file at path (see ParseConfig).
func ReadConfig(path string) ([]Server, error) {
	data, err := readLimited(path)
	if err != nil {
		return nil, err
	}
	return ParseConfig(path, data)
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigSize+1))
	if err != nil {
		return nil, err // "read PATH: ..." names the file
	}
	if len(data) > maxConfigSize {
		return nil, &ConfigError{File: path, Message: fmt.Sprintf("is over %d bytes; is it the right file?", maxConfigSize)}
	}
	return data, nil
}

// ParseConfig parses the file MCP clients keep their servers in:
// {"mcpServers": {"NAME": {"command", "args", "env", "cwd"} or {"url",
// "headers"}}}, or the same under "servers" as some editors write it. An
// entry's "type" may say "stdio", "http" (also "streamable-http" and
// "streamableHttp") or "sse"; without it the transport follows from
// "command" or "url". Entries with "disabled": true are skipped, and the
// other fields clients keep there are ignored. The servers come back
// sorted by name; file names the file in errors.
func ParseConfig(file string, data []byte) ([]Server, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF")), &top); err != nil {
		return nil, &ConfigError{File: file, Message: "not a JSON object: " + err.Error()}
	}
	key := "mcpServers"
	raw, ok := top[key]
	if !ok {
		key = "servers"
		raw, ok = top[key]
	}
	if !ok {
		return nil, &ConfigError{File: file, Message: `has no "mcpServers" object`}
	}
	names, err := objectKeys(raw)
	if err != nil {
		return nil, &ConfigError{File: file, Field: key, Message: "must be an object of servers by name"}
	}
	var entries map[string]json.RawMessage
	_ = json.Unmarshal(raw, &entries) // objectKeys has checked its shape
	var out []Server
	var errs []error
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] {
			errs = append(errs, &ConfigError{File: file, Server: name, Message: "is given twice"})
			continue
		}
		seen[name] = true
		s, skip, err := parseServer(file, name, entries[name])
		switch {
		case err != nil:
			errs = append(errs, err)
		case !skip:
			out = append(out, s)
		}
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	if len(out) == 0 {
		return nil, &ConfigError{File: file, Field: key, Message: "names no enabled server"}
	}
	slices.SortFunc(out, func(a, b Server) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// joinErrors joins problems so that each prints on a line of its own and
// errors.Is still finds habilis.ErrInvalid.
func joinErrors(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return &configErrors{errs}
}

type configErrors struct{ errs []error }

func (e *configErrors) Error() string {
	lines := make([]string, len(e.errs))
	for i, err := range e.errs {
		lines[i] = err.Error()
	}
	return strings.Join(lines, "\n")
}

func (e *configErrors) Unwrap() []error { return e.errs }

// serverEntry is an entry as written; fields are raw so that each one's
// type is checked with an error naming it.
type serverEntry struct {
	Type     json.RawMessage `json:"type"`
	Command  json.RawMessage `json:"command"`
	Args     json.RawMessage `json:"args"`
	Env      json.RawMessage `json:"env"`
	Cwd      json.RawMessage `json:"cwd"`
	URL      json.RawMessage `json:"url"`
	Headers  json.RawMessage `json:"headers"`
	Disabled json.RawMessage `json:"disabled"`
}

// fieldReader decodes an entry's fields, keeping the first problem.
type fieldReader struct {
	file, server string
	err          error
}

func (r *fieldReader) fail(field, format string, a ...any) {
	if r.err == nil {
		r.err = &ConfigError{File: r.file, Server: r.server, Field: field, Message: fmt.Sprintf(format, a...)}
	}
}

func (r *fieldReader) decode(field string, raw json.RawMessage, dst any, want string) {
	if len(raw) == 0 || string(raw) == "null" {
		return
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		r.fail(field, "must be %s", want)
	}
}

func parseServer(file, name string, raw json.RawMessage) (Server, bool, error) {
	r := &fieldReader{file: file, server: name}
	if strings.TrimSpace(name) == "" {
		r.fail("", "a server needs a name")
	}
	var e serverEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		r.fail("", "must be an object")
		return Server{}, false, r.err
	}
	s := Server{Name: name}
	var typ string
	var disabled bool
	r.decode("disabled", e.Disabled, &disabled, "true or false")
	r.decode("type", e.Type, &typ, "a string")
	r.decode("command", e.Command, &s.Command, "a string")
	r.decode("args", e.Args, &s.Args, "an array of strings")
	r.decode("env", e.Env, &s.Env, "an object of strings")
	r.decode("cwd", e.Cwd, &s.Dir, "a string")
	r.decode("url", e.URL, &s.URL, "a string")
	r.decode("headers", e.Headers, &s.Headers, "an object of strings")
	if r.err != nil || disabled {
		return s, disabled, r.err
	}
	s.Transport = r.transport(typ, &s)
	return s, false, r.err
}

// transport checks the entry's fields against its transport and returns
// the transport.
func (r *fieldReader) transport(typ string, s *Server) string {
	switch strings.ToLower(typ) {
	case "":
		if s.Command != "" && s.URL != "" {
			r.fail("", `set "command" (a stdio server) or "url" (an HTTP server), not both`)
			return ""
		}
		if s.URL != "" {
			typ = TransportHTTP
		} else {
			typ = TransportStdio
		}
	case "stdio":
		typ = TransportStdio
	case "http", "streamable-http", "streamablehttp":
		typ = TransportHTTP
	case "sse":
		typ = TransportSSE
	default:
		r.fail("type", "%q: want \"stdio\", \"http\" or \"sse\"", typ)
		return ""
	}
	if typ == TransportStdio {
		if strings.TrimSpace(s.Command) == "" {
			r.fail("command", `is required: the program that starts the server (or "url" for an HTTP server)`)
		}
		for _, k := range slices.Sorted(maps.Keys(s.Env)) {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				r.fail("env", "%q is not a variable name", k)
			}
		}
		return typ
	}
	u, err := url.Parse(s.URL)
	switch {
	case s.URL == "":
		r.fail("url", "is required for transport %q", typ)
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		r.fail("url", "%q is not an http or https URL", s.URL)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		if k == "" || strings.ContainsAny(k, " :\r\n") {
			r.fail("headers", "%q is not a header name", k)
		}
	}
	return typ
}

// objectKeys returns the keys of a JSON object in document order,
// duplicates included, so that a name given twice is reported rather than
// silently replaced.
func objectKeys(raw json.RawMessage) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not an object")
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, t.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// Overlay adds examples to upstream tools, by tool name: the name the
// gateway shows, or the upstream's own name (which then applies on every
// server that has it).
type Overlay map[string][]string

// ReadOverlay reads the overlay file at path (see ParseOverlay).
func ReadOverlay(path string) (Overlay, error) {
	data, err := readLimited(path)
	if err != nil {
		return nil, err
	}
	return ParseOverlay(path, data)
}

// ParseOverlay parses an overlay: {"TOOL": {"examples": ["a request the
// tool serves", ...]}, ...}. Examples follow the catalog's rules (not
// blank, not repeated, at most catalog.MaxExamples of at most
// catalog.MaxExampleLen bytes).
func ParseOverlay(file string, data []byte) (Overlay, error) {
	raw := bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF"))
	names, err := objectKeys(raw)
	if err != nil {
		return nil, &ConfigError{File: file, Message: `want an object of tools by name: {"TOOL": {"examples": [...]}}`}
	}
	var entries map[string]json.RawMessage
	_ = json.Unmarshal(raw, &entries)
	out := Overlay{}
	var errs []error
	for _, name := range names {
		if _, dup := out[name]; dup {
			errs = append(errs, &ConfigError{File: file, Tool: name, Message: "is given twice"})
			continue
		}
		ex, err := overlayExamples(file, name, entries[name])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[name] = ex
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	return out, nil
}

func overlayExamples(file, name string, raw json.RawMessage) ([]string, error) {
	fail := func(field, format string, a ...any) error {
		return &ConfigError{File: file, Tool: name, Field: field, Message: fmt.Sprintf(format, a...)}
	}
	var e struct {
		Examples []json.RawMessage `json:"examples"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, fail("", `want {"examples": [...]}`)
	}
	// The overlay is habilis' own shape, unlike the servers' config whose
	// other fields belong to the clients: a field it does not know is a
	// mistake (a misspelt "examples" would drop the examples unnoticed).
	keys, _ := objectKeys(raw)
	for _, k := range keys {
		if k != "examples" {
			return nil, fail(k, `unknown field: an overlay entry holds only "examples"`)
		}
	}
	if len(e.Examples) > catalog.MaxExamples {
		return nil, fail("examples", "holds %d examples; the limit is %d", len(e.Examples), catalog.MaxExamples)
	}
	out := make([]string, 0, len(e.Examples))
	seen := map[string]int{}
	for i, r := range e.Examples {
		field := fmt.Sprintf("examples[%d]", i)
		var s string
		if err := json.Unmarshal(r, &s); err != nil {
			return nil, fail(field, "must be a string")
		}
		s = strings.TrimSpace(s)
		key := strings.ToLower(strings.Join(strings.Fields(s), " "))
		j, dup := seen[key]
		switch {
		case s == "":
			return nil, fail(field, "must not be blank")
		case len(s) > catalog.MaxExampleLen:
			return nil, fail(field, "is %d bytes long; the limit is %d", len(s), catalog.MaxExampleLen)
		case dup:
			return nil, fail(field, "duplicates examples[%d]", j)
		}
		seen[key] = i
		out = append(out, s)
	}
	return out, nil
}
