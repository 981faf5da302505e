package qdrantstore

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		in   string
		want Config
	}{
		{"qdrant://", Config{}},
		{"qdrant://qdrant.internal", Config{Host: "qdrant.internal"}},
		{"qdrant://localhost:6334/shop", Config{Host: "localhost", Port: 6334, Catalog: "shop"}},
		{"qdrant://10.0.0.7:7000/Shop-2?tls=1", Config{Host: "10.0.0.7", Port: 7000, Catalog: "Shop-2", TLS: true}},
		{"qdrant://[::1]:6334/x?tls=false", Config{Host: "::1", Port: 6334, Catalog: "x"}},
		{
			"qdrant://q:6334/tools?api_key_file=/run/secrets/qdrant%20key&tls=true&layout=shared&timeout=5s",
			Config{Host: "q", Port: 6334, Catalog: "tools", APIKeyFile: "/run/secrets/qdrant key", TLS: true, Layout: LayoutShared, Timeout: 5 * time.Second},
		},
		{"qdrant://q/c?layout=per-tool", Config{Host: "q", Catalog: "c", Layout: LayoutPerTool}},
	}
	for _, tt := range tests {
		got, err := ParseURL(tt.in)
		if err != nil {
			t.Errorf("ParseURL(%q) error: %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParseURL(%q) mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestParseURLErrors(t *testing.T) {
	for _, in := range []string{
		"http://localhost:6334/shop",
		"qdrant://localhost:99999/shop",
		"qdrant://localhost:port/shop",
		"qdrant://localhost/shop_v1",
		"qdrant://localhost/a/b",
		"qdrant://localhost/" + "abcdefghijabcdefghijabcdefghijabcdefghijX",
		"qdrant://localhost/shop?tls=maybe",
		"qdrant://localhost/shop?layout=sharded",
		"qdrant://localhost/shop?timeout=soon",
		"qdrant://localhost/shop?timeout=-1s",
		"qdrant://localhost/shop?api_key=secret",
		"qdrant://user:secret@localhost/shop",
		"qdrant://localhost/shop?colour=blue",
		"qdrant://%zz",
	} {
		if _, err := ParseURL(in); !errors.Is(err, habilis.ErrInvalid) {
			t.Errorf("ParseURL(%q) error = %v, want ErrInvalid", in, err)
		}
	}
}

func TestParseAddr(t *testing.T) {
	tests := []struct {
		in   string
		want Config
	}{
		{"localhost:6334", Config{Host: "localhost", Port: 6334}},
		{"10.0.0.7:7000", Config{Host: "10.0.0.7", Port: 7000}},
		{"[::1]:6334", Config{Host: "::1", Port: 6334}},
		{":6334", Config{Port: 6334}},
	}
	for _, tt := range tests {
		got, err := ParseAddr(tt.in)
		if err != nil {
			t.Errorf("ParseAddr(%q) error: %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParseAddr(%q) mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
	for _, in := range []string{"", "localhost", "localhost:", "localhost:port", "localhost:0", "localhost:65536", "::1:6334", "qdrant://localhost:6334"} {
		if _, err := ParseAddr(in); !errors.Is(err, habilis.ErrInvalid) {
			t.Errorf("ParseAddr(%q) error = %v, want ErrInvalid", in, err)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	got, err := Config{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Host: "localhost", Port: 6334, Catalog: "default", Timeout: 30 * time.Second,
		Retries: 3, Layout: LayoutPerTool, BatchSize: 256,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Config{}.withDefaults() mismatch (-want +got):\n%s", diff)
	}
	if got.addr() != "localhost:6334" {
		t.Errorf("addr() = %q, want localhost:6334", got.addr())
	}
	if c, _ := (Config{Retries: -1}).withDefaults(); c.Retries != 0 {
		t.Errorf("Retries -1 gives %d retries, want 0", c.Retries)
	}
	if c, _ := (Config{Host: "::1"}).withDefaults(); c.addr() != "[::1]:6334" {
		t.Errorf("addr() = %q, want [::1]:6334", c.addr())
	}
}

func TestConfigInvalid(t *testing.T) {
	for _, c := range []Config{
		{Port: -1},
		{Port: 70000},
		{Catalog: "a_b"},
		{Catalog: "a b"},
		{APIKeyFile: "/run/secrets/key"},
		{Timeout: -time.Second},
		{Layout: "columnar"},
		{BatchSize: -5},
	} {
		if _, err := c.withDefaults(); !errors.Is(err, habilis.ErrInvalid) {
			t.Errorf("%+v.withDefaults() error = %v, want ErrInvalid", c, err)
		}
	}
	// A loaded key with its file's path is fine: the path is informational.
	if _, err := (Config{APIKeyFile: "/k", APIKey: "s3cret"}).withDefaults(); err != nil {
		t.Errorf("loaded key: %v", err)
	}
}

// TestValidCatalogMessage checks that a catalog name's error says which
// letters are meant and which character is refused.
func TestValidCatalogMessage(t *testing.T) {
	for in, want := range map[string]string{
		"météo": `catalog "météo": only ASCII letters (A-Z, a-z), digits (0-9) and '-' are allowed; 'é' is none of them: invalid input`,
		"a_b":   `catalog "a_b": only ASCII letters (A-Z, a-z), digits (0-9) and '-' are allowed; '_' is none of them: invalid input`,
	} {
		if err := validCatalog(in); err == nil || err.Error() != want {
			t.Errorf("validCatalog(%q) = %v, want %s", in, err, want)
		}
	}
	if err := validCatalog("Prod-2"); err != nil {
		t.Errorf("validCatalog(Prod-2) = %v, want nil", err)
	}
}
