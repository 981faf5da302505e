package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/toolmap"
)

// TestMap draws the test catalog in each format through the command and
// checks what it wrote and printed.
func TestMap(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	g := &globalOptions{store: loadedStore(t), embedder: "lexical", stderr: &stderr, getenv: noEnv}

	png1 := filepath.Join(dir, "map.png")
	stdout.Reset()
	if err := runMap(context.Background(), &mapOptions{g: g, out: png1, mode: "hybrid", maxTools: 300}, &stdout); err != nil {
		t.Fatalf("map --out map.png: %v", err)
	}
	f, err := os.Open(png1)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("map.png does not decode: %v", err)
	}
	if !strings.Contains(stdout.String(), "wrote "+png1+": 7 tools") {
		t.Errorf("map printed %q, want the file and 7 tools", stdout.String())
	}

	for _, name := range []string{"map.svg", "map.html"} {
		out := filepath.Join(dir, name)
		if err := runMap(context.Background(), &mapOptions{g: g, out: out, mode: "hybrid", maxTools: 300}, &stdout); err != nil {
			t.Fatalf("map --out %s: %v", name, err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte("get_forecast")) {
			t.Errorf("%s does not name get_forecast", name)
		}
	}

	// --json with a request and named tools.
	g.json = true
	stdout.Reset()
	o := &mapOptions{g: g, out: filepath.Join(dir, "q.svg"), tools: []string{"get_weather"}, query: "will it rain in Porto tomorrow", mode: "hybrid", maxTools: 300}
	if err := runMap(context.Background(), o, &stdout); err != nil {
		t.Fatalf("map --json --query: %v", err)
	}
	var got struct {
		Out   string `json:"out"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Query *struct {
			Passed []string `json:"passed"`
		} `json:"query"`
		Shown string `json:"shown"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("map --json printed %q: %v", stdout.String(), err)
	}
	if got.Out != o.out || len(got.Tools) == 0 || got.Tools[0].Name == "" || got.Query == nil || got.Shown == "" {
		t.Errorf("map --json = %+v, want the file, the tools, the request and what is shown", got)
	}
	g.json = false
}

func TestMapRefuses(t *testing.T) {
	dir, store := t.TempDir(), loadedStore(t)
	var stdout, stderr bytes.Buffer
	g := &globalOptions{store: store, embedder: "lexical", stderr: &stderr, getenv: noEnv}
	out := filepath.Join(dir, "map.svg")
	var ue *usageError
	for _, o := range []*mapOptions{
		{g: g, out: filepath.Join(dir, "map.pdf"), mode: "hybrid", maxTools: 300},
		{g: g, out: out, mode: "fuzzy", maxTools: 300},
		{g: g, out: out, mode: "hybrid", maxTools: 0},
		{g: &globalOptions{store: store, embedder: "lexical", remote: "localhost:1", stderr: &stderr, getenv: noEnv}, out: out, mode: "hybrid", maxTools: 300},
	} {
		if err := runMap(context.Background(), o, &stdout); !errors.As(err, &ue) {
			t.Errorf("runMap(%+v) = %v, want a usage error", *o, err)
		}
	}
	err := runMap(context.Background(), &mapOptions{g: g, out: out, tools: []string{"no_such_tool"}, mode: "hybrid", maxTools: 300}, &stdout)
	if !errors.Is(err, habilis.ErrNotFound) || !strings.Contains(err.Error(), "no_such_tool") {
		t.Errorf("map --tools no_such_tool = %v, want ErrNotFound naming it", err)
	}
	// A file in a directory that does not exist: the error names the
	// file asked for, not the temporary one it would have been written as.
	missing := filepath.Join(dir, "absent", "map.svg")
	err = runMap(context.Background(), &mapOptions{g: g, out: missing, mode: "hybrid", maxTools: 300}, &stdout)
	if want := "map: write " + missing + ": no such file or directory"; err == nil || err.Error() != want {
		t.Errorf("map --out %s = %v, want %q", missing, err, want)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused maps left files behind: %v", entries)
	}
}

// TestMapSummaryNeighbours: the share of tools whose most similar tool is
// among their two nearest on the map is printed only where it can be
// other than all of them, from four tools on.
func TestMapSummaryNeighbours(t *testing.T) {
	for n := 1; n <= 5; n++ {
		m := &toolmap.Map{Tools: make([]toolmap.Tool, n), NeighboursKept: 1}
		var b bytes.Buffer
		printMapSummary(&b, "map.svg", m)
		if got, want := strings.Contains(b.String(), "two nearest"), n >= 4; got != want {
			t.Errorf("summary of a map of %d tools:\n%s\nsays how many keep their most similar tool near: %v, want %v", n, b.String(), got, want)
		}
	}
}
