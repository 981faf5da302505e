package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/testutil"
)

// serveHTTP serves h on a real loopback listener over HTTP/1.1 and
// unencrypted HTTP/2, as the CLI does, and returns its base URL. The
// server stops when the test ends.
func serveHTTP(t testing.TB, h http.Handler) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, Protocols: new(http.Protocols)}
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + lis.Addr().String()
}

// jsonFixture serves a loaded router's JSON endpoints with opts.
func jsonFixture(t *testing.T, opts ServerOptions) (*Server, string) {
	t.Helper()
	s, _ := serve(t, newRouter(t, testTools(t)), opts)
	h, err := s.HTTPHandler()
	if err != nil {
		t.Fatal(err)
	}
	return s, serveHTTP(t, h)
}

// postJSON posts body to url with the headers in hdr (name, value, ...)
// and returns the status and the decoded JSON answer.
func postJSON(t *testing.T, url, body string, hdr ...string) (int, map[string]any) {
	t.Helper()
	status, _, data := testutil.Post(t, url, body, hdr...)
	var out map[string]any
	if err := json.Unmarshal([]byte(data), &out); err != nil {
		t.Fatalf("POST %s: status %d, body %q is not a JSON object: %v", url, status, data, err)
	}
	return status, out
}

func TestHTTPJSON(t *testing.T) {
	_, base := jsonFixture(t, ServerOptions{})
	inline := `[{\"type\":\"function\",\"function\":{\"name\":\"send_email\",\"description\":\"Send an email to a recipient\"}},` +
		`{\"type\":\"function\",\"function\":{\"name\":\"get_stock\",\"description\":\"Stock price of a company\"}}]`
	tests := []struct {
		method, body string
		// path names a value of the answer: keys and indexes joined by
		// dots; want is its value as JSON.
		path, want string
	}{
		{"Select", `{"query": "will it rain in Oslo tomorrow", "k": 1}`, "matches.0.tool", `"get_forecast"`},
		{"Select", `{"query": "will it rain in Oslo tomorrow", "k": 1}`, "matches.0.radius_source", `"examples"`},
		{"Select", `{"query": "compose a sonnet about autumn leaves", "mode": "centroid"}`, "abstained", `true`},
		{"SelectBatch", `{"queries": ["weather in Oslo", "send a mail to Bob"], "k": 1}`, "results.1.matches.0.tool", `"send_email"`},
		{"Prefilter", `{"query": "mail Bob the report", "tools_json": "` + inline + `", "k": 1, "fail_open": true}`, "shape", `"openai"`},
		{"Prefilter", `{"query": "mail Bob the report", "toolsJson": "` + inline + `", "k": 1, "failOpen": true}`, "decision.matches.0.tool", `"send_email"`},
		{"ListTools", `{}`, "tools.0.name", `"convert_currency"`},
		{"GetTool", `{"name": "get_weather"}`, "tool.name", `"get_weather"`},
		{"Collisions", `{}`, "collisions.0.severity", `"high"`},
		{"Fill", `{"tool": "get_weather", "query": "what's the weather in Porto"}`, "arguments_json", `"{\"city\":\"Porto\"}"`},
	}
	for _, tt := range tests {
		code, got := postJSON(t, base+"/habilis.v1.ToolRouter/"+tt.method, tt.body)
		if code != http.StatusOK {
			t.Errorf("%s %s: status %d, %v", tt.method, tt.body, code, got)
			continue
		}
		v, err := lookup(got, tt.path)
		if err != nil {
			t.Errorf("%s %s: %v in %v", tt.method, tt.body, err, got)
			continue
		}
		b, _ := json.Marshal(v)
		if string(b) != tt.want {
			t.Errorf("%s %s: %s = %s, want %s", tt.method, tt.body, tt.path, b, tt.want)
		}
	}
}

// lookup follows path (keys and indexes joined by dots) into v.
func lookup(v any, path string) (any, error) {
	for _, p := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[p]; !ok {
				return nil, errors.New("no key " + p)
			}
		case []any:
			i := 0
			for _, c := range p {
				i = 10*i + int(c-'0')
			}
			if i >= len(x) {
				return nil, errors.New("no index " + p)
			}
			v = x[i]
		default:
			return nil, errors.New("nothing at " + p)
		}
	}
	return v, nil
}

// TestHTTPErrors checks that the JSON endpoints answer errors with the
// gRPC service's codes and details, as HTTP statuses and Connect codes.
func TestHTTPErrors(t *testing.T) {
	_, base := jsonFixture(t, ServerOptions{Token: "s3cret"})
	auth := []string{"Authorization", "Bearer s3cret"}
	tests := []struct {
		name, method, body string
		hdr                []string
		status             int
		code               string
		// detail is a value the details' debug objects must hold;
		// message, when set, the whole message.
		detail, message string
	}{
		{"no token", "Select", `{"query": "weather in Oslo"}`, nil, 401, "unauthenticated", "", ""},
		{"wrong token", "Select", `{"query": "weather in Oslo"}`, []string{"Authorization", "Bearer nope"}, 401, "unauthenticated", "", ""},
		{"empty query", "Select", `{"query": " "}`, auth, 400, "invalid_argument", `"field":"query"`, "query: must not be empty"},
		{"k out of range", "Select", `{"query": "weather", "k": 5000}`, auth, 400, "invalid_argument", `"field":"k"`, ""},
		{"unknown field", "Select", `{"query": "weather", "kk": 1}`, auth, 400, "invalid_argument", "",
			`request body is not a SelectRequest in JSON: (line 1:22): unknown field "kk"; its fields are ` +
				"query, k, mode, pinned, denied, fail_open"},
		{"unknown field of a catalog write", "UpsertTools", `{"tools_json": "[]"}`, auth, 400, "invalid_argument", "",
			`request body is not a UpsertToolsRequest in JSON: (line 1:2): unknown field "tools_json"; its fields are ` +
				"tools, catalog_json, replace"},
		{"JSON text sent as an array", "Prefilter", `{"query": "mail Bob", "tools_json": [{"type": "function"}]}`, auth, 400, "invalid_argument", "",
			`request body is not a PrefilterRequest in JSON: (line 1:37): invalid value for string field toolsJson: [; ` +
				`tools_json is a string: send the array as JSON text inside it ("[...]", its quotes escaped)`},
		{"JSON text sent as an object", "UpsertTools", `{"catalog_json": {"tools": []}}`, auth, 400, "invalid_argument", "",
			`request body is not a UpsertToolsRequest in JSON: (line 1:18): invalid value for string field catalogJson: {; ` +
				`catalog_json is a string: send the object as JSON text inside it ("{...}", its quotes escaped)`},
		{"unknown field of a nested message", "UpsertTools", `{"tools": [{"name": "a", "descripton": "x"}]}`, auth, 400, "invalid_argument", "",
			`request body is not a UpsertToolsRequest in JSON: (line 1:26): unknown field "descripton"`},
		{"not JSON", "Select", `{"query": `, auth, 400, "invalid_argument", "",
			"request body is not a SelectRequest in JSON: unexpected EOF"},
		{"empty body", "Select", ``, auth, 400, "invalid_argument", "", "request body is empty: want the request message in JSON, {} for an empty one"},
		{"empty body, no message fields", "ListTools", ``, auth, 400, "invalid_argument", "", "request body is empty: want the request message in JSON, {} for an empty one"},
		{"unknown tool", "GetTool", `{"name": "teleport"}`, auth, 404, "not_found", `"resourceName":"teleport"`, `name: tool "teleport": not found`},
		{"fill an unknown tool", "Fill", `{"tool": "teleport", "query": "beam me up"}`, auth, 404, "not_found", `"resourceName":"teleport"`,
			`tool "teleport": not found`},
		{"bad catalog", "UpsertTools", `{"catalog_json": "[{\"name\": \"a\"}]"}`, auth, 400, "invalid_argument", `"reason":"INVALID"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, got := postJSON(t, base+"/habilis.v1.ToolRouter/"+tt.method, tt.body, tt.hdr...)
			if status != tt.status || got["code"] != tt.code {
				t.Fatalf("status %d, code %v (%v), want %d, %s", status, got["code"], got, tt.status, tt.code)
			}
			if msg, _ := got["message"].(string); msg == "" || (tt.message != "" && msg != tt.message) {
				t.Errorf("message %q, want %q", msg, tt.message)
			}
			details, _ := json.Marshal(got["details"])
			if !strings.Contains(string(details), tt.detail) {
				t.Errorf("details %s lack %s", details, tt.detail)
			}
		})
	}
	// Health answers without a token, as over gRPC.
	if status, got := postJSON(t, base+"/grpc.health.v1.Health/Check", `{}`); status != 200 || got["status"] != "SERVING" {
		t.Errorf("Health/Check: status %d, %v, want 200 SERVING", status, got)
	}
}

// TestHTTPSharesServer checks that JSON calls are the gRPC server's own:
// they are counted in its metrics, see its catalog writes, and gRPC
// clients reach the same listener over HTTP/2.
func TestHTTPSharesServer(t *testing.T) {
	s, base := jsonFixture(t, ServerOptions{})
	ctx := context.Background()
	c := dial(t, strings.TrimPrefix(base, "http://"), DialOptions{})
	if _, err := c.DeleteTools(ctx, []string{"get_weather"}); err != nil {
		t.Fatalf("DeleteTools over the HTTP listener: %v", err)
	}
	status, got := postJSON(t, base+"/habilis.v1.ToolRouter/GetTool", `{"name": "get_weather"}`)
	if status != http.StatusNotFound {
		t.Errorf("GetTool(get_weather) after its deletion: status %d, %v, want 404", status, got)
	}
	d, err := c.Select(ctx, "weather in Oslo", habilis.SelectOptions{K: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Matches) != 1 || d.Matches[0].Tool == "get_weather" {
		t.Errorf("Select over the HTTP listener = %v, want one tool, not get_weather", d.Matches)
	}

	rec := httptestRecorder(t, s.MetricsHandler())
	for _, want := range []string{
		`habilis_grpc_requests_total{code="NotFound",method="/habilis.v1.ToolRouter/GetTool"} 1`,
		`habilis_grpc_requests_total{code="OK",method="/habilis.v1.ToolRouter/DeleteTools"} 1`,
		`habilis_grpc_requests_total{code="OK",method="/habilis.v1.ToolRouter/Select"} 1`,
	} {
		if !strings.Contains(rec, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// httptestRecorder returns what h answers to GET /metrics.
func httptestRecorder(t *testing.T, h http.Handler) string {
	t.Helper()
	return testutil.Get(t, serveHTTP(t, h)+"/metrics")
}

// TestHTTPBodyWithoutJSONType checks that a JSON body sent with curl's
// default type (curl -d sends application/x-www-form-urlencoded), none or
// text/plain is read as JSON: the services take nothing else on a POST
// without a protocol header, and the transcoder answered those with a
// plain-text 404 for a path that exists.
func TestHTTPBodyWithoutJSONType(t *testing.T) {
	_, base := jsonFixture(t, ServerOptions{})
	for _, ct := range []string{"application/x-www-form-urlencoded", "", "text/plain"} {
		status, got := postJSON(t, base+"/habilis.v1.ToolRouter/Select", `{"query": "weather in Oslo", "k": 1}`, "Content-Type", ct)
		if status != http.StatusOK || got["matches"] == nil {
			t.Errorf("Select with Content-Type %q: status %d, %v; want 200 and a decision", ct, status, got)
		}
	}
	status, got := postJSON(t, base+"/habilis.v1.ToolRouter/Select", `query=weather`, "Content-Type", "application/x-www-form-urlencoded")
	if status != http.StatusBadRequest || got["code"] != "invalid_argument" {
		t.Errorf("Select with a form body: status %d, %v; want 400 invalid_argument", status, got)
	}
}

func TestConnectJSON(t *testing.T) {
	tests := []struct {
		method, contentType, version string
		want                         string
	}{
		{http.MethodPost, "application/json", "", "1"},
		{http.MethodPost, "application/json; charset=utf-8", "", "1"},
		{http.MethodPost, "application/json", "2", "2"},
		{http.MethodPost, "application/x-www-form-urlencoded", "", "1"},
		{http.MethodPost, "", "", "1"},
		{http.MethodPost, "application/proto", "", ""},
		{http.MethodPost, "application/grpc", "", ""},
		{http.MethodGet, "application/json", "", ""},
	}
	for _, tt := range tests {
		var got string
		h := connectJSON(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			got = r.Header.Get("Connect-Protocol-Version")
		}))
		req, err := http.NewRequest(tt.method, "/habilis.v1.ToolRouter/Select", strings.NewReader(`{"query": "x"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", tt.contentType)
		if tt.version != "" {
			req.Header.Set("Connect-Protocol-Version", tt.version)
		}
		h.ServeHTTP(nil, req)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s %s with version %q: Connect-Protocol-Version (-want +got):\n%s", tt.method, tt.contentType, tt.version, diff)
		}
	}
}

// TestHTTPRequestTooLarge checks that a request over the size limits is
// answered 413 with Connect's resource_exhausted error, whichever bound
// refuses it and whether its length is known or not, while a response
// over the transcoder's buffer keeps Connect's 429: it is no fault of the
// request's size.
func TestHTTPRequestTooLarge(t *testing.T) {
	// The transcoder buffers 4 times the server's message limit of JSON.
	_, base := jsonFixture(t, ServerOptions{MaxRecvMsgSize: 1000})
	url := base + "/habilis.v1.ToolRouter/Select"
	query := func(n int) string { return `{"query": "` + strings.Repeat("a", n) + `"}` }
	tests := []struct {
		name, body string
		chunked    bool
		status     int
		code       string
	}{
		{"within the limits", query(900), false, http.StatusOK, ""},
		{"message over MaxRecvMsgSize", query(2000), false, http.StatusRequestEntityTooLarge, "resource_exhausted"},
		{"body over the transcoder's buffer", query(5000), false, http.StatusRequestEntityTooLarge, "resource_exhausted"},
		{"body of unknown length over the buffer", query(5000), true, http.StatusRequestEntityTooLarge, "resource_exhausted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(tt.body)
			if tt.chunked {
				body = io.MultiReader(body) // hides the length
			}
			req, err := http.NewRequest(http.MethodPost, url, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			status, _, data := testutil.Do(t, req)
			var got map[string]any
			if err := json.Unmarshal([]byte(data), &got); err != nil {
				t.Fatalf("status %d, body %q is not a JSON object: %v", status, data, err)
			}
			if status != tt.status || (tt.code != "" && got["code"] != tt.code) {
				t.Errorf("status %d, %v; want %d %s", status, got, tt.status, tt.code)
			}
		})
	}

	_, small := jsonFixture(t, ServerOptions{MaxRecvMsgSize: 100})
	if status, got := postJSON(t, small+"/habilis.v1.ToolRouter/ListTools", `{}`); status != http.StatusTooManyRequests || got["code"] != "resource_exhausted" {
		t.Errorf("ListTools answer over the transcoder's buffer: status %d, %v; want 429 resource_exhausted", status, got)
	}
}

// TestHTTPMethodNotAllowed checks that a method's path asked with anything
// but POST is answered 405 with "Allow: POST", and that paths which are no
// method stay 404.
func TestHTTPMethodNotAllowed(t *testing.T) {
	_, base := jsonFixture(t, ServerOptions{})
	tests := []struct {
		method, path string
		status       int
		allow        string
	}{
		{http.MethodGet, "/habilis.v1.ToolRouter/Select", http.StatusMethodNotAllowed, "POST"},
		{http.MethodGet, "/habilis.v1.ToolRouter/ListTools?encoding=json&message=%7B%7D", http.StatusMethodNotAllowed, "POST"},
		{http.MethodPut, "/habilis.v1.ToolRouter/UpsertTools", http.StatusMethodNotAllowed, "POST"},
		{http.MethodHead, "/habilis.v1.ToolRouter/GetTool", http.StatusMethodNotAllowed, "POST"},
		{http.MethodGet, "/grpc.health.v1.Health/Check", http.StatusMethodNotAllowed, "POST"},
		{http.MethodGet, "/habilis.v1.ToolRouter/Teleport", http.StatusNotFound, ""},
		{http.MethodGet, "/habilis.v1.Nothing/Select", http.StatusNotFound, ""},
	}
	for _, tt := range tests {
		req, err := http.NewRequest(tt.method, base+tt.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		status, hdr, _ := testutil.Do(t, req)
		if status != tt.status || hdr.Get("Allow") != tt.allow {
			t.Errorf("%s %s: status %d, Allow %q; want %d, %q", tt.method, tt.path, status, hdr.Get("Allow"), tt.status, tt.allow)
		}
	}
}

// TestHTTPUnknownMethod checks that a path under a service that names no
// method of it (a lowercase "select", say) is answered 404 with the
// service's methods, where it was a bare "Not Found", and that a path under
// no service stays a plain 404.
func TestHTTPUnknownMethod(t *testing.T) {
	_, base := jsonFixture(t, ServerOptions{})
	const methods = "its methods are Collisions, DeleteTools, Fill, GetTool, Invoke, ListTools, Prefilter, Select, SelectBatch, UpsertTools " +
		"(POST /habilis.v1.ToolRouter/METHOD with the request message in JSON)\n"
	for _, tt := range []struct {
		path, want string
	}{
		{"/habilis.v1.ToolRouter/select", `no method "select" in habilis.v1.ToolRouter: ` + methods},
		{"/habilis.v1.ToolRouter/", `no method "" in habilis.v1.ToolRouter: ` + methods},
		{"/habilis.v1.ToolRouter/Select/extra", `no method "Select/extra" in habilis.v1.ToolRouter: ` + methods},
		{"/grpc.health.v1.Health/Status", `no method "Status" in grpc.health.v1.Health: its methods are Check, List, Watch ` +
			"(POST /grpc.health.v1.Health/METHOD with the request message in JSON)\n"},
		{"/habilis.v1.Nothing/Select", "404 page not found\n"},
	} {
		status, _, body := testutil.Post(t, base+tt.path, `{"query": "weather in Oslo"}`)
		if status != http.StatusNotFound || body != tt.want {
			t.Errorf("POST %s = %d %q, want 404 %q", tt.path, status, body, tt.want)
		}
	}
}

func TestGetAllowed(t *testing.T) {
	for _, method := range []string{"habilis.v1.ToolRouter.Select", "grpc.health.v1.Health.Check", "habilis.v1.ToolRouter", "no.such.Method"} {
		if getAllowed(method) {
			t.Errorf("getAllowed(%q) = true, want false: the method declares no idempotency_level", method)
		}
	}
}
