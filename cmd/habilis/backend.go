package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/embed/embedcache"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/embed/ollamaembed"
	"github.com/habilis-router/habilis/embed/openaiembed"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/boltstore"
	"github.com/habilis-router/habilis/store/qdrantstore"
)

// backend is what the read commands (select, tools, collisions) need from a
// catalog: a router over the local store, or a remote habilis server
// (dialRemote). Errors wrap habilis' sentinels in both cases, and lists
// (matches, collides_with, tools, collisions, leaks) come back empty rather
// than nil, so that JSON output shows [] whichever backend answered.
type backend interface {
	// Select answers one selection.
	Select(ctx context.Context, query string, opts habilis.SelectOptions) (*habilis.Decision, error)
	// Tools returns the catalog's tools sorted by name.
	Tools(ctx context.Context) ([]habilis.Tool, error)
	// Tool returns one tool with its gate, or ErrNotFound.
	Tool(ctx context.Context, name string) (*selector.ToolInfo, error)
	// DeleteTools removes tools in one write; an unknown name returns
	// ErrNotFound and removes nothing.
	DeleteTools(ctx context.Context, names []string) (*selector.LoadReport, error)
	// Collisions analyses the catalog; threshold 0 means the default.
	Collisions(ctx context.Context, threshold float32) ([]habilis.Collision, error)
	Close() error
}

// storeTimeout is how long opening the bbolt file waits for another
// process's lock (a running `habilis serve`) before saying it is in use.
const storeTimeout = 2 * time.Second

// catalogTools returns the tools of the catalog --store or --remote
// names, for the command op.
func catalogTools(ctx context.Context, g *globalOptions, op string) ([]habilis.Tool, error) {
	b, err := openBackend(ctx, g, false)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	tools, err := b.Tools(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return tools, nil
}

// openBackend returns the remote server when --remote is set and a router
// over the local store otherwise. write opens the store for writing; it
// must exist already (accessUpdate).
func openBackend(ctx context.Context, g *globalOptions, write bool) (backend, error) {
	if g.remote != "" {
		b, err := dialRemote(ctx, g.remote, g)
		if err != nil {
			return nil, err
		}
		return b, nil
	}
	access := accessRead
	if write {
		access = accessUpdate
	}
	r, closeFn, err := openRouterAs(ctx, g, access)
	if err != nil {
		return nil, err
	}
	return &localBackend{r: r, close: closeFn, store: g.store}, nil
}

// localBackend adapts a router over the local store to backend.
type localBackend struct {
	r     *selector.Router
	close func() error
	store string
}

// named names the store in an error that reports damage found in it
// after opening (the stored index, which selection reads where it lies).
func (b *localBackend) named(err error) error { return namedDamage(b.store, err) }

// namedDamage names store in err when it reports damage found there after
// opening: the router's errors do not name the store (a stored
// calibration that does not decode, which a write reads).
func namedDamage(store string, err error) error {
	if errors.Is(err, habilis.ErrDamaged) {
		return storeError(store, err)
	}
	return err
}

// storeError names the store in an error of the router over it, once:
// the stores' own errors name it ("store PATH: ...", a
// boltstore.DamageError), the router's do not (a stored index or state
// that does not decode, an embedder that fails while the router opens).
func storeError(store string, err error) error {
	switch de := (*boltstore.DamageError)(nil); {
	case errors.As(err, &de), strings.Contains(err.Error(), store):
		return err
	case errors.Is(err, habilis.ErrDamaged):
		return fmt.Errorf("store %s: %w", store, err)
	}
	return fmt.Errorf("open %s: %w", store, err)
}

func (b *localBackend) Select(ctx context.Context, query string, opts habilis.SelectOptions) (*habilis.Decision, error) {
	d, err := b.r.Select(ctx, query, opts)
	return d, b.named(err)
}

func (b *localBackend) Tools(context.Context) ([]habilis.Tool, error) { return b.r.Tools(), nil }

func (b *localBackend) Tool(_ context.Context, name string) (*selector.ToolInfo, error) {
	t, err := b.r.Tool(name)
	return t, b.named(err)
}

func (b *localBackend) DeleteTools(ctx context.Context, names []string) (*selector.LoadReport, error) {
	rep, err := b.r.Delete(ctx, names)
	return rep, b.named(err)
}

func (b *localBackend) Collisions(ctx context.Context, threshold float32) ([]habilis.Collision, error) {
	cols, err := b.r.Collisions(ctx, threshold)
	return cols, b.named(err)
}

func (b *localBackend) Close() error { return b.close() }

// storeAccess is how a command holds its store.
type storeAccess int

const (
	// accessRead reads: several readers share a bbolt file, and a store
	// that does not exist yet is refused.
	accessRead storeAccess = iota
	// accessWrite reads and writes: a bbolt file is the command's alone
	// until it ends.
	accessWrite
	// accessUpdate reads and writes as accessWrite does, but a store that
	// does not exist yet is refused as accessRead refuses it: fit, tools rm
	// and --reindex change a catalog and have none to change there, and
	// creating an empty store would leave a file that looks like one.
	accessUpdate
	// accessShared reads and writes, holding a bbolt file only for each
	// read or write (boltstore.Shared), so that other processes write it
	// meanwhile: a server following its store.
	accessShared
	// accessReadShared reads as accessShared does, holding a bbolt file
	// only for each read, and writes nothing: a server following a store
	// that it must not or cannot write (serve --read-only). A store that
	// does not exist yet is refused as accessRead refuses it.
	accessReadShared
)

// writes reports whether a store held as a is opened for writing.
func (a storeAccess) writes() bool { return a != accessRead && a != accessReadShared }

// openRouter opens the configured store and embedder and a router over
// them, for reading or, with write, writing the store. The returned
// function closes the router and the store.
func openRouter(ctx context.Context, g *globalOptions, write bool) (*selector.Router, func() error, error) {
	if write {
		return openRouterAs(ctx, g, accessWrite)
	}
	return openRouterAs(ctx, g, accessRead)
}

// openRouterAs is openRouter with the store held as access says.
func openRouterAs(ctx context.Context, g *globalOptions, access storeAccess) (*selector.Router, func() error, error) {
	cfg, err := g.routerConfig()
	if err != nil {
		return nil, nil, err
	}
	// Opening a large store takes seconds (reading it, indexing it, or
	// reindexing it with --reindex): the command's progress shows the
	// steps, or one of openRouter's own until the router is open.
	p := g.progress
	if p == nil {
		p = g.newProgress("open")
		defer p.finish()
	}
	cfg.Progress = p.selectorStep
	// Re-embedding writes to the store.
	if g.reindex && access == accessRead {
		access = accessUpdate
	}
	if p, ok := cfg.Embedder.(prober); ok && access.writes() {
		// A model embedder knows its dimension only once the server has
		// answered. Asking before a write lets the router recognise the
		// store's vectors as its own and reuse them instead of embedding
		// the whole catalog again, and makes an unreachable server or a
		// missing model fail before the store is opened. Reads skip it:
		// listing tools and collisions need no server.
		if _, err := p.Probe(ctx); err != nil {
			return nil, nil, err
		}
	}
	// A write to a store of an earlier format rewrites it first, which
	// takes seconds for a large catalog.
	migrating := func(done, total int) { p.set("migrating the store", done, total) }
	st, err := openStoreAs(ctx, g.store, access, migrating)
	if err != nil {
		return nil, nil, err
	}
	r, err := selector.New(ctx, st, cfg)
	if err != nil {
		defer st.Close()
		if me := (*habilis.MismatchError)(nil); errors.As(err, &me) {
			return nil, nil, fmt.Errorf("store %s was %w; pass --reindex to re-embed it with %s", g.store, me, g.embedder)
		}
		return nil, nil, storeError(g.store, err)
	}
	return r, func() error {
		r.Close()
		return st.Close()
	}, nil
}

// prober is a model embedder that can ask its server for its dimension
// (ollamaembed, openaiembed).
type prober interface {
	Probe(ctx context.Context) (habilis.EmbedderInfo, error)
}

// routerConfig builds the router's configuration from the global flags.
// A model embedder is paired with the lexical embedder so that hybrid mode
// keeps its lexical signal; the lexical embedder serves as both itself.
func (g *globalOptions) routerConfig() (selector.Config, error) {
	emb, err := g.newEmbedder()
	if err != nil {
		return selector.Config{}, err
	}
	cfg := selector.Config{Embedder: emb, Reindex: g.reindex, Logger: g.logger}
	if _, ok := emb.(*lexical.Embedder); !ok {
		cfg.Lexical = lexical.New(lexical.Options{})
	}
	return cfg, nil
}

// newEmbedder parses --embedder and puts a model embedder behind the
// embedding cache, unless --no-embed-cache.
func (g *globalOptions) newEmbedder() (habilis.Embedder, error) {
	emb, err := g.parseEmbedder()
	if err != nil {
		return nil, err
	}
	dir := g.embedCacheDir()
	if _, lexical := emb.(*lexical.Embedder); lexical || dir == "" {
		return emb, nil
	}
	c, err := embedcache.New(emb, embedcache.Options{Dir: dir, Queries: !g.serving, Logger: g.logger})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// embedCacheDir returns the embedding cache's directory: HABILIS_EMBED_CACHE,
// else habilis/embeddings in the user's cache directory (as
// os.UserCacheDir finds it, through getenv), or "" for none: with
// --no-embed-cache, or when there is no such directory.
func (g *globalOptions) embedCacheDir() string {
	if g.noEmbedCache {
		return ""
	}
	if d := g.getenv("HABILIS_EMBED_CACHE"); d != "" {
		return d
	}
	var base string
	switch runtime.GOOS {
	case "windows":
		base = g.getenv("LocalAppData")
	case "darwin", "ios":
		if h := g.getenv("HOME"); h != "" {
			base = filepath.Join(h, "Library", "Caches")
		}
	default:
		base = g.getenv("XDG_CACHE_HOME")
		if h := g.getenv("HOME"); base == "" && h != "" {
			base = filepath.Join(h, ".cache")
		}
	}
	if base == "" || !filepath.IsAbs(base) {
		return ""
	}
	return filepath.Join(base, "habilis", "embeddings")
}

// parseEmbedder returns the embedder --embedder names.
func (g *globalOptions) parseEmbedder() (habilis.Embedder, error) {
	spec := strings.TrimSpace(g.embedder)
	kind, rest, _ := strings.Cut(spec, ":")
	model, addr, _ := strings.Cut(rest, "@")
	switch kind {
	case "lexical":
		if rest != "" {
			return nil, usagef("--embedder %q: lexical takes no model", spec)
		}
		return lexical.New(lexical.Options{}), nil
	case "ollama":
		if model == "" {
			return nil, usagef("--embedder %q: want ollama:MODEL[@HOST]", spec)
		}
		if addr == "" {
			addr = g.getenv("OLLAMA_HOST")
		}
		e, err := ollamaembed.New(ollamaembed.Options{Host: addr, Model: model})
		if err != nil {
			return nil, &usageError{err: fmt.Errorf("--embedder %q: %w", spec, err)}
		}
		return e, nil
	case "openai":
		if model == "" {
			return nil, usagef("--embedder %q: want openai:MODEL[@BASEURL]", spec)
		}
		key := g.getenv("OPENAI_API_KEY")
		if g.apiKeyFile != "" {
			b, err := os.ReadFile(g.apiKeyFile)
			if err != nil {
				return nil, fmt.Errorf("--api-key-file: %w", err)
			}
			key = strings.TrimSpace(string(b))
		}
		e, err := openaiembed.New(openaiembed.Options{BaseURL: addr, Model: model, APIKey: key})
		if err != nil {
			return nil, &usageError{err: fmt.Errorf("--embedder %q: %w", spec, err)}
		}
		return e, nil
	}
	return nil, usagef("--embedder %q: want lexical, ollama:MODEL[@HOST] or openai:MODEL[@BASEURL]", spec)
}

// openStore opens spec, what --store, --from and --to take: a qdrant:// URL
// or a bbolt file, for reading or, with write, writing.
func openStore(ctx context.Context, spec string, write bool) (habilis.Store, error) {
	if write {
		return openStoreAs(ctx, spec, accessWrite, nil)
	}
	return openStoreAs(ctx, spec, accessRead, nil)
}

// openStoreAs is openStore with the store held as access says: a Qdrant
// store is held alike whatever it says, but refuses writes when access
// does not write. migrating, when set, is told the progress of rewriting a
// bbolt store of an earlier format, which its first write does.
func openStoreAs(ctx context.Context, spec string, access storeAccess, migrating func(done, total int)) (habilis.Store, error) {
	if strings.TrimSpace(spec) == "" {
		// --store "$UNSET": said so, where "store  does not exist" or
		// "open : no such file" read as a bug.
		return nil, &usageError{err: habilis.ErrInvalid, msg: "--store is empty: want a bbolt file or qdrant://HOST:PORT/CATALOG"}
	}
	if strings.HasPrefix(spec, "qdrant://") {
		cfg, err := qdrantstore.ParseURL(spec)
		if err != nil {
			return nil, &usageError{err: fmt.Errorf("--store: %w", err)}
		}
		if cfg.APIKeyFile != "" {
			b, err := os.ReadFile(cfg.APIKeyFile)
			if err != nil {
				return nil, fmt.Errorf("--store: api_key_file: %w", err)
			}
			cfg.APIKey = strings.TrimSpace(string(b))
		}
		cfg.ReadOnly = !access.writes()
		return qdrantstore.Open(ctx, cfg)
	}
	opts := boltstore.Options{Timeout: storeTimeout, Progress: migrating, ReadOnly: !access.writes()}
	if access != accessWrite && access != accessShared {
		if err := storeExists(spec); err != nil {
			return nil, err
		}
	}
	if access == accessShared || access == accessReadShared {
		return boltstore.OpenShared(spec, opts)
	}
	st, err := boltstore.Open(spec, opts)
	if err != nil {
		if errors.Is(err, habilis.ErrUnavailable) {
			return nil, fmt.Errorf("%w (if habilis serve holds it, query the server with --remote ADDR)", err)
		}
		return nil, err
	}
	return st, nil
}

// storeExists returns ErrNotFound, saying what to do, unless the bbolt
// file at path holds a store: only the accesses that create one take a
// missing file for a new store.
func storeExists(path string) error {
	switch fi, err := os.Stat(path); {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("store %s does not exist: load a catalog first (habilis load FILE) or pass --store: %w", path, habilis.ErrNotFound)
	case err == nil && fi.Size() == 0:
		// A file of nothing was never written: no store yet.
		return fmt.Errorf("store %s is an empty file: load a catalog first (habilis load FILE) or pass --store: %w", path, habilis.ErrNotFound)
	}
	return nil
}
