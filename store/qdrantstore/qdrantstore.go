// Package qdrantstore is a habilis.Store kept in Qdrant, for deployments that
// already run it or share one catalog between many routers.
//
// # Layout
//
// A catalog named c lives in collections prefixed "habilis_c_" (see
// names.go for the exact names):
//   - a tools collection with one point per tool: named vectors
//     "description" and "centroid" (dense of the embedder's dimension,
//     compared by dot product, or sparse for sparse embedders), the sparse
//     "document" (the lexical vector of the whole tool) and a payload
//     with name, description, schema (a JSON string), examples (the count),
//     example_vectors, radius, has_radius, radius_example, margin,
//     tool_margin, hash, executor and meta;
//   - examples, one point per example with "tool", "index" and "text" in
//     the payload and the named vector "example": one collection per tool
//     (LayoutPerTool), or one collection with a "tool" keyword index marked
//     is_tenant (LayoutShared);
//   - a meta collection, payload only, whose single point holds the
//     CatalogMeta (version, embedder, base64 embedder state, calibration,
//     update time) and says how the version is laid out.
//
// # Writes
//
// Qdrant has no transactions, so every Write builds a complete new version
// of the catalog in collections of its own ("habilis_c_v<N>_<token>_..."):
// unchanged records are copied from the snapshot read at the start, puts
// and deletes applied. Then it commits: it inserts the point of version N
// into the catalog's ledger, a collection of one point per version naming
// the collections that hold it, in a way that never replaces a point
// already there (see ledger.go). That insert is the commit point, and the
// version check: of two writers building version N from the same base,
// whoever's point lands first commits, and the other gets ErrConflict and
// drops what it built, whichever process each runs in. A write that fails
// before its commit leaves the catalog as it was.
//
// Readers (Snapshot, Version) read the newest version of the ledger, then
// the collections it names, so they never mix versions; when a concurrent
// write drops those collections mid-read, the snapshot starts over.
//
// After the commit, one UpdateAliases call re-points the catalog's aliases
// to the new collections, the meta alias last, for readers outside habilis;
// Qdrant holds readers off while it applies the actions of one call, so
// they see the old catalog or the new one. Then the collections of older
// versions that no alias names are dropped. A switch that fails puts the
// aliases back where they were, and the next write points them again.
//
// Commits rely on Qdrant applying an upsert's update filter, which it does
// from release 1.16; Write refuses to run against an older Qdrant, which
// would ignore the filter and let a second writer replace a commit.

package qdrantstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/habilis-router/habilis"
	"github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// errGone reports a collection that disappeared under a read, which happens
// when a concurrent write commits and drops the version being read.
var errGone = errors.New("collection no longer exists")

// snapshotAttempts bounds how often a snapshot starts over because a
// concurrent write dropped the version it was reading.
const snapshotAttempts = 3

// Store is a habilis.Store in Qdrant. It is safe for concurrent use.
type Store struct {
	cfg    Config
	names  names
	client *qdrant.Client

	// server is the Qdrant release, as its health check gives it.
	server string

	// writeMu serialises this Store's writes, so that they conflict
	// cleanly instead of racing for the commit.
	writeMu sync.Mutex

	mu     sync.RWMutex
	closed bool
}

var _ habilis.Store = (*Store)(nil)

// Open connects to Qdrant and checks that it answers. It returns ErrInvalid
// for a bad Config and ErrUnavailable when Qdrant cannot be reached. Open
// creates nothing: an empty catalog has no collections until its first
// write.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("qdrant: open: %w", err)
	}
	client, err := qdrant.NewClient(&qdrant.Config{
		Host:                   cfg.Host,
		Port:                   cfg.Port,
		APIKey:                 cfg.APIKey,
		UseTLS:                 cfg.TLS,
		SkipCompatibilityCheck: true,
		PoolSize:               1,
		// Qdrant's gRPC services take and send messages of any size, and
		// a page of tools with long sparse vectors easily passes grpc-go's
		// default 4 MB limit on received messages.
		GrpcOptions: []grpc.DialOption{grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(math.MaxInt32))},
	})
	if err != nil {
		return nil, fmt.Errorf("connect to qdrant at %s: %v: %w", cfg.addr(), err, habilis.ErrInvalid)
	}
	s := &Store{cfg: cfg, names: newNames(cfg.Catalog), client: client}
	err = s.retry(ctx, func(ctx context.Context) error {
		reply, err := client.HealthCheck(ctx)
		s.server = reply.GetVersion()
		return err
	})
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("connect to qdrant at %s: %w", cfg.addr(), classify(ctx, err))
	}
	return s, nil
}

// Close releases the connection. Further calls return ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("qdrant: close: %w", habilis.ErrClosed)
	}
	s.closed = true
	if err := s.client.Close(); err != nil {
		return fmt.Errorf("qdrant: close: %v", err)
	}
	return nil
}

func (s *Store) checkOpen() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return habilis.ErrClosed
	}
	return nil
}

// Snapshot returns the catalog as of the last committed write.
func (s *Store) Snapshot(ctx context.Context) (*habilis.Snapshot, error) {
	if err := s.checkOpen(); err != nil {
		return nil, fmt.Errorf("qdrant: snapshot: %w", err)
	}
	snap, _, err := s.snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("qdrant: snapshot: %w", err)
	}
	return snap, nil
}

// Version returns the version of the last committed write: the newest of
// the ledger, or for a catalog without one the version field of the meta
// point.
func (s *Store) Version(ctx context.Context) (uint64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, fmt.Errorf("qdrant: version: %w", err)
	}
	ledger, found, err := s.commits(ctx)
	if err != nil {
		return 0, fmt.Errorf("qdrant: version: %w", err)
	}
	if found {
		return ledger[len(ledger)-1].version, nil
	}
	var pts []*qdrant.RetrievedPoint
	err = s.retry(ctx, func(ctx context.Context) error {
		var err error
		pts, err = s.client.Get(ctx, &qdrant.GetPoints{
			CollectionName: s.names.metaAlias(),
			Ids:            []*qdrant.PointId{qdrant.NewIDNum(metaPointID)},
			WithPayload:    qdrant.NewWithPayloadInclude(keyVersion),
		})
		return err
	})
	if status.Code(err) == codes.NotFound {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("qdrant: version: read meta %s: %w", s.names.metaAlias(), classify(ctx, err))
	}
	if len(pts) != 1 {
		return 0, fmt.Errorf("qdrant: version: read meta %s: %d meta points, want 1", s.names.metaAlias(), len(pts))
	}
	r := payloadReader{p: pts[0].GetPayload()}
	v := r.int(keyVersion)
	if r.err != nil {
		return 0, fmt.Errorf("qdrant: version: read meta %s: %w", s.names.metaAlias(), r.err)
	}
	return uint64(v), nil
}

// snapshot reads the live version and reports how it is laid out.
func (s *Store) snapshot(ctx context.Context) (*habilis.Snapshot, live, error) {
	snap, l, _, err := s.readCatalog(ctx)
	return snap, l, err
}

// readCatalog reads the committed version, its records and the ledger,
// again when a newer commit drops that version while it is read (up to
// snapshotAttempts times). A catalog never written is an empty snapshot.
func (s *Store) readCatalog(ctx context.Context) (*habilis.Snapshot, live, []commit, error) {
	for attempt := 1; ; attempt++ {
		l, ledger, found, err := s.readHead(ctx)
		var recs []habilis.Record
		if err == nil && found {
			recs, err = s.readRecords(ctx, l)
		}
		if errors.Is(err, errGone) && attempt < snapshotAttempts {
			continue
		}
		if err != nil {
			return nil, live{}, nil, err
		}
		if !found {
			return &habilis.Snapshot{}, live{}, ledger, nil
		}
		return &habilis.Snapshot{Meta: l.meta, Records: recs}, l, ledger, nil
	}
}

// readLive reads the committed version; found is false for a catalog
// never written. A version that a newer commit dropped while it was being
// read is errGone.
func (s *Store) readLive(ctx context.Context) (l live, found bool, err error) {
	l, _, found, err = s.readHead(ctx)
	return l, found, err
}

// readHead reads the committed version and the ledger: the newest version
// of the ledger and its meta point, or, for a catalog without a ledger,
// the meta point of its meta alias (and no ledger).
func (s *Store) readHead(ctx context.Context) (live, []commit, bool, error) {
	ledger, found, err := s.commits(ctx)
	if err != nil {
		return live{}, nil, false, err
	}
	if !found {
		l, found, err := s.readMeta(ctx, s.names.metaAlias())
		if errors.Is(err, errGone) {
			return live{}, nil, false, nil
		}
		return l, nil, found, err
	}
	c := ledger[len(ledger)-1]
	l, _, err := s.readMeta(ctx, s.names.metaCollection(c.group))
	if err != nil {
		return live{}, nil, false, err
	}
	if l.group != c.group || l.meta.Version != c.version {
		return live{}, nil, false, fmt.Errorf("ledger names group %s for version %d, but its meta says group %s, version %d", c.group, c.version, l.group, l.meta.Version)
	}
	return l, ledger, true, nil
}

// readMeta reads the meta point of a collection (or of the one an alias
// names). A missing collection is errGone.
func (s *Store) readMeta(ctx context.Context, collection string) (live, bool, error) {
	var pts []*qdrant.RetrievedPoint
	err := s.retry(ctx, func(ctx context.Context) error {
		var err error
		pts, err = s.client.Get(ctx, &qdrant.GetPoints{
			CollectionName: collection,
			Ids:            []*qdrant.PointId{qdrant.NewIDNum(metaPointID)},
			WithPayload:    qdrant.NewWithPayload(true),
		})
		return err
	})
	if err != nil {
		return live{}, false, fmt.Errorf("read meta %s: %w", collection, classify(ctx, err))
	}
	if len(pts) != 1 {
		return live{}, false, fmt.Errorf("read meta %s: %d meta points, want 1", collection, len(pts))
	}
	l, err := liveFromPayload(pts[0].GetPayload())
	if err != nil {
		return live{}, false, fmt.Errorf("read meta %s: %w", collection, err)
	}
	return l, true, nil
}

// readRecords reads every record of version l from its own collections.
func (s *Store) readRecords(ctx context.Context, l live) ([]habilis.Record, error) {
	if err := s.checkDim(ctx, l); err != nil {
		return nil, err
	}
	type pending struct {
		rec         habilis.Record
		n           int
		exampleVecs bool
	}
	var tools []pending
	err := s.scroll(ctx, s.names.toolsCollection(l.group), nil, func(p *qdrant.RetrievedPoint) error {
		rec, n, ev, err := toolFromPoint(p.GetPayload(), p.GetVectors())
		if err != nil {
			return err
		}
		tools = append(tools, pending{rec, n, ev})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(tools) != l.tools {
		return nil, fmt.Errorf("version %d: %d tool points, the meta says %d", l.meta.Version, len(tools), l.tools)
	}
	examples := map[string][]example{}
	collect := func(p *qdrant.RetrievedPoint) error {
		e, err := exampleFromPoint(p.GetPayload(), p.GetVectors())
		if err != nil {
			return err
		}
		examples[e.tool] = append(examples[e.tool], e)
		return nil
	}
	if l.layout == LayoutShared {
		if err := s.scroll(ctx, s.names.examplesCollection(l.group), nil, collect); err != nil {
			return nil, err
		}
	} else {
		for _, t := range tools {
			if t.n == 0 {
				continue
			}
			if err := s.scroll(ctx, s.names.toolExamplesCollection(l.group, t.rec.Tool.Name), nil, collect); err != nil {
				return nil, err
			}
		}
	}
	recs := make([]habilis.Record, len(tools))
	for i, t := range tools {
		recs[i] = t.rec
		if err := attachExamples(&recs[i], t.n, t.exampleVecs, examples[t.rec.Tool.Name]); err != nil {
			return nil, fmt.Errorf("version %d: %w", l.meta.Version, err)
		}
		delete(examples, t.rec.Tool.Name)
	}
	for tool := range examples {
		return nil, fmt.Errorf("version %d: examples of unknown tool %q", l.meta.Version, tool)
	}
	slices.SortFunc(recs, func(a, b habilis.Record) int { return strings.Compare(a.Tool.Name, b.Tool.Name) })
	return recs, nil
}

// checkDim compares the tools collection's vector size with the embedder's
// dimension, catching collections altered outside habilis.
func (s *Store) checkDim(ctx context.Context, l live) error {
	want := l.meta.Embedder.Dim
	if want == 0 {
		return nil
	}
	name := s.names.toolsCollection(l.group)
	var info *qdrant.CollectionInfo
	err := s.retry(ctx, func(ctx context.Context) error {
		var err error
		info, err = s.client.GetCollectionInfo(ctx, name)
		return err
	})
	if err != nil {
		return fmt.Errorf("collection %s: %w", name, classify(ctx, err))
	}
	got := denseSize(info, vecDescription)
	if got != want {
		return fmt.Errorf("collection %s has vector size %d but the embedder %s has dimension %d: %w", name, got, l.meta.Embedder, want, habilis.ErrInvalid)
	}
	return nil
}

// denseSize returns the size of a collection's named dense vector, 0 when
// it has none.
func denseSize(info *qdrant.CollectionInfo, vector string) int {
	vc := info.GetConfig().GetParams().GetVectorsConfig()
	if p := vc.GetParamsMap().GetMap()[vector]; p != nil {
		return int(p.GetSize())
	}
	return 0
}

// scroll calls fn for every point of collection (matching filter), with
// its payload and vectors, one page of BatchSize points per call.
func (s *Store) scroll(ctx context.Context, collection string, filter *qdrant.Filter, fn func(*qdrant.RetrievedPoint) error) error {
	return s.scrollPoints(ctx, &qdrant.ScrollPoints{
		CollectionName: collection,
		Filter:         filter,
		Limit:          qdrant.PtrOf(uint32(s.cfg.BatchSize)),
		WithPayload:    qdrant.NewWithPayload(true),
		WithVectors:    qdrant.NewWithVectors(true),
	}, fn)
}

// scrollPoints calls fn for every point req selects, page after page from
// req's offset. A collection that does not exist gives an error wrapping
// errGone.
func (s *Store) scrollPoints(ctx context.Context, req *qdrant.ScrollPoints, fn func(*qdrant.RetrievedPoint) error) error {
	for {
		var (
			pts  []*qdrant.RetrievedPoint
			next *qdrant.PointId
		)
		err := s.retry(ctx, func(ctx context.Context) error {
			var err error
			pts, next, err = s.client.ScrollAndOffset(ctx, req)
			return err
		})
		if err != nil {
			return fmt.Errorf("scroll %s: %w", req.CollectionName, classify(ctx, err))
		}
		for _, p := range pts {
			if err := fn(p); err != nil {
				return fmt.Errorf("scroll %s: %w", req.CollectionName, err)
			}
		}
		if next == nil || len(pts) == 0 {
			return nil
		}
		req.Offset = next
	}
}

// Examples returns one tool's examples and their vectors, read from the
// committed version without a full snapshot. It returns ErrNotFound for a
// tool the catalog does not have.
func (s *Store) Examples(ctx context.Context, tool string) ([]string, []habilis.Vector, error) {
	if err := s.checkOpen(); err != nil {
		return nil, nil, fmt.Errorf("qdrant: examples %q: %w", tool, err)
	}
	for attempt := 1; ; attempt++ {
		texts, vecs, err := s.examples(ctx, tool)
		if errors.Is(err, errGone) && attempt < snapshotAttempts {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("qdrant: examples %q: %w", tool, err)
		}
		return texts, vecs, nil
	}
}

func (s *Store) examples(ctx context.Context, tool string) ([]string, []habilis.Vector, error) {
	l, found, err := s.readLive(ctx)
	if err != nil {
		return nil, nil, err
	}
	if !found {
		return nil, nil, habilis.ErrNotFound
	}
	var pts []*qdrant.RetrievedPoint
	err = s.retry(ctx, func(ctx context.Context) error {
		var err error
		pts, err = s.client.Get(ctx, &qdrant.GetPoints{
			CollectionName: s.names.toolsCollection(l.group),
			Ids:            []*qdrant.PointId{toolPointID(tool)},
			WithPayload:    qdrant.NewWithPayloadInclude(keyName, keyExamples),
		})
		return err
	})
	if err != nil {
		return nil, nil, classify(ctx, err)
	}
	if len(pts) == 0 {
		return nil, nil, habilis.ErrNotFound
	}
	r := payloadReader{p: pts[0].GetPayload()}
	n := int(r.int(keyExamples))
	if r.err != nil {
		return nil, nil, r.err
	}
	if n == 0 {
		return nil, nil, nil
	}
	collection, filter := s.names.toolExamplesCollection(l.group, tool), (*qdrant.Filter)(nil)
	if l.layout == LayoutShared {
		collection, filter = s.names.examplesCollection(l.group), toolFilter(tool)
	}
	var exs []example
	err = s.scroll(ctx, collection, filter, func(p *qdrant.RetrievedPoint) error {
		e, err := exampleFromPoint(p.GetPayload(), p.GetVectors())
		exs = append(exs, e)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	rec := habilis.Record{Tool: habilis.Tool{Name: tool}}
	if err := attachExamples(&rec, n, true, exs); err != nil {
		return nil, nil, err
	}
	return rec.Tool.Examples, rec.ExampleVectors, nil
}

// Write commits b as a new version of the catalog (see the package
// documentation for how and what "atomic" means here).
func (s *Store) Write(ctx context.Context, b *habilis.Batch) (habilis.CatalogMeta, error) {
	if err := s.checkOpen(); err != nil {
		return habilis.CatalogMeta{}, fmt.Errorf("qdrant: write: %w", err)
	}
	if b == nil {
		return habilis.CatalogMeta{}, fmt.Errorf("qdrant: write: nil batch: %w", habilis.ErrInvalid)
	}
	if s.cfg.ReadOnly {
		return habilis.CatalogMeta{}, fmt.Errorf("qdrant: write: catalog %s: %w", s.cfg.Catalog, habilis.ErrReadOnly)
	}
	if err := validate(b); err != nil {
		return habilis.CatalogMeta{}, fmt.Errorf("qdrant: write: %w", err)
	}
	if !conditional(s.server) {
		return habilis.CatalogMeta{}, fmt.Errorf("qdrant: write: Qdrant %s cannot commit a version atomically (conditional updates need Qdrant %d.%d or later): %w",
			s.server, conditionalSince[0], conditionalSince[1], habilis.ErrInvalid)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	meta, err := s.write(ctx, b)
	if err != nil {
		return habilis.CatalogMeta{}, fmt.Errorf("qdrant: write: %w", err)
	}
	return meta, nil
}

func (s *Store) write(ctx context.Context, b *habilis.Batch) (habilis.CatalogMeta, error) {
	cur, curLive, ledger, err := s.current(ctx, b)
	if err != nil {
		return habilis.CatalogMeta{}, err
	}
	if cur.Meta.Version != b.BaseVersion {
		return habilis.CatalogMeta{}, fmt.Errorf("batch based on version %d, stored version is %d: %w", b.BaseVersion, cur.Meta.Version, habilis.ErrConflict)
	}
	recs, err := apply(cur.Records, b)
	if err != nil {
		return habilis.CatalogMeta{}, err
	}
	dim, err := vectorSpace(recs, b.Meta.Embedder)
	if err != nil {
		return habilis.CatalogMeta{}, err
	}
	token, err := newToken()
	if err != nil {
		return habilis.CatalogMeta{}, err
	}

	meta := b.Meta
	meta.Version = cur.Meta.Version + 1
	meta.UpdatedAt = time.Unix(0, time.Now().UnixNano()).UTC()
	next := live{meta: meta, layout: s.cfg.Layout, group: group(meta.Version, token), tools: len(recs), dim: dim}
	plan := s.names.plan(next.group, next.layout, recs, dim, s.cfg.SparseIDF)

	var created []string
	keep := false
	defer func() {
		if !keep {
			s.drop(context.WithoutCancel(ctx), created)
		}
	}()
	// fail reports a failed build as a conflict when another writer
	// committed meanwhile (it may even have dropped our collections).
	fail := func(err error) error {
		if l, found, rerr := s.readLive(ctx); rerr == nil && found && l.group != curLive.group {
			return fmt.Errorf("catalog changed to version %d during the write (%v): %w", l.meta.Version, err, habilis.ErrConflict)
		}
		return err
	}
	if err := s.build(ctx, next, plan, recs, &created); err != nil {
		return habilis.CatalogMeta{}, fail(err)
	}
	keep, err = s.commitVersion(ctx, next, ledger)
	switch {
	case err != nil && (keep || errors.Is(err, habilis.ErrConflict)):
		return habilis.CatalogMeta{}, err
	case err != nil:
		return habilis.CatalogMeta{}, fail(err)
	}
	wctx := context.WithoutCancel(ctx)
	s.publish(wctx, next, plan.aliases)
	s.dropStale(wctx, next)
	s.pruneLedger(wctx, ledger, meta.Version)
	// The caller's meta must not alias the batch, which it may reuse.
	meta.EmbedderState = bytes.Clone(meta.EmbedderState)
	meta.LexicalState = bytes.Clone(meta.LexicalState)
	meta.Calibration = bytes.Clone(meta.Calibration)
	return meta, nil
}

// commitVersion commits version next, whose collections are built, in
// the ledger (read before the build). maybeLive reports whether they may
// be the catalog now: after a commit, and when the outcome is unknown. It
// returns ErrConflict when another writer committed the version first.
func (s *Store) commitVersion(ctx context.Context, next live, ledger []commit) (maybeLive bool, err error) {
	if len(ledger) == 0 {
		if err := s.ensureLedger(ctx); err != nil {
			return false, err
		}
	}
	won, err := s.commit(ctx, commit{version: next.meta.Version, group: next.group})
	if unknown := (*errUnknownOutcome)(nil); errors.As(err, &unknown) {
		return true, err
	}
	if err != nil {
		return false, err
	}
	if !won {
		return false, fmt.Errorf("version %d was committed by another writer during the write: %w", next.meta.Version, habilis.ErrConflict)
	}
	return true, nil
}

// build creates and fills the collections of version next, adding each
// collection's name to created as it creates it.
func (s *Store) build(ctx context.Context, next live, plan layoutPlan, recs []habilis.Record, created *[]string) error {
	for _, c := range plan.creates {
		*created = append(*created, c.CollectionName)
		err := s.retry(ctx, func(ctx context.Context) error { return s.client.CreateCollection(ctx, c) })
		// A retried create that finds its collection means the first
		// attempt landed: names carry this write's random token.
		if err != nil && !alreadyExists(err) {
			return fmt.Errorf("create collection %s: %w", c.CollectionName, classify(ctx, err))
		}
	}
	if next.layout == LayoutShared {
		idx := tenantIndex(s.names.examplesCollection(next.group))
		err := s.retry(ctx, func(ctx context.Context) error {
			_, err := s.client.CreateFieldIndex(ctx, idx)
			return err
		})
		if err != nil {
			return fmt.Errorf("index %s: %w", idx.CollectionName, classify(ctx, err))
		}
	}
	return s.upload(ctx, next, plan, recs)
}

// publish points the catalog's aliases at version next, which has
// committed, for readers outside habilis. It leaves them alone when a
// newer version committed meanwhile, whose writer points them. A switch
// that fails partway is undone, so that the aliases name one version, the
// previous one, until the next write.
func (s *Store) publish(ctx context.Context, next live, aliases map[string]string) {
	ledger, found, err := s.commits(ctx)
	if err != nil || !found || ledger[len(ledger)-1].group != next.group {
		return
	}
	prev, err := s.aliasTargets(ctx)
	if err != nil {
		return
	}
	current := slices.Collect(maps.Keys(prev))
	ops := aliasSwitch(current, aliases, s.names.metaAlias())
	// Every action of the switch gives the same result when applied twice,
	// so retrying it after a lost reply is safe.
	err = s.retry(ctx, func(ctx context.Context) error { return s.client.UpdateAliases(ctx, ops) })
	if err != nil && len(prev) > 0 {
		_ = s.retry(ctx, func(ctx context.Context) error { return s.client.UpdateAliases(ctx, aliasRestore(prev, aliases)) })
	}
}

// aliasTargets returns this catalog's aliases and the collection each
// names.
func (s *Store) aliasTargets(ctx context.Context) (map[string]string, error) {
	var all []*qdrant.AliasDescription
	err := s.retry(ctx, func(ctx context.Context) error {
		var err error
		all, err = s.client.ListAliases(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list aliases: %w", classify(ctx, err))
	}
	out := map[string]string{}
	for _, a := range all {
		if s.names.isAlias(a.GetAliasName()) {
			out[a.GetAliasName()] = a.GetCollectionName()
		}
	}
	return out, nil
}

// current reads what b applies to: the live version, its records and the
// ledger. A batch that replaces every record and deletes none keeps
// nothing of them, so for it only the live version is read.
func (s *Store) current(ctx context.Context, b *habilis.Batch) (*habilis.Snapshot, live, []commit, error) {
	if !b.Replace || len(b.Delete) > 0 {
		return s.readCatalog(ctx)
	}
	l, ledger, _, err := s.readHead(ctx)
	if err != nil {
		return nil, live{}, nil, err
	}
	return &habilis.Snapshot{Meta: l.meta}, l, ledger, nil
}

// upload fills the collections of plan: tools, examples, then the meta
// point.
func (s *Store) upload(ctx context.Context, next live, plan layoutPlan, recs []habilis.Record) error {
	tools := make([]*qdrant.PointStruct, len(recs))
	for i := range recs {
		tools[i] = toolPoint(&recs[i])
	}
	if err := s.upsert(ctx, s.names.toolsCollection(next.group), tools); err != nil {
		return err
	}
	shared := next.layout == LayoutShared
	var all []*qdrant.PointStruct
	for i := range recs {
		r := &recs[i]
		if len(r.Tool.Examples) == 0 {
			continue
		}
		pts := make([]*qdrant.PointStruct, len(r.Tool.Examples))
		for j, text := range r.Tool.Examples {
			var v habilis.Vector
			if r.ExampleVectors != nil {
				v = r.ExampleVectors[j]
			}
			pts[j] = examplePoint(r.Tool.Name, j, text, v, shared)
		}
		if shared {
			all = append(all, pts...)
			continue
		}
		if err := s.upsert(ctx, s.names.toolExamplesCollection(next.group, r.Tool.Name), pts); err != nil {
			return err
		}
	}
	if shared {
		if err := s.upsert(ctx, s.names.examplesCollection(next.group), all); err != nil {
			return err
		}
	}
	return s.upsert(ctx, s.names.metaCollection(next.group), []*qdrant.PointStruct{metaPoint(next)})
}

// upsert writes pts in batches of BatchSize, waiting for each to be applied.
func (s *Store) upsert(ctx context.Context, collection string, pts []*qdrant.PointStruct) error {
	for _, r := range batches(len(pts), s.cfg.BatchSize) {
		req := &qdrant.UpsertPoints{CollectionName: collection, Wait: qdrant.PtrOf(true), Points: pts[r[0]:r[1]]}
		err := s.retry(ctx, func(ctx context.Context) error {
			_, err := s.client.Upsert(ctx, req)
			return err
		})
		if err != nil {
			return fmt.Errorf("upsert %d points into %s: %w", r[1]-r[0], collection, classify(ctx, err))
		}
	}
	return nil
}

// drop deletes collections, best effort: a leftover is removed by the next
// successful write (dropStale).
func (s *Store) drop(ctx context.Context, collections []string) {
	for _, c := range collections {
		_ = s.retry(ctx, func(ctx context.Context) error { return s.client.DeleteCollection(ctx, c) })
	}
}

// dropStale deletes, after a commit, every versioned collection of this
// catalog from a version up to the committed one other than the committed
// group and those an alias still names (left on an older version by a
// switch that failed): the previous version, and leftovers of failed or
// losing writes. Later versions are left alone: they belong to writes in
// progress. When the aliases cannot be listed nothing is dropped; the next
// write drops it.
func (s *Store) dropStale(ctx context.Context, committed live) {
	targets, err := s.aliasTargets(ctx)
	if err != nil {
		return
	}
	var all []string
	err = s.retry(ctx, func(ctx context.Context) error {
		var err error
		all, err = s.client.ListCollections(ctx)
		return err
	})
	if err != nil {
		return
	}
	named := map[string]bool{}
	for _, c := range targets {
		named[c] = true
	}
	all = slices.DeleteFunc(all, func(c string) bool { return named[c] })
	s.drop(ctx, staleCollections(s.names, all, committed.meta.Version, committed.group))
}

// staleCollections picks the collections dropStale deletes.
func staleCollections(n names, all []string, version uint64, committed string) []string {
	var out []string
	for _, c := range all {
		if v, g, ok := n.parseCollection(c); ok && v <= version && g != committed {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// retry runs f with the per-call timeout, retrying with exponential backoff
// while Qdrant answers codes.Unavailable.
func (s *Store) retry(ctx context.Context, f func(context.Context) error) error {
	wait := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		err := f(cctx)
		cancel()
		if err == nil || attempt >= s.cfg.Retries || status.Code(err) != codes.Unavailable || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// classify attaches the matching sentinel to an error of a Qdrant call.
func classify(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%v: %w", err, ctxErr)
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return fmt.Errorf("%v: %w", err, habilis.ErrUnavailable)
	case codes.InvalidArgument:
		return fmt.Errorf("%v: %w", err, habilis.ErrInvalid)
	case codes.NotFound:
		return fmt.Errorf("%v: %w", err, errGone)
	}
	return err
}

// alreadyExists reports Qdrant's answer to creating a collection that
// exists: InvalidArgument "Collection `x` already exists!" from released
// versions (a BadInput storage error), AlreadyExists from later ones.
func alreadyExists(err error) bool {
	switch status.Code(err) {
	case codes.AlreadyExists:
		return true
	case codes.InvalidArgument:
		return strings.Contains(status.Convert(err).Message(), "already exists")
	}
	return false
}

// newToken returns the random part of a version's collection names.
func newToken() (string, error) {
	b := make([]byte, tokenLen/2)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random token: %v", err)
	}
	return hex.EncodeToString(b), nil
}
