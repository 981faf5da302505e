package testutil

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
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

func TestUnset(t *testing.T) {
	type inner struct{ A string }
	type outer struct {
		N     int
		P     *inner
		S     []inner
		V     habilis.Vector
		Skip  string
		Empty []string
	}
	got := Unset(&outer{N: 1, P: &inner{}, S: []inner{{A: "x"}, {}}, V: habilis.Vector{Dense: []float32{1}}, Empty: []string{}}, "outer.Skip")
	want := []string{"outer.P", "outer.S[]", "outer.Empty"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Unset (-want +got):\n%s", diff)
	}
}
