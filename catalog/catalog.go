// Package catalog reads tool catalogs in their three shapes (habilis' own,
// OpenAI function tools, an MCP tools/list result) into habilis.Tool values,
// with errors that name the file, the tool and the field.
package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/fill"
	"github.com/habilis-router/habilis/internal/suggest"
)

// MaxSize is the largest catalog file Parse and Read accept, so a wrong
// path (a log, a database) fails fast instead of being read into memory.
// It holds 100,000 tools of 2.5 KB each: the synthetic catalog of 100,000
// tools × 8 examples the benchmarks load is 79 MB.
const MaxSize = 256 << 20

// Limits on one tool. They are generous for real catalogs and keep a broken
// file (a whole document pasted into a description) from being embedded.
const (
	maxNameLen        = 64
	maxDescriptionLen = 32 << 10
	maxSchemaDepth    = 64
)

// Limits on a tool's examples, in bytes of one trimmed example and in
// examples. Code that adds examples to a catalog (package eval's Fit) keeps
// within them, so the catalog still parses.
const (
	MaxExampleLen = 4 << 10
	MaxExamples   = 1000
)

// maxProblems caps the errors Parse reports: enough to fix a file in
// one pass, not so many that the first ones scroll away.
const maxProblems = 20

// toolNameRE is MCP's tool name rule, extended with '&' because real
// catalogs use it (MetaTool's "PDF&URLTool") and nothing in habilis treats
// it specially.
var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_.&-]{1,64}$`)

// typeHintRE finds the "(type: integer; default: 3)" hint that ends an
// argument description in converted catalogs such as BFCL's.
var typeHintRE = regexp.MustCompile(`\(type:\s*([A-Za-z]+)[^()]*\)\s*$`)

// hintTypes maps the words of type hints, Python's included, to JSON Schema
// types. "any" maps to no type at all.
var hintTypes = map[string]string{
	"string": "string", "str": "string", "text": "string",
	"integer": "integer", "int": "integer", "long": "integer",
	"number": "number", "float": "number", "double": "number",
	"boolean": "boolean", "bool": "boolean",
	"array": "array", "list": "array", "tuple": "array",
	"object": "object", "dict": "object", "map": "object",
	"any": "",
}

// Fields of each catalog shape. habilis' and OpenAI's shapes are closed, so
// unknown fields (typos) are errors; MCP's grows with its specification, so
// only near-misses of its known fields are.
var (
	habilisFields      = []string{"name", "description", "examples", "arguments", "inputSchema", "required", "margin", "executor", "meta"}
	openAIFields       = []string{"type", "function"}
	functionFields     = []string{"name", "description", "parameters", "strict", "examples"}
	flatFunctionFields = []string{"type", "name", "description", "parameters", "strict", "examples"}
	mcpFields          = []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations", "_meta", "icons", "execution", "examples"}
	wrapperFields      = []string{"tools", "tools_list", "nextCursor", "_meta"}

	// habilisOnly and mcpOnly tell the two shapes apart: a tool with
	// neither is valid in both.
	habilisOnly = []string{"arguments", "required", "margin", "executor", "meta"}
	mcpOnly     = []string{"title", "outputSchema", "annotations", "_meta", "icons", "execution"}

	// Keywords whose values are one subschema, an array of them, or a map
	// of them.
	subschemaKeys     = []string{"additionalProperties", "not", "if", "then", "else", "contains", "propertyNames", "unevaluatedProperties", "unevaluatedItems", "additionalItems"}
	subschemaListKeys = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	subschemaMapKeys  = []string{"$defs", "definitions", "patternProperties", "dependentSchemas"}
)

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// Error is one problem in a catalog file. It unwraps to habilis.ErrInvalid.
type Error struct {
	File string
	// Line and Column locate syntax and encoding errors (1-based); they are
	// 0 for problems found after decoding.
	Line, Column int
	// Index is the tool's 0-based position in the catalog, or -1 for a
	// problem with the file as a whole.
	Index int
	// Tool is the tool's name as written, when it has one.
	Tool string
	// Field is the path of the offending field, like "examples[2]" or
	// "arguments.properties.unit.enum".
	Field string
	Msg   string
}

// Error gives `tools.json: tool 3 "get_weather": field "description": must
// not be empty`, leaving out the parts that do not apply.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d:%d", e.Line, e.Column)
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		fmt.Fprintf(&b, "line %d, column %d: ", e.Line, e.Column)
	}
	if e.Index >= 0 {
		fmt.Fprintf(&b, "tool %d", e.Index)
		if e.Tool != "" {
			fmt.Fprintf(&b, " %q", e.Tool)
		}
		b.WriteString(": ")
	}
	if e.Field != "" {
		fmt.Fprintf(&b, "field %q: ", e.Field)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap makes every catalog problem an habilis.ErrInvalid.
func (e *Error) Unwrap() error { return habilis.ErrInvalid }

// Read reads and parses the catalog file at path.
func Read(path string) ([]habilis.Tool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err // "open PATH: ..." names the file
	}
	defer f.Close()
	// One byte past the limit is enough for Parse to refuse the file
	// without reading all of it.
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, err // "read PATH: ..." names the file
	}
	return Parse(path, data)
}

// Parse parses a catalog in any of the shapes habilis reads (its own,
// OpenAI function tools, an MCP tools/list result) and returns the tools in
// normalised form: trimmed texts and a canonical JSON Schema for every
// tool's arguments. file names the catalog in errors.
//
// On failure it returns no tools and an error listing the problems (up to
// 20), each a *Error, joined with errors.Join.
func Parse(file string, data []byte) ([]habilis.Tool, error) {
	p := &problems{file: file}
	if len(data) > MaxSize {
		p.whole(fmt.Sprintf("is larger than the limit of %d MiB", MaxSize>>20))
		return nil, p.err()
	}
	data = bytes.TrimPrefix(data, utf8BOM)
	if len(bytes.TrimSpace(data)) == 0 {
		p.whole("is empty")
		return nil, p.err()
	}
	var top json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		p.add(syntaxProblem(data, err))
		return nil, p.err()
	}
	elems := p.toolList(top, "", true)
	if elems == nil {
		p.checkEncoding(data)
		return nil, p.err()
	}

	maps := make([]map[string]json.RawMessage, len(elems))
	kinds := make([]shape, len(elems))
	fileShape, first := shapeNeutral, -1
	for i, raw := range elems {
		if k := jsonKind(raw); k != "object" {
			p.add(&Error{Index: i, Msg: "must be an object, got " + k})
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			p.add(&Error{Index: i, Msg: err.Error()})
			continue
		}
		maps[i] = m
		kinds[i] = classify(m)
		if fileShape == shapeNeutral && kinds[i] != shapeNeutral && kinds[i] != shapeOtherType {
			fileShape, first = kinds[i], i
		}
	}
	if fileShape == shapeNeutral {
		fileShape = shapeHabilis
	}

	tools := make([]habilis.Tool, 0, len(elems))
	seen := make(map[string]int, len(elems))
	for i, m := range maps {
		if m == nil {
			continue
		}
		c := &toolCtx{p: p, index: i, name: displayName(guessName(m))}
		if kinds[i] == shapeOtherType {
			c.openAITool(m) // refuses it by its type, whatever the file's shape
			continue
		}
		if k := kinds[i]; k != fileShape && (k != shapeNeutral || fileShape == shapeOpenAI) {
			c.errorf("", "is %s but tool %d %s is %s; a catalog uses one shape", k, first, quoteName(displayName(guessName(maps[first]))), fileShape)
			continue
		}
		if !c.checkEncoding(elems[i], m) {
			continue
		}
		var t habilis.Tool
		switch fileShape {
		case shapeOpenAI:
			t = c.openAITool(m)
		case shapeMCP:
			t = c.mcpTool(m)
		default:
			t = c.habilisTool(m)
		}
		// A duplicate name is reported beside the tool's other problems.
		if c.nameOK {
			if j, ok := seen[t.Name]; ok {
				c.errorf(c.nameField, "duplicates the name of tool %d", j)
			} else {
				seen[t.Name] = i
			}
		}
		if c.failed {
			continue
		}
		tools = append(tools, t)
	}
	p.checkEncoding(data)
	if err := p.err(); err != nil {
		return nil, err
	}
	return tools, nil
}

// shape is the format of a catalog or of one of its tools.
type shape int

const (
	shapeNeutral shape = iota // valid as habilis' shape or MCP's
	shapeHabilis
	shapeOpenAI
	shapeMCP
	shapeOtherType // an OpenAI tool whose type is not "function"
)

func (s shape) String() string {
	switch s {
	case shapeHabilis:
		return "a habilis tool"
	case shapeOpenAI:
		return "an OpenAI function tool"
	case shapeMCP:
		return "an MCP tool"
	}
	return "a tool without type"
}

// classify tells a tool's shape from its fields. A tool with fields of both
// habilis' and MCP's shapes counts as habilis', whose strict field check
// then names the foreign ones.
func classify(m map[string]json.RawMessage) shape {
	if _, ok := m["function"]; ok {
		return shapeOpenAI
	}
	if t, ok := m["type"]; ok && string(bytes.TrimSpace(t)) == `"function"` {
		return shapeOpenAI
	}
	for _, k := range habilisOnly {
		if _, ok := m[k]; ok {
			return shapeHabilis
		}
	}
	for _, k := range mcpOnly {
		if _, ok := m[k]; ok {
			return shapeMCP
		}
	}
	if _, ok := m["type"]; ok {
		// Neither habilis' nor MCP's shape has a type: an OpenAI tool of
		// another type ("custom", a hosted tool).
		return shapeOtherType
	}
	return shapeNeutral
}

// guessName finds a tool's name for messages, in any shape, or "".
func guessName(m map[string]json.RawMessage) string {
	raw, ok := m["name"]
	if !ok {
		var fn map[string]json.RawMessage
		if json.Unmarshal(m["function"], &fn) == nil {
			raw = fn["name"]
		}
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// displayName shortens a name for messages.
func displayName(s string) string {
	if len(s) <= maxNameLen+8 {
		return s
	}
	cut := maxNameLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func quoteName(s string) string {
	if s == "" {
		return "(unnamed)"
	}
	return strconv.Quote(s)
}

// problems collects a file's errors, keeping the first maxProblems.
type problems struct {
	file    string
	errs    []error
	dropped int
	// encoding is set once a problem about invalid UTF-8 is recorded.
	encoding bool
}

func (p *problems) add(e *Error) {
	if len(p.errs) >= maxProblems {
		p.dropped++
		return
	}
	e.File = p.file
	p.errs = append(p.errs, e)
}

// whole records a problem with the file as a whole.
func (p *problems) whole(msg string) {
	p.add(&Error{Index: -1, Msg: msg})
}

func (p *problems) err() error {
	list := p.errs
	if p.dropped > 0 {
		list = append(list, &Error{File: p.file, Index: -1, Msg: fmt.Sprintf("%d more problems not shown", p.dropped)})
	}
	switch len(list) {
	case 0:
		return nil
	case 1:
		return list[0]
	}
	return errors.Join(list...)
}

// toolList finds the array of tools in a catalog's top-level value: the
// value itself, or the "tools" or "tools_list" field of a wrapper object,
// or of the "result" of a JSON-RPC response holding an MCP tools/list
// result. It returns nil after recording a problem.
func (p *problems) toolList(top json.RawMessage, path string, rpcOK bool) []json.RawMessage {
	switch k := jsonKind(top); k {
	case "array":
		var elems []json.RawMessage
		if err := json.Unmarshal(top, &elems); err != nil {
			p.add(&Error{Index: -1, Field: path, Msg: err.Error()})
			return nil
		}
		if len(elems) == 0 {
			p.add(&Error{Index: -1, Field: path, Msg: "holds no tools"})
			return nil
		}
		return elems
	case "object":
	default:
		msg := `must be an array of tools or an object with "tools", got ` + k
		p.add(&Error{Index: -1, Field: path, Msg: msg})
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(top, &m); err != nil {
		p.add(&Error{Index: -1, Field: path, Msg: err.Error()})
		return nil
	}
	if _, ok := m["jsonrpc"]; ok && rpcOK {
		if _, ok := m["error"]; ok {
			p.add(&Error{Index: -1, Field: "error", Msg: "the file is a JSON-RPC error response, not a tools/list result"})
			return nil
		}
		res, ok := m["result"]
		if !ok {
			p.add(&Error{Index: -1, Field: "result", Msg: "a JSON-RPC response needs a result"})
			return nil
		}
		return p.toolList(res, "result", false)
	}
	// Unknown fields are reported and the tools still read, so their
	// problems show in the same pass.
	for _, k := range sortedKeys(m) {
		if !slices.Contains(wrapperFields, k) {
			p.add(&Error{Index: -1, Field: joinPath(path, k), Msg: unknownField(k, wrapperFields)})
		}
	}
	_, hasTools := m["tools"]
	_, hasList := m["tools_list"]
	switch {
	case hasTools && hasList:
		p.add(&Error{Index: -1, Field: joinPath(path, "tools_list"), Msg: `conflicts with "tools"; use one`})
		return nil
	case hasTools:
		return p.toolArray(m["tools"], joinPath(path, "tools"))
	case hasList:
		return p.toolArray(m["tools_list"], joinPath(path, "tools_list"))
	}
	p.add(&Error{Index: -1, Field: path, Msg: `must be an array of tools or an object with "tools"`})
	return nil
}

// toolArray decodes a wrapper's array of tools.
func (p *problems) toolArray(raw json.RawMessage, path string) []json.RawMessage {
	if k := jsonKind(raw); k != "array" {
		p.add(&Error{Index: -1, Field: path, Msg: "must be an array of tools, got " + k})
		return nil
	}
	return p.toolList(raw, path, false)
}

// syntaxProblem turns a JSON decoding error into a problem with the line
// and column where the file went wrong.
func syntaxProblem(data []byte, err error) *Error {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return &Error{Index: -1, Msg: "invalid JSON: " + err.Error()}
	}
	off := int(se.Offset) - 1
	if se.Error() == "unexpected end of JSON input" {
		off = len(bytes.TrimRight(data, " \t\r\n"))
	}
	line, col := position(data, off)
	return &Error{Index: -1, Line: line, Column: col, Msg: "invalid JSON: " + se.Error()}
}

// checkEncoding reports invalid UTF-8 in data that no tool's problem
// located, such as in a wrapper's fields.
func (p *problems) checkEncoding(data []byte) {
	if !p.encoding && !utf8.Valid(data) {
		p.add(encodingProblem(data))
	}
}

// encodingProblem locates the first byte that is not valid UTF-8.
func encodingProblem(data []byte) *Error {
	off := 0
	for off < len(data) {
		r, n := utf8.DecodeRune(data[off:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		off += n
	}
	line, col := position(data, off)
	return &Error{Index: -1, Line: line, Column: col, Msg: "contains bytes that are not valid UTF-8"}
}

// position returns the 1-based line and column (in characters) of byte
// offset off.
func position(data []byte, off int) (line, col int) {
	off = max(0, min(off, len(data)))
	before := data[:off]
	line = 1 + bytes.Count(before, []byte{'\n'})
	start := bytes.LastIndexByte(before, '\n') + 1
	return line, 1 + utf8.RuneCount(before[start:])
}

// toolCtx reports the problems of one tool.
type toolCtx struct {
	p     *problems
	index int
	name  string
	// nameField is where the tool's name was read ("name" or
	// "function.name").
	nameField string
	// nameOK reports a name that is valid on its own, whatever else is
	// wrong with the tool: duplicates are looked for among those.
	nameOK bool
	failed bool
}

func (c *toolCtx) errorf(field, format string, args ...any) {
	c.failed = true
	c.p.add(&Error{Index: c.index, Tool: c.name, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// checkEncoding reports fields holding bytes that are not valid UTF-8,
// which encoding/json would silently replace.
func (c *toolCtx) checkEncoding(raw json.RawMessage, m map[string]json.RawMessage) bool {
	if utf8.Valid(raw) {
		return true
	}
	c.p.encoding = true
	found := false
	for _, k := range sortedKeys(m) {
		if !utf8.Valid(m[k]) {
			c.errorf(k, "contains bytes that are not valid UTF-8")
			found = true
		}
	}
	if !found {
		c.errorf("", "a field name contains bytes that are not valid UTF-8")
	}
	return false
}

// checkFields reports fields not in known. When strict is false only
// near-misses of known fields (likely typos) are reported.
func (c *toolCtx) checkFields(m map[string]json.RawMessage, prefix string, known []string, strict bool) {
	for _, k := range sortedKeys(m) {
		if slices.Contains(known, k) {
			continue
		}
		if strict || suggest.Closest(k, known) != "" {
			c.errorf(joinPath(prefix, k), "%s", unknownField(k, known))
		}
	}
}

// habilisTool reads a tool in habilis' own shape.
func (c *toolCtx) habilisTool(m map[string]json.RawMessage) habilis.Tool {
	var t habilis.Tool
	t.Name = c.toolName(m, "")
	c.checkFields(m, "", habilisFields, true)
	t.Description = c.description(m, "")
	t.Examples = c.examples(m, "")
	args, hasArgs := present(m, "arguments")
	schema, hasSchema := present(m, "inputSchema")
	req, hasReq := present(m, "required")
	switch {
	case hasArgs && hasSchema:
		c.errorf("inputSchema", `conflicts with "arguments"; give one`)
	case hasSchema:
		if hasReq {
			c.errorf("required", `belongs inside "inputSchema"`)
		}
		t.InputSchema = c.schema(schema, "inputSchema")
	default:
		t.InputSchema = c.arguments(args, hasArgs, req, hasReq)
	}
	t.Margin = c.margin(m)
	t.Executor = c.executor(m, t.InputSchema)
	t.Meta = c.meta(m)
	return t
}

// openAITool reads an OpenAI function tool, nested under "function" (Chat
// Completions) or flat (Responses API).
func (c *toolCtx) openAITool(m map[string]json.RawMessage) habilis.Tool {
	if typ, ok := m["type"]; ok {
		// Another type of tool (OpenAI's "custom", a hosted tool) has
		// fields of its own: its type is the one problem to report.
		if s, ok := c.str("type", typ); !ok || s != "function" {
			if ok {
				c.errorf("type", `must be "function" (the one OpenAI tool type habilis reads), got %q`, s)
			}
			return habilis.Tool{}
		}
	}
	fm, prefix := m, ""
	if raw, ok := m["function"]; ok {
		c.checkFields(m, "", openAIFields, true)
		if k := jsonKind(raw); k != "object" {
			c.errorf("function", "must be an object, got %s", k)
			return habilis.Tool{}
		}
		fm = nil
		if err := json.Unmarshal(raw, &fm); err != nil {
			c.errorf("function", "%v", err)
			return habilis.Tool{}
		}
		prefix = "function"
		c.checkFields(fm, prefix, functionFields, true)
	} else {
		c.checkFields(m, "", flatFunctionFields, true)
	}
	if _, ok := m["type"]; !ok {
		c.errorf("type", `is required ("function")`)
	}
	var t habilis.Tool
	t.Name = c.toolName(fm, prefix)
	t.Description = c.optionalDescription(fm, prefix, t.Name, "")
	t.Examples = c.examples(fm, prefix)
	if raw, ok := present(fm, "strict"); ok && jsonKind(raw) != "boolean" {
		c.errorf(joinPath(prefix, "strict"), "must be a boolean, got %s", jsonKind(raw))
	}
	params, ok := present(fm, "parameters")
	if !ok {
		params = json.RawMessage(`{}`)
	}
	t.InputSchema = c.schema(params, joinPath(prefix, "parameters"))
	return t
}

// mcpTool reads a tool of an MCP tools/list result. Its title, if any, is
// kept in Meta["title"].
func (c *toolCtx) mcpTool(m map[string]json.RawMessage) habilis.Tool {
	var t habilis.Tool
	t.Name = c.toolName(m, "")
	c.checkFields(m, "", mcpFields, false)
	if raw, ok := present(m, "title"); ok {
		if s, ok := c.str("title", raw); ok && strings.TrimSpace(s) != "" {
			t.Meta = map[string]string{"title": strings.TrimSpace(s)}
		}
	}
	t.Description = c.optionalDescription(m, "", t.Name, t.Meta["title"])
	t.Examples = c.examples(m, "")
	schema, ok := present(m, "inputSchema")
	if !ok {
		schema = json.RawMessage(`{}`)
	}
	t.InputSchema = c.schema(schema, "inputSchema")
	return t
}

// optionalDescription reads the description of an OpenAI or MCP tool,
// whose formats make it optional. Without one (absent, null or blank) the
// tool is described by its title, or else its name in words (Describe, as
// the MCP gateway describes such tools): refusing it refused a
// server's whole tools/list, and made the chat proxy forward every tool of
// a request one of whose tools had none. habilis' own shape requires it.
func (c *toolCtx) optionalDescription(m map[string]json.RawMessage, prefix, name, title string) string {
	if raw, ok := present(m, "description"); ok {
		if s, isStr := decodeString(raw); !isStr || jsonKind(raw) != "string" || strings.TrimSpace(s) != "" {
			return c.description(m, prefix)
		}
	}
	return Describe(name, title)
}

// Describe returns the description of a tool named name that has none:
// the first of texts (its title, say) that is not blank, trimmed, or else
// its name in words ("get_file-info" reads "get file info"). The catalog
// and the MCP gateway describe such tools alike.
func Describe(name string, texts ...string) string {
	for _, s := range texts {
		if s = strings.TrimSpace(s); s != "" {
			return s
		}
	}
	if words := strings.TrimSpace(nameWords.Replace(name)); words != "" {
		return words
	}
	return name
}

// nameWords spells a tool's name as words.
var nameWords = strings.NewReplacer("_", " ", "-", " ", ".", " ")

// present returns m[k] unless it is missing or null: null stands for an
// absent optional field.
func present(m map[string]json.RawMessage, k string) (json.RawMessage, bool) {
	raw, ok := m[k]
	if !ok || jsonKind(raw) == "null" {
		return nil, false
	}
	return raw, true
}

// str decodes a JSON string.
func (c *toolCtx) str(field string, raw json.RawMessage) (string, bool) {
	if k := jsonKind(raw); k != "string" {
		c.errorf(field, "must be a string, got %s", k)
		return "", false
	}
	s, ok := decodeString(raw)
	if !ok {
		c.errorf(field, "is not a valid JSON string")
	}
	return s, ok
}

// decodeString decodes a JSON string already validated as part of its
// document. Strings without escapes, the common case, are their own
// contents, so they skip a second scan by encoding/json.
func decodeString(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) >= 2 && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

func (c *toolCtx) toolName(m map[string]json.RawMessage, prefix string) string {
	field := joinPath(prefix, "name")
	c.nameField = field
	raw, ok := m["name"]
	if !ok {
		c.errorf(field, "is required")
		return ""
	}
	s, ok := c.str(field, raw)
	if !ok {
		return ""
	}
	switch {
	case s == "":
		c.errorf(field, "must not be empty")
	case len(s) > maxNameLen:
		c.errorf(field, "is %d bytes long; the limit is %d", len(s), maxNameLen)
	case !toolNameRE.MatchString(s):
		c.errorf(field, "must use only ASCII letters (A-Z, a-z), digits (0-9), '_', '-', '.' and '&'; %q is none of them", firstNotInName(s))
	default:
		c.nameOK = true
	}
	return s
}

// firstNotInName returns the first character of s that toolNameRE
// refuses, or utf8.RuneError when there is none.
func firstNotInName(s string) rune {
	for _, r := range s {
		if !toolNameRE.MatchString(string(r)) {
			return r
		}
	}
	return utf8.RuneError
}

func (c *toolCtx) description(m map[string]json.RawMessage, prefix string) string {
	field := joinPath(prefix, "description")
	raw, ok := present(m, "description")
	if !ok {
		c.errorf(field, "is required: routing needs to know what the tool does")
		return ""
	}
	s, ok := c.str(field, raw)
	if !ok {
		return ""
	}
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		c.errorf(field, "must not be empty")
	case len(s) > maxDescriptionLen:
		c.errorf(field, "is %d bytes long; the limit is %d", len(s), maxDescriptionLen)
	}
	return s
}

// examples reads the examples, trimmed. Duplicates are errors: a repeated
// example counts twice in the centroid and pulls it toward itself.
func (c *toolCtx) examples(m map[string]json.RawMessage, prefix string) []string {
	field := joinPath(prefix, "examples")
	raw, ok := present(m, "examples")
	if !ok {
		return nil
	}
	if k := jsonKind(raw); k != "array" {
		c.errorf(field, "must be an array of strings, got %s", k)
		return nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		c.errorf(field, "%v", err)
		return nil
	}
	if len(elems) > MaxExamples {
		c.errorf(field, "holds %d examples; the limit is %d", len(elems), MaxExamples)
		return nil
	}
	var out []string
	seen := make(map[string]int, len(elems))
	for i, e := range elems {
		f := fmt.Sprintf("%s[%d]", field, i)
		s, ok := c.str(f, e)
		if !ok {
			continue
		}
		s = strings.TrimSpace(s)
		if s == "" {
			c.errorf(f, "must not be blank")
			continue
		}
		if len(s) > MaxExampleLen {
			c.errorf(f, "is %d bytes long; the limit is %d", len(s), MaxExampleLen)
			continue
		}
		key := strings.ToLower(strings.Join(strings.Fields(s), " "))
		if j, ok := seen[key]; ok {
			c.errorf(f, "duplicates %s[%d]", field, j)
			continue
		}
		seen[key] = i
		out = append(out, s)
	}
	return out
}

func (c *toolCtx) margin(m map[string]json.RawMessage) *float32 {
	raw, ok := present(m, "margin")
	if !ok {
		return nil
	}
	if k := jsonKind(raw); k != "number" {
		c.errorf("margin", "must be a number between 0 and 1, got %s", k)
		return nil
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || math.IsNaN(f) || f < 0 || f > 1 {
		c.errorf("margin", "must be between 0 and 1, got %s", bytes.TrimSpace(raw))
		return nil
	}
	v := float32(f)
	return &v
}

// executor reads a tool's executor spec, whose argv templates must name
// arguments of schema, the tool's arguments.
func (c *toolCtx) executor(m map[string]json.RawMessage, schema json.RawMessage) json.RawMessage {
	raw, ok := present(m, "executor")
	if !ok {
		return nil
	}
	if k := jsonKind(raw); k != "object" {
		c.errorf("executor", "must be an object, got %s", k)
		return nil
	}
	v, err := decodeAny(raw)
	if err != nil {
		c.errorf("executor", "%v", err)
		return nil
	}
	if !c.executorSpec(raw, schema) {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		c.errorf("executor", "%v", err)
		return nil
	}
	return b
}

// executorSpec reports the problems of an executor spec, so that a catalog
// whose tool could never run is refused when it is loaded, naming the
// field, rather than when a request routed to the tool tries to run it.
func (c *toolCtx) executorSpec(raw, schema json.RawMessage) bool {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		c.errorf("executor", "%v", err)
		return false
	}
	failed := c.failed
	c.failed = false
	c.checkFields(m, "executor", fill.ExecutorFields(), true)
	if !c.failed {
		spec, err := fill.ParseExecutorSpec(raw)
		var se *fill.ExecutorError
		switch {
		case errors.As(err, &se):
			c.errorf(joinPath("executor", se.Field), "%s", se.Msg)
		case err != nil:
			c.errorf("executor", "%v", err)
		default:
			c.argvTemplates(spec, schema)
		}
	}
	ok := !c.failed
	c.failed = c.failed || failed
	return ok
}

// argvTemplates reports an argv template ("{nmae}") that can name no
// argument the run will have: the schema declares a near miss of it (a
// typo), or admits no argument it does not declare. The run would stop
// there, after the request was routed and its arguments filled. Other
// undeclared names stay allowed: a caller may pass arguments the schema
// does not list (Invoke's arguments_json).
func (c *toolCtx) argvTemplates(spec *fill.ExecutorSpec, schema json.RawMessage) {
	var s struct {
		Properties           map[string]json.RawMessage `json:"properties"`
		AdditionalProperties json.RawMessage            `json:"additionalProperties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return
	}
	declared := slices.Sorted(maps.Keys(s.Properties))
	closed := string(bytes.TrimSpace(s.AdditionalProperties)) == "false"
	for i, a := range spec.Argv {
		name := fill.TemplateName(a)
		if name == "" || s.Properties[name] != nil {
			continue
		}
		field := fmt.Sprintf("executor.argv[%d]", i)
		if near := suggest.Closest(name, declared); near != "" {
			c.errorf(field, "%q names no argument of the tool%s", a, habilis.DidYouMean([]string{"{" + near + "}"}))
		} else if closed {
			c.errorf(field, "%q names no argument of the tool, and its schema admits no others", a)
		}
	}
}

func (c *toolCtx) meta(m map[string]json.RawMessage) map[string]string {
	raw, ok := present(m, "meta")
	if !ok {
		return nil
	}
	if k := jsonKind(raw); k != "object" {
		c.errorf("meta", "must be an object of strings, got %s", k)
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		c.errorf("meta", "%v", err)
		return nil
	}
	out := make(map[string]string, len(fields))
	for _, k := range sortedKeys(fields) {
		if s, ok := c.str("meta."+k, fields[k]); ok {
			out[k] = s
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// arguments reads habilis' "arguments": a JSON Schema, or a map of argument
// names to descriptions made into one, with "required" listing the
// required names.
func (c *toolCtx) arguments(raw json.RawMessage, has bool, req json.RawMessage, hasReq bool) json.RawMessage {
	var fields map[string]json.RawMessage
	if has {
		if k := jsonKind(raw); k != "object" {
			c.errorf("arguments", "must be an object (argument names to descriptions, or a JSON Schema), got %s", k)
			return nil
		}
		if err := json.Unmarshal(raw, &fields); err != nil {
			c.errorf("arguments", "%v", err)
			return nil
		}
		if isSchema(fields) {
			if hasReq {
				c.errorf("required", `belongs inside the "arguments" schema`)
			}
			return c.schema(raw, "arguments")
		}
	}
	props := make(map[string]any, len(fields))
	for _, name := range sortedKeys(fields) {
		f := "arguments." + name
		if name == "" {
			c.errorf("arguments", "argument names must not be empty")
			continue
		}
		desc, ok := c.str(f, fields[name])
		if !ok {
			continue
		}
		p := map[string]any{}
		if typ := hintType(desc); typ != "" {
			p["type"] = typ
		}
		if d := strings.TrimSpace(desc); d != "" {
			p["description"] = d
		}
		props[name] = p
	}
	schema := map[string]any{"type": "object", "properties": props}
	if hasReq {
		if names := c.required(req, fields); len(names) > 0 {
			schema["required"] = names
		}
	}
	b, err := json.Marshal(schema)
	if err != nil {
		c.errorf("arguments", "%v", err)
		return nil
	}
	return b
}

// required reads the top-level "required" of a tool whose arguments are a
// map of descriptions.
func (c *toolCtx) required(raw json.RawMessage, args map[string]json.RawMessage) []any {
	if k := jsonKind(raw); k != "array" {
		c.errorf("required", "must be an array of argument names, got %s", k)
		return nil
	}
	var names []json.RawMessage
	if err := json.Unmarshal(raw, &names); err != nil {
		c.errorf("required", "%v", err)
		return nil
	}
	out := make([]any, 0, len(names))
	seen := make(map[string]bool, len(names))
	for i, r := range names {
		f := fmt.Sprintf("required[%d]", i)
		s, ok := c.str(f, r)
		if !ok {
			continue
		}
		switch _, isArg := args[s]; {
		case !isArg:
			c.errorf(f, "names %q, which is not an argument", s)
		case seen[s]:
			c.errorf(f, "repeats %q", s)
		default:
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// isSchema tells a JSON Schema from a map of argument descriptions: a
// schema says "type": "object" or has an object of "properties"; a map's
// values are all strings, even for arguments named "type" or "properties".
func isSchema(m map[string]json.RawMessage) bool {
	if t, ok := m["type"]; ok && string(bytes.TrimSpace(t)) == `"object"` {
		return true
	}
	p, ok := m["properties"]
	return ok && jsonKind(p) == "object"
}

// hintType returns the JSON Schema type named by a description's trailing
// "(type: ...)" hint: "string" without a hint or with an unknown one, ""
// for "any".
func hintType(desc string) string {
	m := typeHintRE.FindStringSubmatch(desc)
	if m == nil {
		return "string"
	}
	if t, ok := hintTypes[strings.ToLower(m[1])]; ok {
		return t
	}
	return "string"
}

// schema validates a tool's JSON Schema and returns it in canonical form:
// compact, keys sorted, with "type": "object" and "properties" at the top,
// so equal schemas have equal bytes and equal hashes.
func (c *toolCtx) schema(raw json.RawMessage, field string) json.RawMessage {
	if k := jsonKind(raw); k != "object" {
		c.errorf(field, "must be a JSON Schema object, got %s", k)
		return nil
	}
	v, err := decodeAny(raw)
	if err != nil {
		c.errorf(field, "%v", err)
		return nil
	}
	root := v.(map[string]any)
	if t, ok := root["type"]; ok {
		if name, _ := t.(string); !isObjectType(name) {
			c.errorf(field+".type", `must be "object"`)
			return nil
		}
	}
	root["type"] = "object"
	if _, ok := root["properties"]; !ok {
		root["properties"] = map[string]any{}
	}
	sc := schemaCheck{c: c, root: root}
	before := c.failed
	c.failed = false
	sc.check(field, root, 0)
	failed := c.failed
	c.failed = c.failed || before
	if failed {
		return nil
	}
	b, err := json.Marshal(root)
	if err != nil {
		c.errorf(field, "%v", err)
		return nil
	}
	// Filling reads the schema with fill's reader: what the catalog
	// accepts, it must read too.
	if _, err := fill.ParseSchema(b); err != nil {
		c.errorf(field, "%v", err)
		return nil
	}
	return b
}

// isObjectType reports whether a type name means an object ("object", or
// Python's "dict").
func isObjectType(name string) bool {
	t, ok := fill.CanonicalType(name)
	return ok && t == "object"
}

// schemaCheck walks a schema and its subschemas.
type schemaCheck struct {
	c    *toolCtx
	root any
}

func (s schemaCheck) check(path string, node any, depth int) {
	n, ok := node.(map[string]any)
	if !ok {
		if _, isBool := node.(bool); !isBool {
			s.c.errorf(path, "must be a schema (an object or a boolean), got %s", anyKind(node))
		}
		return
	}
	if depth > maxSchemaDepth {
		s.c.errorf(path, "nests deeper than %d levels", maxSchemaDepth)
		return
	}
	if t, ok := n["type"]; ok {
		s.checkType(path+".type", n, t)
	}
	if e, ok := n["enum"]; ok {
		if list, ok := e.([]any); !ok || len(list) == 0 {
			s.c.errorf(path+".enum", "must be a non-empty array")
		}
	}
	if r, ok := n["$ref"]; ok {
		s.checkRef(path+".$ref", r)
	}
	props, hasProps := n["properties"]
	pm, _ := props.(map[string]any)
	if hasProps {
		if pm == nil {
			s.c.errorf(path+".properties", "must be an object of schemas, got %s", anyKind(props))
		}
		for _, name := range sortedKeys(pm) {
			f := path + ".properties." + name
			if _, ok := pm[name].(map[string]any); !ok {
				s.c.errorf(f, "must be a schema object, got %s", anyKind(pm[name]))
				continue
			}
			s.check(f, pm[name], depth+1)
		}
	}
	if r, ok := n["required"]; ok {
		s.checkRequired(path+".required", r, pm, hasProps)
	}
	for _, k := range subschemaKeys {
		if sub, ok := n[k]; ok {
			s.check(path+"."+k, sub, depth+1)
		}
	}
	if items, ok := n["items"]; ok {
		if list, ok := items.([]any); ok {
			for i, sub := range list {
				s.check(fmt.Sprintf("%s.items[%d]", path, i), sub, depth+1)
			}
		} else {
			s.check(path+".items", items, depth+1)
		}
	}
	for _, k := range subschemaListKeys {
		sub, ok := n[k]
		if !ok {
			continue
		}
		list, ok := sub.([]any)
		if !ok || len(list) == 0 {
			s.c.errorf(path+"."+k, "must be a non-empty array of schemas")
			continue
		}
		for i, e := range list {
			s.check(fmt.Sprintf("%s.%s[%d]", path, k, i), e, depth+1)
		}
	}
	for _, k := range subschemaMapKeys {
		sub, ok := n[k]
		if !ok {
			continue
		}
		m, ok := sub.(map[string]any)
		if !ok {
			s.c.errorf(path+"."+k, "must be an object of schemas, got %s", anyKind(sub))
			continue
		}
		for _, name := range sortedKeys(m) {
			s.check(path+"."+k+"."+name, m[name], depth+1)
		}
	}
}

// checkType checks node's type, t, and writes it with the JSON Schema
// names fill.CanonicalType gives ("dict" becomes "object"); "any", no
// constraint at all, drops the keyword.
func (s schemaCheck) checkType(path string, node map[string]any, t any) {
	const known = "(string, number, integer, boolean, object, array, null, or Python's str, float, int, bool, list, tuple, dict)"
	switch t := t.(type) {
	case string:
		switch c, ok := fill.CanonicalType(t); {
		case t == "any":
			delete(node, "type")
		case !ok:
			s.c.errorf(path, "%q is not a JSON Schema type %s", t, known)
		default:
			node["type"] = c
		}
	case []any:
		if len(t) == 0 {
			s.c.errorf(path, "must not be an empty array")
		}
		seen := map[string]bool{}
		names := make([]any, 0, len(t))
		for _, e := range t {
			name, ok := e.(string)
			c, isType := fill.CanonicalType(name)
			switch {
			case !ok:
				s.c.errorf(path, "must hold type names, got %s", anyKind(e))
			case name == "any":
				s.c.errorf(path, `holds "any", which allows every type: drop the keyword instead`)
			case !isType:
				s.c.errorf(path, "%q is not a JSON Schema type %s", name, known)
			case seen[c]:
				s.c.errorf(path, "repeats %q", c)
			}
			seen[c] = true
			names = append(names, c)
		}
		node["type"] = names
	default:
		s.c.errorf(path, "must be a type name or an array of them, got %s", anyKind(t))
	}
}

// checkRef accepts only references inside the schema: a catalog must not
// make habilis fetch other documents.
func (s schemaCheck) checkRef(path string, r any) {
	ref, ok := r.(string)
	if !ok {
		s.c.errorf(path, "must be a string, got %s", anyKind(r))
		return
	}
	if !strings.HasPrefix(ref, "#") {
		s.c.errorf(path, "%q points outside the schema; only local references (\"#/...\") are supported", ref)
		return
	}
	if ref == "#" || !strings.HasPrefix(ref, "#/") {
		return // the root, or a plain-name anchor
	}
	node := s.root
	for _, tok := range strings.Split(ref[2:], "/") {
		if u, err := url.PathUnescape(tok); err == nil {
			tok = u
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch n := node.(type) {
		case map[string]any:
			next, ok := n[tok]
			if !ok {
				node = nil
				break
			}
			node = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n) {
				node = nil
				break
			}
			node = n[i]
		default:
			node = nil
		}
		if node == nil {
			s.c.errorf(path, "%q does not resolve inside the schema", ref)
			return
		}
	}
}

func (s schemaCheck) checkRequired(path string, r any, props map[string]any, hasProps bool) {
	list, ok := r.([]any)
	if !ok {
		s.c.errorf(path, "must be an array of property names, got %s", anyKind(r))
		return
	}
	seen := map[string]bool{}
	for i, e := range list {
		f := fmt.Sprintf("%s[%d]", path, i)
		name, ok := e.(string)
		switch {
		case !ok:
			s.c.errorf(f, "must be a string, got %s", anyKind(e))
		case seen[name]:
			s.c.errorf(f, "repeats %q", name)
		case hasProps && props[name] == nil:
			s.c.errorf(f, "names %q, which is not in properties", name)
		}
		seen[name] = true
	}
}

// decodeAny decodes JSON keeping numbers as written, so canonical forms do
// not round large integers through float64.
func decodeAny(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// jsonKind names the kind of a JSON value from its first byte.
func jsonKind(raw []byte) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// anyKind names the kind of a decoded JSON value.
func anyKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return "number"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func joinPath(prefix, field string) string {
	if prefix == "" {
		return field
	}
	return prefix + "." + field
}

// unknownField words the error for a field not in known, suggesting the
// known field it most likely misspells.
func unknownField(k string, known []string) string {
	if s := suggest.Closest(k, known); s != "" {
		return "unknown field" + habilis.DidYouMean([]string{s})
	}
	return "unknown field; known fields are " + strings.Join(known, ", ")
}
