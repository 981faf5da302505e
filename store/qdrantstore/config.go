package qdrantstore

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/habilis-router/habilis"
)

// Layout is how a catalog's examples are spread over Qdrant collections.
type Layout string

const (
	// LayoutPerTool keeps one examples collection per tool, as in the
	// original design: each tool's examples can be searched, exported or
	// dropped on their own. Pick it for catalogs of tens to a few hundred
	// tools with many examples each.
	LayoutPerTool Layout = "per-tool"
	// LayoutShared keeps every example in one collection with a "tool"
	// keyword payload index marked is_tenant, so Qdrant co-locates each
	// tool's points. Pick it for many small tools (thousands of tools with
	// a handful of examples): Qdrant pays a fixed cost per collection, and a
	// snapshot reads one collection instead of one per tool.
	LayoutShared Layout = "shared"
)

// Defaults of Config's zero values.
const (
	DefaultHost      = "localhost"
	DefaultPort      = 6334
	DefaultCatalog   = "default"
	DefaultTimeout   = 30 * time.Second
	DefaultRetries   = 3
	DefaultBatchSize = 256
)

// maxCatalogLen keeps collection names well below Qdrant's 255 bytes even
// with a version, a token and a tool's key appended.
const maxCatalogLen = 40

// Config configures Open. Every zero value has a usable default.
type Config struct {
	// Host is the Qdrant server; "" means "localhost".
	Host string
	// Port is its gRPC port; 0 means 6334.
	Port int
	// Catalog names the catalog: every collection and alias of it starts
	// with "habilis_<Catalog>_". Letters, digits and '-', at most 40; ""
	// means "default". Several catalogs can share one Qdrant.
	Catalog string
	// APIKey authenticates to Qdrant; "" sends none.
	APIKey string
	// APIKeyFile is the api_key_file of a URL, passed through by ParseURL.
	// Open never reads files: the caller reads the key into APIKey, and Open
	// refuses a Config with APIKeyFile set and APIKey empty rather than
	// connect without the key.
	APIKeyFile string
	// TLS encrypts the connection (TLS 1.3 minimum); false connects in
	// plaintext.
	TLS bool
	// Timeout bounds each call to Qdrant (one page, one batch, one
	// collection); 0 means 30s.
	Timeout time.Duration
	// Retries is how many times a call that fails with codes.Unavailable is
	// retried, with exponential backoff from 100ms; 0 means 3, negative
	// means never.
	Retries int
	// Layout is how writes lay out examples; "" means LayoutPerTool.
	// Snapshots read whichever layout the live version was written with, so
	// changing it takes effect at the next write.
	Layout Layout
	// BatchSize is the number of points per upsert call; 0 means 256.
	BatchSize int
	// SparseIDF sets Qdrant's IDF modifier on sparse vectors, so searches
	// run inside Qdrant weigh terms by the collection's statistics. Leave it
	// false when the embedder already weighs terms (the lexical embedder
	// does, from its fitted state). Stored vectors are the same either way.
	SparseIDF bool
	// ReadOnly refuses every Write with ErrReadOnly before it sends
	// anything to Qdrant, as a bbolt store opened read-only does: for a
	// server that must not change the catalog it serves.
	ReadOnly bool
}

// addr returns "host:port" with defaults applied.
func (c Config) addr() string {
	return net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
}

// withDefaults returns c with defaults applied, or ErrInvalid.
func (c Config) withDefaults() (Config, error) {
	if c.Host == "" {
		c.Host = DefaultHost
	}
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.Port < 0 || c.Port > 65535 {
		return c, fmt.Errorf("port %d: %w", c.Port, habilis.ErrInvalid)
	}
	if c.Catalog == "" {
		c.Catalog = DefaultCatalog
	}
	if err := validCatalog(c.Catalog); err != nil {
		return c, err
	}
	if c.APIKeyFile != "" && c.APIKey == "" {
		return c, fmt.Errorf("api key file %q is not loaded: the caller reads it into Config.APIKey: %w", c.APIKeyFile, habilis.ErrInvalid)
	}
	if c.Timeout < 0 {
		return c, fmt.Errorf("timeout %v: %w", c.Timeout, habilis.ErrInvalid)
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Retries == 0 {
		c.Retries = DefaultRetries
	}
	if c.Retries < 0 {
		c.Retries = 0
	}
	switch c.Layout {
	case "":
		c.Layout = LayoutPerTool
	case LayoutPerTool, LayoutShared:
	default:
		return c, fmt.Errorf("layout %q: want %q or %q: %w", c.Layout, LayoutPerTool, LayoutShared, habilis.ErrInvalid)
	}
	if c.BatchSize < 0 {
		return c, fmt.Errorf("batch size %d: %w", c.BatchSize, habilis.ErrInvalid)
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	return c, nil
}

// validCatalog accepts ASCII letters, digits and '-'. An underscore is refused so
// that no catalog's prefix "habilis_<catalog>_" can be the start of another
// catalog's collection names.
func validCatalog(s string) error {
	if s == "" || len(s) > maxCatalogLen {
		return fmt.Errorf("catalog %q: want 1 to %d characters: %w", s, maxCatalogLen, habilis.ErrInvalid)
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return fmt.Errorf("catalog %q: only ASCII letters (A-Z, a-z), digits (0-9) and '-' are allowed; %q is none of them: %w", s, r, habilis.ErrInvalid)
		}
	}
	return nil
}

// ParseURL parses qdrant://HOST:PORT/CATALOG?api_key_file=PATH&tls=1&layout=shared&timeout=10s.
// Every part is optional (qdrant:// alone means localhost:6334, catalog
// "default"). The key file's path is passed through in Config.APIKeyFile;
// the caller reads it. Keys themselves are refused in URLs, which end up in
// logs and shell histories.
func ParseURL(s string) (Config, error) {
	var c Config
	u, err := url.Parse(s)
	if err != nil {
		return c, fmt.Errorf("qdrant url: %v: %w", err, habilis.ErrInvalid)
	}
	if u.Scheme != "qdrant" {
		return c, fmt.Errorf("qdrant url %q: scheme %q, want qdrant: %w", s, u.Scheme, habilis.ErrInvalid)
	}
	if u.User != nil {
		return c, fmt.Errorf("qdrant url: credentials in the url are not supported, use api_key_file: %w", habilis.ErrInvalid)
	}
	c.Host = u.Hostname()
	if p := u.Port(); p != "" {
		if c.Port, err = parsePort(p); err != nil {
			return c, fmt.Errorf("qdrant url %q: %w", s, err)
		}
	}
	if cat := strings.TrimPrefix(u.Path, "/"); cat != "" {
		if err := validCatalog(cat); err != nil {
			return c, fmt.Errorf("qdrant url %q: %w", s, err)
		}
		c.Catalog = cat
	}
	for k, vs := range u.Query() {
		v := vs[len(vs)-1]
		switch k {
		case "api_key_file":
			c.APIKeyFile = v
		case "tls":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return c, fmt.Errorf("qdrant url %q: tls=%q: want 1, 0, true or false: %w", s, v, habilis.ErrInvalid)
			}
			c.TLS = b
		case "layout":
			switch Layout(v) {
			case LayoutPerTool, LayoutShared:
				c.Layout = Layout(v)
			default:
				return c, fmt.Errorf("qdrant url %q: layout=%q: want %q or %q: %w", s, v, LayoutPerTool, LayoutShared, habilis.ErrInvalid)
			}
		case "timeout":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return c, fmt.Errorf("qdrant url %q: timeout=%q: want a positive duration like 10s: %w", s, v, habilis.ErrInvalid)
			}
			c.Timeout = d
		case "api_key":
			return c, fmt.Errorf("qdrant url: api_key in the url is not supported, use api_key_file: %w", habilis.ErrInvalid)
		default:
			return c, fmt.Errorf("qdrant url %q: unknown parameter %q: %w", s, k, habilis.ErrInvalid)
		}
	}
	return c, nil
}

// ParseAddr parses a Qdrant gRPC address, "HOST:PORT" ("[::1]:6334" for an
// IPv6 host), into a Config with Host and Port set.
func ParseAddr(addr string) (Config, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return Config{}, fmt.Errorf("qdrant address %q: %v: %w", addr, err, habilis.ErrInvalid)
	}
	p, err := parsePort(port)
	if err != nil {
		return Config{}, fmt.Errorf("qdrant address %q: %w", addr, err)
	}
	return Config{Host: host, Port: p}, nil
}

// parsePort accepts a TCP port number, 1 to 65535.
func parsePort(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %q: %w", s, habilis.ErrInvalid)
	}
	return n, nil
}
