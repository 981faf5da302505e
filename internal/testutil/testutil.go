// Package testutil holds the helpers that the tests of several packages
// share: HTTP calls whose failure ends the test, an embedded store and a
// lexical router that close when it ends, a wait for an event and a
// buffer goroutines may write, lines appended to a file and a --record
// file read back (RecordedRows), the tools an MCP server lists, a dense
// embedder that stands in for a model (HashEmbedder) and the bytes a bbolt
// file uses (HighWater). Only tests import it (the layering test keeps it
// so).
package testutil

import (
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
)

// Do sends req with the default client and returns the answer's status,
// headers and body, ending the test when no answer comes or its body
// cannot be read.
func Do(tb testing.TB, req *http.Request) (int, http.Header, string) {
	tb.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// Get returns the body of the answer to GET url, whatever its status.
func Get(tb testing.TB, url string) string {
	tb.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		tb.Fatal(err)
	}
	_, _, body := Do(tb, req)
	return body
}

// Post posts the JSON body to url with the headers in hdr (name, value,
// ...) and returns the answer's status, headers and body.
func Post(tb testing.TB, url, body string, hdr ...string) (int, http.Header, string) {
	tb.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return Do(tb, req)
}

// AppendLines appends lines to the file at path, each with a newline,
// creating it readable by its owner alone when it does not exist.
func AppendLines(tb testing.TB, path string, lines ...string) {
	tb.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := f.WriteString(l + "\n"); err != nil {
			tb.Fatal(err)
		}
	}
}
