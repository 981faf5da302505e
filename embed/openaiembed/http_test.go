package openaiembed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/habilis-router/habilis"
)

// The tests in this file use a scripted server for what a real one cannot
// be made to do on demand: fail transiently, answer out of order or answer
// malformed.

// scripted answers request i with answers[i] (the last one repeats) and
// records the requests.
type scripted struct {
	mu       sync.Mutex
	answers  []answer
	requests []request
	headers  []http.Header
}

type answer struct {
	status int
	header map[string]string
	body   string
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req request
	json.NewDecoder(r.Body).Decode(&req)
	s.mu.Lock()
	a := s.answers[min(len(s.requests), len(s.answers)-1)]
	s.requests = append(s.requests, req)
	s.headers = append(s.headers, r.Header.Clone())
	s.mu.Unlock()
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	fmt.Fprint(w, a.body)
}

func start(t *testing.T, answers ...answer) (*scripted, string) {
	t.Helper()
	s := &scripted{answers: answers}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL + "/v1"
}

const twoVectors = `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[3,4]},{"object":"embedding","index":1,"embedding":[0,2]}],"model":"m"}`

func TestRetriesTransientFailures(t *testing.T) {
	tests := []struct {
		name         string
		answers      []answer
		wantErr      error
		wantMsg      string
		wantRequests int
	}{
		{
			name:         "503 then success",
			answers:      []answer{{status: 503, body: `{"error":{"message":"loading model"}}`}, {status: 200, body: twoVectors}},
			wantRequests: 2,
		},
		{
			name:         "429 with Retry-After then success",
			answers:      []answer{{status: 429, header: map[string]string{"Retry-After": "0"}, body: `{"error":{"message":"rate limited"}}`}, {status: 200, body: twoVectors}},
			wantRequests: 2,
		},
		{
			name:         "500 every time",
			answers:      []answer{{status: 500, body: `{"error":{"message":"runner crashed","type":"api_error"}}`}},
			wantErr:      habilis.ErrUnavailable,
			wantMsg:      "server error: HTTP 500 Internal Server Error: runner crashed",
			wantRequests: 3,
		},
		{
			name:         "401 not retried",
			answers:      []answer{{status: 401, body: `{"error":{"message":"Incorrect API key provided"}}`}},
			wantErr:      habilis.ErrInvalid,
			wantMsg:      "server refused the credentials: HTTP 401 Unauthorized: Incorrect API key provided",
			wantRequests: 1,
		},
		{
			name:         "400 with a plain error string",
			answers:      []answer{{status: 400, body: `{"error":"input too long"}`}},
			wantErr:      habilis.ErrInvalid,
			wantMsg:      "HTTP 400 Bad Request: input too long",
			wantRequests: 1,
		},
		{
			name:         "502 from a proxy, not JSON",
			answers:      []answer{{status: 502, body: "<html>bad gateway</html>"}},
			wantErr:      habilis.ErrUnavailable,
			wantMsg:      "HTTP 502 Bad Gateway: <html>bad gateway</html>",
			wantRequests: 3,
		},
	}
	for _, tt := range tests {
		s, base := start(t, tt.answers...)
		e := newEmbedder(t, Options{BaseURL: base, Model: "m", APIKey: "sk-test", Retries: 2, Backoff: time.Microsecond})
		vs, err := e.Embed(context.Background(), []string{"a", "b"}, habilis.Document)
		if tt.wantErr == nil {
			if err != nil {
				t.Errorf("%s: Embed() error: %v", tt.name, err)
			} else if diff := cmp.Diff([]habilis.Vector{{Dense: []float32{0.6, 0.8}}, {Dense: []float32{0, 1}}}, vs); diff != "" {
				t.Errorf("%s: Embed() mismatch (-want +got):\n%s", tt.name, diff)
			}
		} else if !errors.Is(err, tt.wantErr) || !strings.HasSuffix(fmt.Sprint(err), tt.wantMsg) {
			t.Errorf("%s: Embed() = %v, want %v ending %q", tt.name, err, tt.wantErr, tt.wantMsg)
		}
		if len(s.requests) != tt.wantRequests {
			t.Errorf("%s: Embed() sent %d requests, want %d", tt.name, len(s.requests), tt.wantRequests)
		}
		for i, h := range s.headers {
			if got := h.Get("Authorization"); got != "Bearer sk-test" {
				t.Errorf("%s: request %d has Authorization %q, want %q", tt.name, i, got, "Bearer sk-test")
			}
		}
	}
}

func TestRequestBody(t *testing.T) {
	s, base := start(t, answer{status: 200, body: twoVectors})
	e := newEmbedder(t, Options{BaseURL: base, Model: "m", Dimensions: 2, QueryPrefix: "q: "})
	if _, err := e.Embed(context.Background(), []string{"a", "b"}, habilis.Query); err != nil {
		t.Fatal(err)
	}
	want := []request{{Model: "m", Input: []string{"q: a", "q: b"}, Dimensions: 2}}
	if diff := cmp.Diff(want, s.requests); diff != "" {
		t.Errorf("requests mismatch (-want +got):\n%s", diff)
	}
	if got := s.headers[0].Get("Authorization"); got != "" {
		t.Errorf("request without APIKey has Authorization %q, want none", got)
	}
}

func TestAnswerOutOfOrder(t *testing.T) {
	_, base := start(t, answer{status: 200, body: `{"data":[{"index":1,"embedding":[0,2]},{"index":0,"embedding":[3,4]}]}`})
	vs, err := newEmbedder(t, Options{BaseURL: base, Model: "m"}).Embed(context.Background(), []string{"a", "b"}, habilis.Document)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]habilis.Vector{{Dense: []float32{0.6, 0.8}}, {Dense: []float32{0, 1}}}, vs); diff != "" {
		t.Errorf("Embed() mismatch (-want +got):\n%s", diff)
	}
}

func TestMalformedAnswers(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"not JSON", `<html>hello</html>`, "malformed answer"},
		{"too few", `{"data":[{"index":0,"embedding":[1,0]}]}`, "1 vectors for 2 texts"},
		{"duplicate index", `{"data":[{"index":0,"embedding":[1,0]},{"index":0,"embedding":[0,1]}]}`, "indices are not 0 to 1"},
		{"zero vector", `{"data":[{"index":0,"embedding":[1,0]},{"index":1,"embedding":[0,0]}]}`, "zero vector for text 1"},
		{"dimensions differ", `{"data":[{"index":0,"embedding":[1,0]},{"index":1,"embedding":[0,1,0]}]}`, "dimension 3 for text 1, want 2"},
		{"strings", `{"data":[{"index":0,"embedding":"AAAA"},{"index":1,"embedding":"AAAA"}]}`, "malformed answer"},
	}
	for _, tt := range tests {
		s, base := start(t, answer{status: 200, body: tt.body})
		_, err := newEmbedder(t, Options{BaseURL: base, Model: "m"}).Embed(context.Background(), []string{"a", "b"}, habilis.Document)
		if !errors.Is(err, habilis.ErrInvalid) || !strings.Contains(fmt.Sprint(err), tt.want) {
			t.Errorf("%s: Embed() = %v, want ErrInvalid saying %q", tt.name, err, tt.want)
		}
		if len(s.requests) != 1 {
			t.Errorf("%s: Embed() sent %d requests, want 1 (malformed answers are not retried)", tt.name, len(s.requests))
		}
	}
}
