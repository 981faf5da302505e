package httpclient

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWithHeaders(t *testing.T) {
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Header.Clone() }))
	defer srv.Close()

	base := srv.Client()
	c := WithHeaders(base, http.Header{"Authorization": {"Bearer k"}, "X-Two": {"a", "b"}})
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer other")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for k, want := range map[string][]string{"Authorization": {"Bearer k"}, "X-Two": {"a", "b"}} {
		if diff := cmp.Diff(want, got.Values(k)); diff != "" {
			t.Errorf("header %s (-want +got):\n%s", k, diff)
		}
	}
	if req.Header.Get("Authorization") != "Bearer other" {
		t.Errorf("the caller's request was changed: Authorization %q", req.Header.Get("Authorization"))
	}
	if base.Transport == c.Transport {
		t.Error("WithHeaders changed the client it was given")
	}
}
