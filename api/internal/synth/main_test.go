package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/habilis-router/habilis/catalog"
)

// TestWritesAValidCatalog runs the generator and parses what it wrote: a
// load test is only as good as the catalog it loads.
func TestWritesAValidCatalog(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "tools.json")
	cmd := exec.Command("go", "run", ".", "-n", "50", "-o", out, "-queries", filepath.Join(dir, "q.jsonl"), "-nq", "20")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("synth: %v\n%s", err, b)
	}
	tools, err := catalog.Read(out)
	if err != nil {
		t.Fatalf("the generated catalog does not parse: %v", err)
	}
	if len(tools) != 50 {
		t.Errorf("synth -n 50 wrote %d tools, want 50", len(tools))
	}
	for _, tl := range tools {
		if len(tl.Examples) < 2 {
			t.Errorf("tool %q has %d examples, want several", tl.Name, len(tl.Examples))
		}
	}
	if q, err := os.ReadFile(filepath.Join(dir, "q.jsonl")); err != nil || len(q) == 0 {
		t.Errorf("synth wrote no queries: %v", err)
	}
}
