package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/catalog"
)

// tourLine is one line of the README's tour: a command and, after its #,
// what the README says it does.
type tourLine struct {
	command, claim string
}

// readmeText returns the README.
func readmeText(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tourLines returns the lines of the README's "A tour" block.
func tourLines(t *testing.T) []tourLine {
	t.Helper()
	var lines []tourLine
	for _, l := range strings.Split(shellBlock(t, "README.md", "## A tour"), "\n") {
		command, claim, _ := strings.Cut(l, "#")
		if strings.TrimSpace(command) == "" {
			continue
		}
		lines = append(lines, tourLine{strings.TrimSpace(command), strings.TrimSpace(claim)})
	}
	if len(lines) < 10 {
		t.Fatalf("the README's tour has %d commands; the test reads it wrong", len(lines))
	}
	return lines
}

// tourDir returns a directory holding the repository's sample files, where
// the tour's commands run as a user would run them after the README's
// first command.
func tourDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"tools.json", "openai_tools.json", "queries.jsonl"} {
		b, err := os.ReadFile(filepath.Join("..", "..", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runTour runs a README command line in bash in dir, with habilis (or
// `go run ./cmd/habilis`) meaning the test's binary.
func runTour(t *testing.T, dir, line string) result {
	t.Helper()
	line = strings.ReplaceAll(line, "go run ./cmd/habilis", "habilis")
	cmd := habilisCmd()
	cmd.Path, cmd.Args = "/bin/bash", []string{"bash", "-c", "habilis() { \"$HABILIS_BIN\" \"$@\"; }\n" + line}
	cmd.Dir = dir
	cmd.Env = append(cmd.Env, "HABILIS_BIN="+binary)
	return runHabilis(t, cmd)
}

// TestReadmeTour runs the README's first command, then every command of
// its tour in order, and checks what the README says each prints: the
// tool selected, the abstentions, the exit code, the fields shown. A
// claim no check here understands fails the test, so the README and the
// program cannot drift apart unnoticed.
func TestReadmeTour(t *testing.T) {
	dir := tourDir(t)
	first, _, _ := strings.Cut(shellBlock(t, "README.md", "## Two commands"), "\n")
	r := runTour(t, dir, first)
	tools, err := catalog.Read(filepath.Join(dir, "tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("sample catalog \\(\\[`tools.json`\\]\\(tools.json\\), (\\d+) tools\\)").FindStringSubmatch(readmeText(t))
	if m == nil || m[1] != strconv.Itoa(len(tools)) || r.code != 0 || !strings.Contains(r.stdout, "loaded tools.json: "+m[1]+" tools") {
		t.Fatalf("the README's first command = exit %d:\n%s%s\nwant %d tools loaded, as the README says (%v)", r.code, r.stdout, r.stderr, len(tools), m)
	}
	for _, line := range tourLines(t) {
		if strings.Contains(line.command, " serve ") {
			checkTourServe(t, dir, line)
			continue
		}
		r := runTour(t, dir, line.command)
		echo := strings.HasSuffix(line.command, "; echo $?")
		if r.code != 0 || (!echo && r.stderr != "") {
			t.Errorf("README tour: %s: exit %d, stderr %q", line.command, r.code, r.stderr)
			continue
		}
		checkTourClaim(t, dir, line, r)
	}
}

// tourClaims are the claims the tour makes, each with its check on what
// the command printed (its arguments: the claim's submatches).
var tourClaims = []struct {
	re    *regexp.Regexp
	check func(t *testing.T, dir string, line tourLine, out string, m []string)
}{
	{regexp.MustCompile(`^(\w+) mode: (\w+), ambiguous with (\w+)$`), func(t *testing.T, _ string, line tourLine, out string, m []string) {
		want := `(?m)^1\s+` + m[2] + `\s[\s\S]*^ambiguous: ` + m[2] + ` and ` + m[3] + ` both fit .*\(` + m[1] + ` mode\)$`
		matchOut(t, line, out, want)
	}},
	{regexp.MustCompile(`^abstains: no tool fits$`), func(t *testing.T, _ string, line tourLine, out string, _ []string) {
		matchOut(t, line, out, `^abstained: no tool fits`)
	}},
	{regexp.MustCompile(`^([a-z_]+)$`), func(t *testing.T, _ string, line tourLine, out string, m []string) {
		matchOut(t, line, out, `(?m)^selected `+m[1]+` \(`)
	}},
	{regexp.MustCompile(`^(\d+): `), func(t *testing.T, _ string, line tourLine, out string, m []string) {
		if !strings.HasSuffix(line.command, "; echo $?") {
			t.Errorf("README tour: %s: claims exit code %s but does not echo it", line.command, m[1])
		}
		matchOut(t, line, out, `(?m)^`+m[1]+`\n?$`)
	}},
	{regexp.MustCompile(`^(\d+) \w+ tools without examples: load says what gates them$`), func(t *testing.T, _ string, line tourLine, out string, m []string) {
		matchOut(t, line, out, `^loaded \S+: `+m[1]+` tools, 0 examples\n[\s\S]*note: no tool has examples: each tool passes its gate when`)
	}},
	{regexp.MustCompile(`^every figure behind the decision$`), checkSelectJSON},
	{regexp.MustCompile(`^tools that misroute each other's requests, worst first$`), checkCollisionTable},
	{regexp.MustCompile(`^the tool space: hover a point, click a tool$`), func(t *testing.T, dir string, line tourLine, out string, _ []string) {
		name := regexp.MustCompile(`--out (\S+)`).FindStringSubmatch(line.command)
		b, err := os.ReadFile(filepath.Join(dir, name[1]))
		if err != nil || !regexp.MustCompile(`(?i)<html[\s\S]*<svg`).Match(b) {
			t.Errorf("README tour: %s: wrote no HTML page with the map (%v)", line.command, err)
		}
	}},
	{regexp.MustCompile(`^leave-one-out on the catalog's own examples$`), func(t *testing.T, dir string, line tourLine, out string, _ []string) {
		tools, err := catalog.Read(filepath.Join(dir, "tools.json"))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, tool := range tools {
			n += len(tool.Examples)
		}
		matchOut(t, line, out, `^`+strconv.Itoa(n)+` queries \(held-out examples, 5 folds\)`)
	}},
	{regexp.MustCompile(`^extractive arguments: (\w+) = (\w+)$`), func(t *testing.T, _ string, line tourLine, out string, m []string) {
		matchOut(t, line, out, `(?m)^`+m[1]+`\s+`+m[2]+`\s+extractor\s*$`)
	}},
	{regexp.MustCompile(`^[a-z ]+(, [a-z ]+)+$`), checkTourWords},
}

// tourWords are the items of the tour's comma-separated claims, each with
// what shows it in the output.
var tourWords = map[string]string{
	"schema":                `(?m)^schema:`,
	"radius":                `(?m)^radius: `,
	"margin":                `(?m)^margin: `,
	"its gate in each mode": `(?m)^gates:.*\n\s+hybrid\s+\d.*\n\s+centroid\s+\d.*\n\s+description\s+\d`,
	"collisions":            `(?m)^collides: `,
	"accuracy":              `(?m)^\s+acc@1\s+\d`,
	"recall":                `(?m)^\s+recall@\d+\s+\d`,
	"abstention":            `(?m)^\s+no-tool\s+.*abstain precision \d.*abstain recall \d`,
	"confusions":            `(?m)^top confusions \(expected -> chosen\):\n\s+\w+ -> \w+: \d`,
}

// checkTourClaim checks the claim of line on out, what it printed.
func checkTourClaim(t *testing.T, dir string, line tourLine, r result) {
	t.Helper()
	for _, c := range tourClaims {
		if m := c.re.FindStringSubmatch(line.claim); m != nil {
			c.check(t, dir, line, r.stdout, m)
			return
		}
	}
	t.Errorf("README tour: %s: no check of this test knows the claim %q; add one", line.command, line.claim)
}

func matchOut(t *testing.T, line tourLine, out, re string) {
	t.Helper()
	if !regexp.MustCompile(re).MatchString(out) {
		t.Errorf("README tour: %s (%q) printed:\n%s\nwant a match of %s", line.command, line.claim, out, re)
	}
}

// checkTourWords checks a claim listing what the output shows.
func checkTourWords(t *testing.T, _ string, line tourLine, out string, _ []string) {
	t.Helper()
	for _, w := range strings.Split(line.claim, ", ") {
		re, ok := tourWords[w]
		if !ok {
			t.Errorf("README tour: %s: no check of this test knows %q of %q; add one", line.command, w, line.claim)
			continue
		}
		matchOut(t, line, out, re)
	}
}

// checkSelectJSON checks that select --json prints every key the README
// lists after the tour, at the top or in the first match.
func checkSelectJSON(t *testing.T, _ string, line tourLine, out string, _ []string) {
	t.Helper()
	m := regexp.MustCompile("`select --json` prints `(\\{[^`]*\\})`").FindStringSubmatch(readmeText(t))
	if m == nil {
		t.Fatal("the README no longer says what select --json prints")
	}
	var d struct {
		Matches []map[string]any `json:"matches"`
	}
	var top map[string]any
	if err := json.Unmarshal([]byte(out), &d); err != nil || json.Unmarshal([]byte(out), &top) != nil || len(d.Matches) == 0 {
		t.Fatalf("README tour: %s = %s (%v), want a decision with matches", line.command, out, err)
	}
	for _, k := range regexp.MustCompile(`"(\w+)"`).FindAllStringSubmatch(m[1], -1) {
		_, atTop := top[k[1]]
		_, inMatch := d.Matches[0][k[1]]
		if !atTop && !inMatch {
			t.Errorf("README tour: %s prints no %q, which the README lists", line.command, k[1])
		}
	}
}

// checkCollisionTable checks collisions --min-severity S --limit N: at
// most N rows, none below S, the worst first, and each misrouting as its
// severity says (README: medium for one request misrouted, high for two or
// more).
func checkCollisionTable(t *testing.T, _ string, line tourLine, out string, _ []string) {
	t.Helper()
	limit := regexp.MustCompile(`--limit (\d+)`).FindStringSubmatch(line.command)
	floor := regexp.MustCompile(`--min-severity (\w+)`).FindStringSubmatch(line.command)
	rank := map[string]int{"low": 1, "medium": 2, "high": 3}
	rows := regexp.MustCompile(`(?m)^(low|medium|high)\s+\S+\s+\S+\s+(\d+) (\d+)\s`).FindAllStringSubmatch(out, -1)
	n, _ := strconv.Atoi(limit[1])
	if len(rows) == 0 || len(rows) > n {
		t.Errorf("README tour: %s printed %d collisions, want 1 to %d:\n%s", line.command, len(rows), n, out)
	}
	for i, row := range rows {
		ab, _ := strconv.Atoi(row[2])
		ba, _ := strconv.Atoi(row[3])
		switch {
		case rank[row[1]] < rank[floor[1]]:
			t.Errorf("README tour: %s printed a %s collision", line.command, row[1])
		case i > 0 && rank[row[1]] > rank[rows[i-1][1]]:
			t.Errorf("README tour: %s printed a %s collision after a %s one", line.command, row[1], rows[i-1][1])
		case row[1] == "medium" && ab+ba < 1, row[1] == "high" && ab+ba < 2:
			t.Errorf("README tour: %s: a %s collision misrouting %d requests", line.command, row[1], ab+ba)
		}
	}
}

// checkTourServe starts the tour's serve on a free port and runs what its
// claim says to run next, select --remote, with the tour's first request:
// the server decides as the local store does.
func checkTourServe(t *testing.T, dir string, line tourLine) {
	t.Helper()
	m := regexp.MustCompile(`^gRPC; then select --remote (\S+) \.\.\.$`).FindStringSubmatch(line.claim)
	args := strings.Fields(line.command)
	if m == nil || args[0] != "habilis" || args[1] != "serve" {
		t.Fatalf("README tour: %s (%q): want habilis serve ... # gRPC; then select --remote ADDR ...", line.command, line.claim)
	}
	for i, a := range args {
		if a == m[1] {
			args[i] = "127.0.0.1:0"
		}
	}
	// The store is the server's once it serves: ask it first.
	query := "will it rain in Lisbon tomorrow"
	local := runTour(t, dir, `habilis select --json "`+query+`"`)
	srv := startServe(t, append([]string{"--store", filepath.Join(dir, "habilis.db")}, args[1:]...)...)
	defer func() {
		srv.cmd.Process.Kill()
		srv.cmd.Wait()
	}()
	remote := runTour(t, dir, `habilis select --json --remote `+srv.addr+` "`+query+`"`)
	if local.code != 0 || remote.code != 0 {
		t.Fatalf("README tour: select, then select --remote %s: exit %d, %d: %s%s", srv.addr, local.code, remote.code, local.stderr, remote.stderr)
	}
	type decision struct {
		Abstained, Ambiguous bool
		Matches              []struct{ Tool string }
	}
	want, got := decode[decision](t, local.stdout), decode[decision](t, remote.stdout)
	if len(got.Matches) == 0 || !reflect.DeepEqual(got, want) {
		t.Errorf("README tour: select --remote %s = %+v, want what the store decides locally: %+v", srv.addr, got, want)
	}
}

// TestReadmeExitCodes makes each exit code the README lists happen, and
// the refusal of a broken catalog it shows: that very line, with the
// store left as it was.
func TestReadmeExitCodes(t *testing.T) {
	dir := tourDir(t)
	text := readmeText(t)
	m := regexp.MustCompile("\\$ habilis load (\\S+)\n(habilis: .*tool \\d+ \"(\\w+)\": field \"(\\w+)\": .*)\n").FindStringSubmatch(text)
	if m == nil {
		t.Fatal("the README no longer shows a broken catalog refused")
	}
	misspell(t, dir, m[1], m[3], m[4])
	if r := runTour(t, dir, "habilis load tools.json"); r.code != 0 {
		t.Fatalf("load tools.json: exit %d: %s", r.code, r.stderr)
	}
	before, err := os.ReadFile(filepath.Join(dir, "habilis.db"))
	if err != nil {
		t.Fatal(err)
	}
	commands := map[string]string{
		"success":                    `habilis select "will it rain in Lisbon tomorrow"`,
		"error":                      "habilis load " + m[1],
		"usage":                      "habilis select",
		"`collisions --fail-on` hit": "habilis collisions --fail-on high",
		"`eval --min-acc` missed":    "habilis eval --tools tools.json --queries queries.jsonl --min-acc 1.01",
	}
	codes := regexp.MustCompile(`Exit codes: ([^.]*)\.`).FindStringSubmatch(text)
	if codes == nil {
		t.Fatal("the README no longer lists the exit codes")
	}
	for _, c := range strings.Split(strings.Join(strings.Fields(codes[1]), " "), ", ") {
		code, what, _ := strings.Cut(c, " ")
		command, ok := commands[what]
		if !ok {
			t.Errorf("the README's exit code %q: no command of this test makes it; add one", c)
			continue
		}
		if r := runTour(t, dir, command); strconv.Itoa(r.code) != code {
			t.Errorf("%s: exit %d, want %s (%s) as the README says", command, r.code, code, what)
		} else if what == "error" && r.stderr != m[2]+"\n" {
			t.Errorf("%s printed %q, want the README's %q", command, r.stderr, m[2])
		}
	}
	if after, err := os.ReadFile(filepath.Join(dir, "habilis.db")); err != nil || string(after) != string(before) {
		t.Errorf("the refused load changed the store (%v)", err)
	}
}

// misspell writes dir/name: the sample catalog with tool's "examples"
// under field instead.
func misspell(t *testing.T, dir, name, tool, field string) {
	t.Helper()
	var tools []map[string]any
	b, err := os.ReadFile(filepath.Join(dir, "tools.json"))
	if err != nil || json.Unmarshal(b, &tools) != nil {
		t.Fatalf("tools.json: %v", err)
	}
	for _, tl := range tools {
		if tl["name"] == tool {
			tl[field] = tl["examples"]
			delete(tl, "examples")
		}
	}
	if b, err = json.MarshalIndent(tools, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSampleCatalogCollisions checks what the README says of the sample
// catalog's collisions: at medium severity and above, its four pairs of
// tools that do overlapping things, and beside them only the current time
// or date with a tool whose requests say "right now" or "today".
func TestSampleCatalogCollisions(t *testing.T) {
	dir := tourDir(t)
	store := filepath.Join(dir, "habilis.db")
	mustRun(t, "--store", store, "load", filepath.Join(dir, "tools.json"))
	cols := decode[struct {
		Collisions []habilis.Collision `json:"collisions"`
	}](t, mustRun(t, "--store", store, "collisions", "--json", "--min-severity", "medium")).Collisions
	overlapping := map[[2]string]bool{
		{"get_weather", "weather_forecast"}:       false,
		{"convert_timezone", "current_time"}:      false,
		{"news_search", "web_search"}:             false,
		{"create_calendar_event", "set_reminder"}: false,
	}
	now := regexp.MustCompile(`^current_(time|date)$`)
	said := regexp.MustCompile(`^(get_weather|weather_forecast|get_stock_price)$`)
	for _, c := range cols {
		pair := [2]string{c.A, c.B}
		if _, ok := overlapping[pair]; ok {
			overlapping[pair] = true
			continue
		}
		if !now.MatchString(c.A) || !said.MatchString(c.B) {
			t.Errorf("collision %s/%s (%s, nearest %d %d, misroutes %d %d): the README names no such pair",
				c.A, c.B, c.Severity, c.NearestAB, c.NearestBA, c.MisroutesAB, c.MisroutesBA)
		}
	}
	for pair, seen := range overlapping {
		if !seen {
			t.Errorf("collisions --min-severity medium lacks %s/%s:\n%+v", pair[0], pair[1], cols)
		}
	}
}
