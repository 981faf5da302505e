package habilis

import "errors"

// Sentinel errors. Packages wrap them once with the operation
// ("boltstore: put \"x\": %w") so callers test them with errors.Is, locally
// and, through the api package's code table, across gRPC.
var (
	// ErrInvalid reports bad input: a malformed catalog, query or option.
	// The wrapping error names the file, tool and field.
	ErrInvalid = errors.New("invalid input")

	// ErrNotFound reports an unknown tool.
	ErrNotFound = errors.New("not found")

	// ErrConflict reports a write based on a catalog version that another
	// write has replaced in the meantime. Nothing was written.
	ErrConflict = errors.New("catalog changed concurrently")

	// ErrEmbedderMismatch reports a store built by another embedder (name,
	// model or dimension) than the one configured. Re-indexing resolves it.
	ErrEmbedderMismatch = errors.New("embedder does not match the store")

	// ErrUnavailable reports a backend (store, embedding server, model) that
	// cannot be reached or does not answer.
	ErrUnavailable = errors.New("unavailable")

	// ErrClosed reports use of a closed store or router.
	ErrClosed = errors.New("closed")
)
