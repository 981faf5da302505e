package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/qdrantstore"
	"github.com/spf13/cobra"
)

// migrateOptions are the flags of `habilis migrate`.
type migrateOptions struct {
	g    *globalOptions
	from string
	to   string
	// force replaces a destination catalog built by another embedder.
	force bool
}

func (o *migrateOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.from, "from", "", "store to copy the catalog from: a bbolt file or qdrant://HOST:PORT/CATALOG")
	f.StringVar(&o.to, "to", "", "store to copy the catalog to, in the same form; its catalog is replaced")
	f.BoolVar(&o.force, "force", false, "replace a destination catalog built by another embedder instead of refusing it")
}

func newMigrateCmd(g *globalOptions) *cobra.Command {
	o := &migrateOptions{g: g}
	cmd := &cobra.Command{
		Use:   "migrate --from STORE --to STORE",
		Short: "Copy a catalog from one store to another",
		Long: `Migrate copies the catalog of the --from store to the --to store as it is:
tools, vectors, examples, the embedder's state and the calibration, so nothing is
embedded again and selection on the destination gives the same answers. STORE is
what --store takes: a bbolt file or qdrant://HOST:PORT/CATALOG[?api_key_file=F&tls=1].

The destination's catalog is replaced in one atomic write; on any error, or when
another writer changes it meanwhile, it is left as it was. A destination built
by another embedder is refused unless --force is given.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMigrate(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	o.addFlags(cmd)
	return cmd
}

// migrateReport is what migrate prints.
type migrateReport struct {
	From     string `json:"from"`
	To       string `json:"to"`
	Tools    int    `json:"tools"`
	Examples int    `json:"examples"`
	Embedder string `json:"embedder"`
	// Replaced is the number of tools the destination held before.
	Replaced int `json:"replaced"`
	// Version is the destination's catalog version after the write.
	Version uint64 `json:"version"`
}

func runMigrate(ctx context.Context, o *migrateOptions, stdout io.Writer) error {
	if err := o.g.noRemote("migrate"); err != nil {
		return err
	}
	switch {
	case o.from == "":
		return usagef("migrate: --from is required")
	case o.to == "":
		return usagef("migrate: --to is required")
	}
	from, err := storeLocation(o.from)
	if err != nil {
		return &usageError{err: fmt.Errorf("migrate: --from: %w", err)}
	}
	to, err := storeLocation(o.to)
	if err != nil {
		return &usageError{err: fmt.Errorf("migrate: --to: %w", err)}
	}
	if from == to || sameFile(o.from, o.to) {
		return usagef("migrate: --from %s and --to %s are the same store", o.from, o.to)
	}

	p := o.g.newProgress("migrate")
	defer p.finish()
	p.set("reading "+o.from, 0, 0)
	src, err := openStore(ctx, o.from, false)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer src.Close()
	snap, err := src.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("migrate: read %s: %w", o.from, err)
	}
	if len(snap.Records) == 0 {
		return fmt.Errorf("migrate: %s holds no tools: nothing to migrate: %w", o.from, habilis.ErrNotFound)
	}

	// A bbolt destination that does not exist yet is created by opening
	// it; a failed migration removes it again, so that it leaves nothing.
	created := false
	if !strings.HasPrefix(o.to, "qdrant://") {
		_, err := os.Stat(o.to)
		created = errors.Is(err, fs.ErrNotExist)
	}
	p.set("writing "+o.to, 0, 0)
	rep, err := migrate(ctx, o, snap, storedIndex(ctx, src, snap.Meta.Version))
	p.finish()
	if err != nil {
		if created {
			os.Remove(o.to)
		}
		return fmt.Errorf("migrate: %w", err)
	}
	if o.g.json {
		return writeJSON(stdout, rep)
	}
	fmt.Fprintf(stdout, "migrated %d tools, %d examples from %s to %s\n", rep.Tools, rep.Examples, rep.From, rep.To)
	fmt.Fprintf(stdout, "  embedder %s, catalog version %d", rep.Embedder, rep.Version)
	if rep.Replaced > 0 {
		fmt.Fprintf(stdout, ", replacing %d stored tools", rep.Replaced)
	}
	fmt.Fprintln(stdout)
	return nil
}

// migrate writes snap over the destination's catalog in one replacing
// write based on the version it read, so that a concurrent writer makes it
// fail with ErrConflict rather than be overwritten unseen.
//
// index, when not nil, is the index stored with snap in the source; it
// goes with the catalog, restamped with the destination's version.
func migrate(ctx context.Context, o *migrateOptions, snap *habilis.Snapshot, index []byte) (*migrateReport, error) {
	dst, err := openStore(ctx, o.to, true)
	if err != nil {
		return nil, err
	}
	defer dst.Close()
	cur, err := dst.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", o.to, err)
	}
	if cur.Meta.Version > 0 && len(cur.Records) > 0 && !cur.Meta.Embedder.Space(snap.Meta.Embedder) && !o.force {
		me := &habilis.MismatchError{Stored: cur.Meta.Embedder, Configured: snap.Meta.Embedder}
		return nil, fmt.Errorf("replace the catalog of %s: it was %w (pass --force to replace it with %s's)", o.to, me, o.from)
	}
	b := &habilis.Batch{BaseVersion: cur.Meta.Version, Replace: true, Put: snap.Records, Meta: snap.Meta,
		Index: selector.IndexAt(index, cur.Meta.Version+1)}
	meta, err := dst.Write(ctx, b)
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", o.to, err)
	}
	rep := &migrateReport{From: o.from, To: o.to, Tools: len(snap.Records), Embedder: snap.Meta.Embedder.String(),
		Replaced: len(cur.Records), Version: meta.Version}
	for i := range snap.Records {
		rep.Examples += len(snap.Records[i].Tool.Examples)
	}
	return rep, nil
}

// storedIndex returns a copy of the index st keeps with catalog version
// v, or nil.
func storedIndex(ctx context.Context, st habilis.Store, v uint64) []byte {
	is, ok := st.(habilis.IndexStore)
	if !ok {
		return nil
	}
	si, err := is.Index(ctx)
	if err != nil {
		return nil
	}
	defer si.Release()
	if si.Meta.Version != v || si.Patch != nil {
		// An index with a patch describes the catalog only with it: the
		// destination's router builds its index from the records instead.
		return nil
	}
	return bytes.Clone(si.Data)
}

// storeLocation names the store spec points at, with defaults applied, so
// that two spellings of one store compare equal: the absolute path of a
// bbolt file, or qdrant://HOST:PORT/CATALOG.
func storeLocation(spec string) (string, error) {
	if !strings.HasPrefix(spec, "qdrant://") {
		p, err := filepath.Abs(spec)
		if err != nil {
			return "", err
		}
		return p, nil
	}
	cfg, err := qdrantstore.ParseURL(spec)
	if err != nil {
		return "", err
	}
	host, port, catalog := strings.ToLower(cfg.Host), cfg.Port, cfg.Catalog
	if host == "" {
		host = qdrantstore.DefaultHost
	}
	if port == 0 {
		port = qdrantstore.DefaultPort
	}
	if catalog == "" {
		catalog = qdrantstore.DefaultCatalog
	}
	return "qdrant://" + net.JoinHostPort(host, strconv.Itoa(port)) + "/" + catalog, nil
}

// sameFile reports whether two bbolt specs name one existing file under
// different paths (a link, a relative path through a symlink).
func sameFile(a, b string) bool {
	if strings.HasPrefix(a, "qdrant://") || strings.HasPrefix(b, "qdrant://") {
		return false
	}
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}
