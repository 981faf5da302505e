package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

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

// progressDelay is how long work runs before a progress bar appears, so
// that quick commands stay quiet.
const progressDelay = 500 * time.Millisecond

// progress draws a bar on a terminal once work has taken longer than
// progressDelay. It is safe for concurrent use.
type progress struct {
	w     io.Writer
	label string
	tty   bool
	start time.Time

	mu    sync.Mutex
	last  time.Time
	drawn bool
}

func newProgress(w io.Writer, label string) *progress {
	return &progress{w: w, label: label, tty: isTerminal(w), start: time.Now()}
}

// update records done of total units.
func (p *progress) update(done, total int) {
	if !p.tty || total <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if now.Sub(p.start) < progressDelay || (now.Sub(p.last) < 100*time.Millisecond && done < total) {
		return
	}
	p.last = now
	p.drawn = true
	const width = 30
	fill := done * width / total
	fmt.Fprintf(p.w, "\r%s [%s%s] %d/%d %3d%%", p.label, strings.Repeat("=", fill), strings.Repeat(" ", width-fill), done, total, done*100/total)
}

// finish ends the bar's line, if one was drawn.
func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}
