package selector

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/habilis-router/habilis"
)

// Following a store that other processes write: several routers (habilis
// serve replicas behind a load balancer, a CLI loading a catalog) may share
// one store. Each router's index changes only when it writes or refreshes,
// so a router that does not write learns of the others' writes by polling
// the store's version (Refresh, Follow): a read of one number per
// interval, and a snapshot only when it moved.

// Defaults of FollowOptions' zero values.
const (
	// DefaultFollowInterval is how often Follow reads the store's version.
	DefaultFollowInterval = 2 * time.Second
	// DefaultMaxBackoff bounds the wait between checks while they fail.
	DefaultMaxBackoff = 30 * time.Second
)

// writeAttempts bounds how many times a write is computed from the stored
// catalog when other writers keep committing first (ErrConflict).
const writeAttempts = 4

// Refresh brings the router up to the catalog its store holds when another
// writer (another router over the store, another process) committed since
// the router last read or wrote it. It reads the store's version and, only
// when that differs from the version served, the catalog, and swaps the
// index whole, as a write does: a selection uses the old catalog or the
// new one, tools, vectors and fitted embedder state alike, never a mix. It
// reports whether it swapped. A catalog the router cannot serve (another
// embedder built it; it cannot be read) is an error, and the router keeps
// serving the catalog it has.
func (r *Router) Refresh(ctx context.Context) (bool, error) {
	if err := r.check(); err != nil {
		return false, err
	}
	v, err := r.store.Version(ctx)
	if err != nil {
		return false, fmt.Errorf("refresh: %w", err)
	}
	if r.Version() == v {
		return false, nil
	}
	// Writes hold the lock from their snapshot to their swap: taking it
	// means a write of this router's is not swapped over by an older
	// catalog read meanwhile.
	r.mu.Lock()
	defer r.mu.Unlock()
	if ix, err := r.openStored(ctx); err != nil {
		return false, fmt.Errorf("refresh: %w", err)
	} else if ix != nil {
		old := r.Version()
		if ix.meta.Version == old {
			ix.retire()
			return false, nil
		}
		r.swap(ix)
		r.cfg.Logger.Info("catalog reloaded from the store", "version", ix.meta.Version, "previous", old, "tools", len(ix.tools))
		return true, nil
	}
	snap, err := r.store.Snapshot(ctx)
	if err != nil {
		return false, fmt.Errorf("refresh: %w", err)
	}
	r.sayUnused()
	old := r.Version()
	if snap.Meta.Version == old {
		return false, nil
	}
	if err := r.mismatch(snap.Meta); err != nil {
		var me *habilis.MismatchError
		if errors.As(err, &me) {
			err = me
		}
		return false, fmt.Errorf("refresh: catalog version %d: %w", snap.Meta.Version, err)
	}
	ix, err := r.restore(ctx, snap)
	if err != nil {
		return false, fmt.Errorf("refresh: catalog version %d: %w", snap.Meta.Version, err)
	}
	r.swap(ix)
	r.cfg.Logger.Info("catalog reloaded from the store", "version", snap.Meta.Version, "previous", old, "tools", len(snap.Records))
	return true, nil
}

// FollowOptions configure Follow. The zero value checks every
// DefaultFollowInterval and backs off up to DefaultMaxBackoff.
type FollowOptions struct {
	// Interval is the time between two reads of the store's version; zero
	// means DefaultFollowInterval.
	Interval time.Duration
	// MaxBackoff bounds the wait after failed checks, which doubles from
	// Interval; zero means DefaultMaxBackoff, or Interval if that is
	// longer.
	MaxBackoff time.Duration
	// Report, when set, receives the status after every check that
	// swapped in a catalog, failed, or succeeded after failures. It runs
	// on Follow's goroutine, so Follow waits for it.
	Report func(FollowStatus)
}

// FollowStatus says how following the store goes.
type FollowStatus struct {
	// Version is the catalog version served.
	Version uint64
	// Err is why the last check failed (the store cannot be reached, it
	// holds a catalog the router cannot serve); nil when it succeeded.
	Err error
	// Failures counts the checks that failed in a row.
	Failures int
	// Checked is when a check last succeeded; zero before the first.
	Checked time.Time
	// Reloads counts the catalogs Follow swapped in.
	Reloads int
}

// Follow keeps the router serving the catalog its store holds, whoever
// writes it: every Interval it calls Refresh. When a check fails, the
// router keeps serving the catalog it has and the next check waits twice
// as long, up to MaxBackoff, until one succeeds. Follow returns when ctx
// ends or the router is closed.
func (r *Router) Follow(ctx context.Context, opts FollowOptions) {
	interval := opts.Interval
	if interval <= 0 {
		interval = DefaultFollowInterval
	}
	maxWait := opts.MaxBackoff
	if maxWait <= 0 {
		maxWait = DefaultMaxBackoff
	}
	maxWait = max(maxWait, interval)
	st := FollowStatus{Version: r.Version()}
	wait := interval
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		swapped, err := r.Refresh(ctx)
		if ctx.Err() != nil || errors.Is(err, habilis.ErrClosed) {
			return
		}
		wait = interval
		if err != nil {
			wait = min(2*wait, maxWait)
		}
		if r.checked(&st, swapped, err, wait) && opts.Report != nil {
			opts.Report(st)
		}
		t.Reset(wait)
	}
}

// checked records the outcome of one of Follow's checks in st, logs what
// changed, and reports whether Follow should report st: a catalog was
// swapped in, the check failed, or it succeeded after failures.
func (r *Router) checked(st *FollowStatus, swapped bool, err error, next time.Duration) bool {
	recovered := err == nil && st.Failures > 0
	st.Version = r.Version()
	if err != nil {
		st.Err, st.Failures = err, st.Failures+1
		r.cfg.Logger.Warn("following the store failed; serving the catalog already loaded", "version", st.Version,
			"failures", st.Failures, "retry_in", next, "err", err)
		return true
	}
	if recovered {
		r.cfg.Logger.Info("following the store again", "version", st.Version, "after_failures", st.Failures)
	}
	st.Err, st.Failures, st.Checked = nil, 0, time.Now()
	if swapped {
		st.Reloads++
	}
	return swapped || recovered
}
