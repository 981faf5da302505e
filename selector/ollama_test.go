package selector_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/catalog"
	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/embed/ollamaembed"
	"github.com/habilis-router/habilis/embed/openaiembed"
	"github.com/habilis-router/habilis/internal/ollamatest"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/boltstore"
	"github.com/habilis-router/habilis/store/storetest"
)

// TestMain shares one Ollama server among the tests that need it; the
// others never start it.
func TestMain(m *testing.M) { os.Exit(ollamatest.Main(m)) }

// Tiny embedding models registered on the server: the default one and one
// of another dimension to switch to.
const (
	tinyModel    = "habilis-tiny-embed"
	tinyModel128 = "habilis-tiny-embed-128"
)

// ollamaServer returns the shared server with both tiny models, or skips
// the test when no server is configured.
func ollamaServer(tb testing.TB) *ollamatest.Instance {
	tb.Helper()
	s := ollamatest.Server(tb)
	ollamatest.CreateEmbedModel(tb, s.Client, tinyModel, 0)
	ollamatest.CreateEmbedModel(tb, s.Client, tinyModel128, 128)
	return s
}

func ollamaEmbedder(tb testing.TB, host, model string) *ollamaembed.Embedder {
	tb.Helper()
	e, err := ollamaembed.New(ollamaembed.Options{Host: host, Model: model})
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// modelRouter opens a router over st with a model embedder, paired with
// the lexical embedder as the CLI does so that hybrid mode keeps its
// lexical signal.
func modelRouter(tb testing.TB, st habilis.Store, emb habilis.Embedder, reindex bool) (*selector.Router, error) {
	tb.Helper()
	return selector.New(context.Background(), st, selector.Config{Embedder: emb, Lexical: lexical.New(lexical.Options{}), Reindex: reindex})
}

// ollamaLoaded returns a router with the ollama embedder over a fresh store
// holding testdata/catalog.json, the store and its path.
func ollamaLoaded(t *testing.T, s *ollamatest.Instance) (*selector.Router, *boltstore.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "habilis.db")
	st := openStore(t, path)
	r, err := modelRouter(t, st, ollamaEmbedder(t, s.Host, tinyModel), false)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.Load(context.Background(), testCatalog(t), selector.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// 7 descriptions and 36 examples go to the model, 7 tool documents to
	// the lexical embedder.
	if rep.Embedded != 50 || len(rep.Added) != 7 {
		t.Fatalf("Load = %+v, want 7 tools added and 50 texts embedded", rep)
	}
	return r, st, path
}

func snapshot(t *testing.T, st habilis.Store) *habilis.Snapshot {
	t.Helper()
	snap, err := st.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// paraphrases are requests worded unlike any example of their tool, each
// with the mode that must route it.
var paraphrases = []struct {
	query string
	mode  habilis.Mode
	want  string
}{
	{"is it raining in Madrid right now", habilis.ModeHybrid, "get_weather"},
	{"what is the temperature in Madrid right now", habilis.ModeCentroid, "get_weather"},
	{"current weather in Madrid", habilis.ModeDescription, "get_weather"},
	{"weather forecast for Madrid next week", habilis.ModeHybrid, "weather_forecast"},
	{"will it rain in Rome tomorrow", habilis.ModeCentroid, "weather_forecast"},
	{"please send an email to alice about the report", habilis.ModeHybrid, "send_email"},
	{"send an email to bob", habilis.ModeCentroid, "send_email"},
	{"send a message by email", habilis.ModeDescription, "send_email"},
	{"what time is it in Paris", habilis.ModeHybrid, "current_time"},
	{"tell me the current time", habilis.ModeDescription, "current_time"},
	{"what is the date today", habilis.ModeCentroid, "current_date"},
	{"convert 40 dollars to euros", habilis.ModeHybrid, "convert_currency"},
	{"convert money to another currency", habilis.ModeDescription, "convert_currency"},
}

// checkRoutes selects every paraphrase and reports the ones not routed to
// their tool.
func checkRoutes(t *testing.T, r *selector.Router) {
	t.Helper()
	for _, tt := range paraphrases {
		d, err := r.Select(context.Background(), tt.query, habilis.SelectOptions{Mode: tt.mode})
		if err != nil {
			t.Errorf("Select(%q, %s): %v", tt.query, tt.mode, err)
			continue
		}
		if d.Abstained || len(d.Matches) == 0 || d.Matches[0].Tool != tt.want {
			t.Errorf("Select(%q, %s) = %+v, want %s first", tt.query, tt.mode, d, tt.want)
		}
	}
}

func TestOllamaSelectRoutesParaphrases(t *testing.T) {
	s := ollamaServer(t)
	r, st, _ := ollamaLoaded(t, s)
	checkRoutes(t, r)

	meta := snapshot(t, st).Meta
	want := habilis.EmbedderInfo{Kind: "ollama", Model: tinyModel, Dim: ollamatest.DefaultEmbedDim}
	if diff := cmp.Diff(want, meta.Embedder); diff != "" {
		t.Errorf("stored embedder (-want +got):\n%s", diff)
	}
	if meta.Lexical.Kind != "lexical" || meta.LexicalState == nil {
		t.Errorf("stored lexical embedder = %v with %d bytes of state, want the fitted lexical embedder", meta.Lexical, len(meta.LexicalState))
	}
	for _, rec := range snapshot(t, st).Records {
		if len(rec.DescriptionVector.Dense) != ollamatest.DefaultEmbedDim || !rec.DocumentVector.IsSparse() {
			t.Errorf("record %s: description vector of dimension %d, sparse document vector %v; want %d and true",
				rec.Tool.Name, len(rec.DescriptionVector.Dense), rec.DocumentVector.IsSparse(), ollamatest.DefaultEmbedDim)
		}
	}
}

func TestOllamaSecondLoadEmbedsNothing(t *testing.T) {
	s := ollamaServer(t)
	r, st, path := ollamaLoaded(t, s)
	ctx := context.Background()
	before := snapshot(t, st).Records
	rep, err := r.Load(ctx, testCatalog(t), selector.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Embedded != 0 || rep.Unchanged != 7 || rep.Reused != 50 {
		t.Errorf("second Load = %+v, want nothing embedded, 50 texts reused, 7 tools unchanged", rep)
	}

	// A new process's embedder learns its dimension from the server (the
	// CLI probes it before a write); it reuses the stored vectors too.
	r.Close() // it holds the file open while it reads the index there
	st.Close()
	st = openStore(t, path)
	emb := ollamaEmbedder(t, s.Host, tinyModel)
	if _, err := emb.Probe(ctx); err != nil {
		t.Fatal(err)
	}
	r, err = modelRouter(t, st, emb, false)
	if err != nil {
		t.Fatal(err)
	}
	rep, err = r.Load(ctx, testCatalog(t), selector.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Embedded != 0 || rep.Unchanged != 7 {
		t.Errorf("Load after reopening = %+v, want nothing embedded, 7 tools unchanged", rep)
	}
	if diff := cmp.Diff(before, snapshot(t, st).Records); diff != "" {
		t.Errorf("identical loads changed the records (-before +after):\n%s", diff)
	}
}

func TestOllamaEmbedderSwitch(t *testing.T) {
	s := ollamaServer(t)
	r, st, path := ollamaLoaded(t, s)
	ctx := context.Background()
	cal := setFitted(t, r)
	before := snapshot(t, st)
	r.Close() // it holds the file open while it reads the index there
	st.Close()
	st = openStore(t, path)

	others := []struct {
		name string
		emb  habilis.Embedder
	}{
		{"lexical", lexical.New(lexical.Options{})},
		{"another model", ollamaEmbedder(t, s.Host, tinyModel128)},
	}
	for _, o := range others {
		var err error
		if o.name == "lexical" {
			_, err = selector.New(ctx, st, selector.Config{Embedder: o.emb})
		} else {
			_, err = modelRouter(t, st, o.emb, false)
		}
		if !errors.Is(err, habilis.ErrEmbedderMismatch) {
			t.Errorf("New(%s) over an ollama store: err %v, want ErrEmbedderMismatch", o.name, err)
		}
	}
	if diff := cmp.Diff(before, snapshot(t, st)); diff != "" {
		t.Errorf("refused embedders changed the store (-before +after):\n%s", diff)
	}

	var logs bytes.Buffer
	r, err := selector.New(ctx, st, selector.Config{Embedder: ollamaEmbedder(t, s.Host, tinyModel128),
		Lexical: lexical.New(lexical.Options{}), Reindex: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatalf("New(Reindex) with %s: %v", tinyModel128, err)
	}
	// The fit was on tinyModel's scale of scores: the reindex drops it,
	// recalibrates from the examples and says so.
	if got := r.Calibration(); got.Fitted || got.MarginSource == "fit" || got.Threshold == cal.Threshold {
		t.Errorf("calibration after reindex: fitted %v, margin source %q, threshold %v; want one estimated from the examples",
			got.Fitted, got.MarginSource, got.Threshold)
	}
	if !strings.Contains(logs.String(), "fitted calibration dropped") || !strings.Contains(logs.String(), `fitted_with="ollama:`+tinyModel+` (dim`) {
		t.Errorf("reindex logged %q, want a warning that the fitted calibration was dropped", logs.String())
	}
	after := snapshot(t, st)
	want := habilis.EmbedderInfo{Kind: "ollama", Model: tinyModel128, Dim: 128}
	if diff := cmp.Diff(want, after.Meta.Embedder); diff != "" {
		t.Errorf("stored embedder after reindex (-want +got):\n%s", diff)
	}
	if after.Meta.Version != before.Meta.Version+1 || len(after.Records) != 7 || len(after.Records[0].ExampleVectors[0].Dense) != 128 {
		t.Errorf("after reindex: version %d, %d records, example dimension %d; want %d, 7, 128",
			after.Meta.Version, len(after.Records), len(after.Records[0].ExampleVectors[0].Dense), before.Meta.Version+1)
	}
	checkRoutes(t, r)

	// Lexical, re-indexed in turn, serves the same catalog.
	r, err = selector.New(ctx, st, selector.Config{Embedder: lexical.New(lexical.Options{}), Reindex: true})
	if err != nil {
		t.Fatalf("New(Reindex) with lexical: %v", err)
	}
	if got := snapshot(t, st).Meta.Embedder.Kind; got != "lexical" || len(r.Tools()) != 7 {
		t.Errorf("after reindex with lexical: stored kind %q, %d tools; want lexical, 7", got, len(r.Tools()))
	}
}

// TestOllamaStaleLexical checks a model store whose lexical vectors an
// earlier lexical algorithm made: it is refused, naming both algorithms;
// a reindex re-embeds the lexical vectors only, keeping the model's, and
// drops a fit made on the old scores.
func TestOllamaStaleLexical(t *testing.T) {
	s := ollamaServer(t)
	r, st, _ := ollamaLoaded(t, s)
	ctx := context.Background()
	cal := setFitted(t, r)
	storetest.SetAlgorithm(t, st, storetest.Lexical, "1")
	before := snapshot(t, st)

	_, err := modelRouter(t, st, ollamaEmbedder(t, s.Host, tinyModel), false)
	if !errors.Is(err, habilis.ErrEmbedderMismatch) || !strings.Contains(err.Error(), "and lexical algorithm 1, not ") ||
		!strings.HasSuffix(strings.SplitN(err.Error(), ": embedder", 2)[0], " and lexical algorithm "+lexical.Algorithm) {
		t.Fatalf("New over a store of lexical algorithm 1: err %v, want ErrEmbedderMismatch naming algorithms 1 and %s", err, lexical.Algorithm)
	}
	if diff := cmp.Diff(before, snapshot(t, st)); diff != "" {
		t.Errorf("a refused open changed the store (-before +after):\n%s", diff)
	}

	var logs bytes.Buffer
	r, err = selector.New(ctx, st, selector.Config{Embedder: ollamaEmbedder(t, s.Host, tinyModel),
		Lexical: lexical.New(lexical.Options{}), Reindex: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatalf("New(Reindex): %v", err)
	}
	after := snapshot(t, st)
	if got := after.Meta.Lexical.Algorithm(); got != lexical.Algorithm || after.Meta.Embedder != before.Meta.Embedder {
		t.Errorf("after reindex: lexical algorithm %q, embedder %v; want %s, %v", got, after.Meta.Embedder, lexical.Algorithm, before.Meta.Embedder)
	}
	for i := range after.Records {
		a, b := after.Records[i], before.Records[i]
		if !cmp.Equal(a.ExampleVectors, b.ExampleVectors) || !cmp.Equal(a.DescriptionVector, b.DescriptionVector) {
			t.Errorf("tool %s: the reindex changed the model's vectors", a.Tool.Name)
		}
	}
	if got := r.Calibration(); got.Fitted || got.Threshold == cal.Threshold {
		t.Errorf("calibration after reindex: fitted %v, threshold %v; want one estimated from the examples", got.Fitted, got.Threshold)
	}
	if !strings.Contains(logs.String(), "fitted calibration dropped") || !strings.Contains(logs.String(), "lexical_fitted_with=") {
		t.Errorf("reindex logged %q, want a warning that the fitted calibration was dropped, naming the lexical algorithms", logs.String())
	}
	checkRoutes(t, r)
}

func TestOllamaUnreachable(t *testing.T) {
	s := ollamaServer(t)
	_, st, _ := ollamaLoaded(t, s)
	ctx := context.Background()
	before := snapshot(t, st)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	emb, err := ollamaembed.New(ollamaembed.Options{Host: closed, Model: tinyModel, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	// Opening needs no server: the store says which embedder built it.
	r, err := modelRouter(t, st, emb, false)
	if err != nil {
		t.Fatalf("New with an unreachable server: %v", err)
	}
	changed := testCatalog(t)
	changed[0].Examples = append(slices.Clone(changed[0].Examples), "is it sunny in Rome today")
	if _, err := r.Load(ctx, changed, selector.LoadOptions{}); !errors.Is(err, habilis.ErrUnavailable) {
		t.Errorf("Load with an unreachable server: err %v, want ErrUnavailable", err)
	}
	if _, err := r.Select(ctx, "weather in Paris", habilis.SelectOptions{}); !errors.Is(err, habilis.ErrUnavailable) {
		t.Errorf("Select with an unreachable server: err %v, want ErrUnavailable", err)
	}
	if diff := cmp.Diff(before, snapshot(t, st)); diff != "" {
		t.Errorf("a failed load changed the store (-before +after):\n%s", diff)
	}
	if r.Version() != before.Meta.Version || len(r.Tools()) != 7 {
		t.Errorf("after a failed load the router serves version %d with %d tools, want %d with 7", r.Version(), len(r.Tools()), before.Meta.Version)
	}

	// A new store stays empty.
	fresh := openStore(t, filepath.Join(t.TempDir(), "fresh.db"))
	r, err = modelRouter(t, fresh, emb, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Load(ctx, testCatalog(t), selector.LoadOptions{}); !errors.Is(err, habilis.ErrUnavailable) {
		t.Errorf("Load into a new store with an unreachable server: err %v, want ErrUnavailable", err)
	}
	if v := snapshot(t, fresh).Meta.Version; v != 0 {
		t.Errorf("a failed load into a new store left version %d, want 0", v)
	}
}

func TestOllamaOpenAICompatible(t *testing.T) {
	s := ollamaServer(t)
	emb, err := openaiembed.New(openaiembed.Options{BaseURL: s.Host, Model: tinyModel})
	if err != nil {
		t.Fatal(err)
	}
	st := openStore(t, filepath.Join(t.TempDir(), "habilis.db"))
	r, err := modelRouter(t, st, emb, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Load(context.Background(), testCatalog(t), selector.LoadOptions{}); err != nil {
		t.Fatalf("Load through %s/v1/embeddings: %v", s.Host, err)
	}
	want := habilis.EmbedderInfo{Kind: "openai", Model: tinyModel, Dim: ollamatest.DefaultEmbedDim}
	if diff := cmp.Diff(want, snapshot(t, st).Meta.Embedder); diff != "" {
		t.Errorf("stored embedder (-want +got):\n%s", diff)
	}
	checkRoutes(t, r)
}

// syntheticCatalog returns n tools of perExample examples each, worded
// with the tiny model's vocabulary so that every text embeds as words.
func syntheticCatalog(n, perTool int) []habilis.Tool {
	verbs := []string{"find", "show", "get", "check", "list", "open", "search", "update", "send", "book"}
	things := []string{"weather", "email", "flight", "hotel", "meeting", "recipe", "song", "movie", "stock", "note",
		"event", "file", "message", "restaurant", "timer", "reminder", "picture", "document", "calendar", "contact"}
	places := []string{"paris", "london", "rome", "berlin", "tokyo", "york", "madrid"}
	days := []string{"today", "tomorrow", "now", "next week", "this week", "every day"}
	tools := make([]habilis.Tool, n)
	for i := range tools {
		verb, thing := verbs[i%len(verbs)], things[(i/len(verbs))%len(things)]
		t := habilis.Tool{
			Name:        fmt.Sprintf("%s_%s_%d", verb, thing, i),
			Description: fmt.Sprintf("%s the %s for a city", verb, thing),
		}
		for k := range perTool {
			t.Examples = append(t.Examples, fmt.Sprintf("please %s my %s in %s %s number %d",
				verb, thing, places[k%len(places)], days[(k+i)%len(days)], k))
		}
		tools[i] = t
	}
	return tools
}

// timedEmbedder records how long its Embed calls take, the last one and
// in total, so that a benchmark can split a load's or a selection's time
// between the model and the router.
type timedEmbedder struct {
	habilis.Embedder
	last, total time.Duration
}

func (e *timedEmbedder) Embed(ctx context.Context, texts []string, p habilis.Purpose) ([]habilis.Vector, error) {
	start := time.Now()
	vs, err := e.Embedder.Embed(ctx, texts, p)
	e.last = time.Since(start)
	e.total += e.last
	return vs, err
}

// BenchmarkOllamaLoad measures load throughput with the tiny model: the
// repository's sample catalog and about 1,000 synthetic examples, each
// loaded into a fresh store so that every text is embedded.
func BenchmarkOllamaLoad(b *testing.B) {
	s := ollamaServer(b)
	sample, err := catalog.Read("../tools.json")
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name  string
		tools []habilis.Tool
	}{
		{"sample", sample},
		{"synthetic1000", syntheticCatalog(50, 20)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			emb := ollamaEmbedder(b, s.Host, tinyModel)
			if _, err := emb.Probe(context.Background()); err != nil { // loads the model
				b.Fatal(err)
			}
			timed := &timedEmbedder{Embedder: emb}
			var examples, texts int
			var elapsed time.Duration
			for b.Loop() {
				b.StopTimer()
				st := openStore(b, filepath.Join(b.TempDir(), "habilis.db"))
				r, err := modelRouter(b, st, timed, false)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := time.Now()
				rep, err := r.Load(context.Background(), bc.tools, selector.LoadOptions{})
				elapsed += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				examples += rep.Examples
				texts += rep.Embedded
				b.StopTimer()
				r.Close()
				st.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(examples)/elapsed.Seconds(), "examples/s")
			b.ReportMetric(float64(texts)/elapsed.Seconds(), "texts/s")
			// The share of the load spent outside the model: fitting the
			// lexical embedder, centroids, calibration, the store write.
			b.ReportMetric(100*(elapsed-timed.total).Seconds()/elapsed.Seconds(), "%outside-embed")
		})
	}
}

// BenchmarkOllamaSelect measures hybrid selections over the sample catalog
// with the tiny model: the whole Select, the embedding call it makes, and
// their difference per call, the router's own cost; and for reference a
// raw embedding call of the same query made just before.
func BenchmarkOllamaSelect(b *testing.B) {
	s := ollamaServer(b)
	sample, err := catalog.Read("../tools.json")
	if err != nil {
		b.Fatal(err)
	}
	emb := ollamaEmbedder(b, s.Host, tinyModel)
	timed := &timedEmbedder{Embedder: emb}
	st := openStore(b, filepath.Join(b.TempDir(), "habilis.db"))
	r, err := modelRouter(b, st, timed, false)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := r.Load(ctx, sample, selector.LoadOptions{}); err != nil {
		b.Fatal(err)
	}
	queries := []string{"what time is it in tokyo", "send an email to my boss", "weather in paris tomorrow", "book a flight to rome"}
	var sel, inner, over, raw []time.Duration
	i := 0
	for b.Loop() {
		q := queries[i%len(queries)]
		i++
		start := time.Now()
		if _, err := emb.Embed(ctx, []string{q}, habilis.Query); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if _, err := r.Select(ctx, q, habilis.SelectOptions{}); err != nil {
			b.Fatal(err)
		}
		d := time.Since(mid)
		raw = append(raw, mid.Sub(start))
		sel = append(sel, d)
		inner = append(inner, timed.last)
		over = append(over, d-timed.last)
	}
	p50 := func(ds []time.Duration) float64 {
		ds = slices.Clone(ds)
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Nanoseconds()) / 1e3
	}
	b.ReportMetric(p50(sel), "select-p50-us")
	b.ReportMetric(p50(inner), "select-embed-p50-us")
	b.ReportMetric(p50(over), "overhead-p50-us")
	b.ReportMetric(p50(raw), "raw-embed-p50-us")
}
