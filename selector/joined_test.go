package selector_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/internal/testutil"
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
// for a load and for a merge, with the lexical embedder alone and beside
// a model's.
func TestJoinedDocuments(t *testing.T) {
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
	configs := map[string]func(lex habilis.CorpusEmbedder) selector.Config{
		"lexical": func(lex habilis.CorpusEmbedder) selector.Config { return selector.Config{Embedder: lex} },
		"model": func(lex habilis.CorpusEmbedder) selector.Config {
			return selector.Config{Embedder: &testutil.HashEmbedder{Dim: 32}, Lexical: lex}
		},
	}
	for name, config := range configs {
		want, wantMeta := writeJoined(t, config(apart{lexical.New(lexical.Options{})}), tools, changed)
		got, gotMeta := writeJoined(t, config(lexical.New(lexical.Options{})), tools, changed)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: records written with joined documents differ (-apart +joined):\n%s", name, diff)
		}
		if diff := cmp.Diff(string(wantMeta), string(gotMeta)); diff != "" {
			t.Errorf("%s: calibration written with joined documents differs (-apart +joined):\n%s", name, diff)
		}
	}
}

// writeJoined loads tools into a new store with a router of cfg, merges
// changed, and returns the records and the stored calibration.
func writeJoined(t *testing.T, cfg selector.Config, tools, changed []habilis.Tool) ([]habilis.Record, []byte) {
	t.Helper()
	ctx := context.Background()
	st := openStore(t, filepath.Join(t.TempDir(), "habilis.db"))
	r, err := selector.New(ctx, st, cfg)
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
	return recs, snap.Meta.Calibration
}
