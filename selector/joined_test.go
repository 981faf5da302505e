package selector_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/selector"
)

// apart is the lexical embedder without EmbedJoined and FitJoined: every
// text, each document among them, embedded from its own text.
type apart struct{ e habilis.CorpusEmbedder }

func (a apart) Info() habilis.EmbedderInfo { return a.e.Info() }

func (a apart) Embed(ctx context.Context, texts []string, p habilis.Purpose) ([]habilis.Vector, error) {
	return a.e.Embed(ctx, texts, p)
}

func (a apart) Fit(ctx context.Context, corpus []string) (habilis.CorpusEmbedder, []byte, error) {
	f, state, err := a.e.Fit(ctx, corpus)
	return apart{f}, state, err
}

func (a apart) Restore(state []byte) (habilis.CorpusEmbedder, error) {
	f, err := a.e.Restore(state)
	return apart{f}, err
}

// TestJoinedDocuments checks that a write whose lexical embedder makes
// the tools' vectors from the analysis fitting made of their texts
// (FitJoined) and calibration's held-out documents from their parts
// (EmbedJoined) stores what one embedding each text, each document among
// them, from its text does, to the bit: the vectors and the calibration,
// for a load and for a merge.
func TestJoinedDocuments(t *testing.T) {
	ctx := context.Background()
	tools, _ := synth(80, 6, 9)
	for i := range tools {
		switch i % 9 {
		case 0:
			tools[i].Examples = nil
		case 1:
			tools[i].Examples = tools[i].Examples[:1]
		case 2:
			tools[i].InputSchema = json.RawMessage(`{"properties":{"path":{"description":"a file, like ~/notes.md"}}}`)
		}
	}
	changed := append([]habilis.Tool(nil), tools[:5]...)
	for i := range changed {
		changed[i].Examples = append([]string{"and one more request for it"}, changed[i].Examples...)
	}
	var want, got []habilis.Record
	var wantMeta, gotMeta []byte
	for _, joined := range []bool{false, true} {
		emb := habilis.CorpusEmbedder(lexical.New(lexical.Options{}))
		if !joined {
			emb = apart{emb}
		}
		st := openStore(t, filepath.Join(t.TempDir(), "habilis.db"))
		r, err := selector.New(ctx, st, selector.Config{Embedder: emb})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Load(ctx, tools, selector.LoadOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Load(ctx, changed, selector.LoadOptions{Merge: true}); err != nil {
			t.Fatal(err)
		}
		recs, err := r.Records(ctx)
		if err != nil {
			t.Fatal(err)
		}
		snap, err := st.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if joined {
			got, gotMeta = recs, snap.Meta.Calibration
		} else {
			want, wantMeta = recs, snap.Meta.Calibration
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records written with joined documents differ (-apart +joined):\n%s", diff)
	}
	if diff := cmp.Diff(string(wantMeta), string(gotMeta)); diff != "" {
		t.Errorf("calibration written with joined documents differs (-apart +joined):\n%s", diff)
	}
}
