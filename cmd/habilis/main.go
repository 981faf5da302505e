// Command habilis loads tool catalogs, selects tools for requests, reports
// collisions, draws the catalog's map, evaluates and calibrates routing,
// fills and runs tools, and serves it all over gRPC and HTTP, as an MCP
// gateway in front of MCP servers and as a proxy in front of a model's
// OpenAI-compatible API.
//
// Exit codes: 0 success, 1 error, 2 usage error (bad flags or arguments),
// 3 `collisions --fail-on` found a collision at or above the severity,
// 4 `eval --min-acc` found top-1 accuracy below the minimum.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}
