package fill

import (
	"context"

	"github.com/habilis-router/habilis"
)

// Runner runs a tool with the arguments a fill completed, as the tool's
// executor declares. fill/executor implements it; surfaces such as the
// gRPC server are given one by the program that wires them, so that no
// surface starts processes or calls the network on its own.
type Runner interface {
	// Run runs tool when fr is complete; with an argument missing or
	// refused nothing runs and the result is an error whose text asks the
	// fill's questions. A tool that fails, times out or is not allowed to
	// run is a result with IsError set, not an error.
	Run(ctx context.Context, tool habilis.Tool, fr *Result) (*habilis.ToolResult, error)
}
