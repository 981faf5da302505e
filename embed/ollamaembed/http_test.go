package ollamaembed

import (
	"context"
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

// The tests in this file use a scripted server for what a real Ollama
// cannot be made to do on demand: fail transiently or answer malformed.

type answer struct {
	status int
	body   string
}

// scripted answers request i with answers[i] (the last one repeats).
type scripted struct {
	mu       sync.Mutex
	answers  []answer
	requests int
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	a := s.answers[min(s.requests, len(s.answers)-1)]
	s.requests++
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	fmt.Fprint(w, a.body)
}

const twoVectors = `{"model":"m","embeddings":[[3,4],[0,2]]}`

func TestScriptedAnswers(t *testing.T) {
	tests := []struct {
		name         string
		answers      []answer
		wantErr      error
		wantMsg      string
		wantRequests int
	}{
		{
			name:         "503 then success",
			answers:      []answer{{503, `{"error":"server busy, please try again.  maximum pending requests exceeded"}`}, {200, twoVectors}},
			wantRequests: 2,
		},
		{
			name:         "429 then success",
			answers:      []answer{{429, `{"error":"too many requests"}`}, {200, twoVectors}},
			wantRequests: 2,
		},
		{
			name:         "500 every time",
			answers:      []answer{{500, `{"error":"llama runner process has terminated"}`}},
			wantErr:      habilis.ErrUnavailable,
			wantMsg:      "server error: HTTP 500 Internal Server Error: llama runner process has terminated",
			wantRequests: 3,
		},
		{
			name:         "400 not retried",
			answers:      []answer{{400, `{"error":"\"llama3\" does not support embeddings"}`}},
			wantErr:      habilis.ErrInvalid,
			wantMsg:      `server refused the request: HTTP 400 Bad Request: "llama3" does not support embeddings`,
			wantRequests: 1,
		},
		{
			name:         "not JSON",
			answers:      []answer{{200, `<html>it works</html>`}},
			wantErr:      habilis.ErrInvalid,
			wantMsg:      "malformed answer (is this an Ollama server?)",
			wantRequests: 1,
		},
		{
			name:         "too few vectors",
			answers:      []answer{{200, `{"embeddings":[[1,0]]}`}},
			wantErr:      habilis.ErrInvalid,
			wantMsg:      "server returned 1 vectors for 2 texts",
			wantRequests: 1,
		},
	}
	for _, tt := range tests {
		s := &scripted{answers: tt.answers}
		srv := httptest.NewServer(s)
		e := newEmbedder(t, Options{Host: srv.URL, Model: "m", Retries: 2, Backoff: time.Microsecond})
		vs, err := e.Embed(context.Background(), []string{"a", "b"}, habilis.Document)
		srv.Close()
		if tt.wantErr == nil {
			if err != nil {
				t.Errorf("%s: Embed() error: %v", tt.name, err)
			} else if diff := cmp.Diff([]habilis.Vector{{Dense: []float32{0.6, 0.8}}, {Dense: []float32{0, 1}}}, vs); diff != "" {
				t.Errorf("%s: Embed() mismatch (-want +got):\n%s", tt.name, diff)
			}
		} else if !errors.Is(err, tt.wantErr) || !strings.Contains(fmt.Sprint(err), tt.wantMsg) {
			t.Errorf("%s: Embed() = %v, want %v saying %q", tt.name, err, tt.wantErr, tt.wantMsg)
		}
		if s.requests != tt.wantRequests {
			t.Errorf("%s: Embed() sent %d requests, want %d", tt.name, s.requests, tt.wantRequests)
		}
	}
}
