package boltstore_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/boltstore"
	"github.com/habilis-router/habilis/store/storetest"
	bolt "go.etcd.io/bbolt"
)

// pageRole is what a page of a pristine file holds, as bbolt's own page
// listing (Tx.Page) says: the walk under test plays no part in it.
type pageRole string

const (
	roleMeta     pageRole = "meta"
	roleFreelist pageRole = "freelist"
	roleBranch   pageRole = "branch"   // the first page of a branch
	roleNode     pageRole = "node"     // the first page of a leaf
	roleOverflow pageRole = "overflow" // a later page of a large node
	roleFree     pageRole = "free"
	roleBeyond   pageRole = "beyond" // past bbolt's high-water mark
)

// pageRoles lists the role of every page of the bbolt file at path, and
// returns its page size.
func pageRoles(t *testing.T, path string, size int64) ([]pageRole, int) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ps := int64(db.Info().PageSize)
	roles := make([]pageRole, size/ps)
	for i := range roles {
		roles[i] = roleBeyond
	}
	err = db.View(func(tx *bolt.Tx) error {
		for id := 0; id < len(roles); {
			info, err := tx.Page(id)
			if err != nil {
				return err
			}
			if info == nil { // past the high-water mark
				return nil
			}
			switch info.Type {
			case "meta":
				roles[id] = roleMeta
			case "freelist":
				roles[id] = roleFreelist
			case "free":
				roles[id] = roleFree
			case "branch":
				roles[id] = roleBranch
			case "leaf":
				roles[id] = roleNode
			default:
				return fmt.Errorf("page %d: type %s", id, info.Type)
			}
			for k := 1; k <= info.OverflowCount; k++ {
				roles[id+k] = roleOverflow
				if info.Type == "freelist" {
					roles[id+k] = roleFreelist
				}
			}
			id += 1 + info.OverflowCount
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return roles, int(ps)
}

// damage is one way of damaging a file at a page.
type damage struct {
	name string
	// page returns the damaged contents of a page of role r, or nil to
	// truncate the file at the page.
	page func(p []byte, r pageRole, rng *rand.Rand) []byte
	// structural reports whether the damage is certain to change what
	// bbolt reads of a page of role r, so that reading it must fail.
	structural func(r pageRole) bool
}

func onStructure(r pageRole) bool {
	return r == roleMeta || r == roleFreelist || r == roleBranch || r == roleNode
}

var damages = []damage{
	{"garbage", func(p []byte, _ pageRole, rng *rand.Rand) []byte {
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		return p
	}, onStructure},
	{"zeroes", func(p []byte, _ pageRole, _ *rand.Rand) []byte { return make([]byte, len(p)) }, onStructure},
	// A flipped bit where bbolt keeps its structure: a meta (header and
	// meta, checksummed), the freelist's header and first ids, a node's
	// header and elements (count, overflow, positions, sizes, child
	// pages). Elsewhere it lands in a value's bytes.
	{"flip", func(p []byte, r pageRole, rng *rand.Rand) []byte {
		n := len(p)
		switch r {
		case roleMeta:
			n = 80
		case roleFreelist:
			// Its header and the free page ids it lists, 8 bytes each.
			n = min(64, 16+8*int(binary.NativeEndian.Uint16(p[10:])))
		case roleBranch, roleNode:
			n = min(n, 16+16*int(binary.NativeEndian.Uint16(p[10:])))
		}
		p[rng.IntN(n)] ^= 1 << rng.IntN(8)
		return p
	}, func(r pageRole) bool { return r == roleMeta || r == roleFreelist }},
	{"truncate", func([]byte, pageRole, *rand.Rand) []byte { return nil },
		func(r pageRole) bool { return r != roleBeyond }},
}

// damagedStore writes a store of format (2, or 1 as its release wrote
// them) of a few writes (so that it has free pages and both meta pages
// differ) with dense and sparse tools, some of whose values span several
// pages.
func damagedStore(t *testing.T, path string, format int) *habilis.Snapshot {
	t.Helper()
	ctx := context.Background()
	recs := storetest.Catalog(40, 3, false, 1)
	// Enough wide tools to fill a dozen 64 KiB leaf pages.
	for i := range 40 {
		recs = append(recs, storetest.Generate(fmt.Sprintf("wide-%02d", i), 6, storetest.Shape{Dim: 700}, int64(i)))
		if i < 10 {
			recs = append(recs, storetest.Generate(fmt.Sprintf("sparse-%d", i), 4, storetest.Shape{NonZeros: 300}, int64(i)))
		}
	}
	meta := storetest.Meta(8, 1)
	if format == 1 {
		boltstore.WriteFormat1(t, path, recs[:30], meta)
		meta.Version = 2
		boltstore.WriteFormat1(t, path, recs, meta)
	}
	s := testutil.BoltStore(t, path)
	if format != 1 {
		if _, err := s.Write(ctx, &habilis.Batch{Put: recs[:30], Meta: meta}); err != nil {
			t.Fatal(err)
		}
		meta.Version = 1
		if _, err := s.Write(ctx, &habilis.Batch{BaseVersion: 1, Replace: true, Put: recs, Meta: meta}); err != nil {
			t.Fatal(err)
		}
	}
	want := storetest.Snapshot(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// bbolt grows files ahead of use; a few pages past the high-water
	// mark are enough to see that damage there changes nothing.
	if err := os.Truncate(path, testutil.HighWater(t, path)+4*int64(os.Getpagesize())); err != nil {
		t.Fatal(err)
	}
	return want
}

// TestDamagedPages writes each kind of damage over each page of a real
// store and opens and reads it, read-only and for writing. Nothing may
// panic or fault (the test binary would die); a read either fails with
// ErrDamaged naming the file, or returns the catalog as written, or (when
// the damage lies inside a value bbolt keeps without checksum, where it
// may decode) a catalog Check reports as damaged. Damage to the structure
// (meta, freelist, a node's first page) always fails, and a damaged store
// never reads as an empty one.
func TestDamagedPages(t *testing.T) {
	for _, format := range []int{2, 1} {
		t.Run(fmt.Sprintf("format %d", format), func(t *testing.T) { testDamagedPages(t, format) })
	}
}

func testDamagedPages(t *testing.T, format int) {
	dir := t.TempDir()
	pristinePath := filepath.Join(dir, "pristine.db")
	want := damagedStore(t, pristinePath, format)
	pristine := readFile(t, pristinePath)
	roles, ps := pageRoles(t, pristinePath, int64(len(pristine)))
	counts := map[pageRole]int{}
	for _, r := range roles {
		counts[r]++
	}
	if counts[roleOverflow] == 0 || counts[roleFree] == 0 || counts[roleNode] < 10 || counts[roleBranch] == 0 {
		t.Fatalf("the store has pages %v: want overflow, free, branch and leaf pages", counts)
	}
	path := filepath.Join(dir, "habilis.db")
	writeFile(t, path, pristine)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	outcomes := map[string]int{}
	for _, d := range damages {
		for page, role := range roles {
			orig := pristine[page*ps : (page+1)*ps]
			p := d.page(append([]byte(nil), orig...), role, rng)
			writePage(t, f, page, ps, p)
			for _, ro := range []bool{true, false} {
				name := fmt.Sprintf("%s page %d (%s, read-only %v)", d.name, page, role, ro)
				outcome := readDamaged(t, name, path, ro, want)
				switch {
				case (outcome == "read" || outcome == "checked" || outcome == "unseen") && d.structural(role):
					t.Errorf("%s: read without error, want %v", name, habilis.ErrDamaged)
				case outcome == "unseen" && d.name != "flip" && role != roleOverflow:
					t.Errorf("%s: read another catalog without error, and Check() found nothing", name)
				}
				outcomes[d.name+"/"+string(role)+"/"+outcome]++
			}
			writePage(t, f, page, ps, pristine[page*ps:])
		}
	}
	t.Logf("pages %v; outcomes %v", counts, outcomes)
}

// writePage writes p at page, or truncates the file there when p is nil.
func writePage(t *testing.T, f *os.File, page, ps int, p []byte) {
	t.Helper()
	var err error
	if p == nil {
		err = f.Truncate(int64(page * ps))
	} else {
		_, err = f.WriteAt(p, int64(page*ps))
	}
	if err != nil {
		t.Fatal(err)
	}
}

// readDamaged opens and reads the store at path and says how it went:
// "error" (ErrDamaged, naming the file), "read" (the catalog as written)
// or "checked" (another catalog, which Check reports as damaged). A file
// truncated to nothing is a new one, which a writable store initialises
// and a read-only one refuses as no store.
func readDamaged(t *testing.T, name, path string, readOnly bool, want *habilis.Snapshot) string {
	t.Helper()
	if fi, err := os.Stat(path); err == nil && fi.Size() == 0 {
		return readEmpty(t, name, path, readOnly)
	}
	damaged := func(op string, err error) string {
		if !errors.Is(err, habilis.ErrDamaged) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %s error = %v, want %v naming %s", name, op, err, habilis.ErrDamaged, path)
		}
		return "error"
	}
	s, err := boltstore.Open(path, boltstore.Options{ReadOnly: readOnly})
	if err != nil {
		return damaged("Open", err)
	}
	defer s.Close()
	snap, err := s.Snapshot(context.Background())
	if err != nil {
		return damaged("Snapshot", err)
	}
	if len(snap.Records) != len(want.Records) {
		t.Errorf("%s: Snapshot() = %d records, want an error or %d", name, len(snap.Records), len(want.Records))
	}
	if reflect.DeepEqual(want, snap) {
		return "read"
	}
	s.Close()
	rep, err := boltstore.Check(context.Background(), path, boltstore.CheckOptions{Records: checkGenerated})
	if err != nil || rep.Sound() {
		return "unseen"
	}
	return "checked"
}

func readEmpty(t *testing.T, name, path string, readOnly bool) string {
	t.Helper()
	s, err := boltstore.Open(path, boltstore.Options{ReadOnly: readOnly})
	if readOnly {
		if !errors.Is(err, habilis.ErrInvalid) {
			t.Errorf("%s: Open() error = %v, want %v", name, err, habilis.ErrInvalid)
		}
		return "error"
	}
	if err != nil {
		t.Fatalf("%s: Open() error = %v", name, err)
	}
	s.Close()
	return "new"
}

// checkGenerated checks what the records storetest generates mean, as
// selector.CheckSnapshot does for the selector's: each hash is its tool's,
// each vector is unit length.
func checkGenerated(snap *habilis.Snapshot) []string {
	var out []string
	for _, r := range snap.Records {
		h := fnv.New128a()
		b, _ := json.Marshal(r.Tool)
		h.Write(b)
		if hex.EncodeToString(h.Sum(nil)) != r.Hash {
			out = append(out, fmt.Sprintf("tool %q: hash", r.Tool.Name))
		}
		for _, v := range append([]habilis.Vector{r.DescriptionVector, r.Centroid, r.DocumentVector}, r.ExampleVectors...) {
			xs := v.Dense
			if xs == nil {
				xs = v.Values
			}
			var ss float64
			for _, x := range xs {
				ss += float64(x) * float64(x)
			}
			if len(xs) > 0 && math.Abs(ss-1) > 1e-3 {
				out = append(out, fmt.Sprintf("tool %q: norm", r.Tool.Name))
			}
		}
	}
	return out
}

// FuzzOpen writes arbitrary bytes as a store file and opens, reads and
// checks it: nothing may panic or fault, every failure to read is
// ErrDamaged or ErrInvalid (not a habilis store), naming the file, and
// Check reports damage or says the file is not a habilis store.
func FuzzOpen(f *testing.F) {
	dir := f.TempDir()
	seed := filepath.Join(dir, "seed.db")
	s, err := boltstore.Open(seed, boltstore.Options{})
	if err != nil {
		f.Fatal(err)
	}
	recs := []habilis.Record{storetest.Record("a", 2, false, 1), storetest.Record("b", 1, true, 2)}
	if _, err := s.Write(context.Background(), &habilis.Batch{Put: recs, Meta: storetest.Meta(8, 1)}); err != nil {
		f.Fatal(err)
	}
	s.Close()
	b, err := os.ReadFile(seed)
	if err != nil {
		f.Fatal(err)
	}
	b = b[:testutil.HighWater(f, seed)] // bbolt grows files ahead of use
	f.Add(b)
	f.Add(b[:len(b)/2])
	// A store written through the selector, whose records leave their
	// vectors to the index beside them.
	held := filepath.Join(dir, "held.db")
	hs := testutil.BoltStore(f, held)
	hr := testutil.LexicalRouter(f, hs)
	if _, err := hr.Load(context.Background(), heldTools(3, "seed"), selector.LoadOptions{}); err != nil {
		f.Fatal(err)
	}
	hr.Close() // it holds the file open while it reads the index there
	hs.Close()
	if b, err = os.ReadFile(held); err != nil {
		f.Fatal(err)
	}
	f.Add(b[:testutil.HighWater(f, held)])
	f.Fuzz(func(t *testing.T, file []byte) {
		path := filepath.Join(t.TempDir(), "habilis.db")
		writeFile(t, path, file)
		for _, ro := range []bool{true, false} {
			s, err := boltstore.Open(path, boltstore.Options{ReadOnly: ro})
			if err == nil {
				_, err = s.Snapshot(context.Background())
				s.Close()
			}
			if err != nil && !errors.Is(err, habilis.ErrDamaged) && !errors.Is(err, habilis.ErrInvalid) {
				t.Errorf("Open and Snapshot (read-only %v) error = %v, want %v or %v", ro, err, habilis.ErrDamaged, habilis.ErrInvalid)
			}
			if err != nil && !strings.Contains(err.Error(), path) {
				t.Errorf("Open and Snapshot (read-only %v) error = %v, want it to name %s", ro, err, path)
			}
		}
		if _, err := boltstore.Check(context.Background(), path, boltstore.CheckOptions{}); err != nil &&
			(!errors.Is(err, habilis.ErrInvalid) || !strings.Contains(err.Error(), path)) {
			t.Errorf("Check() error = %v, want a report, or %v (not a habilis store) naming %s", err, habilis.ErrInvalid, path)
		}
	})
}

// TestCycle makes a branch page its own first child: bbolt would descend
// into it forever (Cursor.search recurses until the stack overflows, which
// no recover catches). The walk refuses the file first.
func TestCycle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "habilis.db")
	damagedStore(t, path, 2)
	roles, ps := pageRoles(t, path, int64(len(readFile(t, path))))
	b := readFile(t, path)
	for id, r := range roles {
		if r != roleBranch {
			continue
		}
		binary.NativeEndian.PutUint64(b[id*ps+16+8:], uint64(id)) // element 0's child
		writeFile(t, path, b)
		for _, ro := range []bool{true, false} {
			_, err := boltstore.Open(path, boltstore.Options{ReadOnly: ro})
			if !errors.Is(err, habilis.ErrDamaged) || !strings.Contains(err.Error(), "referenced twice") {
				t.Errorf("Open(branch page %d its own child, read-only %v) error = %v, want %v, page referenced twice", id, ro, err, habilis.ErrDamaged)
			}
		}
		rep, err := boltstore.Check(context.Background(), path, boltstore.CheckOptions{})
		if err != nil || rep.Sound() {
			t.Errorf("Check(branch page %d its own child) = %+v, %v, want problems", id, rep, err)
		}
		return
	}
	t.Fatal("the store has no branch page")
}

// TestLostBuckets removes every bucket of a written store: it must read
// as damaged, not as a new, empty store.
func TestLostBuckets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "habilis.db")
	s := testutil.BoltStore(t, path)
	if _, err := s.Write(context.Background(), &habilis.Batch{Put: storetest.Catalog(3, 2, false, 1)}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	boltUpdate(t, path, func(tx *bolt.Tx) error {
		for _, b := range []string{"meta", "tools", "examples"} {
			if err := tx.DeleteBucket([]byte(b)); err != nil {
				return err
			}
		}
		return nil
	})
	for _, ro := range []bool{true, false} {
		_, err := boltstore.Open(path, boltstore.Options{ReadOnly: ro})
		if !errors.Is(err, habilis.ErrDamaged) || !strings.Contains(err.Error(), "no buckets") {
			t.Errorf("Open(no buckets, read-only %v) error = %v, want %v", ro, err, habilis.ErrDamaged)
		}
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	sound := filepath.Join(dir, "sound.db")
	want := damagedStore(t, sound, 2)
	rep, err := boltstore.Check(ctx, sound, boltstore.CheckOptions{Records: checkGenerated})
	if err != nil || !rep.Sound() || rep.Tools != len(want.Records) || rep.Version != want.Meta.Version || rep.Pages == 0 {
		t.Errorf("Check(sound store) = %+v, %v; want sound, %d tools, version %d", rep, err, len(want.Records), want.Meta.Version)
	}

	// Garbage over every page but the metas: many problems, listed up to
	// the limit.
	b := readFile(t, sound)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 2 * os.Getpagesize(); i < len(b); i++ {
		b[i] = byte(rng.Uint32())
	}
	damaged := filepath.Join(dir, "damaged.db")
	writeFile(t, damaged, b)
	rep, err = boltstore.Check(ctx, damaged, boltstore.CheckOptions{Limit: 1})
	if err != nil || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "page") {
		t.Errorf("Check(damaged, limit 1) = %+v, %v; want one problem naming a page", rep, err)
	}
	if !bytes.Equal(readFile(t, damaged), b) {
		t.Errorf("Check changed the file")
	}

	foreign := filepath.Join(dir, "foreign.db")
	writeFile(t, foreign, []byte("not a database"))
	if rep, err := boltstore.Check(ctx, foreign, boltstore.CheckOptions{}); !errors.Is(err, habilis.ErrInvalid) || !strings.Contains(err.Error(), foreign+": not a habilis store") {
		t.Errorf("Check(foreign file) = %+v, %v; want %v: not a habilis store, naming it", rep, err, habilis.ErrInvalid)
	}
	if _, err := boltstore.Check(ctx, filepath.Join(dir, "absent.db"), boltstore.CheckOptions{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Check(absent file) error = %v, want %v", err, os.ErrNotExist)
	}
	held := testutil.BoltStore(t, filepath.Join(dir, "held.db"))
	defer held.Close()
	if _, err := boltstore.Check(ctx, held.Path(), boltstore.CheckOptions{Timeout: 50e6}); !errors.Is(err, habilis.ErrUnavailable) {
		t.Errorf("Check(store held by a writer) error = %v, want %v", err, habilis.ErrUnavailable)
	}
}

// TestCheckNotAStore: a directory and an empty file hold nothing to be
// damaged: Check and Compact say they are not stores, as opening them
// does, and Compact writes no store into the empty file.
func TestCheckNotAStore(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	empty := filepath.Join(dir, "empty.db")
	writeFile(t, empty, nil)
	for path, want := range map[string]string{dir: "a directory, not a habilis store", empty: "not a habilis store (an empty file)"} {
		if _, err := boltstore.Check(ctx, path, boltstore.CheckOptions{}); !errors.Is(err, habilis.ErrInvalid) || !strings.Contains(err.Error(), path+": "+want) {
			t.Errorf("Check(%s) error = %v, want %v naming it, %q", path, err, habilis.ErrInvalid, want)
		}
		if _, err := boltstore.Compact(ctx, path, boltstore.CheckOptions{}); !errors.Is(err, habilis.ErrInvalid) || !strings.Contains(err.Error(), path+": "+want) {
			t.Errorf("Compact(%s) error = %v, want %v naming it, %q", path, err, habilis.ErrInvalid, want)
		}
	}
	if b := readFile(t, empty); len(b) != 0 {
		t.Errorf("Compact(empty file) wrote %d bytes into it", len(b))
	}
}
