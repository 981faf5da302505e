package habilis

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzParseCatalog checks that ParseCatalog never panics, that every error
// is an ErrInvalid, and that whatever it accepts satisfies the tool
// invariants and survives a round trip through json.Marshal.
func FuzzParseCatalog(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "catalog", "*.json"))
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
		tools, err := ParseCatalog("fuzz.json", data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseCatalog error %v is not ErrInvalid", err)
			}
			if tools != nil {
				t.Fatalf("ParseCatalog returned %d tools with an error", len(tools))
			}
			return
		}
		if len(tools) == 0 {
			t.Fatal("ParseCatalog returned no tools and no error")
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
		again, err := ParseCatalog("again.json", out)
		if err != nil {
			t.Fatalf("ParseCatalog(json.Marshal(tools)) error: %v\n%s", err, out)
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
