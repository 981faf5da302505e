package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/boltstore"
	"github.com/spf13/cobra"
)

// damagedHint is what a user can do about a damaged store; execute adds it
// to every error that wraps ErrDamaged, and checkHint but to store check's,
// which has just listed it.
const (
	damagedHint = "restore the store from a backup, or move it aside and load the catalog again (habilis load FILE)"
	checkHint   = "; habilis store check lists what is damaged"
)

func newStoreCmd(g *globalOptions) *cobra.Command {
	return newGroupCmd("store", "Look after the catalog store", newStoreCheckCmd(g), newStoreCompactCmd(g))
}

// storeCheckOptions are the flags of `habilis store check`.
type storeCheckOptions struct {
	g     *globalOptions
	limit int
}

func newStoreCheckCmd(g *globalOptions) *cobra.Command {
	o := &storeCheckOptions{g: g}
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check the store file for damage",
		Long: `Check reads the whole bbolt store (--store) and reports what is damaged, changing
nothing: its pages (each reached once, inside the file, none lost), bbolt's own
consistency check, then every record: that it decodes, that the catalog meta is
there, that each tool's examples are all there, that each tool's definition
matches its hash and each vector is unit length; and the selector's index stored
with the catalog, against its checksums.

It exits 0 when the store is sound and 1 when it is not, listing one problem a
line (up to --limit). A file that is no habilis store (not a bbolt file, or a
bbolt file without habilis' buckets) is named as such, also with exit 1, and
nothing is listed. A writer holding the file (habilis serve) must stop first.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runStoreCheck(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	cmd.Flags().IntVar(&o.limit, "limit", 20, "most problems to list")
	return cmd
}

func runStoreCheck(ctx context.Context, o *storeCheckOptions, stdout io.Writer) error {
	if err := o.g.noRemote("store check"); err != nil {
		return err
	}
	path := o.g.store
	if strings.HasPrefix(path, "qdrant://") {
		return usagef("store check: %s: only a bbolt file can be checked", path)
	}
	if o.limit < 1 {
		return usagef("store check: --limit %d: want at least 1", o.limit)
	}
	rep, err := boltstore.Check(ctx, path, boltstore.CheckOptions{Limit: o.limit, Timeout: storeTimeout, Records: checkRecords,
		Index: selector.CheckIndex})
	if err != nil {
		return storeFileError("store check", path, err)
	}
	if o.g.json {
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
	} else {
		printCheck(stdout, rep)
	}
	if !rep.Sound() {
		n := fmt.Sprintf("%d problems", len(rep.Problems))
		switch {
		case rep.More:
			n = "more than " + n
		case len(rep.Problems) == 1:
			n = "1 problem"
		}
		return fmt.Errorf("store check: %s has %s: %w", path, n, habilis.ErrDamaged)
	}
	return nil
}

func printCheck(w io.Writer, rep *boltstore.CheckReport) {
	if rep.Sound() {
		fmt.Fprintf(w, "%s is sound: %d tools, %d examples, catalog version %d; %d pages of %d bytes, %d free\n",
			rep.Path, rep.Tools, rep.Examples, rep.Version, rep.Pages, rep.PageSize, rep.FreePages)
		return
	}
	fmt.Fprintf(w, "%s is damaged:\n", rep.Path)
	for _, p := range rep.Problems {
		fmt.Fprintf(w, "  %s\n", p)
	}
	if rep.More {
		fmt.Fprintf(w, "  (more problems: --limit lists more)\n")
	}
}

// storeCompactOptions are the flags of `habilis store compact`.
type storeCompactOptions struct {
	g *globalOptions
}

func newStoreCompactCmd(g *globalOptions) *cobra.Command {
	o := &storeCompactOptions{g: g}
	return &cobra.Command{
		Use:   "compact",
		Short: "Give the store file's free pages back to the disk",
		Long: `Compact rewrites the bbolt store (--store) without its free pages. A bbolt file
never shrinks by itself: after a migration, a catalog replaced by a smaller one
or a large delete, most of it can be free pages. The copy is made beside the
store, checked, and put in its place; the store is unchanged if anything fails.
A damaged store is refused (habilis store check says what is wrong). A writer
holding the file (habilis serve) must stop first.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runStoreCompact(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
}

func runStoreCompact(ctx context.Context, o *storeCompactOptions, stdout io.Writer) error {
	if err := o.g.noRemote("store compact"); err != nil {
		return err
	}
	path := o.g.store
	if strings.HasPrefix(path, "qdrant://") {
		return usagef("store compact: %s: only a bbolt file can be compacted", path)
	}
	rep, err := boltstore.Compact(ctx, path, boltstore.CheckOptions{Timeout: storeTimeout, Records: checkRecords, Index: selector.CheckIndex})
	if err != nil {
		return storeFileError("store compact", path, err)
	}
	if o.g.json {
		return writeJSON(stdout, rep)
	}
	fmt.Fprintf(stdout, "%s: %s -> %s\n", rep.Path, byteSize(rep.Before), byteSize(rep.After))
	return nil
}

// byteSize writes n bytes in the largest unit that keeps a whole number.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// storeFileError is the error of command cmd on the store file at path:
// one that names what to do when the file is missing or held by a writer.
func storeFileError(cmd, path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: store %s does not exist: %w", cmd, path, habilis.ErrNotFound)
	case errors.Is(err, habilis.ErrUnavailable):
		return fmt.Errorf("%s: %w (stop the habilis serve that holds it first)", cmd, err)
	}
	return fmt.Errorf("%s: %w", cmd, err)
}

// checkRecords checks a stored catalog as store check and compact do: its
// records, and the fitted state of the lexical embedder, which every
// command restores when it opens the store.
func checkRecords(snap *habilis.Snapshot) []string {
	return append(selector.CheckSnapshot(snap), selector.CheckStates(snap.Meta, lexical.New(lexical.Options{}))...)
}
