// Package executor runs a tool as its catalog entry declares: an HTTP
// endpoint, a local command (never through a shell) or a tool on an MCP
// server. Results have the shape of MCP's CallToolResult. Timeouts, output
// limits and an allow-list of executor kinds are enforced here, in one
// place, so no surface can run a tool without them.
package executor

import (
	"encoding/json"
	"fmt"

	"github.com/habilis-router/habilis/fill"
)

// Executor kinds.
const (
	KindHTTP    = fill.ExecutorHTTP
	KindCommand = fill.ExecutorCommand
	KindMCP     = fill.ExecutorMCP
)

// Spec is a tool's executor, as written in the catalog. It is defined in
// fill, where the catalog validates it on load; a run reads it again.
type Spec = fill.ExecutorSpec

// ParseSpec reads and validates an executor spec. Errors name the field
// and wrap habilis.ErrInvalid.
func ParseSpec(raw json.RawMessage) (*Spec, error) {
	s, err := fill.ParseExecutorSpec(raw)
	if err != nil {
		return nil, fmt.Errorf("parse executor: %w", err)
	}
	return s, nil
}
