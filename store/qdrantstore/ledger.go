package qdrantstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/habilis-router/habilis"
	"github.com/qdrant/go-client/qdrant"
)

// The commit ledger. Qdrant has no transaction that could check a
// catalog's version and switch its aliases in one step, so a write commits
// by a point of its own: the catalog's commits collection holds one
// payload-only point per version, whose id is the version and whose
// payload names the group of collections holding it. A write inserts the
// point of its base version + 1 in a way that never replaces an existing
// point, then reads it back: when it names the write's group the write has
// committed, and otherwise another writer committed that version first and
// the write returns ErrConflict. Qdrant applies the updates of one
// collection one after another, checking an update's condition against
// what the updates before it left, so of two writers inserting the same
// version exactly one lands. Readers take the highest version of the
// ledger; a catalog without one (written before the ledger existed) is
// read through its meta alias, and its next write starts the ledger.

// commitsPage is how many ledger points one scroll call reads: more than
// a pruned ledger holds.
const commitsPage = 64

// keepCommits is how many versions a write leaves in the ledger; older
// points are deleted. Only the newest matters to readers and writers.
const keepCommits = 16

// conditionalSince is the first Qdrant release that applies an upsert's
// update filter, which the commit needs (Qdrant 1.16 release notes:
// conditional updates). Earlier releases ignore the field and would let a
// second writer overwrite a commit.
var conditionalSince = [2]int{1, 16}

// commit is one point of the ledger.
type commit struct {
	version uint64
	group   string
}

// commitPoint is the ledger point committing version v in group g.
func commitPoint(c commit) *qdrant.PointStruct {
	return &qdrant.PointStruct{
		Id:      qdrant.NewIDNum(c.version),
		Vectors: qdrant.NewVectorsMap(map[string]*qdrant.Vector{}),
		Payload: map[string]*qdrant.Value{
			keyVersion: qdrant.NewValueInt(int64(c.version)),
			keyGroup:   qdrant.NewValueString(c.group),
		},
	}
}

// commitFromPoint reads a ledger point.
func commitFromPoint(p *qdrant.RetrievedPoint) (commit, error) {
	r := payloadReader{p: p.GetPayload()}
	c := commit{version: uint64(r.int(keyVersion)), group: r.str(keyGroup)}
	if r.err != nil {
		return commit{}, r.err
	}
	if id := p.GetId().GetNum(); id != c.version {
		return commit{}, fmt.Errorf("ledger point %d says version %d: %w", id, c.version, habilis.ErrInvalid)
	}
	return c, nil
}

// commits returns the ledger, oldest first; found is false when the
// catalog has no ledger (never written, or written before the ledger
// existed) or an empty one (a first write creating it).
func (s *Store) commits(ctx context.Context) ([]commit, bool, error) {
	var out []commit
	err := s.scrollPoints(ctx, &qdrant.ScrollPoints{
		CollectionName: s.names.commitsCollection(),
		Limit:          qdrant.PtrOf(uint32(commitsPage)),
		WithPayload:    qdrant.NewWithPayloadInclude(keyVersion, keyGroup),
	}, func(p *qdrant.RetrievedPoint) error {
		c, err := commitFromPoint(p)
		out = append(out, c)
		return err
	})
	if errors.Is(err, errGone) && ctx.Err() == nil {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read ledger: %w", err)
	}
	slices.SortFunc(out, func(a, b commit) int { return cmpVersion(a.version, b.version) })
	return out, len(out) > 0, nil
}

func cmpVersion(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ensureLedger creates the ledger of a catalog that has none yet. Two
// writers may both create it; the second finds it there.
func (s *Store) ensureLedger(ctx context.Context) error {
	c := createCollection(s.names.commitsCollection(), 0, false)
	err := s.retry(ctx, func(ctx context.Context) error { return s.client.CreateCollection(ctx, c) })
	if err != nil && !alreadyExists(err) {
		return fmt.Errorf("create ledger %s: %w", c.CollectionName, classify(ctx, err))
	}
	return nil
}

// errUnknownOutcome reports a commit whose result could not be read back:
// the version may or may not have been committed.
type errUnknownOutcome struct {
	version uint64
	err     error
}

func (e *errUnknownOutcome) Error() string {
	return fmt.Sprintf("commit of version %d: the outcome is unknown, read the catalog again: %v", e.version, e.err)
}

func (e *errUnknownOutcome) Unwrap() error { return e.err }

// commit inserts c into the ledger unless the version is already there,
// and reports whether c is what the ledger holds for it. An error after
// the insert was sent is an *errUnknownOutcome.
func (s *Store) commit(ctx context.Context, c commit) (bool, error) {
	id := qdrant.NewIDNum(c.version)
	req := &qdrant.UpsertPoints{
		CollectionName: s.names.commitsCollection(),
		Wait:           qdrant.PtrOf(true),
		Points:         []*qdrant.PointStruct{commitPoint(c)},
		// Insert only: update_mode says so from Qdrant 1.17; the filter,
		// which no point of this id passes, from 1.16.
		UpdateMode:   qdrant.UpdateMode_InsertOnly.Enum(),
		UpdateFilter: &qdrant.Filter{MustNot: []*qdrant.Condition{qdrant.NewHasID(id)}},
		// Strong ordering sends the update through each shard's primary
		// replica, so that replicas agree on which insert came first.
		Ordering: &qdrant.WriteOrdering{Type: qdrant.WriteOrderingType_Strong},
	}
	sendErr := s.retry(ctx, func(ctx context.Context) error {
		_, err := s.client.Upsert(ctx, req)
		return err
	})
	// Read the point back whatever the insert answered: a reply lost
	// after the insert landed leaves the point there, and so does a
	// caller giving up after sending it.
	rctx := context.WithoutCancel(ctx)
	var pts []*qdrant.RetrievedPoint
	err := s.retry(rctx, func(ctx context.Context) error {
		var err error
		pts, err = s.client.Get(ctx, &qdrant.GetPoints{
			CollectionName: s.names.commitsCollection(),
			Ids:            []*qdrant.PointId{id},
			WithPayload:    qdrant.NewWithPayloadInclude(keyVersion, keyGroup),
		})
		return err
	})
	switch {
	case err != nil:
		if sendErr != nil {
			err = sendErr
		}
		return false, &errUnknownOutcome{version: c.version, err: classify(rctx, err)}
	case len(pts) == 0 && sendErr != nil:
		return false, fmt.Errorf("commit version %d: %w", c.version, classify(ctx, sendErr))
	case len(pts) == 0:
		return false, fmt.Errorf("commit version %d: the ledger point is missing after its insert", c.version)
	}
	got, err := commitFromPoint(pts[0])
	if err != nil {
		return false, fmt.Errorf("commit version %d: %w", c.version, err)
	}
	return got.group == c.group, nil
}

// pruneLedger deletes, best effort, the points of ledger (read before the
// commit of version v) older than the keepCommits newest.
func (s *Store) pruneLedger(ctx context.Context, ledger []commit, v uint64) {
	var ids []*qdrant.PointId
	for _, c := range ledger {
		if c.version+keepCommits <= v {
			ids = append(ids, qdrant.NewIDNum(c.version))
		}
	}
	if len(ids) == 0 {
		return
	}
	_ = s.retry(ctx, func(ctx context.Context) error {
		_, err := s.client.Delete(ctx, &qdrant.DeletePoints{
			CollectionName: s.names.commitsCollection(),
			Wait:           qdrant.PtrOf(true),
			Points:         qdrant.NewPointsSelector(ids...),
		})
		return err
	})
}

// conditional reports whether a Qdrant of this version (as its health
// check gives it: "1.17.0", "v1.16.1-dev") applies update filters. A
// version it cannot read is taken to be recent.
func conditional(version string) bool {
	major, rest, _ := strings.Cut(strings.TrimPrefix(version, "v"), ".")
	minor, _, _ := strings.Cut(rest, ".")
	minor, _, _ = strings.Cut(minor, "-")
	ma, err1 := strconv.Atoi(major)
	mi, err2 := strconv.Atoi(minor)
	if err1 != nil || err2 != nil {
		return true
	}
	return ma > conditionalSince[0] || ma == conditionalSince[0] && mi >= conditionalSince[1]
}
