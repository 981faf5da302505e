package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Sources of recorded queries, in a Record's Source.
const (
	SourceMCP   = "mcp"
	SourceProxy = "proxy"
)

// maxRecord bounds one recorded line, well under what ReadQueries reads
// (maxLine), so that a recorded file always reads back: a longer query is
// left out.
const maxRecord = 1 << 20

// Record is one labelled query seen in traffic: a row of a queries file,
// with where and when it was seen. ReadQueries reads it as any other row
// (Source and Time are fields Where can filter on).
type Record struct {
	Query    string   `json:"query"`
	Expected []string `json:"expected"`
	// Source is SourceMCP or SourceProxy.
	Source string `json:"source"`
	// Time is when the tool was called, RFC 3339 in UTC.
	Time string `json:"time"`
}

// Recorder appends Records to a queries file, which habilis fit reads as
// it is. It is safe for concurrent use, and so is the file: each record is
// one write to a file opened with O_APPEND, so lines from several
// processes do not interleave.
//
// A failed write never reaches the caller, whose request it must not
// fail: the first one is logged at warn level, later ones not, so that a
// full disk does not flood the log.
type Recorder struct {
	f      *os.File
	path   string
	log    *slog.Logger
	now    func() time.Time
	mu     sync.Mutex
	warned atomic.Bool
}

// OpenRecorder opens path for appending records, creating it readable by
// its owner alone: the queries are the users' requests. A file whose last
// line has no newline gets one first. A nil log discards the warning.
func OpenRecorder(path string, log *slog.Logger) (*Recorder, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err) // "open PATH: ..." names the file
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if unended(path) {
		// The last line has no newline (an editor saved it so, or a write
		// was cut short): the first record starts a line of its own rather
		// than joining it, which would make the file unreadable there.
		if _, err := f.Write([]byte("\n")); err != nil {
			f.Close()
			return nil, fmt.Errorf("record: %s: %w", path, err)
		}
	}
	return &Recorder{f: f, path: path, log: log, now: time.Now}, nil
}

// unended reports whether the file at path ends without a newline. A file
// it cannot read counts as ended: records are appended to it as they are.
func unended(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return false
	}
	last := make([]byte, 1)
	_, err = f.ReadAt(last, fi.Size()-1)
	return err == nil && last[0] != '\n'
}

// Record appends that query was answered by tool, seen by source. A query
// that is blank after trimming, or too long to read back, is left out.
func (r *Recorder) Record(source, query, tool string) {
	if strings.TrimSpace(query) == "" || tool == "" {
		return
	}
	line, err := encodeRecord(Record{Query: query, Expected: []string{tool}, Source: source,
		Time: r.now().UTC().Format(time.RFC3339)})
	if err != nil || len(line) > maxRecord {
		return
	}
	r.mu.Lock()
	_, err = r.f.Write(line)
	r.mu.Unlock()
	if err != nil && !r.warned.Swap(true) {
		r.log.Warn("record: a query was not recorded; later failures are not logged", "file", r.path, "error", err)
	}
}

// encodeRecord returns rec as one JSON line, with "<" and "&" left as
// they are, as a person reading the file expects.
func encodeRecord(rec Record) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rec); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Close closes the file.
func (r *Recorder) Close() error {
	return r.f.Close() // "close PATH: ..." names the file
}
