// Package fill fills a chosen tool's arguments from the user's words and
// checks that nothing was invented: every value must be supported by the
// query. It holds the JSON Schema subset habilis understands, the
// extractive validator, a built-in extractor that needs no model, the Filler
// interface with escalation from a small filler to a larger one, and the
// scoring used to measure filling against gold arguments.
//
// Model-backed fillers live in subpackages (fill/ollamafill) and execution
// in fill/executor, so this package depends on nothing beyond the standard
// library, the root package and internal/wordsplit.
package fill

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/habilis-router/habilis"
)

// Schema is the subset of JSON Schema that filling and validation use.
// Keywords outside the subset are ignored, so any valid schema parses.
type Schema struct {
	// Types lists the allowed JSON types ("string", "number", "integer",
	// "boolean", "array", "object", "null"); empty allows any.
	Types       []string
	Description string
	// Properties and Order describe an object's members; Order keeps the
	// schema's own order so output and questions are deterministic.
	Properties map[string]*Schema
	Order      []string
	Required   []string
	// AdditionalProperties is false only when the schema forbids members
	// outside Properties.
	AdditionalProperties bool
	Enum                 []any
	Minimum, Maximum     *float64
	MinLength, MaxLength *int
	Items                *Schema
	// Format is one of "date", "date-time", "email", "uri" (others are
	// kept but not checked).
	Format     string
	Default    any
	HasDefault bool
}

// CanonicalType maps a type name to its JSON Schema type, accepting the
// Python-flavoured names some catalogs use (BFCL's "dict", "float",
// "tuple"), so their schemas validate the way their authors meant. The
// catalog parser writes schemas with the names it returns, so that the
// catalog and filling read a schema alike. "any" is not a type: it means
// no type constraint.
func CanonicalType(name string) (string, bool) {
	switch strings.ToLower(name) {
	case "string", "str":
		return "string", true
	case "number", "float", "double":
		return "number", true
	case "integer", "int":
		return "integer", true
	case "boolean", "bool":
		return "boolean", true
	case "array", "list", "tuple":
		return "array", true
	case "object", "dict":
		return "object", true
	case "null":
		return "null", true
	}
	return "", false
}

// ParseSchema parses a tool's input schema. An empty raw schema is an object
// with no declared properties. Errors name the keyword's path and wrap
// habilis.ErrInvalid.
func ParseSchema(raw json.RawMessage) (*Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return &Schema{Types: []string{"object"}, AdditionalProperties: true}, nil
	}
	s, err := parseSchema(raw, "")
	if err != nil {
		return nil, fmt.Errorf("parse schema: %w", err)
	}
	return s, nil
}

func parseSchema(raw json.RawMessage, path string) (*Schema, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		if string(bytes.TrimSpace(raw)) == "true" {
			return &Schema{AdditionalProperties: true}, nil
		}
		return nil, fmt.Errorf("%s: want a schema object: %w", orRoot(path), habilis.ErrInvalid)
	}
	s := &Schema{AdditionalProperties: true}
	// Keywords are read in this order; the first bad one is reported.
	parsers := [...]func(s *Schema, m map[string]json.RawMessage, path string) error{
		parseType, parseAnnotations, parseProperties, parseRequired, parseEnum, parseBounds, parseItems, parseDefault,
	}
	for _, parse := range parsers {
		if err := parse(s, m, path); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// parseType reads "type", a name or a list of names; "any" anywhere in the
// list lifts the constraint.
func parseType(s *Schema, m map[string]json.RawMessage, path string) error {
	t, ok := m["type"]
	if !ok {
		return nil
	}
	var one string
	var many []string
	switch {
	case json.Unmarshal(t, &one) == nil:
		many = []string{one}
	case json.Unmarshal(t, &many) == nil:
	default:
		return fmt.Errorf("%s: want a string or an array of strings: %w", join(path, "type"), habilis.ErrInvalid)
	}
	for _, name := range many {
		if name == "any" {
			s.Types = nil
			break
		}
		jt, ok := CanonicalType(name)
		if !ok {
			return fmt.Errorf("%s: unknown type %q: %w", join(path, "type"), name, habilis.ErrInvalid)
		}
		if !slices.Contains(s.Types, jt) {
			s.Types = append(s.Types, jt)
		}
	}
	return nil
}

// parseAnnotations reads "description" and "format"; values that are not
// strings are ignored.
func parseAnnotations(s *Schema, m map[string]json.RawMessage, _ string) error {
	if d, ok := m["description"]; ok {
		_ = json.Unmarshal(d, &s.Description)
	}
	if f, ok := m["format"]; ok {
		_ = json.Unmarshal(f, &s.Format)
	}
	return nil
}

// parseProperties reads "properties" in document order; of duplicated
// names, the first counts.
func parseProperties(s *Schema, m map[string]json.RawMessage, path string) error {
	p, ok := m["properties"]
	if !ok || isNull(p) {
		return nil
	}
	names, err := objectKeys(p)
	if err != nil {
		return fmt.Errorf("%s: want an object: %w", join(path, "properties"), habilis.ErrInvalid)
	}
	var props map[string]json.RawMessage
	_ = json.Unmarshal(p, &props)
	s.Properties = make(map[string]*Schema, len(props))
	for _, name := range names {
		if _, dup := s.Properties[name]; dup {
			continue
		}
		ps, err := parseSchema(props[name], join(path, name))
		if err != nil {
			return err
		}
		s.Properties[name] = ps
		s.Order = append(s.Order, name)
	}
	return nil
}

// parseRequired reads "required" and "additionalProperties".
func parseRequired(s *Schema, m map[string]json.RawMessage, path string) error {
	if r, ok := m["required"]; ok && !isNull(r) {
		if err := json.Unmarshal(r, &s.Required); err != nil {
			return fmt.Errorf("%s: want an array of strings: %w", join(path, "required"), habilis.ErrInvalid)
		}
	}
	if a, ok := m["additionalProperties"]; ok && string(bytes.TrimSpace(a)) == "false" {
		s.AdditionalProperties = false
	}
	return nil
}

func parseEnum(s *Schema, m map[string]json.RawMessage, path string) error {
	if e, ok := m["enum"]; ok && !isNull(e) {
		if err := json.Unmarshal(e, &s.Enum); err != nil {
			return fmt.Errorf("%s: want an array: %w", join(path, "enum"), habilis.ErrInvalid)
		}
	}
	return nil
}

// parseBounds reads "minimum", "maximum", "minLength" and "maxLength".
func parseBounds(s *Schema, m map[string]json.RawMessage, path string) error {
	// In a fixed order (slices, not maps), so that of two bad bounds the
	// same is always reported.
	for _, b := range []struct {
		key string
		dst **float64
	}{{"minimum", &s.Minimum}, {"maximum", &s.Maximum}} {
		if v, ok := m[b.key]; ok && !isNull(v) {
			var f float64
			if err := json.Unmarshal(v, &f); err != nil {
				return fmt.Errorf("%s: want a number: %w", join(path, b.key), habilis.ErrInvalid)
			}
			*b.dst = &f
		}
	}
	for _, b := range []struct {
		key string
		dst **int
	}{{"minLength", &s.MinLength}, {"maxLength", &s.MaxLength}} {
		if v, ok := m[b.key]; ok && !isNull(v) {
			var n int
			if err := json.Unmarshal(v, &n); err != nil || n < 0 {
				return fmt.Errorf("%s: want a non-negative integer: %w", join(path, b.key), habilis.ErrInvalid)
			}
			*b.dst = &n
		}
	}
	return nil
}

func parseItems(s *Schema, m map[string]json.RawMessage, path string) error {
	if it, ok := m["items"]; ok && !isNull(it) {
		is, err := parseSchema(it, path+"[]")
		if err != nil {
			return err
		}
		s.Items = is
	}
	return nil
}

// parseDefault reads "default"; HasDefault tells a default of null from
// none.
func parseDefault(s *Schema, m map[string]json.RawMessage, _ string) error {
	if d, ok := m["default"]; ok {
		if err := json.Unmarshal(d, &s.Default); err == nil {
			s.HasDefault = true
		}
	}
	return nil
}

// objectKeys returns the keys of a JSON object in document order.
func objectKeys(raw json.RawMessage) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("not an object")
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		keys = append(keys, key)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orRoot(path string) string {
	if path == "" {
		return "schema"
	}
	return path
}

// allows reports whether the schema accepts JSON type t ("integer" values
// are also numbers).
func (s *Schema) allows(t string) bool {
	if s == nil || len(s.Types) == 0 {
		return true
	}
	if slices.Contains(s.Types, t) {
		return true
	}
	return t == "integer" && slices.Contains(s.Types, "number")
}

// isRequired reports whether name is in s.Required.
func (s *Schema) isRequired(name string) bool { return s != nil && slices.Contains(s.Required, name) }

// Problem is one way arguments break their schema.
type Problem struct {
	// Path names the argument: "city", "address.zip", "tags[2]".
	Path    string `json:"path"`
	Message string `json:"message"`
}

// String returns "path: message".
func (p Problem) String() string { return p.Path + ": " + p.Message }

// missingMessage is the message of the Problem for a required argument
// that is not there; Fill reports those as Missing instead.
const missingMessage = "required argument is missing"

// Validate checks args against s and returns every problem found, in a
// deterministic order (schema order, then unknown names sorted). A nil
// schema accepts anything.
func Validate(s *Schema, args map[string]any) []Problem {
	var ps []Problem
	validateObject(s, args, "", &ps)
	return ps
}

func validateObject(s *Schema, obj map[string]any, path string, ps *[]Problem) {
	if s == nil {
		return
	}
	for _, name := range s.Required {
		if _, ok := obj[name]; !ok {
			*ps = append(*ps, Problem{join(path, name), missingMessage})
		}
	}
	for _, name := range s.Order {
		if v, ok := obj[name]; ok {
			validateValue(s.Properties[name], v, join(path, name), ps)
		}
	}
	if !s.AdditionalProperties {
		for _, name := range slices.Sorted(maps.Keys(obj)) {
			if _, ok := s.Properties[name]; !ok {
				*ps = append(*ps, Problem{join(path, name), "unknown argument"})
			}
		}
	}
}

func validateValue(s *Schema, v any, path string, ps *[]Problem) {
	if s == nil {
		return
	}
	kind := jsonType(v)
	if !s.allows(kind) {
		*ps = append(*ps, Problem{path, fmt.Sprintf("want %s, got %s", strings.Join(s.Types, " or "), kind)})
		return
	}
	if len(s.Enum) > 0 && !inEnum(s.Enum, v) {
		*ps = append(*ps, Problem{path, fmt.Sprintf("%s is not one of %s", short(v), enumList(s.Enum))})
	}
	switch kind {
	case "number", "integer":
		f, _ := toFloat(v)
		validateNumber(s, f, path, ps)
	case "string":
		validateString(s, v.(string), path, ps)
	case "array":
		for i, item := range v.([]any) {
			validateValue(s.Items, item, fmt.Sprintf("%s[%d]", path, i), ps)
		}
	case "object":
		validateObject(s, v.(map[string]any), path, ps)
	}
}

func validateNumber(s *Schema, f float64, path string, ps *[]Problem) {
	if s.Minimum != nil && f < *s.Minimum {
		*ps = append(*ps, Problem{path, fmt.Sprintf("%s is less than the minimum %s", fmtNum(f), fmtNum(*s.Minimum))})
	}
	if s.Maximum != nil && f > *s.Maximum {
		*ps = append(*ps, Problem{path, fmt.Sprintf("%s is more than the maximum %s", fmtNum(f), fmtNum(*s.Maximum))})
	}
}

func validateString(s *Schema, str, path string, ps *[]Problem) {
	n := utf8.RuneCountInString(str)
	if s.MinLength != nil && n < *s.MinLength {
		*ps = append(*ps, Problem{path, fmt.Sprintf("is %d characters long, want at least %d", n, *s.MinLength)})
	}
	if s.MaxLength != nil && n > *s.MaxLength {
		*ps = append(*ps, Problem{path, fmt.Sprintf("is %d characters long, want at most %d", n, *s.MaxLength)})
	}
	if msg := checkFormat(s.Format, str); msg != "" {
		*ps = append(*ps, Problem{path, msg})
	}
}

// checkFormat returns why str does not have the format, or "".
func checkFormat(format, str string) string {
	switch format {
	case "date":
		if _, err := time.Parse(time.DateOnly, str); err != nil {
			return fmt.Sprintf("%q is not a date (YYYY-MM-DD)", str)
		}
	case "date-time":
		if _, err := time.Parse(time.RFC3339, str); err != nil {
			return fmt.Sprintf("%q is not a date-time (RFC 3339)", str)
		}
	case "email":
		a, err := mail.ParseAddress(str)
		if err != nil || a.Address != str {
			return fmt.Sprintf("%q is not an e-mail address", str)
		}
	case "uri":
		u, err := url.Parse(str)
		if err != nil || u.Scheme == "" {
			return fmt.Sprintf("%q is not an absolute URI", str)
		}
	}
	return ""
}

// jsonType names the JSON type of a decoded value; whole numbers are
// "integer".
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	default:
		f, ok := toFloat(x)
		if !ok {
			return fmt.Sprintf("%T", v)
		}
		if f == math.Trunc(f) && !math.IsInf(f, 0) {
			return "integer"
		}
		return "number"
	}
}

// toFloat converts the numeric types a decoded or hand-built argument map
// may hold.
func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

func inEnum(enum []any, v any) bool {
	for _, e := range enum {
		if sameJSON(e, v) {
			return true
		}
	}
	return false
}

// sameJSON compares two decoded JSON values, numbers by value.
func sameJSON(a, b any) bool {
	fa, oka := toFloat(a)
	fb, okb := toFloat(b)
	if oka || okb {
		return oka && okb && fa == fb
	}
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

func enumList(enum []any) string {
	parts := make([]string, len(enum))
	for i, e := range enum {
		parts[i] = short(e)
	}
	return strings.Join(parts, ", ")
}

// short renders a value for a message, cut to a readable length.
func short(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 60 {
		return string(b[:57]) + "..."
	}
	return string(b)
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// GrammarSchema returns s reduced to what a model's constrained decoding
// handles well, for use as Ollama's chat "format": one type per value,
// properties, items and scalar enums. It drops "required" on purpose, so a
// model may leave out what the user did not say instead of being forced to
// invent it, and it forbids undeclared members.
func GrammarSchema(s *Schema) json.RawMessage {
	b, err := json.Marshal(grammarNode(s))
	if err != nil {
		return json.RawMessage(`{"type":"object"}`)
	}
	return b
}

// grammarProps keeps property order, which decoders follow.
type grammarProps struct {
	order []string
	props map[string]map[string]any
}

func (g grammarProps) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, name := range g.order {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(name)
		v, err := json.Marshal(g.props[name])
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func grammarNode(s *Schema) map[string]any {
	n := map[string]any{}
	if s == nil {
		return n
	}
	t := grammarType(s)
	if t != "" {
		n["type"] = t
	}
	if enum, ok := grammarEnum(s.Enum); ok {
		n["enum"] = enum
	}
	switch t {
	case "array":
		if s.Items != nil {
			n["items"] = grammarNode(s.Items)
		}
	case "object":
		if len(s.Order) > 0 {
			g := grammarProps{order: s.Order, props: map[string]map[string]any{}}
			for _, name := range s.Order {
				g.props[name] = grammarNode(s.Properties[name])
			}
			n["properties"] = g
			n["additionalProperties"] = false
		}
	}
	return n
}

// grammarType returns the one type a grammar can ask for: the first that
// is not null, else "object" when s has properties, else "".
func grammarType(s *Schema) string {
	var t string
	for _, c := range s.Types {
		if c != "null" {
			t = c
			break
		}
	}
	if t == "" && len(s.Properties) > 0 {
		t = "object"
	}
	return t
}

// grammarEnum returns the enum when every value is a string, a number or
// a boolean; ok is false for an empty enum or one with other values.
func grammarEnum(values []any) (enum []any, ok bool) {
	if len(values) == 0 {
		return nil, false
	}
	for _, e := range values {
		switch e.(type) {
		case string, float64, bool:
			enum = append(enum, e)
		}
	}
	return enum, len(enum) == len(values)
}
