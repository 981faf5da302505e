package testutil

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestGetAndPost(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Seen", r.Method+" "+r.Header.Get("Content-Type")+" "+r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusTeapot)
		fmt.Fprintf(w, "%s %s", r.URL.Path, b)
	}))
	defer srv.Close()
	if got, want := Get(t, srv.URL+"/metrics"), "/metrics "; got != want {
		t.Errorf("Get = %q, want %q", got, want)
	}
	status, hdr, body := Post(t, srv.URL+"/v1", `{"a":1}`, "Authorization", "Bearer x")
	if status != http.StatusTeapot || hdr.Get("X-Seen") != "POST application/json Bearer x" || body != `/v1 {"a":1}` {
		t.Errorf("Post = %d, %q, %q; want 418, %q, %q", status, hdr.Get("X-Seen"), body, "POST application/json Bearer x", `/v1 {"a":1}`)
	}
}

func TestWaitForAndBuffer(t *testing.T) {
	var b Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100 {
			fmt.Fprint(&b, "x")
		}
	}()
	WaitFor(t, "the writer", func() bool { return len(b.String()) == 100 })
	<-done
	if got := b.String(); got != strings.Repeat("x", 100) {
		t.Errorf("Buffer = %q, want 100 x", got)
	}
}
