package main

import (
	"bytes"
	"errors"
	"testing"
)

// TestRemoteTarget checks what --remote accepts: HOST:PORT, any gRPC
// target, and an http:// or https:// URL's HOST:PORT with no path.
func TestRemoteTarget(t *testing.T) {
	for _, tt := range []struct {
		addr, target, scheme string
		usage                bool
	}{
		{"127.0.0.1:50051", "127.0.0.1:50051", "", false},
		{"dns:///habilis.internal:50051", "dns:///habilis.internal:50051", "", false},
		{"http://127.0.0.1:50051", "127.0.0.1:50051", "http", false},
		{"http://127.0.0.1:50051/", "127.0.0.1:50051", "http", false},
		{"HTTPS://[::1]:443", "[::1]:443", "https", false},
		{"localhost", "", "", true},
		{"http://127.0.0.1", "", "", true},
		{"https://habilis.internal:443/v1", "", "", true},
		{"http://user@127.0.0.1:50051", "", "", true},
		{"http://127.0.0.1:50051?x=1", "", "", true},
	} {
		target, scheme, err := remoteTarget(tt.addr)
		var ue *usageError
		if target != tt.target || scheme != tt.scheme || errors.As(err, &ue) != tt.usage || (err != nil) != tt.usage {
			t.Errorf("remoteTarget(%q) = %q, %q, %v; want %q, %q, usage error %v", tt.addr, target, scheme, err, tt.target, tt.scheme, tt.usage)
		}
	}
}

// TestRemoteURLContradictsTLS checks that an http:// URL is refused when
// the environment asks for TLS, rather than one of them being ignored.
func TestRemoteURLContradictsTLS(t *testing.T) {
	var stdout, stderr bytes.Buffer
	getenv := func(k string) string {
		if k == "HABILIS_TLS" {
			return "1"
		}
		return ""
	}
	code := execute(t.Context(), []string{"--remote", "http://127.0.0.1:1", "select", "weather"}, &stdout, &stderr, getenv)
	const want = `habilis: --remote "http://127.0.0.1:1": http:// dials without TLS, but HABILIS_TLS or HABILIS_TLS_CA asks for it: use https://` +
		"\nRun 'habilis select --help' for usage.\n"
	if code != exitUsage || stderr.String() != want {
		t.Errorf("--remote http:// with HABILIS_TLS=1 = exit %d, stderr:\n%s\nwant exit %d, stderr:\n%s", code, stderr.String(), exitUsage, want)
	}
}
