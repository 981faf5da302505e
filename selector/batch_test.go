package selector_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/memstore"
)

// wordEmbedder is testutil.WordEmbedder in 64 dimensions that counts its
// calls.
type wordEmbedder struct {
	mu    sync.Mutex
	calls int
	texts int
}

func (e *wordEmbedder) Info() habilis.EmbedderInfo { return testutil.WordEmbedder{Dim: 64}.Info() }

func (e *wordEmbedder) Embed(ctx context.Context, texts []string, p habilis.Purpose) ([]habilis.Vector, error) {
	e.mu.Lock()
	e.calls++
	e.texts += len(texts)
	e.mu.Unlock()
	return testutil.WordEmbedder{Dim: 64}.Embed(ctx, texts, p)
}

// counts returns the calls and texts since the last call.
func (e *wordEmbedder) counts() (calls, texts int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	calls, texts = e.calls, e.texts
	e.calls, e.texts = 0, 0
	return calls, texts
}

var batchQueries = []string{
	"will it rain in Lisbon tomorrow",
	"send an email to dave about lunch",
	"what time is it in Tokyo",
	"compose a sonnet about autumn leaves",
	"remind me to call mum at six",
}

// TestQueryBatch checks that queries embedded together are selected and
// scored as they are one at a time, with one call to a model embedder
// for the whole batch, and again after a write refits the lexical
// embedder their lexical vectors came from.
func TestQueryBatch(t *testing.T) {
	ctx := context.Background()
	emb := &wordEmbedder{}
	lexicalOnly := lexicalRouter(t, memstore.New())
	model, err := selector.New(ctx, memstore.New(), selector.Config{Embedder: emb, Lexical: lexical.New(lexical.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*selector.Router{"lexical": lexicalOnly, "model": model} {
		tools := testCatalog(t)
		if _, err := r.Load(ctx, tools[1:], selector.LoadOptions{}); err != nil {
			t.Fatal(err)
		}
		emb.counts()
		b, err := r.EmbedQueries(ctx, batchQueries)
		if err != nil {
			t.Fatal(err)
		}
		if calls, texts := emb.counts(); name == "model" && (calls != 1 || texts != len(batchQueries)) {
			t.Errorf("%s: EmbedQueries made %d calls with %d texts, want 1 with %d", name, calls, texts, len(batchQueries))
		}
		same := func(when string) {
			t.Helper()
			for i, q := range batchQueries {
				for _, mode := range []habilis.Mode{habilis.ModeHybrid, habilis.ModeCentroid, habilis.ModeDescription} {
					opts := habilis.SelectOptions{Mode: mode, K: 3}
					wd, wr, err := r.SelectRanked(ctx, q, opts)
					if err != nil {
						t.Fatal(err)
					}
					gd, gr, err := b.SelectRanked(ctx, i, opts)
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(wd, gd); diff != "" {
						t.Errorf("%s, %s: batch decision on %q in %s mode (-one +batch):\n%s", name, when, q, mode, diff)
					}
					if diff := cmp.Diff(wr.Matches, gr.Matches); diff != "" {
						t.Errorf("%s, %s: batch ranking of %q in %s mode (-one +batch):\n%s", name, when, q, mode, diff)
					}
				}
				ws, err := r.Scores(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				gs, err := b.Scores(ctx, i)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(ws, gs); diff != "" {
					t.Errorf("%s, %s: batch scores of %q (-one +batch):\n%s", name, when, q, diff)
				}
			}
		}
		same("as embedded")
		emb.counts()
		// A new tool refits the lexical embedder: the batch's lexical
		// vectors no longer serve, and its queries are embedded again.
		if _, err := r.Load(ctx, tools, selector.LoadOptions{}); err != nil {
			t.Fatal(err)
		}
		same("after a write")
	}
	if _, err := model.EmbedQueries(ctx, []string{"fine", " "}); !errors.Is(err, habilis.ErrInvalid) {
		t.Errorf("EmbedQueries with an empty query = %v, want ErrInvalid", err)
	}
}
