package selector

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/store/boltstore"
)

// patchCatalog returns n tools of a few examples each, built from word
// lists so that tools share words as real ones do: every tool an action
// on an object in a service.
func patchCatalog(n int) []habilis.Tool {
	actions := []string{"create", "delete", "list", "update", "archive", "export", "share", "restore"}
	objects := []string{"invoice", "backup", "ticket", "report", "calendar event", "contact", "playlist", "photo", "order", "note"}
	services := []string{"billing", "storage", "helpdesk", "analytics", "calendar", "crm", "music", "gallery", "shop", "notes"}
	places := []string{"Lima", "Cairo", "Oslo", "Pune", "Quito", "Hanoi", "Perth", "Turin"}
	tools := make([]habilis.Tool, 0, n)
	for i := range n {
		a, o, s := actions[i%len(actions)], objects[(i/len(actions))%len(objects)], services[(i/(len(actions)*len(objects)))%len(services)]
		p := places[i%len(places)]
		name := fmt.Sprintf("%s_%s_%s_%d", s, a, o, i)
		tools = append(tools, habilis.Tool{
			Name:        name,
			Description: fmt.Sprintf("%s a %s in the %s service, case %d.", a, o, s, i),
			Examples: []string{
				fmt.Sprintf("please %s the %s in %s", a, o, s),
				fmt.Sprintf("%s my %s %s for %s", a, s, o, p),
				fmt.Sprintf("could you %s a %s from %s number %d", a, o, p, i),
				fmt.Sprintf("in %s, %s every %s tagged %d", s, a, o, i),
			},
		})
	}
	return tools
}

// TestPatchedWrite writes tools to a catalog above findMaxTools one
// change at a time, each a patch of the stored index, and checks after
// each that the router serves what an index built from the stored records
// (with the same fitted statistics and calibration) serves, and that a
// router opening the store does too; that the new tools' backgrounds are
// those the whole catalog's derivation gives them, and the collisions
// those of the whole catalog's analysis.
func TestPatchedWrite(t *testing.T) {
	ctx := context.Background()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "habilis.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := Config{Embedder: lexical.New(lexical.Options{})}
	r, err := New(ctx, st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	tools := patchCatalog(640)
	if _, err := r.Load(ctx, tools, LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	twin := tools[17]
	twin.Name = "a_" + twin.Name // a copy under a name that sorts before it: a high collision, and ties
	changed := tools[40]
	changed.Examples = append([]string{"please archive the old ledger of every branch"}, changed.Examples[1:]...)
	fresh := patchCatalog(641)[640]
	steps := []struct {
		name    string
		write   func() (*LoadReport, error)
		added   []string
		updated []string
		removed []string
	}{
		{"add a copy", func() (*LoadReport, error) { return r.Load(ctx, []habilis.Tool{twin}, LoadOptions{Merge: true}) }, []string{twin.Name}, nil, nil},
		{"change one", func() (*LoadReport, error) { return r.Load(ctx, []habilis.Tool{changed}, LoadOptions{Merge: true}) }, nil, []string{changed.Name}, nil},
		{"delete one", func() (*LoadReport, error) { return r.Delete(ctx, []string{tools[3].Name}) }, nil, nil, []string{tools[3].Name}},
		{"add another", func() (*LoadReport, error) { return r.Load(ctx, []habilis.Tool{fresh}, LoadOptions{Merge: true}) }, []string{fresh.Name}, nil, nil},
		{"delete the copy", func() (*LoadReport, error) { return r.Delete(ctx, []string{twin.Name}) }, nil, nil, []string{twin.Name}},
	}
	queries := []string{"please update the backup in storage", "archive the old ledger of every branch", "export my crm contact for Oslo",
		"could you share a photo from Perth number 17", "what is the weather like", fresh.Examples[1], twin.Examples[2]}
	for _, step := range steps {
		rep, err := step.write()
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if !cmp.Equal(rep.Added, step.added, cmpopts.EquateEmpty()) || !cmp.Equal(rep.Updated, step.updated, cmpopts.EquateEmpty()) ||
			!cmp.Equal(rep.Removed, step.removed, cmpopts.EquateEmpty()) {
			t.Errorf("%s: report added %v updated %v removed %v, want %v %v %v", step.name, rep.Added, rep.Updated, rep.Removed, step.added, step.updated, step.removed)
		}
		checkPatched(t, r, st, step.name, queries)
	}
	// A write past patchLimit writes the whole index again.
	many := patchCatalog(700)[640:]
	if _, err := r.Load(ctx, many, LoadOptions{Merge: true}); err != nil {
		t.Fatal(err)
	}
	si, err := st.Index(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if si.Patch != nil || si.Data == nil || r.cur.Load().base != nil {
		t.Errorf("after a write of %d tools (limit %d), the store holds a patch (%t) or no index (%t)", len(many), patchLimit(640), si.Patch != nil, si.Data == nil)
	}
}

// checkPatched checks that r, after a patched write to st, serves what an
// index built from the stored records serves, as does a router opening
// st, and that the stored calibration's maps are the whole catalog's.
func checkPatched(t *testing.T, r *Router, st *boltstore.Store, step string, queries []string) {
	t.Helper()
	ctx := context.Background()
	si, err := st.Index(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if si.Patch == nil {
		t.Fatalf("%s: the store holds no index patch", step)
	}
	snap, err := st.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rebuilt, err := r.restore(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	reopened, err := New(ctx, st, r.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if reopened.cur.Load().base == nil {
		t.Errorf("%s: a reopened router does not read the patch", step)
	}
	for _, q := range queries {
		want := decisionOf(t, rebuilt, q)
		for name, ix := range map[string]*index{"patched": r.cur.Load(), "reopened": reopened.cur.Load()} {
			if diff := cmp.Diff(want, decisionOf(t, ix, q), cmpopts.EquateApprox(0, 1e-4)); diff != "" {
				t.Errorf("%s: %s index, Select(%q) differs from the index built from the records (-want +got):\n%s", step, name, q, diff)
			}
		}
	}
	if got, want := toolNames(r.Tools()), toolNames(snapTools(snap)); !cmp.Equal(got, want) {
		t.Errorf("%s: Tools() lists %d tools, want the %d stored, in name order", step, len(got), len(want))
	}
	checkDerived(t, ctx, r, snap, step)
}

// decisionOf returns what selections of q on ix decide in hybrid and
// centroid modes (where a copy of a tool ties with it): the tools, in
// order, with their scores and gates.
func decisionOf(t *testing.T, ix *index, q string) [][]habilis.Match {
	t.Helper()
	var out [][]habilis.Match
	for _, mode := range []habilis.Mode{habilis.ModeHybrid, habilis.ModeCentroid} {
		d, _, err := ix.selectQuery(context.Background(), q, habilis.SelectOptions{K: 8, FailOpen: true, Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d.Matches)
	}
	return out
}

func toolNames(ts []habilis.Tool) []string {
	out := make([]string, len(ts))
	for i := range ts {
		out[i] = ts[i].Name
	}
	return out
}

func snapTools(snap *habilis.Snapshot) []habilis.Tool {
	out := make([]habilis.Tool, len(snap.Records))
	for i := range snap.Records {
		out[i] = snap.Records[i].Tool
	}
	return out
}

// checkDerived checks the stored calibration's backgrounds and collisions
// against those derived from the whole stored catalog.
func checkDerived(t *testing.T, ctx context.Context, r *Router, snap *habilis.Snapshot, step string) {
	t.Helper()
	cal, err := decodeCalibration(snap.Meta.Calibration)
	if err != nil {
		t.Fatal(err)
	}
	emb, err := r.restoreEmbedders(snap.Meta)
	if err != nil {
		t.Fatal(err)
	}
	recs := snap.Records
	bv, err := r.background(ctx, emb.emb, emb.lex, len(recs))
	if err != nil {
		t.Fatal(err)
	}
	bgs, _ := backgroundGates(recs, newShared(recs, 0, true), bv, true, false)
	if diff := cmp.Diff(bgs, cal.Background, cmpopts.EquateApprox(0, 1e-4)); diff != "" {
		t.Errorf("%s: stored backgrounds differ from the whole catalog's (-want +got):\n%s", step, diff)
	}
	cols, err := collides(recs, cal, r.cfg.CollisionThreshold, true)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cols, cal.Collides, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("%s: stored collisions differ from the whole catalog's (-want +got):\n%s", step, diff)
	}
}

// TestPatchedWriteWhileSelecting selects on every core while patched
// writes add and delete tools (run with -race): every selection answers,
// from one catalog version or the next.
func TestPatchedWriteWhileSelecting(t *testing.T) {
	ctx := context.Background()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "habilis.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, err := New(ctx, st, Config{Embedder: lexical.New(lexical.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	tools := patchCatalog(610)
	if _, err := r.Load(ctx, tools[:600], LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			for {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				if _, err := r.Select(ctx, "please update the backup in storage", habilis.SelectOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i, tool := range tools[600:] {
		if _, err := r.Load(ctx, []habilis.Tool{tool}, LoadOptions{Merge: true}); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			if _, err := r.Delete(ctx, []string{tools[i].Name}); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("Select during patched writes: %v", err)
		}
	}
	if r.cur.Load().base == nil {
		t.Error("the writes were not patches")
	}
}
