package qdrantstore

import (
	"errors"
	"net/url"
	"testing"

	"github.com/habilis-router/habilis"
)

// FuzzParseURL checks that a --store qdrant:// URL never panics the
// parser, that every refusal is an habilis.ErrInvalid, and that what it
// accepts has a port in range, a catalog name it accepts and no key: keys
// belong in api_key_file, not in URLs that end up in logs.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{
		"qdrant://", "qdrant://localhost:6334/tools", "qdrant://[::1]:6334/c?tls=1&layout=shared&timeout=10s",
		"qdrant://h/c?api_key_file=/run/key", "qdrant://u:p@h/c", "qdrant://h/c?api_key=x", "qdrant://h:0/c",
		"qdrant://h:65536", "qdrant://h/a/b", "http://h/c", "qdrant://h/c?layout=x&tls=maybe", "qdrant://h/%zz",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseURL(s)
		if err != nil {
			if !errors.Is(err, habilis.ErrInvalid) {
				t.Fatalf("ParseURL(%q) error %v is not an habilis.ErrInvalid", s, err)
			}
			return
		}
		if c.Port < 0 || c.Port > 65535 {
			t.Errorf("ParseURL(%q) port %d", s, c.Port)
		}
		if c.Catalog != "" {
			if err := validCatalog(c.Catalog); err != nil {
				t.Errorf("ParseURL(%q) catalog %q it refuses: %v", s, c.Catalog, err)
			}
		}
		if u, err := url.Parse(s); err != nil || u.User != nil || u.Query().Has("api_key") {
			t.Errorf("ParseURL(%q) accepted a url that does not parse or holds credentials", s)
		}
	})
}
