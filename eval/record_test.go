package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRecorder appends from many goroutines and two recorders on one
// file, and checks that every record reads back with ReadQueries, whole,
// with its source and time, and that what cannot be read back is left out.
func TestRecorder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "traffic.jsonl")
	a, err := OpenRecorder(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenRecorder(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 12, 30, 0, 0, time.FixedZone("CET", 3600))
	a.now = func() time.Time { return at }
	b.now = a.now
	var want []string
	var wg sync.WaitGroup
	for i := range 40 {
		r, source := a, SourceMCP
		if i%2 == 1 {
			r, source = b, SourceProxy
		}
		q := fmt.Sprintf("request %d <a & b> %s", i, strings.Repeat("x", i*100))
		want = append(want, source+"|"+q+"|tool"+fmt.Sprint(i))
		wg.Go(func() { r.Record(source, q, "tool"+fmt.Sprint(i)) })
	}
	wg.Go(func() { a.Record(SourceMCP, "  \n", "blank") })
	wg.Go(func() { a.Record(SourceMCP, "no tool", "") })
	wg.Go(func() { b.Record(SourceProxy, strings.Repeat("y", maxRecord), "long") })
	wg.Wait()
	for _, r := range []*Recorder{a, b} {
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}

	qs, err := ReadQueries(path)
	if err != nil {
		t.Fatalf("ReadQueries(recorded file): %v", err)
	}
	var got []string
	for _, q := range qs {
		var source, when string
		json.Unmarshal(q.Fields["source"], &source)
		json.Unmarshal(q.Fields["time"], &when)
		if when != "2026-03-01T11:30:00Z" {
			t.Errorf("%q: time %q, want 2026-03-01T11:30:00Z", q.Query, when)
		}
		if len(q.Expected) != 1 {
			t.Fatalf("%q: expected %v, want one tool", q.Query, q.Expected)
		}
		got = append(got, source+"|"+q.Query+"|"+q.Expected[0])
	}
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded queries (-want +got):\n%s", diff)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(`"query":"request 0 <a & b> "`)) {
		t.Errorf("the file escapes what a reader expects as written:\n%.200s", raw)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("recorded file's mode: %v, %v; want -rw------- (the queries are user data)", fi.Mode(), err)
	}
}

// TestRecorderFailure checks that a write that fails is logged once, at
// warn level, and reaches no caller.
func TestRecorderFailure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "traffic.jsonl")
	var logged bytes.Buffer
	r, err := OpenRecorder(path, slog.New(slog.NewTextHandler(&logged, nil)))
	if err != nil {
		t.Fatal(err)
	}
	r.f.Close() // every write fails from now on
	r.Record(SourceMCP, "read the notes", "read_file")
	r.Record(SourceMCP, "read the notes again", "read_file")
	if n := strings.Count(logged.String(), "level=WARN"); n != 1 {
		t.Errorf("two failed writes logged %d warnings, want 1:\n%s", n, logged.String())
	}
	if !strings.Contains(logged.String(), path) {
		t.Errorf("the warning does not name the file %s:\n%s", path, logged.String())
	}
	if _, err := OpenRecorder(filepath.Join(path, "sub"), nil); err == nil {
		t.Error("OpenRecorder under a file succeeded")
	}
}

// TestRecorderAfterLastLineWithoutNewline checks that a record appended to
// a file whose last line has no newline (saved so by an editor, or cut
// short) starts a line of its own, where it was glued to that line and the
// next read of the file refused it.
func TestRecorderAfterLastLineWithoutNewline(t *testing.T) {
	for _, tt := range []struct {
		name, content string
		want          []string
	}{
		{"whole line", `{"query": "read the notes", "expected": ["read_file"]}`, []string{"read the notes", "list my files"}},
		{"newline already", `{"query": "read the notes", "expected": ["read_file"]}` + "\n", []string{"read the notes", "list my files"}},
		{"empty", "", []string{"list my files"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "traffic.jsonl")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			r, err := OpenRecorder(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			r.Record(SourceMCP, "list my files", "list_directory")
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			qs, err := ReadQueries(path)
			if err != nil {
				t.Fatalf("ReadQueries after a record: %v", err)
			}
			var got []string
			for _, q := range qs {
				got = append(got, q.Query)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("queries (-want +got):\n%s", diff)
			}
			raw, _ := os.ReadFile(path)
			if bytes.Contains(raw, []byte("\n\n")) {
				t.Errorf("the file holds an empty line:\n%s", raw)
			}
		})
	}
}
