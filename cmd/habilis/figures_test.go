package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// figureColumns maps the headers of the README's quality tables to the
// eval --json fields they report ("" for a column of targets).
var figureColumns = map[string]string{
	"decision accuracy":   "decision_accuracy",
	"wrong abstentions":   "no_tool.wrong_abstain_rate",
	"wrongly abstains":    "no_tool.wrong_abstain_rate",
	"no-tool accepted":    "no_tool.accepted_rate",
	"top-1":               "acc_at_1",
	"ranking top-1":       "rank_acc_at_1",
	"recall@5":            "recall_at_k",
	"no-tool AUROC":       "no_tool.auroc",
	"abstains on no-tool": "no_tool.abstain_recall",
	"target":              "",
}

// figureRows maps the first cell of each row of the README's quality
// tables to the command of its "## Quality" block that makes it (by its
// index there) and the flags it adds, besides any `--flag` the cell
// names. A row this test does not know fails it. Model rows name a model
// embedder's server in their cell (`--embedder ...`); they are checked
// only when HABILIS_README_MODEL is set, with that server running.
var figureRows = []struct {
	prefix  string
	command int
	flags   []string
	model   bool
}{
	{"BFCL candidates,", 2, nil, false},
	{"BM25 there,", 2, []string{"--baseline", "bm25"}, false},
	{"model there, generic requests", 3, nil, true},
	{"model there,", 2, nil, true},
	{"sample catalog, held-out generic requests", 3, nil, false},
	{"BM25 over name + description + examples", 0, []string{"--baseline", "bm25"}, false},
	{"habilis, hybrid (default)", 0, nil, false},
	{"habilis, centroid", 0, nil, false},
	{"habilis, hybrid after `fit` on half a", 1, nil, false},
	{"model, hybrid (default)", 0, nil, true},
	{"model, hybrid after `fit` on half a", 1, nil, true},
	{"target", -1, nil, false},
}

// figures runs README commands with --json in the repository's root, once
// each.
type figures struct {
	t    *testing.T
	data string
	runs map[string]map[string]any
}

// eval returns the JSON report of the README command line with extra
// flags.
func (f *figures) eval(line string, extra ...string) map[string]any {
	f.t.Helper()
	args := strings.Fields(strings.ReplaceAll(line, "../shared/data", f.data))
	if len(args) < 2 || args[0] != "habilis" {
		f.t.Fatalf("README command %q does not run habilis", line)
	}
	args = append(append(args[1:], extra...), "--json")
	key := strings.Join(args, " ")
	if rep, ok := f.runs[key]; ok {
		return rep
	}
	cmd := habilisCmd(args...)
	cmd.Dir = filepath.Join("..", "..")
	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--embedder") }) {
		// A model row embeds thousands of texts: it keeps them in the
		// user's embedding cache, so that checking again costs the server
		// nothing, rather than in the tests' own.
		cmd.Env = append(cmd.Env, "HABILIS_EMBED_CACHE="+userEmbedCache(f.t))
	}
	r := runHabilis(f.t, cmd)
	var rep map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &rep) != nil {
		f.t.Fatalf("habilis %s: exit %d: %s", key, r.code, r.stderr)
	}
	f.runs[key] = rep
	return rep
}

// userEmbedCache returns the embedding cache the CLI uses by default:
// $HABILIS_EMBED_CACHE, else habilis/embeddings in the user's cache
// directory.
func userEmbedCache(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("HABILIS_EMBED_CACHE"); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(d, "habilis", "embeddings")
}

// field returns the number at path (dot-separated) of rep.
func field(rep map[string]any, path string) float64 {
	var v any = rep
	for _, k := range strings.Split(path, ".") {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	x, _ := v.(float64)
	return x
}

// checkFigure checks a figure as the README writes it ("80.0 %", "0.940",
// "3,475") against the measured value x at the README's precision.
func checkFigure(t *testing.T, what, cell string, x float64) {
	t.Helper()
	cell = strings.TrimSpace(cell)
	s := strings.ReplaceAll(strings.TrimSuffix(cell, " %"), ",", "")
	want, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Errorf("%s: the README's figure %q is not a number", what, cell)
		return
	}
	scale, digits := 1.0, 0
	if strings.HasSuffix(cell, "%") {
		scale = 100
	}
	if _, frac, ok := strings.Cut(s, "."); ok {
		digits = len(frac)
	}
	if math.Abs(x*scale-want) > 0.5*math.Pow(10, -float64(digits))+1e-9 {
		t.Errorf("%s: the README says %s, the command gives %.*f", what, cell, digits+2, x*scale)
	}
}

// TestReadmeFigures runs the commands of the README's "## Quality" section
// on the evaluation data and checks every figure of its tables, and those
// its sentences quote, at the README's precision. It needs the data
// (../shared/data beside the repository) and about two minutes.
func TestReadmeFigures(t *testing.T) {
	data := os.Getenv("HABILIS_SHARED_DATA")
	if data == "" {
		t.Skip("set HABILIS_SHARED_DATA to the evaluation data directory (../shared/data) to check the README's quality figures")
	}
	data, err := filepath.Abs(data)
	if err != nil {
		t.Fatal(err)
	}
	f := &figures{t: t, data: data, runs: map[string]map[string]any{}}
	var commands []string
	for _, l := range strings.Split(shellBlock(t, "README.md", "## Quality"), "\n") {
		if strings.HasPrefix(l, "habilis ") {
			l, _, _ = strings.Cut(l, "#")
			commands = append(commands, strings.ReplaceAll(strings.ReplaceAll(l, "$M", "../shared/data/metatool"), "$B", "../shared/data/bfcl"))
		}
	}
	text := readmeText(t)
	section := text[strings.Index(text, "\n## Quality\n"):]
	section = section[:strings.Index(section[1:], "\n## ")+1]
	for _, table := range regexp.MustCompile(`(?m)^\|.*\|\n\|[-|]+\|\n(?:\|.*\|\n)+`).FindAllString(section, -1) {
		checkFigureTable(t, f, commands, table)
	}
	checkFigureSentences(t, f, commands, strings.Join(strings.Fields(section), " "))
}

// checkFigureTable checks one of the README's quality tables.
func checkFigureTable(t *testing.T, f *figures, commands []string, table string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(table), "\n")
	header := cells(lines[0])
	for _, line := range lines[2:] {
		row := cells(line)
		i := figureRow(row[0])
		if i < 0 {
			t.Errorf("README quality row %q: this test knows no command for it; add one", row[0])
			continue
		}
		if figureRows[i].command < 0 || figureRows[i].model && os.Getenv("HABILIS_README_MODEL") == "" {
			continue
		}
		flags := figureRows[i].flags
		for _, m := range regexp.MustCompile("`(--[^`]+)`").FindAllStringSubmatch(row[0], -1) {
			flags = append(flags, strings.Fields(m[1])...)
		}
		rep := f.eval(commands[figureRows[i].command], flags...)
		checkCounts(t, row[0], header[0]+" "+row[0], rep)
		for c, cell := range row[1:] {
			path, ok := figureColumns[header[c+1]]
			switch {
			case !ok:
				t.Errorf("README quality column %q: this test knows no field for it; add one", header[c+1])
			case path != "" && strings.TrimSpace(cell) != "–" && cell != "":
				checkFigure(t, row[0]+", "+header[c+1], cell, field(rep, path))
			}
		}
	}
}

// checkCounts checks the query counts a row or its table's header states
// ("3,475 queries", "1,124 no-tool", "(62)").
func checkCounts(t *testing.T, what, text string, rep map[string]any) {
	t.Helper()
	for _, c := range []struct{ re, path string }{
		{`([\d,]+) queries`, "queries"},
		{`\(([\d,]+)\)`, "queries"},
		{`([\d,]+) no-tool\b`, "no_tool.queries"},
	} {
		if m := regexp.MustCompile(c.re).FindStringSubmatch(text); m != nil {
			checkFigure(t, what+": "+c.path, m[1], field(rep, c.path))
		}
	}
}

func cells(line string) []string {
	parts := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

func figureRow(label string) int {
	for i, r := range figureRows {
		if strings.HasPrefix(label, r.prefix) {
			return i
		}
	}
	return -1
}

// checkFigureSentences checks the figures the README's quality section
// quotes in its sentences (text with its spacing made single).
func checkFigureSentences(t *testing.T, f *figures, commands []string, text string) {
	t.Helper()
	match := func(re string) []string {
		t.Helper()
		m := regexp.MustCompile(re).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("the README's quality section no longer matches %s; update this test with it", re)
		}
		return m
	}
	// pc is a percentage as the README writes it, and num a number.
	const pc, num = `(\d+(?:\.\d+)? %)`, `(\d[\d,]*(?:\.\d+)?)`
	m := match("BFCL's untuned half \\(`([^`]+)`\\): " + pc + " at " + pc + " wrong abstentions")
	rep := f.eval(commands[2], strings.Fields(m[1])...)
	checkFigure(t, "BFCL's untuned half, decisions", m[2], field(rep, "decision_accuracy"))
	checkFigure(t, "BFCL's untuned half, wrong abstentions", m[3], field(rep, "no_tool.wrong_abstain_rate"))

	m = match("On half a \\(`([^`]+)`\\), where defaults were chosen, hybrid gives " + pc + " / " + pc + " / " + pc + " / " + num)
	rep = f.eval(strings.Replace(commands[0], "--half b", m[1], 1))
	for k, path := range []string{"acc_at_1", "rank_acc_at_1", "recall_at_k", "no_tool.auroc"} {
		checkFigure(t, "MetaTool half a, "+path, m[k+2], field(rep, path))
	}

	m = match("BFCL's " + num + " `pooled_ok` queries against all " + num + " tools, `([^`]+)`\\): habilis " + pc + " top-1 and " + pc + " recall@5, BM25 " + pc + " and " + pc)
	rep = f.eval(commands[2], strings.Fields(m[3])...)
	bm25 := f.eval(commands[2], append(strings.Fields(m[3]), "--baseline", "bm25")...)
	checkFigure(t, "pooled queries", m[1], field(rep, "queries"))
	checkFigure(t, "pooled tools", m[2], field(rep, "tools"))
	checkFigure(t, "pooled top-1", m[4], field(rep, "acc_at_1"))
	checkFigure(t, "pooled recall@5", m[5], field(rep, "recall_at_k"))
	checkFigure(t, "pooled BM25 top-1", m[6], field(bm25, "acc_at_1"))
	checkFigure(t, "pooled BM25 recall@5", m[7], field(bm25, "recall_at_k"))

	m = match("\\(`(habilis eval --fill [^`]+)` scores only those\\): the built-in extractor fills " + pc + " of the " + num + " rows .* against " + pc + " for empty arguments, and invents nothing")
	rep = f.eval(strings.ReplaceAll(m[1], "$B", "../shared/data/bfcl"))
	checkFigure(t, "filling, exact", m[2], field(rep, "fill.exact"))
	checkFigure(t, "filling, rows", m[3], field(rep, "fill.queries"))
	checkFigure(t, "filling nothing, exact", m[4], field(rep, "fill.baseline_exact"))
	if x := field(rep, "fill.invented_rate"); x != 0 {
		t.Errorf("filling invents %v of values; the README says nothing", x)
	}
}
