package boltstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/habilis-router/habilis"
	bolt "go.etcd.io/bbolt"
)

// CheckOptions configure Check. The zero value lists up to 20 problems.
type CheckOptions struct {
	// Limit is how many problems the report lists; 0 means 20.
	Limit int
	// Timeout is how long Check waits for a writer to release the file, as
	// Options.Timeout.
	Timeout time.Duration
	// Records, when set, checks the decoded catalog further (what the
	// records mean, which this package does not know) and returns its
	// problems. It runs only when the store reads whole.
	Records func(*habilis.Snapshot) []string
	// Index, when set, checks the index stored with the catalog, if any,
	// and returns its problems. It runs only when the store reads whole.
	Index func(data []byte) []string
}

// CheckReport is what Check found.
type CheckReport struct {
	Path string `json:"path"`
	// Problems lists what is wrong, one line each; empty when the store is
	// sound.
	Problems []string `json:"problems"`
	// More reports that there were more problems than Problems lists.
	More bool `json:"more"`
	// PageSize, Pages (below bbolt's high-water mark) and FreePages
	// describe the file; Version, Tools and Examples the catalog (zero
	// when it could not be read).
	PageSize  int    `json:"page_size"`
	Pages     uint64 `json:"pages"`
	FreePages int    `json:"free_pages"`
	Version   uint64 `json:"version"`
	Tools     int    `json:"tools"`
	Examples  int    `json:"examples"`
}

// Sound reports whether Check found nothing wrong.
func (r *CheckReport) Sound() bool { return len(r.Problems) == 0 }

// Check reads the store in the file at path and reports what is wrong with
// it, changing nothing: the structure (the page walk of verify.go, then
// bbolt's own consistency check, Tx.Check, which also checks key order),
// then the records (the format and catalog meta are present and decode,
// every tool decodes, each tool's examples are all there as its summary
// counts them, no examples belong to no tool), then the whole catalog as
// Snapshot reads it, then opts.Records. Each step runs only when the ones
// before it found nothing, since damage found by one makes the next read
// unsafe or its findings noise.
//
// It returns an error only when the file cannot be examined at all: it
// does not exist, a writer holds it (ErrUnavailable), or it is no habilis
// store that this version reads (ErrInvalid): a directory, an empty file,
// a file that is not a bbolt file, a bbolt file without habilis' buckets,
// a store of a newer format. Those hold nothing to be damaged, and
// restoring them from a backup would be the wrong advice.
func Check(ctx context.Context, path string, opts CheckOptions) (*CheckReport, error) {
	c := &checker{rep: &CheckReport{Path: path, Problems: []string{}}, limit: opts.Limit}
	if c.limit <= 0 {
		c.limit = 20
	}
	if fi, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("store %s: check: %w", path, err)
	} else if err := notAStore(fi); err != nil {
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	db, err := openForCheck(path, opts.Timeout)
	var de *DamageError
	switch {
	case errors.As(err, &de):
		c.add(de.Err.Error()) // the report names the file
		return c.rep, nil
	case errors.Is(err, habilis.ErrInvalid):
		return nil, fmt.Errorf("store %s: %w", path, err)
	case errors.Is(err, habilis.ErrDamaged):
		c.add(err.Error())
		return c.rep, nil
	case err != nil:
		return nil, fmt.Errorf("store %s: check: %w", path, err)
	}
	defer db.Close()
	if err := c.structure(ctx, path, db); err != nil {
		return nil, err
	}
	if !c.rep.Sound() {
		return c.rep, nil
	}
	s := &Store{path: path, readOnly: true, db: db}
	snap, err := s.Snapshot(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		c.add(err.Error())
		return c.rep, nil
	}
	c.catalog(snap, opts.Records)
	if opts.Index != nil {
		c.index(ctx, s, opts.Index)
	}
	return c.rep, nil
}

// checker gathers Check's report, listing up to limit problems.
type checker struct {
	rep   *CheckReport
	limit int
}

// add lists problems until the limit, then records that there were more.
func (c *checker) add(problems ...string) {
	for _, p := range problems {
		if len(c.rep.Problems) == c.limit {
			c.rep.More = true
			return
		}
		c.rep.Problems = append(c.rep.Problems, p)
	}
}

// openForCheck opens the file read-only, waiting up to timeout (a second
// when zero) for a writer to release it; a file that is not a store, or
// is damaged, reports ErrInvalid or ErrDamaged naming it.
func openForCheck(path string, timeout time.Duration) (*bolt.DB, error) {
	if timeout == 0 {
		timeout = time.Second
	}
	db, err := boltOpen(path, &bolt.Options{Timeout: max(timeout, 0), ReadOnly: true, InitialMmapSize: initialMmapSize()})
	if err != nil {
		return nil, explain(path, err)
	}
	return db, nil
}

// structure walks the file's pages, then runs bbolt's check, then decodes
// every record, each step only while the ones before found nothing. It
// returns an error only when the file cannot be walked at all, or is a
// sound bbolt file that holds no habilis store (ErrInvalid).
func (c *checker) structure(ctx context.Context, path string, db *bolt.DB) error {
	st, problems, err := walkFile(path, c.limit+1)
	if err != nil {
		return fmt.Errorf("store %s: check: %w", path, err)
	}
	c.rep.PageSize, c.rep.Pages, c.rep.FreePages = st.PageSize, st.Pages, st.Free
	c.add(problems...)
	var foreign error
	steps := []func(*bolt.Tx) []string{
		func(tx *bolt.Tx) []string { return txCheck(tx, c.limit+1) },
		func(tx *bolt.Tx) []string {
			problems, err := checkRecords(ctx, tx, c.limit+1)
			foreign = err
			return problems
		},
	}
	for _, step := range steps {
		if !c.rep.Sound() {
			return nil
		}
		err := guard(func() error {
			return db.View(func(tx *bolt.Tx) error {
				c.add(step(tx)...)
				return nil
			})
		})
		if err != nil {
			c.add(err.Error())
		}
		if foreign != nil {
			return fmt.Errorf("store %s: %w", path, foreign)
		}
	}
	return nil
}

// catalog counts the catalog Snapshot read and adds the problems records
// finds in it, if set.
func (c *checker) catalog(snap *habilis.Snapshot, records func(*habilis.Snapshot) []string) {
	c.rep.Version, c.rep.Tools = snap.Meta.Version, len(snap.Records)
	for i := range snap.Records {
		c.rep.Examples += len(snap.Records[i].Tool.Examples)
	}
	if records != nil {
		c.add(records(snap)...)
	}
}

// index adds the problems check finds in the stored index and its patch.
func (c *checker) index(ctx context.Context, s *Store, check func(data []byte) []string) {
	si, err := s.Index(ctx)
	if err != nil {
		c.add(err.Error())
		return
	}
	defer si.Release()
	if si.Data != nil {
		for _, p := range check(si.Data) {
			c.add("index: " + p)
		}
	}
	if si.Patch != nil {
		for _, p := range check(si.Patch) {
			c.add("index patch: " + p)
		}
	}
}

// txCheck runs bbolt's consistency check and returns up to limit of its
// errors. The check runs in a goroutine of bbolt's, which recovers its own
// panics; the channel is drained so that it ends.
func txCheck(tx *bolt.Tx, limit int) []string {
	var out []string
	for err := range tx.Check() {
		if len(out) < limit {
			out = append(out, "bbolt: "+oneLine(err.Error()))
		}
	}
	return out
}

// checkRecords decodes every record on its own and returns up to limit
// problems, going on past the first, or ErrInvalid for a file that holds
// no habilis store this version reads.
func checkRecords(ctx context.Context, tx *bolt.Tx, limit int) ([]string, error) {
	switch err := checkFormat(tx); {
	case errors.Is(err, errFresh):
		return nil, nil // a new file: nothing to check
	case errors.Is(err, habilis.ErrInvalid):
		return nil, err
	case err != nil:
		return []string{err.Error()}, nil
	}
	var out []string
	meta, err := readMeta(tx)
	if err != nil {
		out = append(out, err.Error())
	}
	tools, examples := catalogBuckets(tx)
	n, problems := checkTools(ctx, tx, storedFormat(tx), tools, examples, limit)
	out = append(out, problems...)
	if n > 0 && meta.Version == 0 && err == nil {
		out = append(out, fmt.Sprintf("%d tools but no catalog meta", n))
	}
	format := storedFormat(tx)
	c := examples.Cursor()
	for k, v := c.First(); k != nil && len(out) < limit; k, v = c.Next() {
		switch {
		case tools.Get(k) == nil:
			out = append(out, fmt.Sprintf("examples of tool %q, which is not stored", k))
		case (v == nil) != (format < 2):
			out = append(out, fmt.Sprintf("examples of tool %q: stored as in format %d, the store is of format %d", k, 3-format, format))
		}
	}
	return out, nil
}

// checkTools checks every tool and returns how many there are and up to
// limit problems.
func checkTools(ctx context.Context, tx *bolt.Tx, format int, tools, examples *bolt.Bucket, limit int) (int, []string) {
	held := &heldRows{index: storedIndexData(tx)}
	var out []string
	n := 0
	c := tools.Cursor()
	for k, v := c.First(); k != nil && len(out) < limit; k, v = c.Next() {
		if n%ctxCheckEvery == 0 && ctx.Err() != nil {
			break
		}
		n++
		switch {
		case v == nil:
			out = append(out, fmt.Sprintf("tool %q: a bucket, not a value", k))
		default:
			if err := checkTool(format, examples, k, v, held); err != nil {
				out = append(out, fmt.Sprintf("tool %q: %v", k, err))
			}
		}
	}
	return n, out
}

// checkTool decodes one tool and its examples as a snapshot of that tool
// alone would.
func checkTool(format int, examples *bolt.Bucket, k, v []byte, held *heldRows) error {
	_, err := decodeRecord(format, examples, k, v, held)
	if err != nil && held.err != nil {
		return held.err
	}
	return err
}
