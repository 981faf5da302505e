package wordsplit

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		in           string
		camel, acron []string
	}{
		{"", nil, nil},
		{"maxResults", []string{"max", "results"}, []string{"max", "results"}},
		{"max_results max-results", []string{"max", "results", "max", "results"}, []string{"max", "results", "max", "results"}},
		{"HTTPServer", []string{"httpserver"}, []string{"http", "server"}},
		{"getHTTPServerURL", []string{"get", "httpserver", "url"}, []string{"get", "http", "server", "url"}},
		{"v2Api 3D", []string{"v2api", "3d"}, []string{"v2api", "3d"}},
		{"ÉtéChaud, naïve", []string{"été", "chaud", "naïve"}, []string{"été", "chaud", "naïve"}},
		{"a.B", []string{"a", "b"}, []string{"a", "b"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.camel, Split(tt.in, Camel)); diff != "" {
			t.Errorf("Split(%q, Camel) (-want +got):\n%s", tt.in, diff)
		}
		if diff := cmp.Diff(tt.acron, Split(tt.in, CamelAcronym)); diff != "" {
			t.Errorf("Split(%q, CamelAcronym) (-want +got):\n%s", tt.in, diff)
		}
	}
}
