package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/catalog"
	"github.com/habilis-router/habilis/fill/executor"
	"github.com/habilis-router/habilis/mcpgate"
	"mvdan.cc/sh/v3/shell"
)

// checkSource refuses a load with no source or more than one.
func (o *loadOptions) checkSource() error {
	given := 0
	for _, s := range []string{o.file, o.mcp, o.mcpConfig} {
		if s != "" {
			given++
		}
	}
	if given != 1 {
		return usagef("load takes one source: a FILE argument, --mcp 'COMMAND ARGS...' or --mcp-config FILE")
	}
	return nil
}

// readTools returns the catalog to load: FILE's, or the tools of the MCP
// servers --mcp or --mcp-config name. It sets o.file to how messages name
// the source.
func (o *loadOptions) readTools(ctx context.Context) ([]habilis.Tool, error) {
	var servers []mcpgate.Server
	switch {
	case o.file != "":
		return catalog.Read(o.file)
	case o.mcp != "":
		o.file = "mcp server `" + o.mcp + "`"
		argv, err := shell.Fields(o.mcp, o.g.getenv)
		if err != nil || len(argv) == 0 {
			return nil, usagef("--mcp %q: want a command line (%v)", o.mcp, err)
		}
		if fi, err := os.Stat(argv[0]); len(argv) == 1 && err == nil && fi.Mode().IsRegular() && strings.HasSuffix(argv[0], ".json") {
			// A servers file, as mcp serve --config takes it, not a server.
			return nil, usagef("--mcp %q: want the command line that starts a server; for an mcpServers file, use --mcp-config %s", o.mcp, argv[0])
		}
		servers = []mcpgate.Server{{Name: "mcp", Transport: mcpgate.TransportStdio, Command: argv[0], Args: argv[1:]}}
	default:
		var err error
		if servers, err = mcpgate.ReadConfig(o.mcpConfig); err != nil {
			return nil, err
		}
		o.file = o.mcpConfig
	}
	return mcpCatalog(ctx, o.g, o.file, servers)
}

// loadedTool is a tool of an MCP server in habilis' catalog shape, so
// that the catalog's checks apply to it.
type loadedTool struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	InputSchema json.RawMessage   `json:"inputSchema"`
	Executor    *executor.Spec    `json:"executor,omitempty"`
	Meta        map[string]string `json:"meta"`
}

// mcpCatalog lists the servers' tools and parses them as a catalog named
// label. A server that cannot be listed fails the whole load.
func mcpCatalog(ctx context.Context, g *globalOptions, label string, servers []mcpgate.Server) ([]habilis.Tool, error) {
	l, err := mcpgate.List(ctx, servers, mcpgate.Options{Environ: os.Environ(), Logger: g.logger})
	if err != nil {
		return nil, err
	}
	var down []error
	for _, s := range l.Servers {
		if s.Status != mcpgate.StatusReady {
			down = append(down, fmt.Errorf("mcp server %q: %s", s.Name, s.Reason))
		}
	}
	if len(down) > 0 {
		return nil, errors.Join(down...)
	}
	byName := map[string]mcpgate.Server{}
	for _, s := range servers {
		byName[s.Name] = s
	}
	tools := make([]loadedTool, len(l.Tools))
	for i, t := range l.Tools {
		tools[i] = loadedTool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema,
			Executor: runsOn(byName[t.Server], t.Upstream), Meta: map[string]string{"mcp_server": t.Server}}
		if t.Title != "" {
			tools[i].Meta["title"] = t.Title
		}
	}
	data, err := json.Marshal(tools)
	if err != nil {
		return nil, err
	}
	return catalog.Parse(label, data)
}

// runsOn is the executor that calls tool on server s: its command line or
// URL, never its env values or headers, which may be secrets.
func runsOn(s mcpgate.Server, tool string) *executor.Spec {
	switch s.Transport {
	case mcpgate.TransportStdio:
		return &executor.Spec{Kind: executor.KindMCP, Transport: "stdio", Command: append([]string{s.Command}, s.Args...),
			Dir: s.Dir, Env: slices.Sorted(maps.Keys(s.Env)), Tool: tool}
	case mcpgate.TransportHTTP:
		return &executor.Spec{Kind: executor.KindMCP, Transport: "http", URL: s.URL, Tool: tool}
	}
	return nil // the executor does not speak the SSE transport
}
