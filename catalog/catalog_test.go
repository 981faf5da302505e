package catalog

import (
	"bufio"
	"encoding/json"
	"errors"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/fill"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func f32(v float32) *float32 { return &v }

// Canonical schemas shared by several fixtures.
const (
	weatherSchema = `{"properties":{"city":{"description":"City name, e.g. Lisbon","type":"string"},` +
		`"days":{"description":"How many days ahead (type: integer)","type":"integer"},` +
		`"units":{"description":"Unit system (type: string; one of: metric, imperial; default: metric)","type":"string"}},` +
		`"required":["city"],"type":"object"}`
	emptySchema = `{"properties":{},"type":"object"}`
)

func TestParseShapes(t *testing.T) {
	weather := habilis.Tool{
		Name:        "get_weather",
		Description: "Current weather conditions for a city.",
		Examples:    []string{"what's the weather in Paris", "is it raining in Oslo right now?"},
		InputSchema: json.RawMessage(weatherSchema),
		Margin:      f32(0.05),
		Meta:        map[string]string{"owner": "weather-team"},
	}
	ping := habilis.Tool{Name: "ping", Description: "Check that the service is up.", InputSchema: json.RawMessage(emptySchema)}
	listDir := habilis.Tool{
		Name:        "list_dir",
		Description: "List the entries of a directory.",
		InputSchema: json.RawMessage(`{"properties":{"path":{"type":"string"}},"type":"object"}`),
	}
	listDirWithExamples := listDir
	listDirWithExamples.Examples = []string{"what files are in src", "show me the folder contents"}

	tests := []struct {
		file string
		want []habilis.Tool
	}{
		{"habilis.json", []habilis.Tool{
			weather,
			{
				Name:        "send_email",
				Description: "Send an e-mail to one recipient.",
				Examples:    []string{"email Bob the quarterly report"},
				InputSchema: json.RawMessage(`{"properties":{"priority":{"enum":["low","normal","high"],"type":"string"},` +
					`"to":{"description":"Recipient address","type":"string"}},"required":["to"],"type":"object"}`),
				Executor: json.RawMessage(`{"kind":"http","url":"http://localhost:8080/email"}`),
			},
			ping,
		}},
		{"habilis_tools.json", []habilis.Tool{weather, ping}},
		{"habilis_tools_list.json", []habilis.Tool{
			{
				Name:        "current_time",
				Description: "Tell the current time.",
				Examples:    []string{"what time is it", "got the time?"},
				InputSchema: json.RawMessage(`{"properties":{"timezone":{"description":"IANA time zone","type":"string"}},"type":"object"}`),
			},
			ping,
		}},
		{"openai.json", []habilis.Tool{
			{
				Name:        "get_weather",
				Description: "Current weather conditions for a city.",
				InputSchema: json.RawMessage(`{"additionalProperties":false,"properties":{` +
					`"city":{"description":"City name, e.g. Lisbon","type":"string"},` +
					`"units":{"enum":["metric","imperial",null],"type":["string","null"]}},` +
					`"required":["city","units"],"type":"object"}`),
			},
			ping,
		}},
		{"openai_tools.json", []habilis.Tool{
			ping,
			{
				Name:        "get_time",
				Description: "Tell the current time.",
				InputSchema: json.RawMessage(`{"properties":{"tz":{"type":"string"}},"type":"object"}`),
			},
		}},
		{"mcp.json", []habilis.Tool{
			{
				Name:        "read_file",
				Description: "Read the contents of a file in the workspace.",
				InputSchema: json.RawMessage(`{"$defs":{"range":{"properties":{"end":{"type":"integer"},"start":{"minimum":1,"type":"integer"}},"type":"object"}},` +
					`"properties":{"path":{"description":"Path relative to the workspace root","type":"string"},"range":{"$ref":"#/$defs/range"}},` +
					`"required":["path"],"type":"object"}`),
				Meta: map[string]string{"title": "Read file"},
			},
			listDirWithExamples,
		}},
		{"mcp_jsonrpc.json", []habilis.Tool{listDir}},
	}
	for _, tt := range tests {
		path := filepath.Join("testdata", tt.file)
		got, err := Read(path)
		if err != nil {
			t.Errorf("Read(%q) error: %v", path, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got, cmp.Transformer("string", func(r json.RawMessage) string { return string(r) })); diff != "" {
			t.Errorf("Read(%q) mismatch (-want +got):\n%s", path, diff)
		}
	}
}

// TestParseOptionalDescription checks that OpenAI and MCP tools, whose
// formats make the description optional, load without one, described by
// their title or their name in words as the MCP gateway describes them,
// while habilis' own shape still requires it (TestParseErrors).
func TestParseOptionalDescription(t *testing.T) {
	tests := []struct {
		name, data string
		want       []string
	}{
		{"openai absent", `[{"type":"function","function":{"name":"get_weather"}},{"type":"function","function":{"name":"send-mail.v2","description":"Send mail"}}]`,
			[]string{"get weather", "Send mail"}},
		{"openai null and blank", `[{"type":"function","function":{"name":"a_b","description":null}},{"type":"function","function":{"name":"c","description":" "}}]`,
			[]string{"a b", "c"}},
		{"openai flat", `[{"type":"function","name":"list_files"}]`, []string{"list files"}},
		{"openai name of separators", `[{"type":"function","name":"__"}]`, []string{"__"}},
		{"mcp title", `{"tools":[{"name":"read_file","title":"Read a file","inputSchema":{"type":"object"}}]}`, []string{"Read a file"}},
		{"mcp name", `{"tools":[{"name":"read_graph","annotations":{},"inputSchema":{"type":"object"}}]}`, []string{"read graph"}},
	}
	for _, tt := range tests {
		tools, err := Parse("t.json", []byte(tt.data))
		if err != nil {
			t.Errorf("%s: Parse error: %v", tt.name, err)
			continue
		}
		var got []string
		for _, tool := range tools {
			got = append(got, tool.Description)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: descriptions (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestParseTypeHints(t *testing.T) {
	got, err := Read(filepath.Join("testdata", "bfcl.json"))
	if err != nil {
		t.Fatalf("Read(bfcl.json) error: %v", err)
	}
	if len(got) != 1 {
		t.Fatalf("Read(bfcl.json) = %d tools, want 1", len(got))
	}
	var schema struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			Type        *string `json:"type"`
			Description string  `json:"description"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(got[0].InputSchema, &schema); err != nil {
		t.Fatalf("InputSchema %s: %v", got[0].InputSchema, err)
	}
	wantTypes := map[string]string{
		"x": "integer", "y": "number", "z": "integer", "points": "array",
		"options": "object", "flag": "boolean", "anything": "", "label": "string",
	}
	for name, want := range wantTypes {
		p, ok := schema.Properties[name]
		if !ok {
			t.Errorf("property %q missing from %s", name, got[0].InputSchema)
			continue
		}
		gotType := ""
		if p.Type != nil {
			gotType = *p.Type
		}
		if gotType != want {
			t.Errorf("property %q type = %q, want %q", name, gotType, want)
		}
		if p.Description == "" {
			t.Errorf("property %q lost its description", name)
		}
	}
	if diff := cmp.Diff([]string{"x", "y"}, schema.Required); diff != "" {
		t.Errorf("required mismatch (-want +got):\n%s", diff)
	}
	if schema.Type != "object" {
		t.Errorf("schema type = %q, want object", schema.Type)
	}
}

func TestHintType(t *testing.T) {
	tests := []struct{ desc, want string }{
		{"", "string"},
		{"plain text", "string"},
		{"Count (type: integer)", "integer"},
		{"Count (type: integer)  ", "integer"},
		{"Ratio (type: float; default: 0.5)", "number"},
		{"Headers (type: dict; default: {'Content-Type': 'application/json'})", "object"},
		{"Pair (type: tuple)", "array"},
		{"Value (type: any)", ""},
		{"Mode (type: String; one of: a, b)", "string"},
		{"Strange (type: widget)", "string"},
		{"(type: integer) is said first, then more", "string"},
	}
	for _, tt := range tests {
		if got := hintType(tt.desc); got != tt.want {
			t.Errorf("hintType(%q) = %q, want %q", tt.desc, got, tt.want)
		}
	}
}

// catalogErrors flattens an error from Parse into its problems.
func catalogErrors(t *testing.T, err error) []*Error {
	t.Helper()
	var out []*Error
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		ce, ok := e.(*Error)
		if !ok {
			t.Errorf("problem %v is a %T, want *Error", e, e)
			return
		}
		out = append(out, ce)
	}
	walk(err)
	return out
}

func TestParseErrors(t *testing.T) {
	long := strings.Repeat("a", 65)
	tests := []struct {
		name  string
		data  string
		index int
		tool  string
		field string
		msg   string
	}{
		// The file as a whole.
		{"empty file", "", -1, "", "", "is empty"},
		{"blank file", " \n\t", -1, "", "", "is empty"},
		{"empty array", "[]", -1, "", "", "holds no tools"},
		{"empty wrapper", `{"tools": []}`, -1, "", "tools", "holds no tools"},
		{"scalar", `42`, -1, "", "", "must be an array of tools"},
		{"wrapper without tools", `{}`, -1, "", "", `must be an array of tools or an object with "tools"`},
		{"unknown wrapper field", `{"tools": [], "toolz": 1}`, -1, "", "toolz", "unknown field"},
		{"both wrappers", `{"tools": [{"name":"a","description":"d"}], "tools_list": []}`, -1, "", "tools_list", `conflicts with "tools"`},
		{"tools not array", `{"tools": {"name": "a"}}`, -1, "", "tools", "must be an array of tools, got object"},
		{"json-rpc error", `{"jsonrpc": "2.0", "id": 1, "error": {"code": -1}}`, -1, "", "error", "JSON-RPC error response"},
		{"json-rpc without result", `{"jsonrpc": "2.0", "id": 1}`, -1, "", "result", "a JSON-RPC response needs a result"},
		{"tool not object", `["get_weather"]`, 0, "", "", "must be an object, got string"},

		// Shapes.
		{"mixed shapes", `[{"name":"a","description":"d","arguments":{}},{"type":"function","function":{"name":"b","description":"d"}}]`,
			1, "b", "", `is an OpenAI function tool but tool 0 "a" is a habilis tool`},
		{"mcp among openai", `[{"type":"function","function":{"name":"a","description":"d"}},{"name":"b","description":"d"}]`,
			1, "b", "", "is a tool without type but tool 0"},
		{"openai wrong type", `[{"type":"tool","function":{"name":"a","description":"d"}}]`, 0, "a", "type",
			`must be "function" (the one OpenAI tool type habilis reads), got "tool"`},
		// A tool of another type is refused by its type, whatever the
		// other tools are, not called a tool without type.
		{"custom among openai", `[{"type":"function","function":{"name":"a","description":"d"}},{"type":"custom","name":"b","description":"d","format":{"type":"text"}}]`,
			1, "b", "type", `must be "function" (the one OpenAI tool type habilis reads), got "custom"`},
		{"custom alone", `[{"type":"custom","name":"b","description":"d"}]`, 0, "b", "type", `got "custom"`},
		{"custom among habilis", `[{"name":"a","description":"d"},{"type":"custom","name":"b","description":"d"}]`, 1, "b", "type", `got "custom"`},
		{"type not string", `[{"name":"a","description":"d","type":7}]`, 0, "a", "type", "must be a string, got number"},
		{"openai unknown field", `[{"type":"function","function":{"name":"a","description":"d","paramters":{}}}]`,
			0, "a", "function.paramters", `did you mean "parameters"?`},
		{"openai description not string", `[{"type":"function","function":{"name":"a","description":7}}]`, 0, "a", "function.description", "must be a string"},
		{"openai strict not bool", `[{"type":"function","function":{"name":"a","description":"d","strict":"yes"}}]`, 0, "a", "function.strict", "must be a boolean"},
		{"mcp typo", `{"tools":[{"name":"a","description":"d","title":"A","inputSchemma":{}}]}`, 0, "a", "inputSchemma", `did you mean "inputSchema"?`},
		{"mcp input_schema", `{"tools":[{"name":"a","description":"d","input_schema":{}}]}`, 0, "a", "input_schema", `did you mean "inputSchema"?`},

		// Fields of habilis' shape.
		{"unknown field typo", `[{"name":"a","description":"d","exmples":["x"]}]`, 0, "a", "exmples", `unknown field (did you mean "examples"?)`},
		{"unknown field", `[{"name":"a","description":"d","colour":"red"}]`, 0, "a", "colour", "unknown field; known fields are"},
		{"missing name", `[{"description":"d"}]`, 0, "", "name", "is required"},
		{"name not string", `[{"name":7,"description":"d"}]`, 0, "", "name", "must be a string, got number"},
		{"empty name", `[{"name":"","description":"d"}]`, 0, "", "name", "must not be empty"},
		{"long name", `[{"name":"` + long + `","description":"d"}]`, 0, long, "name", "is 65 bytes long; the limit is 64"},
		{"name with space", `[{"name":"get weather","description":"d"}]`, 0, "get weather", "name", `must use only ASCII letters (A-Z, a-z), digits (0-9), '_', '-', '.' and '&'; ' ' is none of them`},
		{"name not ascii", `[{"name":"météo","description":"d"}]`, 0, "météo", "name", `must use only ASCII letters (A-Z, a-z), digits (0-9), '_', '-', '.' and '&'; 'é' is none of them`},
		{"name with slash", `[{"name":"a/b","description":"d"}]`, 0, "a/b", "name", `must use only ASCII letters (A-Z, a-z), digits (0-9), '_', '-', '.' and '&'; '/' is none of them`},
		{"duplicate name", `[{"name":"a","description":"d"},{"name":"b","description":"d"},{"name":"a","description":"e"}]`,
			2, "a", "name", "duplicates the name of tool 0"},
		{"missing description", `[{"name":"a"}]`, 0, "a", "description", "is required"},
		{"null description", `[{"name":"a","description":null}]`, 0, "a", "description", "is required"},
		{"empty description", `[{"name":"a","description":""}]`, 0, "a", "description", "must not be empty"},
		{"blank description", `[{"name":"a","description":" \n "}]`, 0, "a", "description", "must not be empty"},
		{"description not string", `[{"name":"a","description":["d"]}]`, 0, "a", "description", "must be a string, got array"},
		{"long description", `[{"name":"a","description":"` + strings.Repeat("d", maxDescriptionLen+1) + `"}]`, 0, "a", "description", "the limit is"},
		{"examples not array", `[{"name":"a","description":"d","examples":"x"}]`, 0, "a", "examples", "must be an array of strings, got string"},
		{"example not string", `[{"name":"a","description":"d","examples":["x",3]}]`, 0, "a", "examples[1]", "must be a string, got number"},
		{"empty example", `[{"name":"a","description":"d","examples":["x",""]}]`, 0, "a", "examples[1]", "must not be blank"},
		{"blank example", `[{"name":"a","description":"d","examples":["  "]}]`, 0, "a", "examples[0]", "must not be blank"},
		{"duplicate example", `[{"name":"a","description":"d","examples":["Play some jazz","x","play  some JAZZ "]}]`,
			0, "a", "examples[2]", "duplicates examples[0]"},
		{"too many examples", `[{"name":"a","description":"d","examples":[` + numbered(MaxExamples+1) + `]}]`, 0, "a", "examples", "holds 1001 examples; the limit is 1000"},
		{"long example", `[{"name":"a","description":"d","examples":["` + strings.Repeat("x", MaxExampleLen+1) + `"]}]`, 0, "a", "examples[0]", "the limit is"},
		{"margin too big", `[{"name":"a","description":"d","margin":1.5}]`, 0, "a", "margin", "must be between 0 and 1, got 1.5"},
		{"margin negative", `[{"name":"a","description":"d","margin":-0.1}]`, 0, "a", "margin", "must be between 0 and 1"},
		{"margin huge", `[{"name":"a","description":"d","margin":1e400}]`, 0, "a", "margin", "must be between 0 and 1"},
		{"margin string", `[{"name":"a","description":"d","margin":"0.1"}]`, 0, "a", "margin", "must be a number between 0 and 1, got string"},
		{"executor not object", `[{"name":"a","description":"d","executor":"curl x"}]`, 0, "a", "executor", "must be an object, got string"},
		{"executor field misspelt", `[{"name":"a","description":"d","executor":{"kind":"command","argv":["x"],"timout":"5s"}}]`,
			0, "a", "executor.timout", `unknown field (did you mean "timeout"?)`},
		{"executor without kind", `[{"name":"a","description":"d","executor":{"argv":["x"]}}]`, 0, "a", "executor.kind", "required"},
		{"executor kind unknown", `[{"name":"a","description":"d","executor":{"kind":"shell"}}]`, 0, "a", "executor.kind", `"shell": want`},
		{"executor argv string", `[{"name":"a","description":"d","executor":{"kind":"command","argv":"echo hi"}}]`,
			0, "a", "executor.argv", "must be an array of strings, found string"},
		{"executor embedded template", `[{"name":"a","description":"d","executor":{"kind":"command","argv":["x","--c={c}"]}}]`,
			0, "a", "executor.argv[1]", "a template must be a whole argument"},
		{"executor bad timeout", `[{"name":"a","description":"d","executor":{"kind":"http","url":"http://h/x","timeout":"soon"}}]`,
			0, "a", "executor.timeout", "is not a positive duration"},
		{"executor template misspelt", `[{"name":"a","description":"d","arguments":{"name":"who"},"executor":{"kind":"command","argv":["echo","{nmae}"]}}]`,
			0, "a", "executor.argv[1]", `"{nmae}" names no argument of the tool (did you mean "{name}"?)`},
		{"executor template not admitted", `[{"name":"a","description":"d","inputSchema":{"type":"object","properties":{"q":{}},"additionalProperties":false},"executor":{"kind":"command","argv":["x","{city}"]}}]`,
			0, "a", "executor.argv[1]", "its schema admits no others"},
		{"executor mcp without server", `[{"name":"a","description":"d","executor":{"kind":"mcp"}}]`, 0, "a", "executor.command", `required for kind "mcp"`},
		{"meta not object", `[{"name":"a","description":"d","meta":["x"]}]`, 0, "a", "meta", "must be an object of strings, got array"},
		{"meta value not string", `[{"name":"a","description":"d","meta":{"owner":1}}]`, 0, "a", "meta.owner", "must be a string, got number"},

		// Arguments.
		{"arguments not object", `[{"name":"a","description":"d","arguments":["x"]}]`, 0, "a", "arguments", "must be an object"},
		{"argument not string", `[{"name":"a","description":"d","arguments":{"city":{"kind":"text"}}}]`, 0, "a", "arguments.city", "must be a string, got object"},
		{"arguments and inputSchema", `[{"name":"a","description":"d","arguments":{},"inputSchema":{}}]`, 0, "a", "inputSchema", `conflicts with "arguments"`},
		{"required with schema", `[{"name":"a","description":"d","arguments":{"type":"object","properties":{"x":{}}},"required":["x"]}]`,
			0, "a", "required", `belongs inside the "arguments" schema`},
		{"required with inputSchema", `[{"name":"a","description":"d","inputSchema":{"type":"object"},"required":["x"]}]`,
			0, "a", "required", `belongs inside "inputSchema"`},
		{"required unknown argument", `[{"name":"a","description":"d","arguments":{"city":"c"},"required":["city","town"]}]`,
			0, "a", "required[1]", `names "town", which is not an argument`},
		{"required not array", `[{"name":"a","description":"d","arguments":{"city":"c"},"required":"city"}]`, 0, "a", "required", "must be an array"},
		{"required repeated", `[{"name":"a","description":"d","arguments":{"city":"c"},"required":["city","city"]}]`, 0, "a", "required[1]", `repeats "city"`},

		// Schemas.
		{"schema not object", `[{"name":"a","description":"d","inputSchema":"object"}]`, 0, "a", "inputSchema", "must be a JSON Schema object, got string"},
		{"schema top type", `[{"name":"a","description":"d","inputSchema":{"type":"string"}}]`, 0, "a", "inputSchema.type", `must be "object"`},
		{"properties not object", `[{"name":"a","description":"d","arguments":{"type":"object","properties":["x"]}}]`,
			0, "a", "arguments.properties", "must be an object of schemas, got array"},
		{"property not object", `[{"name":"a","description":"d","arguments":{"type":"object","properties":{"x":"a string"}}}]`,
			0, "a", "arguments.properties.x", "must be a schema object, got string"},
		{"required not in properties", `[{"name":"a","description":"d","inputSchema":{"type":"object","properties":{"x":{}},"required":["y"]}}]`,
			0, "a", "inputSchema.required[0]", `names "y", which is not in properties`},
		{"bad type name", `[{"name":"a","description":"d","inputSchema":{"properties":{"x":{"type":"floating"}}}}]`,
			0, "a", "inputSchema.properties.x.type", `"floating" is not a JSON Schema type`},
		{"empty type array", `[{"name":"a","description":"d","inputSchema":{"properties":{"x":{"type":[]}}}}]`,
			0, "a", "inputSchema.properties.x.type", "must not be an empty array"},
		{"type not string", `[{"name":"a","description":"d","inputSchema":{"properties":{"x":{"type":3}}}}]`,
			0, "a", "inputSchema.properties.x.type", "must be a type name or an array of them"},
		{"empty enum", `[{"name":"a","description":"d","inputSchema":{"properties":{"x":{"type":"string","enum":[]}}}}]`,
			0, "a", "inputSchema.properties.x.enum", "must be a non-empty array"},
		{"enum not array", `[{"name":"a","description":"d","inputSchema":{"properties":{"x":{"enum":"a,b"}}}}]`,
			0, "a", "inputSchema.properties.x.enum", "must be a non-empty array"},
		{"nested items type", `[{"name":"a","description":"d","inputSchema":{"properties":{"x":{"type":"array","items":{"type":"lst"}}}}}]`,
			0, "a", "inputSchema.properties.x.items.type", `"lst" is not a JSON Schema type`},
		{"nested required", `[{"name":"a","description":"d","inputSchema":{"properties":{"x":{"type":"object","properties":{"y":{}},"required":["z"]}}}}]`,
			0, "a", "inputSchema.properties.x.required[0]", `names "z"`},
		{"remote ref", `[{"name":"a","description":"d","inputSchema":{"properties":{"x":{"$ref":"https://example.com/s.json"}}}}]`,
			0, "a", "inputSchema.properties.x.$ref", "points outside the schema"},
		{"relative ref", `[{"name":"a","description":"d","inputSchema":{"properties":{"x":{"$ref":"other.json#/x"}}}}]`,
			0, "a", "inputSchema.properties.x.$ref", "points outside the schema"},
		{"dangling ref", `[{"name":"a","description":"d","inputSchema":{"properties":{"x":{"$ref":"#/$defs/missing"}}}}]`,
			0, "a", "inputSchema.properties.x.$ref", "does not resolve"},
		{"anyOf empty", `[{"name":"a","description":"d","inputSchema":{"properties":{"x":{"anyOf":[]}}}}]`,
			0, "a", "inputSchema.properties.x.anyOf", "must be a non-empty array of schemas"},
		{"deep anyOf", `[{"name":"a","description":"d","inputSchema":{"properties":{"x":` + strings.Repeat(`{"anyOf":[`, 70) + `{}` + strings.Repeat(`]}`, 70) + `}}}]`,
			0, "a", "inputSchema.properties.x" + strings.Repeat(".anyOf[0]", 64), "nests deeper than 64 levels"},
		{"deep not", `[{"name":"a","description":"d","inputSchema":` + strings.Repeat(`{"not":`, 70) + `{}` + strings.Repeat(`}`, 70) + `}]`,
			0, "a", "inputSchema" + strings.Repeat(".not", 65), "nests deeper than 64 levels"},
		{"deep items list", `[{"name":"a","description":"d","inputSchema":{"properties":{"x":` + strings.Repeat(`{"items":[`, 70) + `{}` + strings.Repeat(`]}`, 70) + `}}}]`,
			0, "a", "inputSchema.properties.x" + strings.Repeat(".items[0]", 64), "nests deeper than 64 levels"},
		{"deep $defs", `[{"name":"a","description":"d","inputSchema":` + strings.Repeat(`{"$defs":{"d":`, 70) + `{}` + strings.Repeat(`}}`, 70) + `}]`,
			0, "a", "inputSchema" + strings.Repeat(".$defs.d", 65), "nests deeper than 64 levels"},
		{"anyOf member", `[{"name":"a","description":"d","inputSchema":{"properties":{"x":{"anyOf":[{"type":"string"},{"type":"lst"}]}}}}]`,
			0, "a", "inputSchema.properties.x.anyOf[1].type", `"lst" is not a JSON Schema type`},
		{"defs not object", `[{"name":"a","description":"d","inputSchema":{"type":"object","$defs":[{"type":"string"}]}}]`,
			0, "a", "inputSchema.$defs", "must be an object of schemas, got array"},
		{"defs member", `[{"name":"a","description":"d","inputSchema":{"type":"object","$defs":{"unit":{"enum":[]}}}}]`,
			0, "a", "inputSchema.$defs.unit.enum", "must be a non-empty array"},
		{"items not schema", `[{"name":"a","description":"d","inputSchema":{"properties":{"x":{"type":"array","items":"string"}}}}]`,
			0, "a", "inputSchema.properties.x.items", "must be a schema (an object or a boolean), got string"},
		{"type array with number", `[{"name":"a","description":"d","inputSchema":{"properties":{"x":{"type":["string",3]}}}}]`,
			0, "a", "inputSchema.properties.x.type", "must hold type names, got number"},
		{"type array with any", `[{"name":"a","description":"d","inputSchema":{"properties":{"x":{"type":["string","any"]}}}}]`,
			0, "a", "inputSchema.properties.x.type", `holds "any", which allows every type`},
		{"type array with unknown", `[{"name":"a","description":"d","inputSchema":{"properties":{"x":{"type":["string","txt"]}}}}]`,
			0, "a", "inputSchema.properties.x.type", `"txt" is not a JSON Schema type`},
		{"type array repeated", `[{"name":"a","description":"d","inputSchema":{"properties":{"x":{"type":["string","str"]}}}}]`,
			0, "a", "inputSchema.properties.x.type", `repeats "string"`},
		{"ref not string", `[{"name":"a","description":"d","inputSchema":{"properties":{"x":{"$ref":7}}}}]`,
			0, "a", "inputSchema.properties.x.$ref", "must be a string, got number"},
		{"ref past an array", `[{"name":"a","description":"d","inputSchema":{"$defs":{"u":{"anyOf":[{"type":"string"}]}},"properties":{"x":{"$ref":"#/$defs/u/anyOf/1"}}}}]`,
			0, "a", "inputSchema.properties.x.$ref", `"#/$defs/u/anyOf/1" does not resolve`},
		{"ref negative index", `[{"name":"a","description":"d","inputSchema":{"$defs":{"u":{"anyOf":[{"type":"string"}]}},"properties":{"x":{"$ref":"#/$defs/u/anyOf/-1"}}}}]`,
			0, "a", "inputSchema.properties.x.$ref", "does not resolve"},
		{"ref through a value", `[{"name":"a","description":"d","inputSchema":{"properties":{"x":{"type":"string","$ref":"#/properties/x/type/y"}}}}]`,
			0, "a", "inputSchema.properties.x.$ref", "does not resolve"},
		{"required not string", `[{"name":"a","description":"d","inputSchema":{"type":"object","properties":{"x":{}},"required":["x",1]}}]`,
			0, "a", "inputSchema.required[1]", "must be a string, got number"},
		{"required repeated in schema", `[{"name":"a","description":"d","inputSchema":{"type":"object","properties":{"x":{}},"required":["x","x"]}}]`,
			0, "a", "inputSchema.required[1]", `repeats "x"`},
		{"required not list in schema", `[{"name":"a","description":"d","inputSchema":{"type":"object","properties":{"x":{}},"required":"x"}}]`,
			0, "a", "inputSchema.required", "must be an array of property names, got string"},
		{"openai schema", `[{"type":"function","function":{"name":"a","description":"d","parameters":{"type":"object","properties":{"x":{"type":"integr"}}}}}]`,
			0, "a", "function.parameters.properties.x.type", `"integr" is not a JSON Schema type`},
		{"deep schema", `[{"name":"a","description":"d","inputSchema":{"properties":{"x":` + strings.Repeat(`{"items":`, 70) + `{}` + strings.Repeat(`}`, 70) + `}}}]`,
			0, "a", "inputSchema.properties.x" + strings.Repeat(".items", 64), "nests deeper than 64 levels"},

		// Encoding.
		{"invalid utf-8 in description", "[{\"name\":\"a\",\"description\":\"caf\xe9\"}]", 0, "a", "description", "not valid UTF-8"},
		{"invalid utf-8 in example", "{\"tools\":[{\"name\":\"a\",\"description\":\"d\",\"examples\":[\"ok\",\"\xff\"]}]}", 0, "a", "examples", "not valid UTF-8"},
		{"invalid utf-8 in field name", "[{\"name\":\"a\",\"description\":\"d\",\"\xff\":1}]", 0, "a", "", "a field name contains bytes that are not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tools, err := Parse("tools.json", []byte(tt.data))
			if err == nil {
				t.Fatalf("Parse(%.60q) = %d tools, want an error", tt.data, len(tools))
			}
			if tools != nil {
				t.Errorf("Parse(%.60q) returned %d tools with an error, want none", tt.data, len(tools))
			}
			if !errors.Is(err, habilis.ErrInvalid) {
				t.Errorf("Parse(%.60q) error %v is not habilis.ErrInvalid", tt.data, err)
			}
			var found *Error
			for _, ce := range catalogErrors(t, err) {
				if ce.Index == tt.index && ce.Field == tt.field && strings.Contains(ce.Msg, tt.msg) {
					found = ce
					break
				}
			}
			if found == nil {
				t.Fatalf("Parse(%.60q) error:\n%v\nwant a problem at index %d, field %q, containing %q", tt.data, err, tt.index, tt.field, tt.msg)
			}
			if found.File != "tools.json" || found.Tool != displayName(tt.tool) {
				t.Errorf("problem %+v: file %q tool %q, want %q and %q", found, found.File, found.Tool, "tools.json", tt.tool)
			}
			want := "tools.json: "
			if tt.index >= 0 {
				want += "tool " + itoa(tt.index)
				if tt.tool != "" {
					want += " " + quoteName(displayName(tt.tool))
				}
				want += ": "
			}
			if found.Field != "" {
				want += "field " + quoteName(found.Field) + ": "
			}
			if msg := found.Error(); !strings.HasPrefix(msg, want) || !strings.Contains(msg, tt.msg) {
				t.Errorf("Error() = %q, want prefix %q and %q", msg, want, tt.msg)
			}
		})
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestParseErrorMessage(t *testing.T) {
	data := `[{"name":"x","description":"d"},{"name":"y","description":"d"},{"name":"z","description":"d"},` +
		`{"name":"get_weather","description":"  "}]`
	_, err := Parse("tools.json", []byte(data))
	want := `tools.json: tool 3 "get_weather": field "description": must not be empty`
	if err == nil || err.Error() != want {
		t.Errorf("Parse() error = %v, want %s", err, want)
	}
}

func TestParseSyntaxError(t *testing.T) {
	tests := []struct {
		data       string
		line, col  int
		msgContent string
	}{
		{"[\n  {\"name\": \"a\",}\n]", 2, 16, "invalid character '}'"},
		{"[\n  {\"name\": \"a\"}\n", 2, 16, "unexpected end of JSON input"},
		{"[{\"name\": \"é\" \"b\"}]", 1, 15, "invalid character '\"'"},
		{"[] []", 1, 4, "after top-level value"},
	}
	for _, tt := range tests {
		_, err := Parse("tools.json", []byte(tt.data))
		var ce *Error
		if !errors.As(err, &ce) {
			t.Errorf("Parse(%q) error = %v, want a *Error", tt.data, err)
			continue
		}
		if ce.Line != tt.line || ce.Column != tt.col || !strings.Contains(ce.Msg, tt.msgContent) {
			t.Errorf("Parse(%q) error = %v, want line %d column %d and %q", tt.data, err, tt.line, tt.col, tt.msgContent)
		}
		if !strings.HasPrefix(err.Error(), "tools.json:"+itoa(tt.line)+":"+itoa(tt.col)+": invalid JSON") {
			t.Errorf("Parse(%q) error = %q, want it to start with file:line:column", tt.data, err)
		}
		if !errors.Is(err, habilis.ErrInvalid) {
			t.Errorf("Parse(%q) error %v is not habilis.ErrInvalid", tt.data, err)
		}
	}
}

func TestParseEncodingOutsideTools(t *testing.T) {
	data := "{\"tools\":[{\"name\":\"a\",\"description\":\"d\"}],\n\"nextCursor\":\"\xc3\"}"
	_, err := Parse("tools.json", []byte(data))
	var ce *Error
	if !errors.As(err, &ce) || ce.Line != 2 || ce.Column != 15 || !strings.Contains(ce.Msg, "UTF-8") {
		t.Errorf("Parse(%q) error = %v, want invalid UTF-8 at 2:15", data, err)
	}
	// The file as a whole, not a tool.
	if want := "tools.json:2:15: contains bytes that are not valid UTF-8"; err == nil || err.Error() != want {
		t.Errorf("Parse(%q) error = %v, want %s", data, err, want)
	}
}

func TestParseReportsAllProblems(t *testing.T) {
	data := `[
		{"name": "a", "description": ""},
		{"name": "b c", "description": "d", "exmples": ["x"]},
		{"name": "d", "description": "d", "margin": 2},
		{"name": "a", "description": "d", "colour": "red"},
		{"name": "b c", "description": "d"}
	]`
	_, err := Parse("tools.json", []byte(data))
	var got []string
	for _, ce := range catalogErrors(t, err) {
		got = append(got, ce.Tool+"/"+ce.Field)
	}
	// A tool with a problem still counts for duplicate names (the second
	// "a"), and an invalid name is reported once, not as a duplicate.
	want := []string{"a/description", "b c/name", "b c/exmples", "d/margin", "a/colour", "a/name", "b c/name"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse() problems mismatch (-want +got):\n%s\nerror: %v", diff, err)
	}
}

func TestParseCapsProblems(t *testing.T) {
	var b strings.Builder
	b.WriteString("[")
	for i := range 30 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"name":"t` + itoa(i) + `","description":""}`)
	}
	b.WriteString("]")
	_, err := Parse("tools.json", []byte(b.String()))
	list := catalogErrors(t, err)
	if len(list) != maxProblems+1 {
		t.Fatalf("Parse() reported %d problems, want %d", len(list), maxProblems+1)
	}
	if last := list[len(list)-1].Error(); last != "tools.json: 10 more problems not shown" {
		t.Errorf("last problem = %q, want the count of the others", last)
	}
	if !errors.Is(err, habilis.ErrInvalid) {
		t.Errorf("error %v is not habilis.ErrInvalid", err)
	}
}

func TestParseSizeLimit(t *testing.T) {
	data := make([]byte, MaxSize+1)
	_, err := Parse("big.json", data)
	if !errors.Is(err, habilis.ErrInvalid) || !strings.Contains(err.Error(), "big.json: is larger than the limit of 256 MiB") {
		t.Errorf("Parse(%d bytes) error = %v, want the size limit", len(data), err)
	}
	// The limit itself is allowed: these bytes are refused as JSON.
	if _, err := Parse("big.json", data[:MaxSize]); err == nil || !strings.Contains(err.Error(), "big.json:1:1: invalid JSON") {
		t.Errorf("Parse(%d bytes) error = %v, want invalid JSON", MaxSize, err)
	}

	path := filepath.Join(t.TempDir(), "big.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxSize + 10); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := Read(path); !errors.Is(err, habilis.ErrInvalid) || !strings.Contains(err.Error(), "larger than the limit") {
		t.Errorf("Read(%q) error = %v, want the size limit", path, err)
	}
}

func TestReadMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.json")
	_, err := Read(path)
	if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, habilis.ErrInvalid) {
		t.Errorf("Read(%q) error = %v, want fs.ErrNotExist", path, err)
	}
}

// TestReadDirectory checks that a directory given as the catalog is
// named once in the error: it read "read DIR: read DIR: is a directory".
func TestReadDirectory(t *testing.T) {
	dir := t.TempDir()
	_, err := Read(dir)
	if err == nil || strings.Count(err.Error(), dir) != 1 || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("Read(%q) error = %v, want one naming the directory once", dir, err)
	}
}

func TestParseBOM(t *testing.T) {
	data := "\xef\xbb\xbf[{\"name\":\"a\",\"description\":\"d\"}]"
	if _, err := Parse("tools.json", []byte(data)); err != nil {
		t.Errorf("Parse(with BOM) error: %v", err)
	}
}

func TestParseArgumentsNamedLikeKeywords(t *testing.T) {
	// A map whose arguments are called "type" and "properties" is still a
	// map: its values are descriptions.
	data := `[{"name":"a","description":"d","arguments":{"type":"Kind of vehicle","properties":"Extra properties"}}]`
	tools, err := Parse("tools.json", []byte(data))
	if err != nil {
		t.Fatalf("Parse() error: %v", err)
	}
	want := `{"properties":{"properties":{"description":"Extra properties","type":"string"},"type":{"description":"Kind of vehicle","type":"string"}},"type":"object"}`
	if got := string(tools[0].InputSchema); got != want {
		t.Errorf("InputSchema = %s, want %s", got, want)
	}
}

// TestParseLimits: values at a limit load.
func TestParseLimits(t *testing.T) {
	long := strings.Repeat("x", MaxExampleLen)
	longName, longDesc := strings.Repeat("n", maxNameLen), strings.Repeat("d", maxDescriptionLen)
	data := `[{"name":"a","description":"d","margin":0,"examples":[` + numbered(MaxExamples-1) + `,"` + long + `"]},` +
		`{"name":"b","description":"d","margin":1,"arguments":{"city":"City"},"required":[]},` +
		`{"name":"` + longName + `","description":"` + longDesc + `"}]`
	tools, err := Parse("tools.json", []byte(data))
	if err != nil {
		t.Fatalf("Parse() error: %v", err)
	}
	if n := len(tools[0].Examples); n != MaxExamples || tools[0].Examples[n-1] != long {
		t.Errorf("tool a has %d examples, want %d, the last %d bytes long", n, MaxExamples, MaxExampleLen)
	}
	if tools[2].Name != longName || tools[2].Description != longDesc {
		t.Errorf("tool 2 named %d bytes and described in %d, want %d and %d", len(tools[2].Name), len(tools[2].Description), maxNameLen, maxDescriptionLen)
	}
	if *tools[0].Margin != 0 || *tools[1].Margin != 1 {
		t.Errorf("margins %v and %v, want 0 and 1", *tools[0].Margin, *tools[1].Margin)
	}
	// An empty required list is left out of the schema.
	if got, want := string(tools[1].InputSchema), `{"properties":{"city":{"description":"City","type":"string"}},"type":"object"}`; got != want {
		t.Errorf("InputSchema = %s, want %s", got, want)
	}
}

// numbered returns n distinct JSON strings, comma-separated.
func numbered(n int) string {
	ex := make([]string, n)
	for i := range ex {
		ex[i] = `"request ` + itoa(i) + `"`
	}
	return strings.Join(ex, ",")
}

// TestParseLocalRefs: references that resolve inside the schema, through
// objects, array indexes and escaped names, load.
func TestParseLocalRefs(t *testing.T) {
	for _, ref := range []string{
		"#",
		"#unit",
		"#/$defs/u",
		"#/$defs/u/anyOf/0",
		"#/$defs/u/anyOf/1",
		"#/$defs/a~1b",
		"#/$defs/t~0c",
		"#/$defs/with%20space",
	} {
		data := `[{"name":"a","description":"d","inputSchema":{"$defs":{"u":{"anyOf":[{"type":"string"},{"type":"number"}]},` +
			`"a/b":{},"t~c":{},"with space":{}},"properties":{"x":{"$ref":"` + ref + `"}}}}]`
		if _, err := Parse("tools.json", []byte(data)); err != nil {
			t.Errorf("Parse() with $ref %q: %v", ref, err)
		}
	}
}

// TestErrorWithoutFile: catalogs sent over the API have no file name; a
// syntax error still says where it is.
func TestErrorWithoutFile(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{"[\n  {\"name\": \"a\",}\n]", "line 2, column 16: invalid JSON: invalid character '}' looking for beginning of object key string"},
		{`[{"name":"a"}]`, `tool 0 "a": field "description": is required: routing needs to know what the tool does`},
	} {
		_, err := Parse("", []byte(tc.data))
		if err == nil || err.Error() != tc.want {
			t.Errorf("Parse(%q) error = %v, want %s", tc.data, err, tc.want)
		}
	}
}

// TestParseExecutorTemplates: argv templates naming declared arguments,
// or names a caller may pass beside them (the schema admits others), load.
func TestParseExecutorTemplates(t *testing.T) {
	for _, data := range []string{
		`[{"name":"a","description":"d","arguments":{"city":"c","name":"n"},"executor":{"kind":"command","argv":["x","{city}","{name}"]}}]`,
		`[{"name":"a","description":"d","arguments":{"city":"c"},"executor":{"kind":"command","argv":["x","{country}"]}}]`,
		`[{"name":"a","description":"d","executor":{"kind":"command","argv":["x","{country}"]}}]`,
	} {
		if _, err := Parse("tools.json", []byte(data)); err != nil {
			t.Errorf("Parse(%s) error: %v", data, err)
		}
	}
}

func TestCanonicalSchema(t *testing.T) {
	a := `[{"name":"a","description":"d","inputSchema":{
		"type": "object",
		"properties": {"city": {"type": "string", "description": "City"}, "n": {"maximum": 12345678901234567890, "type": "integer"}},
		"required": ["city"]}}]`
	b := `[{"inputSchema":{"required":["city"],"properties":{"n":{"type":"integer","maximum":12345678901234567890},"city":{"description":"City","type":"string"}},"type":"object"},
		"description":"d","name":"a"}]`
	ta, err := Parse("a.json", []byte(a))
	if err != nil {
		t.Fatal(err)
	}
	tb, err := Parse("b.json", []byte(b))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"properties":{"city":{"description":"City","type":"string"},"n":{"maximum":12345678901234567890,"type":"integer"}},"required":["city"],"type":"object"}`
	if got := string(ta[0].InputSchema); got != want {
		t.Errorf("InputSchema = %s, want %s", got, want)
	}
	if string(ta[0].InputSchema) != string(tb[0].InputSchema) {
		t.Errorf("InputSchema differs with key order: %s and %s", ta[0].InputSchema, tb[0].InputSchema)
	}
	if ta[0].Hash() != tb[0].Hash() {
		t.Errorf("Hash() differs with key order: %s and %s", ta[0].Hash(), tb[0].Hash())
	}

	// The map form and the equivalent schema are the same tool.
	c := `[{"name":"a","description":"d","arguments":{"city":"City (type: string)"},"required":["city"]}]`
	e := `[{"name":"a","description":"d","arguments":{"required":["city"],"type":"object","properties":{"city":{"type":"string","description":"City (type: string)"}}}}]`
	tc, err := Parse("c.json", []byte(c))
	if err != nil {
		t.Fatal(err)
	}
	te, err := Parse("e.json", []byte(e))
	if err != nil {
		t.Fatal(err)
	}
	if tc[0].Hash() != te[0].Hash() {
		t.Errorf("map form %s and schema form %s hash differently", tc[0].InputSchema, te[0].InputSchema)
	}
}

func TestHash(t *testing.T) {
	base := habilis.Tool{
		Name:        "get_weather",
		Description: "Weather now.",
		Examples:    []string{"weather in Oslo", "is it cold"},
		InputSchema: json.RawMessage(emptySchema),
		Margin:      f32(0.1),
		Executor:    json.RawMessage(`{"kind":"http"}`),
		Meta:        map[string]string{"owner": "x", "team": "y"},
	}
	h := base.Hash()
	if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		t.Fatalf("Hash() = %q, want 64 hex digits", h)
	}
	same := base
	same.Examples = append([]string(nil), base.Examples...)
	same.Meta = map[string]string{"team": "y", "owner": "x"}
	if got := same.Hash(); got != h {
		t.Errorf("Hash() of an equal tool = %s, want %s", got, h)
	}
	mutations := map[string]func(*habilis.Tool){
		"name":           func(t *habilis.Tool) { t.Name = "get_weather2" },
		"description":    func(t *habilis.Tool) { t.Description = "Weather now!" },
		"example text":   func(t *habilis.Tool) { t.Examples = []string{"weather in Oslo", "is it colder"} },
		"example order":  func(t *habilis.Tool) { t.Examples = []string{"is it cold", "weather in Oslo"} },
		"example added":  func(t *habilis.Tool) { t.Examples = append(t.Examples[:2:2], "brrr") },
		"no examples":    func(t *habilis.Tool) { t.Examples = nil },
		"schema":         func(t *habilis.Tool) { t.InputSchema = json.RawMessage(`{"properties":{"x":{}},"type":"object"}`) },
		"margin":         func(t *habilis.Tool) { t.Margin = f32(0.2) },
		"no margin":      func(t *habilis.Tool) { t.Margin = nil },
		"zero margin":    func(t *habilis.Tool) { t.Margin = f32(0) },
		"executor":       func(t *habilis.Tool) { t.Executor = json.RawMessage(`{"kind":"mcp"}`) },
		"no executor":    func(t *habilis.Tool) { t.Executor = nil },
		"meta value":     func(t *habilis.Tool) { t.Meta = map[string]string{"owner": "x", "team": "z"} },
		"meta key":       func(t *habilis.Tool) { t.Meta = map[string]string{"owner": "x", "teams": "y"} },
		"invalid schema": func(t *habilis.Tool) { t.InputSchema = json.RawMessage(`{not json`) },
	}
	seen := map[string]string{h: "base"}
	for name, mutate := range mutations {
		m := base
		m.Examples = append([]string(nil), base.Examples...)
		mutate(&m)
		got := m.Hash()
		if prev, ok := seen[got]; ok {
			t.Errorf("Hash() after changing %s = %s, same as %s", name, got, prev)
		}
		seen[got] = name
	}
}

func TestParseRoundTrip(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, file := range files {
		tools, err := Read(file)
		if err != nil {
			t.Errorf("Read(%q) error: %v", file, err)
			continue
		}
		data, err := json.Marshal(tools)
		if err != nil {
			t.Fatalf("json.Marshal(%s tools): %v", file, err)
		}
		again, err := Parse("roundtrip.json", data)
		if err != nil {
			t.Errorf("Parse(marshalled %s) error: %v\n%s", file, err, data)
			continue
		}
		if diff := cmp.Diff(tools, again); diff != "" {
			t.Errorf("round trip of %s mismatch (-first +second):\n%s", file, diff)
		}
		for i := range tools {
			if tools[i].Hash() != again[i].Hash() {
				t.Errorf("round trip of %s changed the hash of %q", file, tools[i].Name)
			}
		}
	}
}

// TestParseSharedData checks that the evaluation catalogs beside
// the repository parse; it skips when they are not there.
func TestParseSharedData(t *testing.T) {
	tests := []struct {
		path  string
		tools int
	}{
		{filepath.Join("..", "..", "shared", "data", "metatool", "tools.json"), 199},
		{filepath.Join("..", "..", "shared", "data", "bfcl", "tools.json"), 1702},
	}
	for _, tt := range tests {
		if _, err := os.Stat(tt.path); err != nil {
			t.Skipf("evaluation data not found (%v); it lives in ../shared/data beside the repository", err)
		}
		tools, err := Read(tt.path)
		if err != nil {
			t.Errorf("Read(%q) error: %v", tt.path, err)
			continue
		}
		if len(tools) != tt.tools {
			t.Errorf("Read(%q) = %d tools, want %d", tt.path, len(tools), tt.tools)
		}
		for _, tool := range tools {
			checkToolInvariants(t, tool)
		}
	}
}

// checkToolInvariants checks what every parsed tool guarantees.
func checkToolInvariants(t *testing.T, tool habilis.Tool) {
	t.Helper()
	if !toolNameRE.MatchString(tool.Name) {
		t.Errorf("tool name %q is not valid", tool.Name)
	}
	if strings.TrimSpace(tool.Description) == "" {
		t.Errorf("tool %q has an empty description", tool.Name)
	}
	for i, e := range tool.Examples {
		if strings.TrimSpace(e) == "" {
			t.Errorf("tool %q example %d is blank", tool.Name, i)
		}
	}
	var schema map[string]any
	if err := json.Unmarshal(tool.InputSchema, &schema); err != nil {
		t.Errorf("tool %q InputSchema %s: %v", tool.Name, tool.InputSchema, err)
		return
	}
	if schema["type"] != "object" {
		t.Errorf("tool %q InputSchema %s: type is not object", tool.Name, tool.InputSchema)
	}
	if _, ok := schema["properties"].(map[string]any); !ok {
		t.Errorf("tool %q InputSchema %s: no properties object", tool.Name, tool.InputSchema)
	}
	if tool.Margin != nil && (*tool.Margin < 0 || *tool.Margin > 1) {
		t.Errorf("tool %q margin %v outside [0, 1]", tool.Name, *tool.Margin)
	}
	if _, err := fill.ParseSchema(tool.InputSchema); err != nil {
		t.Errorf("tool %q InputSchema %s: filling cannot read it: %v", tool.Name, tool.InputSchema, err)
	}
}

// TestSampleCatalog keeps the sample catalog and its labelled queries, used
// by the README, valid and consistent with each other.
func TestSampleCatalog(t *testing.T) {
	tools, err := Read("../tools.json")
	if err != nil {
		t.Fatalf("Read(../tools.json) error: %v", err)
	}
	examples := map[string]string{}
	names := map[string]bool{}
	for _, tool := range tools {
		checkToolInvariants(t, tool)
		names[tool.Name] = true
		if len(tool.Examples) < 6 {
			t.Errorf("tool %q has %d examples, want at least 6", tool.Name, len(tool.Examples))
		}
		for _, e := range tool.Examples {
			examples[strings.ToLower(e)] = tool.Name
		}
	}

	f, err := os.Open("../queries.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	lines, abstain := 0, 0
	for sc.Scan() {
		lines++
		var q struct {
			Query    string   `json:"query"`
			Expected []string `json:"expected"`
		}
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&q); err != nil || q.Query == "" || q.Expected == nil {
			t.Errorf("queries.jsonl:%d: %q: want {\"query\", \"expected\"} (%v)", lines, sc.Text(), err)
			continue
		}
		if owner, ok := examples[strings.ToLower(q.Query)]; ok {
			t.Errorf("queries.jsonl:%d: query %q is an example of %q", lines, q.Query, owner)
		}
		if len(q.Expected) == 0 {
			abstain++
		}
		for _, name := range q.Expected {
			if !names[name] {
				t.Errorf("queries.jsonl:%d: expects unknown tool %q", lines, name)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if lines < 30 || abstain == 0 {
		t.Errorf("queries.jsonl has %d queries, %d without a tool; want at least 30 and some of each", lines, abstain)
	}
}

// TestParsePythonTypeNames checks that the Python-flavoured type names
// some catalogs use (BFCL's "dict", "float", "tuple"...) are read as fill
// reads them and written with their JSON Schema names, and that "any"
// drops the type constraint.
func TestParsePythonTypeNames(t *testing.T) {
	data := `[{"type":"function","function":{"name":"a","description":"d","parameters":{"type":"dict","properties":{` +
		`"f":{"type":"float"},"n":{"type":"int"},"l":{"type":"list","items":{"type":"str"}},"t":{"type":"tuple"},` +
		`"b":{"type":"bool"},"o":{"type":["dict","null"]},"x":{"type":"any"}},"required":["f"]}}}]`
	tools, err := Parse("tools.json", []byte(data))
	if err != nil {
		t.Fatalf("Parse(Python type names) error: %v", err)
	}
	want := `{"properties":{"b":{"type":"boolean"},"f":{"type":"number"},"l":{"items":{"type":"string"},"type":"array"},` +
		`"n":{"type":"integer"},"o":{"type":["object","null"]},"t":{"type":"array"},"x":{}},"required":["f"],"type":"object"}`
	if got := string(tools[0].InputSchema); got != want {
		t.Errorf("Parse(Python type names) schema =\n%s\nwant\n%s", got, want)
	}
	if _, err := Parse("tools.json", []byte(`[{"name":"a","description":"d","inputSchema":{"properties":{"x":{"type":["any","string"]}}}}]`)); err == nil {
		t.Errorf(`Parse(type ["any", "string"]) succeeded, want an error`)
	}
}

// TestErrorShortensLongNames checks that an error about a tool whose name
// is far too long names it shortened, cut at a character's start so the
// message stays valid UTF-8, and one without a name says so.
func TestErrorShortensLongNames(t *testing.T) {
	long := strings.Repeat("€", 100) // 300 bytes, 3 a character
	for _, tt := range []struct{ data, want string }{
		{`[{"name":"` + long + `","description":"d"}]`, `t.json: tool 0 "` + strings.Repeat("€", 21) + `…": field "name": is 300 bytes long`},
		{`[{"name":"` + strings.Repeat("a", 72) + `","description":"d"}]`, `t.json: tool 0 "` + strings.Repeat("a", 72) + `": field "name"`},
		{`[{"name":"","description":"d"}]`, `t.json: tool 0: field "name": must not be empty`},
	} {
		_, err := Parse("t.json", []byte(tt.data))
		if err == nil || !strings.Contains(err.Error(), tt.want) || !utf8.ValidString(err.Error()) {
			t.Errorf("Parse(%.40q) error = %v, want valid UTF-8 saying %q", tt.data, err, tt.want)
		}
	}
}
