package fill

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/habilis-router/habilis"
)

func mustSchema(t testing.TB, raw string) *Schema {
	t.Helper()
	s, err := ParseSchema(json.RawMessage(raw))
	if err != nil {
		t.Fatalf("ParseSchema(%s): %v", raw, err)
	}
	return s
}

func ptr[T any](v T) *T { return &v }

func TestParseSchema(t *testing.T) {
	s := mustSchema(t, `{"type":"dict","properties":{
		"zeta":{"type":"string","format":"email","minLength":3,"maxLength":50},
		"alpha":{"type":["float","null"],"minimum":0,"maximum":10,"default":5},
		"tags":{"type":"tuple","items":{"type":"string","enum":["a","b"]}},
		"loose":{"type":"any"},
		"addr":{"type":"object","properties":{"zip":{"type":"integer"}},"required":["zip"],"additionalProperties":false}
	},"required":["zeta"]}`)
	want := &Schema{
		Types: []string{"object"},
		Order: []string{"zeta", "alpha", "tags", "loose", "addr"},
		Properties: map[string]*Schema{
			"zeta":  {Types: []string{"string"}, Format: "email", MinLength: ptr(3), MaxLength: ptr(50), AdditionalProperties: true},
			"alpha": {Types: []string{"number", "null"}, Minimum: ptr(0.0), Maximum: ptr(10.0), Default: 5.0, HasDefault: true, AdditionalProperties: true},
			"tags": {Types: []string{"array"}, AdditionalProperties: true,
				Items: &Schema{Types: []string{"string"}, Enum: []any{"a", "b"}, AdditionalProperties: true}},
			"loose": {AdditionalProperties: true},
			"addr": {Types: []string{"object"}, Order: []string{"zip"}, Required: []string{"zip"},
				Properties: map[string]*Schema{"zip": {Types: []string{"integer"}, AdditionalProperties: true}}},
		},
		Required:             []string{"zeta"},
		AdditionalProperties: true,
	}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("ParseSchema mismatch (-want +got):\n%s", diff)
	}
}

func TestParseSchemaErrors(t *testing.T) {
	tests := []struct {
		raw  string
		path string
	}{
		{`[]`, "schema"},
		{`{"type":5}`, "type"},
		{`{"type":"thing"}`, "type"},
		{`{"properties":{"city":{"type":"place"}}}`, "city.type"},
		{`{"properties":{"a":{"properties":{"b":{"minimum":"x"}}}}}`, "a.b.minimum"},
		{`{"properties":[1]}`, "properties"},
		{`{"required":"city"}`, "required"},
		{`{"properties":{"n":{"maxLength":-1}}}`, "n.maxLength"},
		{`{"properties":{"l":{"items":{"type":1}}}}`, "l[].type"},
	}
	for _, tt := range tests {
		_, err := ParseSchema(json.RawMessage(tt.raw))
		if !errors.Is(err, habilis.ErrInvalid) || !strings.Contains(err.Error(), ": "+tt.path+": ") {
			t.Errorf("ParseSchema(%s) = %v, want ErrInvalid naming %q", tt.raw, err, tt.path)
		}
	}
}

// TestParseSchemaBadBounds checks that of two bad bounds the same one is
// reported every time (they were once read from a map, in random order).
func TestParseSchemaBadBounds(t *testing.T) {
	tests := []struct {
		raw, path string
	}{
		{`{"properties":{"n":{"minimum":"low","maximum":"high"}}}`, "n.minimum"},
		{`{"properties":{"n":{"maxLength":-2,"minLength":-1}}}`, "n.minLength"},
	}
	for _, tt := range tests {
		for range 100 {
			_, err := ParseSchema(json.RawMessage(tt.raw))
			if !errors.Is(err, habilis.ErrInvalid) || !strings.Contains(err.Error(), ": "+tt.path+": ") {
				t.Fatalf("ParseSchema(%s) = %v, want ErrInvalid naming %q", tt.raw, err, tt.path)
			}
		}
	}
}

func TestParseSchemaEmpty(t *testing.T) {
	for _, raw := range []string{"", "  "} {
		s, err := ParseSchema(json.RawMessage(raw))
		if err != nil || !s.allows("object") {
			t.Errorf("ParseSchema(%q) = %+v, %v, want an empty object schema", raw, s, err)
		}
	}
}

func TestValidate(t *testing.T) {
	s := mustSchema(t, `{"type":"object","properties":{
		"city":{"type":"string","minLength":2,"maxLength":10},
		"days":{"type":"integer","minimum":1,"maximum":14},
		"unit":{"type":"string","enum":["celsius","fahrenheit"]},
		"email":{"type":"string","format":"email"},
		"site":{"type":"string","format":"uri"},
		"when":{"type":"string","format":"date"},
		"at":{"type":"string","format":"date-time"},
		"tags":{"type":"array","items":{"type":"string"}},
		"maybe":{"type":["number","null"]},
		"addr":{"type":"object","properties":{"zip":{"type":"string"}},"required":["zip"],"additionalProperties":false}
	},"required":["city"]}`)
	tests := []struct {
		args string
		want []Problem
	}{
		{`{"city":"Paris"}`, nil},
		{`{"city":"Paris","days":3,"unit":"celsius","email":"a@b.co","site":"https://x.org/a","when":"2024-02-29","at":"2024-02-29T10:00:00Z","tags":["x"],"maybe":null,"addr":{"zip":"75001"}}`, nil},
		{`{}`, []Problem{{"city", "required argument is missing"}}},
		{`{"city":3}`, []Problem{{"city", "want string, got integer"}}},
		{`{"city":"P"}`, []Problem{{"city", "is 1 characters long, want at least 2"}}},
		{`{"city":"Llanfairpwllgwyngyll"}`, []Problem{{"city", "is 20 characters long, want at most 10"}}},
		{`{"city":"Paris","days":2.5}`, []Problem{{"days", "want integer, got number"}}},
		{`{"city":"Paris","days":0}`, []Problem{{"days", "0 is less than the minimum 1"}}},
		{`{"city":"Paris","days":15}`, []Problem{{"days", "15 is more than the maximum 14"}}},
		{`{"city":"Paris","unit":"kelvin"}`, []Problem{{"unit", `"kelvin" is not one of "celsius", "fahrenheit"`}}},
		{`{"city":"Paris","email":"alice"}`, []Problem{{"email", `"alice" is not an e-mail address`}}},
		{`{"city":"Paris","site":"/relative"}`, []Problem{{"site", `"/relative" is not an absolute URI`}}},
		{`{"city":"Paris","when":"2023-02-29"}`, []Problem{{"when", `"2023-02-29" is not a date (YYYY-MM-DD)`}}},
		{`{"city":"Paris","at":"tomorrow"}`, []Problem{{"at", `"tomorrow" is not a date-time (RFC 3339)`}}},
		{`{"city":"Paris","tags":["x",2]}`, []Problem{{"tags[1]", "want string, got integer"}}},
		{`{"city":"Paris","addr":{"street":"x"}}`, []Problem{{"addr.zip", "required argument is missing"}, {"addr.street", "unknown argument"}}},
	}
	for _, tt := range tests {
		var args map[string]any
		if err := json.Unmarshal([]byte(tt.args), &args); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, Validate(s, args)); diff != "" {
			t.Errorf("Validate(%s) mismatch (-want +got):\n%s", tt.args, diff)
		}
	}
}

func TestGrammarSchema(t *testing.T) {
	s := mustSchema(t, `{"type":"object","properties":{
		"city":{"type":"string","description":"The city","format":"email","minLength":2},
		"unit":{"type":["string","null"],"enum":["c","f"]},
		"tags":{"type":"array","items":{"type":"integer"}},
		"addr":{"properties":{"zip":{"type":"string"}}}
	},"required":["city"]}`)
	want := `{"additionalProperties":false,"properties":{"city":{"type":"string"},"unit":{"enum":["c","f"],"type":"string"},"tags":{"items":{"type":"integer"},"type":"array"},"addr":{"additionalProperties":false,"properties":{"zip":{"type":"string"}},"type":"object"}},"type":"object"}`
	if got := string(GrammarSchema(s)); got != want {
		t.Errorf("GrammarSchema = %s, want %s", got, want)
	}
}
