package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/habilis-router/habilis/selector"
)

// progressOptions returns global options whose stderr and logs (at info)
// are buffers, as on a terminal or not.
func progressOptions(tty bool) (g *globalOptions, stderr, logs *bytes.Buffer) {
	stderr, logs = &bytes.Buffer{}, &bytes.Buffer{}
	g = &globalOptions{stderr: stderr, tty: tty, barDelay: -1, getenv: noEnv, embedder: "lexical",
		logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	return g, stderr, logs
}

func TestProgressBarOnTerminal(t *testing.T) {
	g, stderr, logs := progressOptions(true)
	p := g.newProgress("load")
	for i := range 11 {
		p.selectorStep(selector.StepEmbed, i*10, 100)
	}
	p.selectorStep(selector.StepWrite, 0, 0)
	p.finish()
	p.update(1, 2) // after finish: nothing
	out := stderr.String()
	for _, want := range []string{"embedding", "100/100", "writing the store"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress on a terminal drew %q, want it to show %q", out, want)
		}
	}
	if logs.Len() != 0 {
		t.Errorf("progress on a terminal logged %q, want nothing", logs.String())
	}
}

func TestProgressLogsOffTerminal(t *testing.T) {
	g, stderr, logs := progressOptions(false)
	p := g.newProgress("load")
	p.selectorStep(selector.StepEmbed, 50, 200)
	p.tick() // what the ticker does every progressLogEvery
	p.selectorStep(selector.StepCollisions, 0, 0)
	p.tick()
	p.finish()
	if stderr.Len() != 0 {
		t.Errorf("progress off a terminal drew %q, want nothing", stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	want := []string{`level=INFO msg="load: embedding"`, `done=50 total=200`, `msg="load: analysing collisions"`}
	if len(lines) != 2 || !strings.Contains(lines[0], want[0]) || !strings.Contains(lines[0], want[1]) || !strings.Contains(lines[1], want[2]) {
		t.Errorf("progress off a terminal logged:\n%s\nwant two info lines with %q", logs.String(), want)
	}
}

func TestProgressQuietWhenQuick(t *testing.T) {
	g, stderr, _ := progressOptions(true)
	g.barDelay = progressDelay
	p := g.newProgress("load")
	p.update(5, 10)
	p.finish()
	if stderr.Len() != 0 {
		t.Errorf("progress of a quick operation drew %q, want nothing", stderr.String())
	}
}

// TestLoadJSONWithBars loads with bars drawn at once on a terminal-like
// stderr: stdout holds the report alone, and says how long the load took.
func TestLoadJSONWithBars(t *testing.T) {
	g, stderr, _ := progressOptions(true)
	g.store, g.json = filepath.Join(t.TempDir(), "habilis.db"), true
	var stdout bytes.Buffer
	if err := runLoad(context.Background(), &loadOptions{g: g, file: testdata("tools.json")}, &stdout); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Tools    int   `json:"tools"`
		Duration int64 `json:"duration_ns"`
		Open     int64 `json:"open_ns"`
		Total    int64 `json:"total_ns"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("load --json stdout is not JSON: %v\n%s", err, stdout.String())
	}
	if out.Tools != 7 || out.Open <= 0 || out.Total < out.Open+out.Duration {
		t.Errorf("load --json = %+v, want 7 tools, and the total at least opening plus loading", out)
	}
	if !strings.Contains(stderr.String(), "embedding") {
		t.Errorf("load drew %q on stderr, want the embedding bar", stderr.String())
	}
}
