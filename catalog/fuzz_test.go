package catalog

import (
	"encoding/json"
	"errors"
	"github.com/habilis-router/habilis"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzParse checks that Parse never panics, that every error
// is an habilis.ErrInvalid, and that whatever it accepts satisfies the tool
// invariants and survives a round trip through json.Marshal.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		`[]`,
		`{"tools":[{"name":"a","description":"d","inputSchema":{"$ref":"#"}}]}`,
		`[{"name":"a","description":"d","arguments":{"x":"y (type: integer)"},"required":["x"],"margin":0.5,"meta":{"k":"v"},"executor":{"cmd":["x"]}}]`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","description":"d","title":"A"}]}}`,
		`[{"type":"function","name":"a","description":"d","parameters":{"properties":{"x":{"type":["string","null"],"items":[{}]}}}}]`,
		"[{\"name\":\"a\",\"description\":\"\\ud800 <&>\",\"examples\":[\"\\u2028x\"]}]",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tools, err := Parse("fuzz.json", data)
		if err != nil {
			if !errors.Is(err, habilis.ErrInvalid) {
				t.Fatalf("Parse error %v is not habilis.ErrInvalid", err)
			}
			if tools != nil {
				t.Fatalf("Parse returned %d tools with an error", len(tools))
			}
			return
		}
		if len(tools) == 0 {
			t.Fatal("Parse returned no tools and no error")
		}
		names := map[string]bool{}
		for _, tool := range tools {
			checkToolInvariants(t, tool)
			if names[tool.Name] {
				t.Errorf("name %q appears twice", tool.Name)
			}
			names[tool.Name] = true
		}
		out, err := json.Marshal(tools)
		if err != nil {
			t.Fatalf("json.Marshal(tools): %v", err)
		}
		again, err := Parse("again.json", out)
		if err != nil {
			t.Fatalf("Parse(json.Marshal(tools)) error: %v\n%s", err, out)
		}
		if diff := cmp.Diff(tools, again); diff != "" {
			t.Fatalf("round trip mismatch (-first +second):\n%s", diff)
		}
		for i := range tools {
			if tools[i].Hash() != again[i].Hash() {
				t.Fatalf("round trip changed the hash of %q", tools[i].Name)
			}
		}
	})
}
