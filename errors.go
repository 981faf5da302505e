package habilis

import (
	"errors"
	"strconv"
	"strings"
)

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

	// ErrReadOnly reports a write to a store opened read-only, or through
	// a server started not to write its store (habilis serve --read-only).
	// The request itself may be sound: it is the store or the server that
	// takes no writes. Nothing was written.
	ErrReadOnly = errors.New("store opened read-only")

	// ErrDamaged reports a store whose file or records cannot be read as
	// they were written: a damaged page, a value that does not decode,
	// buckets missing from a store that was written. The wrapping error
	// names the file; restoring it from a backup or loading the catalog
	// again into a new store resolves it. A store never reads a damaged
	// catalog as an empty one.
	ErrDamaged = errors.New("store damaged")
)

// MismatchError says why a store's vectors do not compare with those of
// the configured embedders. It unwraps to ErrEmbedderMismatch. Its message
// is the one every layer shows; callers add where (the store) and what to
// do (reindex), never re-derive it.
type MismatchError struct {
	// Stored made the store's vectors; Configured is the embedder asked
	// for. A model embedder that has not reached its server yet reports
	// Dim 0.
	Stored, Configured EmbedderInfo
	// StoredLexical and ConfiguredLexical are the lexical embedders paired
	// with a model, set when only their algorithms differ (the model's
	// vectors compare).
	StoredLexical, ConfiguredLexical *EmbedderInfo
}

// Error gives "built with embedder lexical (sparse, algorithm 1), not
// lexical (algorithm 2)": by String, by Detail where only the algorithm
// tells the two apart, and with the paired lexical algorithms where only
// they differ.
func (e *MismatchError) Error() string {
	built, want := e.Stored.String(), configuredName(e.Configured)
	switch {
	case e.StoredLexical != nil && e.ConfiguredLexical != nil:
		built += " and lexical algorithm " + e.StoredLexical.Algorithm()
		want += " and lexical algorithm " + e.ConfiguredLexical.Algorithm()
	case built == e.Configured.String():
		built = e.Stored.Detail()
		want = configuredName(EmbedderInfo{Kind: e.Configured.Kind, Model: e.Configured.Model}) + " (algorithm " + e.Configured.Algorithm() + ")"
	}
	return "built with embedder " + built + ", not " + want + ": " + ErrEmbedderMismatch.Error()
}

func (e *MismatchError) Unwrap() error { return ErrEmbedderMismatch }

// configuredName names a configured embedder: by String once its
// dimension is known, and as the user spelt it ("ollama:MODEL") before a
// model embedder has reached its server.
func configuredName(i EmbedderInfo) string {
	if i.Dim == 0 && i.Kind != "lexical" {
		if i.Model == "" {
			return i.Kind
		}
		return i.Kind + ":" + i.Model
	}
	if i.Kind == "lexical" && i.Model == "" {
		return i.Kind
	}
	return i.String()
}

// UnknownToolError reports a tool name the catalog does not hold. It
// unwraps to ErrNotFound. Suggestions are the catalog's names it most
// likely misspells, closest first and at most three, or none when none is
// close; callers add what named the tool ("pinned", "names[2]").
type UnknownToolError struct {
	Name        string
	Suggestions []string
}

// Error gives `tool "get_wether": not found (did you mean "get_weather"?)`.
func (e *UnknownToolError) Error() string {
	return "tool " + strconv.Quote(e.Name) + ": " + ErrNotFound.Error() + DidYouMean(e.Suggestions)
}

func (e *UnknownToolError) Unwrap() error { return ErrNotFound }

// DidYouMean words suggested names as the end of a message:
// ` (did you mean "a"?)`, ` (did you mean "a" or "b"?)`,
// ` (did you mean "a", "b" or "c"?)`, or "" for none. Every message that
// suggests a name ends so.
func DidYouMean(names []string) string {
	if len(names) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(" (did you mean ")
	for i, n := range names {
		switch {
		case i == 0:
		case i == len(names)-1:
			b.WriteString(" or ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(n))
	}
	b.WriteString("?)")
	return b.String()
}
