package habilis_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// module is this module's path; layering rules speak of paths below it.
const module = "github.com/habilis-router/habilis"

// listedPackage is what `go list -json` says about one package.
type listedPackage struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Deps       []string
}

// forbiddenInCore are the libraries of adapters: the core reaches Qdrant,
// Ollama, gRPC, MCP, cobra and bbolt only through interfaces.
var forbiddenInCore = []string{
	"github.com/qdrant/",
	"github.com/ollama/",
	"google.golang.org/grpc",
	"github.com/modelcontextprotocol/",
	"github.com/spf13/cobra",
	"go.etcd.io/bbolt",
}

// TestLayering keeps imports pointing down: the root package uses only the
// standard library; the core (catalog, selector, collision, fill, eval,
// toolmap) uses no adapter and no adapter's library; adapters (embed/*,
// store/*, api, mcpgate, fill/executor, fill/ollamafill) do not use each
// other; nothing imports cmd. gonum is imported in known places only: its
// numeric packages by internal/vec (the kernels) and toolmap (the map's
// projection, an eigendecomposition), its plotting library, with the fonts
// and image codecs it brings, by toolmap/render alone, so that no routing
// package builds it. unsafe and golang.org/x/sys/cpu are imported by
// internal/vec alone (the posting loop's assembly, views of stored bytes).
// Test files are not checked: the core is tested with real adapters; the
// helpers several packages' tests share, in internal/testutil, are for
// tests alone.
func TestLayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-e", "-deps", "-json=ImportPath,Standard,Imports,Deps", "./...").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	pkgs, err := decodePackages(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := pkgs[module]; !ok {
		t.Fatalf("go list did not list %s", module)
	}
	for _, v := range layeringViolations(pkgs) {
		t.Error(v)
	}
}

// TestLayeringViolations checks that each rule fires, on a made-up graph.
func TestLayeringViolations(t *testing.T) {
	m := func(p string) string { return module + "/" + p }
	graph := []listedPackage{
		{ImportPath: module, Imports: []string{"fmt", "github.com/google/uuid"}, Deps: []string{"fmt", "github.com/google/uuid"}},
		{ImportPath: "fmt", Standard: true},
		{ImportPath: "github.com/google/uuid"},
		{ImportPath: "go.etcd.io/bbolt"},
		{ImportPath: "gonum.org/v1/gonum/floats"},
		{ImportPath: "unsafe", Standard: true},
		{ImportPath: "golang.org/x/sys/cpu"},
		{ImportPath: m("selector"), Imports: []string{m("collision"), "unsafe", "golang.org/x/sys/cpu"}, Deps: []string{m("collision"), m("store/boltstore"), "go.etcd.io/bbolt", "unsafe", "golang.org/x/sys/cpu"}},
		{ImportPath: m("collision"), Imports: []string{m("store/boltstore"), "gonum.org/v1/gonum/floats"}, Deps: []string{m("store/boltstore"), "go.etcd.io/bbolt", "gonum.org/v1/gonum/floats"}},
		{ImportPath: m("store/boltstore"), Imports: []string{"go.etcd.io/bbolt", m("embed/lexical")}, Deps: []string{"go.etcd.io/bbolt", m("embed/lexical")}},
		{ImportPath: m("store/storetest"), Imports: []string{m("store/boltstore")}, Deps: []string{m("store/boltstore"), m("embed/lexical"), "go.etcd.io/bbolt"}},
		{ImportPath: m("embed/lexical"), Imports: []string{m("internal/vec")}, Deps: []string{m("internal/vec"), "gonum.org/v1/gonum/floats"}},
		{ImportPath: m("internal/vec"), Imports: []string{"gonum.org/v1/gonum/floats", "unsafe", "golang.org/x/sys/cpu"}, Deps: []string{"gonum.org/v1/gonum/floats", "unsafe", "golang.org/x/sys/cpu"}},
		{ImportPath: m("api/habilis/v1"), Imports: []string{"unsafe"}, Deps: []string{"unsafe"}},
		{ImportPath: m("api"), Imports: []string{m("cmd/habilis"), m("store/memstore"), m("fill/executor")}, Deps: []string{m("cmd/habilis"), m("store/memstore"), m("fill/executor")}},
		{ImportPath: m("fill/executor")},
		{ImportPath: "gonum.org/v1/gonum/mat"},
		{ImportPath: "gonum.org/v1/plot"},
		{ImportPath: m("toolmap"), Imports: []string{"gonum.org/v1/gonum/mat", "gonum.org/v1/plot"}, Deps: []string{"gonum.org/v1/gonum/mat", "gonum.org/v1/plot"}},
		{ImportPath: m("toolmap/render"), Imports: []string{m("toolmap"), "gonum.org/v1/plot", "gonum.org/v1/gonum/floats"}, Deps: []string{m("toolmap"), "gonum.org/v1/plot", "gonum.org/v1/gonum/mat", "gonum.org/v1/gonum/floats"}},
		{ImportPath: m("eval"), Imports: []string{m("store/memstore")}, Deps: []string{m("store/memstore")}},
		{ImportPath: m("mcpgate"), Imports: []string{m("embed/lexical"), m("store/memstore")}, Deps: []string{m("embed/lexical"), m("internal/vec"), "gonum.org/v1/gonum/floats", m("store/memstore")}},
		{ImportPath: m("store/memstore"), Imports: []string{m("internal/testutil")}, Deps: []string{m("internal/testutil")}},
		{ImportPath: m("internal/testutil")},
		{ImportPath: m("cmd/habilis")},
	}
	pkgs := map[string]*listedPackage{}
	for i := range graph {
		pkgs[graph[i].ImportPath] = &graph[i]
	}
	want := []string{
		"api imports cmd/habilis (via api -> cmd/habilis): nothing imports cmd",
		"api imports fill/executor (via api -> fill/executor): adapters (embed/*, store/*, api, mcpgate, fill/executor, fill/ollamafill) must not import each other",
		"collision imports gonum.org/v1/gonum/floats: only internal/vec and toolmap import gonum's numeric packages",
		"collision imports store/boltstore (via collision -> store/boltstore): the core (catalog, selector, collision, fill, eval, toolmap) must not depend on adapters or their libraries",
		"habilis imports github.com/google/uuid (via habilis -> github.com/google/uuid): the root package imports only the standard library",
		"mcpgate imports embed/lexical (via mcpgate -> embed/lexical): adapters (embed/*, store/*, api, mcpgate, fill/executor, fill/ollamafill) must not import each other",
		"selector imports golang.org/x/sys/cpu: only internal/vec imports unsafe or golang.org/x/sys/cpu (generated protobuf code aside)",
		"selector imports store/boltstore (via selector -> collision -> store/boltstore): the core (catalog, selector, collision, fill, eval, toolmap) must not depend on adapters or their libraries",
		"selector imports unsafe: only internal/vec imports unsafe or golang.org/x/sys/cpu (generated protobuf code aside)",
		"store/boltstore imports embed/lexical (via store/boltstore -> embed/lexical): adapters (embed/*, store/*, api, mcpgate, fill/executor, fill/ollamafill) must not import each other",
		"store/memstore imports internal/testutil (via store/memstore -> internal/testutil): only tests import internal/testutil",
		"toolmap imports gonum.org/v1/plot: only toolmap/render imports gonum's plotting library",
		"toolmap/render imports gonum.org/v1/gonum/floats: only internal/vec and toolmap import gonum's numeric packages",
	}
	if diff := cmp.Diff(want, layeringViolations(pkgs)); diff != "" {
		t.Errorf("layeringViolations (-want +got):\n%s", diff)
	}
}

func decodePackages(out []byte) (map[string]*listedPackage, error) {
	pkgs := map[string]*listedPackage{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			return pkgs, nil
		} else if err != nil {
			return nil, err
		}
		pkgs[p.ImportPath] = &p
	}
}

// rel returns p's path inside the module ("" for the root package) and
// whether p belongs to the module.
func rel(p string) (string, bool) {
	if p == module {
		return "", true
	}
	r, ok := strings.CutPrefix(p, module+"/")
	return r, ok
}

func under(r, dir string) bool { return r == dir || strings.HasPrefix(r, dir+"/") }

func isCore(r string) bool {
	return adapter(r) == "" && (under(r, "catalog") || under(r, "selector") || under(r, "collision") || under(r, "fill") || under(r, "eval") || under(r, "toolmap"))
}

// adapter returns the adapter r belongs to ("embed/lexical",
// "store/boltstore", "api", "mcpgate", "fill/ollamafill", "fill/executor"),
// or "" when r is not an adapter. mcpgate, the MCP gateway, is a surface
// like api: it indexes with the selector and an in-memory store, and
// cmd/habilis gives it its embedder. The store conformance suite is a test
// helper, not an adapter, and store/memstore, which holds a catalog in
// memory with the standard library alone, is usable from any layer.
// fill/ollamafill (the Ollama-backed filler) and fill/executor (which
// starts processes, calls HTTP endpoints and MCP servers) are adapters that
// live beside the fill package whose interfaces they implement: a surface
// such as api is handed them by cmd, never imports them.
func adapter(r string) string {
	parts := strings.Split(r, "/")
	switch {
	case parts[0] == "api", parts[0] == "mcpgate":
		return parts[0]
	case under(r, "fill/ollamafill"), under(r, "fill/executor"):
		return strings.Join(parts[:2], "/")
	case (parts[0] == "embed" || parts[0] == "store") && len(parts) > 1 && !under(r, "store/storetest") && !under(r, "store/memstore"):
		return parts[0] + "/" + parts[1]
	}
	return ""
}

// name shortens a module path for messages.
func name(p string) string {
	if r, ok := rel(p); ok {
		if r == "" {
			return "habilis"
		}
		return r
	}
	return p
}

// chain returns the shortest import path from one package to another,
// through the direct imports go list reports, or nil.
func chain(pkgs map[string]*listedPackage, from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == to {
			var path []string
			for q := to; q != ""; q = prev[q] {
				path = append(path, q)
			}
			slices.Reverse(path)
			return path
		}
		if pkgs[p] == nil {
			continue
		}
		for _, i := range pkgs[p].Imports {
			if _, seen := prev[i]; !seen {
				prev[i] = p
				queue = append(queue, i)
			}
		}
	}
	return nil
}

// layeringRule forbids some dependencies of some packages.
type layeringRule struct {
	why string
	// forbids reports whether package r (a path in the module) may not
	// depend on dep.
	forbids func(pkgs map[string]*listedPackage, r, dep string) bool
}

var layeringRules = []layeringRule{
	{"the root package imports only the standard library", func(pkgs map[string]*listedPackage, r, dep string) bool {
		return r == "" && (pkgs[dep] == nil || !pkgs[dep].Standard)
	}},
	{"the core (catalog, selector, collision, fill, eval, toolmap) must not depend on adapters or their libraries", func(_ map[string]*listedPackage, r, dep string) bool {
		if !isCore(r) {
			return false
		}
		if d, ok := rel(dep); ok {
			return adapter(d) != ""
		}
		return slices.ContainsFunc(forbiddenInCore, func(f string) bool { return strings.HasPrefix(dep, f) })
	}},
	{"adapters (embed/*, store/*, api, mcpgate, fill/executor, fill/ollamafill) must not import each other", func(_ map[string]*listedPackage, r, dep string) bool {
		d, ok := rel(dep)
		return ok && adapter(r) != "" && adapter(d) != "" && adapter(d) != adapter(r)
	}},
	{"nothing imports cmd", func(_ map[string]*listedPackage, r, dep string) bool {
		d, ok := rel(dep)
		return ok && under(d, "cmd") && !under(r, "cmd")
	}},
	{"only tests import internal/testutil", func(_ map[string]*listedPackage, r, dep string) bool {
		d, ok := rel(dep)
		return ok && d == "internal/testutil"
	}},
}

// gonumRule returns why package r may not import imp, or "" when it may:
// gonum's plotting library belongs to toolmap/render, its numeric
// packages to internal/vec and toolmap.
func gonumRule(r, imp string) string {
	switch {
	case !strings.HasPrefix(imp, "gonum.org/"):
		return ""
	case imp == "gonum.org/v1/plot" || strings.HasPrefix(imp, "gonum.org/v1/plot/"):
		if r != "toolmap/render" {
			return "only toolmap/render imports gonum's plotting library"
		}
	case r != "internal/vec" && r != "toolmap":
		return "only internal/vec and toolmap import gonum's numeric packages"
	}
	return ""
}

// unsafeRule returns why package r may not import imp, or "" when it may:
// reading memory as other types (unsafe) and asking the processor what it
// has (golang.org/x/sys/cpu) belong to internal/vec, beside the kernels
// that need them, so that the rest of the module is memory-safe Go. The
// protobuf code generated in api/habilis/v1 imports unsafe as protoc-gen-go
// writes it.
func unsafeRule(r, imp string) string {
	if imp != "unsafe" && imp != "golang.org/x/sys/cpu" || r == "internal/vec" || r == "api/habilis/v1" {
		return ""
	}
	return "only internal/vec imports unsafe or golang.org/x/sys/cpu (generated protobuf code aside)"
}

// layeringViolations returns one sorted message per forbidden import. A
// dependency reached only through another forbidden one is not reported
// again: the message names where the layering breaks.
func layeringViolations(pkgs map[string]*listedPackage) []string {
	var out []string
	for path, p := range pkgs {
		r, ok := rel(path)
		if !ok {
			continue
		}
		for _, rule := range layeringRules {
			for _, dep := range p.Deps {
				if !rule.forbids(pkgs, r, dep) {
					continue
				}
				via := chain(pkgs, path, dep)
				if len(via) > 2 && slices.ContainsFunc(via[1:len(via)-1], func(q string) bool { return rule.forbids(pkgs, r, q) }) {
					continue
				}
				names := make([]string, len(via))
				for i, q := range via {
					names[i] = name(q)
				}
				out = append(out, name(path)+" imports "+name(dep)+" (via "+strings.Join(names, " -> ")+"): "+rule.why)
			}
		}
		for _, imp := range p.Imports {
			for _, rule := range []func(r, imp string) string{gonumRule, unsafeRule} {
				if why := rule(r, imp); why != "" {
					out = append(out, name(path)+" imports "+imp+": "+why)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}
