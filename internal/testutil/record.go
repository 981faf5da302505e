package testutil

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// RecordedRows reads a --record file line by line as "query|tool|source",
// checking that each line holds exactly the keys the record contract
// names (query, expected, source, time), one expected tool and an RFC 3339
// time.
func RecordedRows(tb testing.TB, path string) []string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var rows []string
	for line := range strings.Lines(string(b)) {
		var rec struct {
			Query, Source, Time string
			Expected            []string
		}
		var keys map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &keys); err != nil || json.Unmarshal([]byte(line), &rec) != nil {
			tb.Fatalf("record line %q: not a JSON object: %v", line, err)
		}
		if len(keys) != 4 || len(rec.Expected) != 1 {
			tb.Fatalf("record line %q: want query, expected (one tool), source and time", line)
		}
		if _, err := time.Parse(time.RFC3339, rec.Time); err != nil {
			tb.Errorf("record line %q: time: %v", line, err)
		}
		rows = append(rows, rec.Query+"|"+rec.Expected[0]+"|"+rec.Source)
	}
	return rows
}
