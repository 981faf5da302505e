package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/catalog"
	"github.com/habilis-router/habilis/eval"
)

// TestTrafficFigures checks the figures of docs/proxy.md's "Learning from
// traffic": MetaTool's half a (catalog examples left out, as --fit-split
// does) goes through `habilis proxy --record -k 5` in front of a simulated
// model that calls the expected tool when the proxy forwarded it, and
// otherwise nothing ("shown") or the first forwarded tool ("first"); the
// catalog fitted on the record, and on the "shown" record with half a's
// no-tool queries added, is measured on half b. It needs the data
// (../shared/data beside the repository) and about a minute.
func TestTrafficFigures(t *testing.T) {
	data := os.Getenv("HABILIS_SHARED_DATA")
	if data == "" {
		t.Skip("set HABILIS_SHARED_DATA to the evaluation data directory (../shared/data) to check docs/proxy.md's figures on recorded traffic")
	}
	m, err := filepath.Abs(filepath.Join(data, "metatool"))
	if err != nil {
		t.Fatal(err)
	}
	tools, err := catalog.Read(filepath.Join(m, "tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	qs, err := eval.ReadQueries(filepath.Join(m, "train_queries.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	qs, _ = eval.WithoutExamples(tools, qs)
	halfA, _ := eval.Halves(qs)
	// docs/proxy.md's figures: recorded lines, then on half b ranking
	// top-1, top-1 and wrong abstentions; "shown+none" is the "shown"
	// record with half a's no-tool queries added.
	want := map[string][4]float64{
		"shown":      {5466, 0.761, 0.662, 0.181},
		"shown+none": {5542, 0.761, 0.662, 0.181},
		"first":      {6400, 0.746, 0.684, 0.125},
	}
	records := map[string]string{}
	for _, model := range []string{"shown", "first"} {
		records[model] = recordTraffic(t, tools, halfA, model, m)
	}
	records["shown+none"] = withNoTool(t, records["shown"], halfA)
	for _, name := range []string{"shown", "shown+none", "first"} {
		lines := float64(len(readLines(t, records[name])))
		out := mustRun(t, "eval", "--json", "--tools", filepath.Join(m, "tools.json"), "--queries", filepath.Join(m, "train_queries.jsonl"),
			"--exclude-examples", "--half", "b", "--fit", records[name])
		rep := decode[eval.Report](t, out)
		got := [4]float64{lines, rep.RankAccAt1, rep.AccAt1, rep.NoTool.WrongAbstainRate}
		for i, figure := range []string{"recorded lines", "ranking top-1", "top-1", "wrong abstentions"} {
			if math.Abs(got[i]-want[name][i]) > 0.0005 {
				t.Errorf("%s: %s %.3f, docs/proxy.md says %.3f", name, figure, got[i], want[name][i])
			}
		}
	}
}

// readLines returns a file's lines.
func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return slices.Collect(strings.Lines(string(b)))
}

// withNoTool returns a copy of the record file with the no-tool queries of
// qs added.
func withNoTool(t *testing.T, record string, qs []eval.Query) string {
	t.Helper()
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		if len(q.Expected) == 0 {
			line, err := json.Marshal(map[string]any{"query": q.Query, "expected": []string{}})
			if err != nil {
				t.Fatal(err)
			}
			b = append(append(b, line...), '\n')
		}
	}
	out := filepath.Join(t.TempDir(), "traffic+none.jsonl")
	if err := os.WriteFile(out, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}

// simulatedModel answers a chat request by calling its first expected
// tool that the request holds; when none is, it calls nothing, or with
// model "first" the request's first tool.
func simulatedModel(expected map[string][]string, model string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Content string }
			Tools    []struct{ Function struct{ Name string } }
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var forwarded []string
		for _, x := range req.Tools {
			forwarded = append(forwarded, x.Function.Name)
		}
		call := ""
		if i := slices.IndexFunc(expected[req.Messages[0].Content], func(e string) bool { return slices.Contains(forwarded, e) }); i >= 0 {
			call = expected[req.Messages[0].Content][i]
		} else if model == "first" && len(forwarded) > 0 {
			call = forwarded[0]
		}
		w.Header().Set("Content-Type", "application/json")
		if call == "" {
			io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"I cannot help with that."}}]}`)
			return
		}
		fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":%q,"arguments":"{}"}}]}}]}`, call)
	})
}

// recordTraffic sends each query of qs, as its only user message with
// every tool of the catalog, through `habilis proxy --record` in front of
// simulatedModel, and returns the record file.
func recordTraffic(t *testing.T, tools []habilis.Tool, qs []eval.Query, model, metatool string) string {
	t.Helper()
	expected := map[string][]string{}
	for _, q := range qs {
		expected[q.Query] = q.Expected
	}
	up := httptest.NewServer(simulatedModel(expected, model))
	defer up.Close()
	dir := t.TempDir()
	record := filepath.Join(dir, "traffic.jsonl")
	srv := startServe(t, "--store", filepath.Join(dir, "habilis.db"), "proxy", "--listen", "127.0.0.1:0", "--upstream", up.URL+"/v1",
		"--tools", filepath.Join(metatool, "tools.json"), "--record", record, "-k", "5")
	var defs []json.RawMessage
	for _, tool := range tools {
		b, err := json.Marshal(map[string]any{"type": "function", "function": map[string]any{"name": tool.Name, "description": tool.Description}})
		if err != nil {
			t.Fatal(err)
		}
		defs = append(defs, b)
	}
	for _, q := range qs {
		body, err := json.Marshal(map[string]any{"model": "m", "messages": []map[string]string{{"role": "user", "content": q.Query}}, "tools": defs})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Post("http://"+srv.addr+"/v1/chat/completions", "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if code, _ := srv.stop(t); code != 0 {
		t.Fatalf("proxy exited %d:\n%s", code, srv.stderr)
	}
	return record
}
