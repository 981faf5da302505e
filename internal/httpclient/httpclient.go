// Package httpclient holds what the adapters that call HTTP servers share
// (fill/executor and mcpgate reach MCP servers over HTTP with configured
// headers), since adapters do not import each other.
package httpclient

import "net/http"

// WithHeaders returns a copy of c whose requests carry h, each header
// replacing any the request sets of the same name; c is left as it was.
// A nil c means a zero http.Client.
func WithHeaders(c *http.Client, h http.Header) *http.Client {
	if c == nil {
		c = &http.Client{}
	}
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	out := *c
	out.Transport = &headerTransport{base: base, headers: h}
	return &out
}

// headerTransport adds headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, vs := range t.headers {
		req.Header[k] = vs
	}
	return t.base.RoundTrip(req)
}
