package main

import (
	"encoding/json"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"golang.org/x/term"
)

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// newTable returns a tabwriter for aligned human output; Flush it.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// truncate shortens s to n runes for table cells.
func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// isTerminal reports whether v, a command's stdin or stderr, is a
// terminal: progress bars are drawn and confirmations asked only there.
// /dev/null is a character device but not a terminal, hence the ioctl
// rather than the file mode.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
