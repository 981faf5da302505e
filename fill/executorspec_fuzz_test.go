package fill

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/habilis-router/habilis"
)

// FuzzParseExecutorSpec checks that an executor spec, as a catalog holds
// it, never panics the parser; that every refusal is an *ExecutorError
// (an habilis.ErrInvalid naming its field); and that a spec it accepts
// has a kind and reads back the same once written out, as a catalog that
// stores it and a run that reads it again must see the same spec.
func FuzzParseExecutorSpec(f *testing.F) {
	for _, s := range []string{
		`{"kind":"http","url":"https://api.example.com/x","method":"GET","headers":{"Authorization":"env:TOKEN"},"timeout":"5s","max_output":100}`,
		`{"kind":"command","argv":["grep","{pattern}","notes.txt"],"stdin":"none","env":["HOME"],"dir":"/tmp"}`,
		`{"kind":"mcp","command":["npx","server"],"tool":"search"}`,
		`{"kind":"mcp","transport":"http","url":"http://localhost:9000/mcp"}`,
		`{"kind":"http","timout":"5s"}`,
		`{"kind":"command","argv":["sh","-c","echo {x}"]}`,
		`{"kind":"http","url":"ftp://x","max_output":-1}`,
		`[]`, `null`, `{"kind":3}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseExecutorSpec(data)
		if err != nil {
			var ee *ExecutorError
			if !errors.As(err, &ee) || !errors.Is(err, habilis.ErrInvalid) {
				t.Fatalf("ParseExecutorSpec(%q) error %v is not an *ExecutorError", data, err)
			}
			return
		}
		switch s.Kind {
		case ExecutorHTTP, ExecutorCommand, ExecutorMCP:
		default:
			t.Fatalf("ParseExecutorSpec(%q) accepted kind %q", data, s.Kind)
		}
		out, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseExecutorSpec(out)
		if err != nil {
			t.Fatalf("ParseExecutorSpec(%s), written out from %q: %v", out, data, err)
		}
		if diff := cmp.Diff(s, again, cmpopts.EquateEmpty(), cmp.AllowUnexported(ExecutorSpec{})); diff != "" {
			t.Errorf("spec %q read back otherwise (-first +again):\n%s", data, diff)
		}
	})
}
