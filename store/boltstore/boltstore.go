// Package boltstore is the embedded, default habilis.Store: one bbolt file
// holding the catalog meta, a tools bucket and an examples bucket, one key
// a tool in each (codec.go), and the selector's index in buckets of its own,
// which Index hands out where it lies in the memory map (index.go).
// Every write is one bbolt transaction, or, for a write of more than
// stageChunk tools that replaces the catalog or fills an empty store,
// several that fill new buckets and switch to them in the last
// (staged.go): either way a crash mid-load leaves the previous catalog
// intact. Every snapshot is one read transaction, so readers never see
// half a write.
//
// A snapshot decodes all vectors into a few contiguous arrays, which the
// selector scans directly.
package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/habilis-router/habilis"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// formatVersion is the on-disk format this package writes (see codec.go).
// Open refuses files of a newer format rather than misread them; files of
// format 1 are read, and rewritten in this format by their next write;
// those of formats 2 and 3 are read as they are and marked of this
// format by their next write (codec.go).
const formatVersion = 4

// Bucket and key names; see codec.go for what they hold.
const (
	bucketMeta     = "meta"
	bucketTools    = "tools"
	bucketExamples = "examples"
	keyFormat      = "format"
	keyCatalog     = "catalog"
	// keyBuckets, when present, is the suffix of the names of the tools
	// and examples buckets holding the catalog: a write staged in several
	// transactions writes new buckets and names them here (staged.go).
	keyBuckets = "buckets"
)

// catalogNames returns the names of the tools and examples buckets that
// hold the catalog in tx.
func catalogNames(tx *bolt.Tx) (tools, examples string) {
	var suffix []byte
	if mb := tx.Bucket([]byte(bucketMeta)); mb != nil {
		suffix = mb.Get([]byte(keyBuckets))
	}
	return bucketTools + string(suffix), bucketExamples + string(suffix)
}

// catalogBuckets returns the tools and examples buckets that hold the
// catalog in tx, nil when missing.
func catalogBuckets(tx *bolt.Tx) (tools, examples *bolt.Bucket) {
	t, e := catalogNames(tx)
	return tx.Bucket([]byte(t)), tx.Bucket([]byte(e))
}

// initialMmapSize is the address space mapped for the file from the start.
// Each time bbolt outgrows its mapping during a write it copies every key
// and value the transaction holds, so loading a catalog of hundreds of
// megabytes into a small mapping copied it a dozen times. Mapping more than
// the file costs address space only, which 64-bit systems have plenty of,
// except on Windows, where bbolt grows the file to the mapped size.
func initialMmapSize() int {
	if strconv.IntSize < 64 || runtime.GOOS == "windows" {
		return 0
	}
	return 1 << 30
}

// inPlaceMapSize is the address space a writable store maps for a file
// of size bytes, 0 where it maps as initialMmapSize says. A write that
// outgrows the mapping remaps the file, which waits for every open read
// transaction, and an index served in place holds one for as long as it
// is in force (Index), so it would wait for good; mapping 64 GiB, or four
// times the file when larger, from the start means no write remaps, and
// bbolt's MaxSize turns the one that would into a write error (the next
// open maps more). Untouched, the mapping costs address space and no
// memory: 47-bit address spaces hold two thousand such.
func inPlaceMapSize(size int64) int {
	if initialMmapSize() == 0 {
		return 0
	}
	const gib = 1 << 30
	return int(max(64*gib, (4*size+gib-1)/gib*gib))
}

// pageSize is the page size of new files (an existing file keeps its
// own). A tool's values take several kilobytes, and bbolt puts at least
// two keys in a page, so 4 KiB pages held two tools in three pages with a
// fourth of them unused. A page leaves unused what is left after the
// last value that fits, half a value on average: 16 KiB pages left 12 %
// of a dense catalog's examples unused (six values of 2.4 KB a page), 64
// KiB pages leave 1.5 %. Fewer pages also make the walk of Open cheaper
// (docs/benchmarks.md).
const pageSize = 64 << 10

// Options configure Open. The zero value opens the file for reading and
// writing, waiting up to a second for another process to release it.
type Options struct {
	// Timeout is how long Open waits for the file lock another process
	// holds: zero means one second, a negative value waits indefinitely.
	Timeout time.Duration
	// ReadOnly opens the file without writing to it; Write then returns
	// ErrReadOnly. Several read-only stores may share a file, but not with a
	// writer. The file must exist.
	ReadOnly bool
	// Progress, when set, is called as a write rewrites a catalog of an
	// earlier format (migrate.go) with how many of its tools are done, so
	// that a long migration can show progress; nil shows nothing.
	Progress func(done, total int)
}

// Store is a habilis.Store over one bbolt file. It is safe for concurrent
// use; writes are serialised by bbolt and checked against BaseVersion.
type Store struct {
	path     string
	readOnly bool
	progress func(done, total int)

	// mu guards closed: Snapshot and Write hold it shared for their whole
	// transaction, so Close waits for them.
	mu     sync.RWMutex
	closed bool
	db     *bolt.DB
	views  views
	// inPlace reports a writable store that maps inPlaceMapSize, whose
	// Index is read in place.
	inPlace bool
	// writeMu serialises writes, which a staged write needs: its
	// transactions must not interleave with another write's.
	writeMu sync.Mutex
	// chunkSize, when not zero, replaces stageChunk (for tests).
	chunkSize int
}

var _ habilis.Store = (*Store)(nil)

// Open opens the store in the file at path, creating the file and its
// buckets if missing. It returns ErrUnavailable (wrapped) when another
// process holds the file past opts.Timeout, ErrInvalid for a file that is
// not a habilis store or was written by a newer format version, and
// ErrDamaged, as a *DamageError, for a habilis store whose structure is
// damaged (see verify.go: the file is walked before bbolt reads it).
// Errors name the file.
func Open(path string, opts Options) (*Store, error) {
	return open(path, opts, nil)
}

// walked remembers the last version of a file the walk found sound, so
// that a Shared store, which opens the file for every call, walks it once
// a write rather than once a call. A file changed in place without a
// write (damage done by something else) is then not walked again; guard
// still turns what bbolt makes of it into errors.
type walked struct {
	mu   sync.Mutex
	txid int
	size int64
}

// open is Open, skipping the walk when memo says this version of the
// file was found sound.
func open(path string, opts Options, memo *walked) (*Store, error) {
	db, err := openFile(path, opts, memo)
	if err != nil {
		return nil, openError(path, err)
	}
	s := &Store{path: path, readOnly: opts.ReadOnly, progress: opts.Progress, db: db, inPlace: !opts.ReadOnly && db.MaxSize > 0}
	if err := guard(func() error { return initialize(db, opts.ReadOnly) }); err != nil {
		db.Close()
		return nil, openError(path, s.damaged(err))
	}
	return s, nil
}

// openError names the file in an error of Open, once: a *DamageError
// names it already.
func openError(path string, err error) error {
	if de := (*DamageError)(nil); errors.As(err, &de) {
		return err
	}
	return fmt.Errorf("store %s: %w", path, err)
}

// openFile opens the bbolt file at path once its structure has been found
// sound. An existing file is first opened read-only, which reads only its
// meta pages and takes bbolt's shared lock, so that no writer changes the
// file while it is walked; a writable store then reopens it, which loads
// the freelist the walk has checked.
func openFile(path string, opts Options, memo *walked) (*bolt.DB, error) {
	timeout := opts.Timeout
	switch {
	case timeout == 0:
		timeout = time.Second
	case timeout < 0:
		timeout = 0 // bbolt waits indefinitely
	}
	bopts := &bolt.Options{Timeout: timeout, ReadOnly: true, InitialMmapSize: initialMmapSize()}
	switch fi, err := os.Stat(path); {
	case err == nil && fi.IsDir():
		return nil, notAStore(fi)
	case (err != nil || fi.Size() == 0) && !opts.ReadOnly:
		// A new file: bbolt writes it, there is nothing to walk. An
		// empty file is new too: it holds nothing that was written.
		if err := noDirectory(path); err != nil {
			return nil, err
		}
		bopts.ReadOnly, bopts.PageSize = false, pageSize
		return openWritable(path, bopts)
	case err == nil:
		if err := notAStore(fi); err != nil {
			return nil, err
		}
	}
	db, err := boltOpen(path, bopts)
	if err != nil {
		return nil, explain(path, err)
	}
	if err := memo.walk(db, path); err != nil {
		db.Close()
		return nil, err
	}
	if opts.ReadOnly {
		return db, nil
	}
	if err := db.Close(); err != nil {
		return nil, err
	}
	bopts.ReadOnly = false
	return openWritable(path, bopts)
}

// noDirectory returns an error when the directory a new store's file
// would be created in does not exist: bbolt creates the file, not its
// directory, and said only "open PATH: no such file or directory".
func noDirectory(path string) error {
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("directory %s does not exist (opening a store creates its file, not its directory): %w", dir, habilis.ErrNotFound)
	}
	return nil
}

// notAStore says why the file fi describes holds no store to read: it is
// a directory, or empty (which only a write may take for a new store);
// nil otherwise.
func notAStore(fi os.FileInfo) error {
	switch {
	case fi.IsDir():
		return fmt.Errorf("a directory, not a habilis store: %w", habilis.ErrInvalid)
	case fi.Size() == 0:
		return fmt.Errorf("not a habilis store (an empty file): %w", habilis.ErrInvalid)
	}
	return nil
}

// openWritable opens the file for writing, mapping inPlaceMapSize where
// that applies, and as a read-only store maps it where the system refuses
// so much address space (a limit on it, ulimit -v).
func openWritable(path string, bopts *bolt.Options) (*bolt.DB, error) {
	var file int64
	if fi, err := os.Stat(path); err == nil {
		file = fi.Size()
	}
	if size := inPlaceMapSize(file); size > 0 {
		big := *bopts
		big.InitialMmapSize, big.MaxSize = size, size
		db, err := boltOpen(path, &big)
		if err == nil || errors.Is(err, habilis.ErrUnavailable) || errors.Is(err, habilis.ErrInvalid) {
			return db, err
		}
	}
	return boltOpen(path, bopts)
}

// walk walks the file db has open, unless memo (which may be nil) says
// this version of it was found sound.
func (memo *walked) walk(db *bolt.DB, path string) error {
	txid, size := -1, int64(-1)
	if memo != nil {
		if fi, err := os.Stat(path); err == nil {
			size = fi.Size()
		}
		if err := guard(func() error { return db.View(func(tx *bolt.Tx) error { txid = tx.ID(); return nil }) }); err != nil {
			txid = -1
		}
		memo.mu.Lock()
		defer memo.mu.Unlock()
		if txid >= 0 && txid == memo.txid && size == memo.size {
			return nil
		}
	}
	if _, problems, err := walkFile(path, 1); err != nil {
		return err
	} else if len(problems) > 0 {
		return &DamageError{Path: path, Err: errors.New(problems[0])}
	}
	if memo != nil {
		memo.txid, memo.size = txid, size
	}
	return nil
}

// boltOpen opens the file with bbolt and translates its errors.
func boltOpen(path string, opts *bolt.Options) (*bolt.DB, error) {
	var db *bolt.DB
	err := guard(func() error {
		var err error
		db, err = bolt.Open(path, 0o600, opts)
		return err
	})
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return nil, fmt.Errorf("in use by another process: %w", habilis.ErrUnavailable)
	case errors.Is(err, bolterrors.ErrInvalid):
		// bbolt's "invalid database": neither meta page starts with its
		// magic number.
		return nil, fmt.Errorf("not a habilis store (not a bbolt file): %w", habilis.ErrInvalid)
	case errors.Is(err, bolterrors.ErrVersionMismatch), errors.Is(err, bolterrors.ErrChecksum):
		return nil, fmt.Errorf("not a habilis store (%v): %w", err, habilis.ErrInvalid)
	}
	return db, err
}

// explain returns the damage behind bbolt's refusal to open a file that
// looks like a bbolt file: what the walk finds, or else bbolt's own reason
// (it says "file size too small" of one cut short within its first two
// pages, which the walk cannot read as pages). A file without a valid
// bbolt meta page is foreign, not damaged: ErrInvalid.
func explain(path string, err error) error {
	switch {
	case errors.Is(err, habilis.ErrUnavailable) || errors.Is(err, habilis.ErrInvalid) || errors.Is(err, fs.ErrNotExist) ||
		errors.Is(err, fs.ErrPermission):
		return err
	case !looksBolt(path):
		return fmt.Errorf("not a habilis store (not a bbolt file: %v): %w", err, habilis.ErrInvalid)
	}
	if _, problems, werr := walkFile(path, 1); werr == nil && len(problems) > 0 {
		return &DamageError{Path: path, Err: errors.New(problems[0])}
	}
	return &DamageError{Path: path, Err: fmt.Errorf("bbolt refuses it: %w", err)}
}

// guard runs fn, which reads or writes the file through bbolt, and turns a
// panic into an error wrapping errCorrupt: bbolt asserts its pages' types
// and ids with panics, and a read through its memory map past the end of
// the file faults, which SetPanicOnFault makes a panic of this goroutine.
// The page walk keeps both from happening to a file that was sound when
// opened; guard covers damage done to it later, while it is open.
func guard(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("bbolt: %s: %w", oneLine(fmt.Sprint(r)), errCorrupt)
		}
	}()
	return fn()
}

// DamageError reports damage found in a store's file, in the words its
// user reads: "store PATH is damaged: WHAT". It unwraps to
// habilis.ErrDamaged and to what was found. Callers pass it on as it is
// (it names the file) and add what to do about it.
type DamageError struct {
	Path string
	Err  error
}

func (e *DamageError) Error() string   { return "store " + e.Path + " is damaged: " + e.Err.Error() }
func (e *DamageError) Unwrap() []error { return []error{habilis.ErrDamaged, e.Err} }

// damaged makes an error that reports damage (errCorrupt, ErrDamaged) a
// *DamageError naming the file; other errors pass unchanged.
func (s *Store) damaged(err error) error {
	var de *DamageError
	switch {
	case errors.As(err, &de):
		return err
	case errors.Is(err, habilis.ErrDamaged), errors.Is(err, errCorrupt):
		return &DamageError{Path: s.path, Err: err}
	}
	return err
}

// opError wraps err, of op on the store, once: damage as the *DamageError
// naming the file, anything else with the operation.
func (s *Store) opError(op string, err error) error {
	if err = s.damaged(err); errors.Is(err, habilis.ErrDamaged) {
		return err
	}
	return fmt.Errorf("store %s: %s: %w", s.path, op, err)
}

// oneLine joins the lines of a panic's message (bbolt's may have several).
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// errFresh reports a file with no buckets at all: a new store.
var errFresh = errors.New("fresh file")

// initialize checks that db holds a habilis store of a format this package
// reads, and creates the buckets of a new one. It writes only to a fresh
// file, so opening a foreign file leaves it as it was.
func initialize(db *bolt.DB, readOnly bool) error {
	switch err := db.View(checkFormat); {
	case !errors.Is(err, errFresh):
		return err
	case readOnly:
		return nil // read-only and empty: snapshots are empty
	}
	return db.Update(func(tx *bolt.Tx) error {
		if err := checkFormat(tx); !errors.Is(err, errFresh) {
			return err
		}
		meta, err := tx.CreateBucket([]byte(bucketMeta))
		if err != nil {
			return err
		}
		if err := meta.Put([]byte(keyFormat), binaryFormat()); err != nil {
			return err
		}
		if _, err := tx.CreateBucket([]byte(bucketTools)); err != nil {
			return err
		}
		_, err = tx.CreateBucket([]byte(bucketExamples))
		return err
	})
}

// checkFormat tells a habilis store from a new file, a foreign file and a
// damaged store. A file bbolt has only initialised (transaction 0 and 1)
// is new; one written since that has no buckets has lost them, and one
// with the tools and examples buckets but no readable format is a damaged
// habilis store rather than a foreign one.
func checkFormat(tx *bolt.Tx) error {
	meta := tx.Bucket([]byte(bucketMeta))
	tools, examples := catalogBuckets(tx)
	habilisBuckets := tools != nil && examples != nil
	if meta == nil {
		var other []byte
		tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			switch n := string(name); {
			case n == bucketIndex || n == bucketPatch:
				return nil // the selector's index, which a store may lose with the rest
			case strings.HasPrefix(n, bucketTools+stagedPrefix) || strings.HasPrefix(n, bucketExamples+stagedPrefix):
				habilisBuckets = true // a staged write's (staged.go)
				return nil
			}
			other = slices.Clone(name)
			return errFresh // stop at the first bucket
		})
		txid := tx.ID()
		if tx.Writable() {
			txid--
		}
		switch {
		case habilisBuckets:
			return fmt.Errorf("no %q bucket: %w", bucketMeta, errCorrupt)
		case other != nil:
			return fmt.Errorf("not a habilis store (a bbolt file without habilis' buckets: it has bucket %q): %w", other, habilis.ErrInvalid)
		case txid > 1:
			return fmt.Errorf("no buckets, though the file was written (transaction %d): %w", txid, errCorrupt)
		}
		return errFresh
	}
	v := meta.Get([]byte(keyFormat))
	if len(v) != 4 {
		if habilisBuckets {
			return fmt.Errorf("no format version: %w", errCorrupt)
		}
		return fmt.Errorf("not a habilis store (no format version): %w", habilis.ErrInvalid)
	}
	switch f := binary.BigEndian.Uint32(v); {
	case f > formatVersion:
		return fmt.Errorf("format version %d is newer than the supported %d: %w", f, formatVersion, habilis.ErrInvalid)
	case f < 1:
		return fmt.Errorf("not a habilis store (format version %d): %w", f, habilis.ErrInvalid)
	}
	if !habilisBuckets {
		return fmt.Errorf("missing buckets: %w", errCorrupt)
	}
	return nil
}

// storedFormat returns the format version of a store checkFormat accepts.
func storedFormat(tx *bolt.Tx) int {
	return int(binary.BigEndian.Uint32(tx.Bucket([]byte(bucketMeta)).Get([]byte(keyFormat))))
}

// Path returns the file the store was opened on.
func (s *Store) Path() string { return s.path }

// Close releases the file. It is idempotent; after it, Snapshot and Write
// return ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if err := s.closeDB(); err != nil {
		return fmt.Errorf("store %s: close: %w", s.path, err)
	}
	return nil
}

// ctxCheckEvery is how many tools a write or snapshot handles between
// checks of its context.
const ctxCheckEvery = 512

// Snapshot returns the catalog as of the last committed write.
func (s *Store) Snapshot(ctx context.Context) (*habilis.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store %s: snapshot: %w", s.path, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, fmt.Errorf("store %s: snapshot: %w", s.path, habilis.ErrClosed)
	}
	var snap *habilis.Snapshot
	err := guard(func() error {
		return s.db.View(func(tx *bolt.Tx) error {
			var err error
			snap, err = readSnapshot(ctx, tx)
			return err
		})
	})
	if err != nil {
		return nil, s.opError("snapshot", err)
	}
	return snap, nil
}

func readMeta(tx *bolt.Tx) (habilis.CatalogMeta, error) {
	mb := tx.Bucket([]byte(bucketMeta))
	if mb == nil {
		return habilis.CatalogMeta{}, nil
	}
	v := mb.Get([]byte(keyCatalog))
	if v == nil {
		return habilis.CatalogMeta{}, nil
	}
	m, err := decodeMeta(v)
	if err != nil {
		return habilis.CatalogMeta{}, fmt.Errorf("catalog meta: %w", err)
	}
	return m, nil
}

func readSnapshot(ctx context.Context, tx *bolt.Tx) (*habilis.Snapshot, error) {
	switch err := checkFormat(tx); {
	case errors.Is(err, errFresh):
		return &habilis.Snapshot{}, nil // a new file opened read-only
	case err != nil:
		return nil, err
	}
	meta, err := readMeta(tx)
	if err != nil {
		return nil, err
	}
	snap := &habilis.Snapshot{Meta: meta}
	tools, examples := catalogBuckets(tx)
	format := storedFormat(tx)

	// Pass 1: measure.
	need, n, err := measureWithin(tx, format, tools, meta)
	if err != nil {
		return nil, err
	}
	// Pass 2: decode into slabs of exactly the measured sizes.
	d := &decoder{s: newSlabs(format, need), examples: examples, keys: newExampleKeys(examples)}
	d.s.held = &heldRows{index: storedIndexData(tx)}
	recs, err := d.all(ctx, tools, n)
	if err != nil {
		return nil, err
	}
	d.s.finish()
	if n > 0 {
		snap.Records = recs
	}
	return snap, nil
}

// measureWithin measures the tools as measure does and refuses sizes a
// damaged store could claim: tools with no catalog meta, or more bytes
// than the file holds.
func measureWithin(tx *bolt.Tx, format int, tools *bolt.Bucket, meta habilis.CatalogMeta) (sizes, int, error) {
	need, n, err := measure(format, tools)
	if err != nil {
		return sizes{}, 0, err
	}
	if n > 0 && meta.Version == 0 {
		return sizes{}, 0, fmt.Errorf("%d tools but no catalog meta: %w", n, errCorrupt)
	}
	// The sizes come partly from stored summaries; a corrupt one must not
	// make us allocate more than the file could possibly hold. Each float
	// takes its 4 bytes in the file, but from format 2 on a sparse index
	// may take none (kinds 3 to 5 name it by its place in the terms), so
	// indices, never more than floats, are not counted.
	claimed := uint64(need.text) + 4*uint64(need.floats) + uint64(need.raw) + 2*uint64(need.examples)
	if claimed > uint64(tx.Size()) {
		return sizes{}, 0, fmt.Errorf("tools: sizes exceed the file: %w", errCorrupt)
	}
	return need, n, nil
}

// all decodes the n tools measured in tools and their examples, and
// checks that they filled the slabs exactly as measured.
func (d *decoder) all(ctx context.Context, tools *bolt.Bucket, n int) ([]habilis.Record, error) {
	recs := make([]habilis.Record, n)
	i := 0
	c := tools.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if i%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if i == n {
			return nil, fmt.Errorf("tools: more than %d: %w", n, errCorrupt)
		}
		if err := d.record(k, v, &recs[i]); err != nil {
			if d.s.held.err != nil {
				return nil, d.s.held.err
			}
			return nil, fmt.Errorf("tool %q: %w", k, err)
		}
		i++
	}
	if err := d.keys.done(); err != nil {
		return nil, err
	}
	if s := d.s; i != n || len(s.refs) != cap(s.refs) || len(s.floats) != cap(s.floats) || len(s.indices) != cap(s.indices) {
		return nil, fmt.Errorf("tools: sizes do not match their summaries: %w", errCorrupt)
	}
	return recs, nil
}

// measure adds up what decoding every tool and its examples needs, and
// counts the tools.
func measure(format int, tools *bolt.Bucket) (sizes, int, error) {
	s := &slabs{measuring: true, format: format}
	var n int
	var scratch habilis.Record
	c := tools.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if _, err := s.tool(v, &scratch); err != nil {
			return sizes{}, 0, fmt.Errorf("tool %q: %w", k, err)
		}
		s.strFrom(k, &scratch.Tool.Name)
		n++
	}
	return s.need, n, nil
}

// decoder decodes tools and their examples into one set of slabs.
type decoder struct {
	s        *slabs
	examples *bolt.Bucket
	keys     exampleKeys
	next     int // the next free slot of s.examples and s.vectors
}

// record decodes tool k, whose value is v, and its examples into rec.
func (d *decoder) record(k, v []byte, rec *habilis.Record) error {
	s := d.s
	if !s.strFrom(k, &rec.Tool.Name) {
		return errCorrupt
	}
	s.name = k
	sum, err := s.tool(v, rec)
	if err != nil {
		return err
	}
	ev, err := d.keys.take(k, sum.count > 0)
	if err != nil {
		return err
	}
	if sum.count == 0 {
		return nil
	}
	if sum.count > len(s.examples)-d.next {
		return fmt.Errorf("examples: %w", errCorrupt)
	}
	texts := s.examples[d.next : d.next+sum.count : d.next+sum.count]
	vecs := s.vectors[d.next : d.next+sum.count : d.next+sum.count]
	d.next += sum.count
	if err := readExamples(s, d.examples, k, ev, texts, vecs); err != nil {
		return fmt.Errorf("examples: %w", err)
	}
	rec.Tool.Examples, rec.ExampleVectors = texts, vecs
	return nil
}

// exampleKeys walks the examples bucket's keys in step with the tools,
// both in name order, so that examples of no tool (what a lost tool
// leaves behind) show.
type exampleKeys struct {
	c    *bolt.Cursor
	k, v []byte // the next key not yet matched to a tool, and its value
}

func newExampleKeys(b *bolt.Bucket) exampleKeys {
	c := b.Cursor()
	k, v := c.First()
	return exampleKeys{c: c, k: k, v: v}
}

// take matches tool k, which has examples or not, with the next key, and
// returns that key's value (nil for a nested bucket, as format 1 has).
func (e *exampleKeys) take(k []byte, has bool) ([]byte, error) {
	switch {
	case e.k != nil && bytes.Compare(e.k, k) < 0:
		return nil, fmt.Errorf("examples of tool %q, which is not stored: %w", e.k, errCorrupt)
	case !bytes.Equal(e.k, k):
		return nil, nil
	case !has:
		return nil, fmt.Errorf("examples stored for a tool of none: %w", errCorrupt)
	}
	v := e.v
	e.k, e.v = e.c.Next()
	return v, nil
}

// done fails if keys are left that no tool matched.
func (e *exampleKeys) done() error {
	if e.k != nil {
		return fmt.Errorf("examples of tool %q, which is not stored: %w", e.k, errCorrupt)
	}
	return nil
}

// readExamples decodes the examples of tool k, which must be exactly
// len(texts): in format 2 the value v, the tool's key in the examples
// bucket; in format 1 the nested bucket of that name.
func readExamples(s *slabs, examples *bolt.Bucket, k, v []byte, texts []string, vecs []habilis.Vector) error {
	if s.format >= 2 {
		if v == nil { // a nested bucket, or no key at all
			return errCorrupt
		}
		return s.examplesValue(v, texts, vecs)
	}
	b := examples.Bucket(k)
	if b == nil {
		return errCorrupt
	}
	c := b.Cursor()
	i := 0
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if i == len(texts) || len(k) != 4 || binary.BigEndian.Uint32(k) != uint32(i) {
			return errCorrupt
		}
		if err := s.example(v, &texts[i], &vecs[i]); err != nil {
			return fmt.Errorf("%d: %w", i, err)
		}
		i++
	}
	if i != len(texts) {
		return errCorrupt
	}
	return nil
}

// Write commits b in one transaction: all of it or, on any error, nothing.
func (s *Store) Write(ctx context.Context, b *habilis.Batch) (habilis.CatalogMeta, error) {
	if b == nil {
		return habilis.CatalogMeta{}, fmt.Errorf("store %s: write: no batch: %w", s.path, habilis.ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return habilis.CatalogMeta{}, fmt.Errorf("store %s: write: %w", s.path, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return habilis.CatalogMeta{}, fmt.Errorf("store %s: write: %w", s.path, habilis.ErrClosed)
	}
	if s.readOnly {
		return habilis.CatalogMeta{}, fmt.Errorf("store %s: write: %w", s.path, habilis.ErrReadOnly)
	}
	if err := validate(b); err != nil {
		return habilis.CatalogMeta{}, fmt.Errorf("store %s: write: %w", s.path, err)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	var meta habilis.CatalogMeta
	var err error
	if len(b.Put) > s.chunk() && (b.Replace || s.empty()) {
		meta, err = s.writeStaged(ctx, b)
	} else {
		err = guard(func() error {
			return s.db.Update(func(tx *bolt.Tx) error {
				if err := checkFormat(tx); err != nil {
					return err // buckets lost since Open
				}
				var err error
				meta, err = write(ctx, tx, b, s.progress)
				return err
			})
		})
	}
	if err != nil {
		return habilis.CatalogMeta{}, s.opError("write", err)
	}
	return meta, nil
}

// validate refuses what habilis.Batch.Validate refuses, and names longer
// than bbolt's key limit.
func validate(b *habilis.Batch) error {
	for i := range b.Put {
		if n := len(b.Put[i].Tool.Name); n > bolt.MaxKeySize {
			return fmt.Errorf("put %d: tool name of %d bytes: %w", i, n, habilis.ErrInvalid)
		}
	}
	return b.Validate()
}

// write applies a validated batch inside tx, first rewriting a format 1
// catalog the batch does not replace in the current format (migrate.go).
func write(ctx context.Context, tx *bolt.Tx, b *habilis.Batch, progress func(done, total int)) (habilis.CatalogMeta, error) {
	stored, err := readMeta(tx)
	if err != nil {
		return habilis.CatalogMeta{}, err
	}
	if stored.Version != b.BaseVersion {
		return habilis.CatalogMeta{}, fmt.Errorf("batch based on version %d, store is at %d: %w", b.BaseVersion, stored.Version, habilis.ErrConflict)
	}
	tools, _ := catalogBuckets(tx)
	for _, name := range b.Delete {
		if tools.Get([]byte(name)) == nil {
			return habilis.CatalogMeta{}, fmt.Errorf("delete %q: no such tool: %w", name, habilis.ErrInvalid)
		}
	}
	hold := newHolder(b.Index)
	switch format := storedFormat(tx); {
	case b.Replace:
		// Every stored tool goes: new buckets, the old ones' pages freed
		// whole rather than each tool deleted.
		err = resetBuckets(tx)
	case format == 1:
		err = migrate(ctx, tx, progress)
	case format == 2:
		// A format 2 value is a format 4 value (codec.go), and leaves no
		// vector to the index.
		err = markFormat(tx)
	case !keepsIndex(tx, b.Index, b.IndexPatch):
		err = rehome(ctx, tx, b, hold)
	}
	if err == nil && !b.Replace && storedFormat(tx) == 3 {
		err = markFormat(tx) // a format 3 value is a format 4 value
	}
	if err != nil {
		return habilis.CatalogMeta{}, err
	}
	if err := putTools(ctx, tx, b, hold); err != nil {
		return habilis.CatalogMeta{}, err
	}

	return commitMeta(tx, b, stored)
}

// commitMeta writes the batch's meta, of the version after stored, and
// its index.
func commitMeta(tx *bolt.Tx, b *habilis.Batch, stored habilis.CatalogMeta) (habilis.CatalogMeta, error) {
	meta := b.Meta
	meta.Version = stored.Version + 1
	meta.UpdatedAt = time.Now().UTC().Round(0)
	if err := tx.Bucket([]byte(bucketMeta)).Put([]byte(keyCatalog), appendMeta(nil, meta)); err != nil {
		return habilis.CatalogMeta{}, fmt.Errorf("catalog meta: %w", err)
	}
	if err := writeIndex(tx, b.Index, b.IndexPatch); err != nil {
		return habilis.CatalogMeta{}, err
	}
	// The caller's meta must not alias the batch, which it may reuse.
	meta.EmbedderState = bytes.Clone(meta.EmbedderState)
	meta.LexicalState = bytes.Clone(meta.LexicalState)
	meta.Calibration = bytes.Clone(meta.Calibration)
	return meta, nil
}

// putTools applies the batch's deletes and puts to a catalog of the
// current format, leaving to the index the batch stores (hold) the
// vectors it holds.
func putTools(ctx context.Context, tx *bolt.Tx, b *habilis.Batch, hold *holder) error {
	tools, examples := catalogBuckets(tx)
	if k, _ := tools.Cursor().First(); k == nil {
		// The buckets are empty (new, or reset by a Replace) and the puts
		// come in name order: appended, so pages are filled whole rather
		// than split in half, bbolt's default.
		tools.FillPercent, examples.FillPercent = 1, 1
	}
	if !b.Replace {
		for _, name := range b.Delete {
			if err := remove(tools, examples, []byte(name)); err != nil {
				return fmt.Errorf("delete %q: %w", name, err)
			}
		}
	}
	// bbolt keeps references to keys and values until commit, so they are
	// carved from an arena rather than a reused buffer. Puts go in name
	// order, which bbolt appends to its pages most cheaply.
	var a arena
	e := encoder{hold: hold}
	for n, i := range nameOrder(b.Put) {
		if n%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		r := &b.Put[i]
		if err := putTool(tools, examples, &a, &e, r); err != nil {
			return fmt.Errorf("put %q: %w", r.Tool.Name, err)
		}
	}
	return nil
}

// nameOrder returns the indices of recs in the order of their names.
func nameOrder(recs []habilis.Record) []int {
	order := make([]int, len(recs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int { return strings.Compare(recs[i].Tool.Name, recs[j].Tool.Name) })
	return order
}

// putTool stores r, replacing the tool of its name.
func putTool(tools, examples *bolt.Bucket, a *arena, e *encoder, r *habilis.Record) error {
	key := a.copy([]byte(r.Tool.Name))
	e.setTerms(r)
	if err := tools.Put(key, a.encode(func(b []byte) []byte { return e.tool(b, r) })); err != nil {
		return err
	}
	if len(r.Tool.Examples) == 0 {
		return examples.Delete(key)
	}
	return examples.Put(key, a.encode(func(b []byte) []byte { return e.examples(b, r) }))
}

// remove deletes a tool and its examples, if present.
func remove(tools, examples *bolt.Bucket, name []byte) error {
	if err := tools.Delete(name); err != nil {
		return err
	}
	return examples.Delete(name)
}

// resetBuckets replaces the tools and examples buckets with empty ones and
// marks the store of the format this package writes.
func resetBuckets(tx *bolt.Tx) error {
	tools, examples := catalogNames(tx)
	for _, name := range []string{tools, examples} {
		if err := tx.DeleteBucket([]byte(name)); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if _, err := tx.CreateBucket([]byte(name)); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return markFormat(tx)
}

// markFormat marks the store of the format this package writes.
func markFormat(tx *bolt.Tx) error {
	return tx.Bucket([]byte(bucketMeta)).Put([]byte(keyFormat), binaryFormat())
}

// binaryFormat is the stored form of formatVersion.
func binaryFormat() []byte { return binary.BigEndian.AppendUint32(nil, formatVersion) }

// arenaChunk is the size of the blocks an arena hands out slices of.
const arenaChunk = 1 << 20

// arena hands out byte slices carved from large blocks, so a write of
// 100,000 examples allocates a few hundred blocks rather than 200,000
// slices. After reset it hands out its blocks again: a write staged in
// several transactions (staged.go) reuses one transaction's blocks for
// the next.
type arena struct {
	buf    []byte   // the block being filled
	blocks [][]byte // every block allocated
	next   int      // blocks[next:] are free
}

// grow makes a.buf a free block of room for n bytes.
func (a *arena) grow(n int) {
	for a.next < len(a.blocks) {
		b := a.blocks[a.next]
		a.next++
		if cap(b) >= n {
			a.buf = b[:0]
			return
		}
	}
	a.buf = make([]byte, 0, max(arenaChunk, n))
	a.blocks = append(a.blocks, a.buf)
	a.next = len(a.blocks)
}

// reset frees every block for reuse: the slices handed out so far must no
// longer be used.
func (a *arena) reset() { a.buf, a.next = nil, 0 }

// encode returns what enc appends to an empty slice, in the arena: enc
// appends to the current block directly, rather than to a buffer the value
// is then copied from. Appending within a slice's capacity never moves it,
// so the value was written in place unless it outgrew the block.
func (a *arena) encode(enc func([]byte) []byte) []byte {
	n := len(a.buf)
	b := enc(a.buf)
	if len(b) > cap(a.buf) {
		// append moved it: into a block with room, and the moved one is
		// dropped.
		v := b[n:]
		a.grow(len(v))
		a.buf = append(a.buf, v...)
		n, b = 0, a.buf
	}
	a.buf = b
	return b[n:len(b):len(b)]
}

// copy returns a copy of p that stays valid until the arena is reset or
// dropped.
func (a *arena) copy(p []byte) []byte {
	if len(p) > cap(a.buf)-len(a.buf) {
		a.grow(len(p))
	}
	n := len(a.buf)
	a.buf = append(a.buf, p...)
	return a.buf[n:len(a.buf):len(a.buf)]
}
