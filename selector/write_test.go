package selector

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
)

// infoEmbedder is an embedder the pure phases only ask for its info.
type infoEmbedder struct{ info habilis.EmbedderInfo }

func (e infoEmbedder) Info() habilis.EmbedderInfo { return e.info }
func (e infoEmbedder) Embed(context.Context, []string, habilis.Purpose) ([]habilis.Vector, error) {
	panic("infoEmbedder embeds nothing")
}

func tool(name, desc string, examples ...string) habilis.Tool {
	return habilis.Tool{Name: name, Description: desc, Examples: examples, InputSchema: json.RawMessage(`{"type":"object"}`)}
}

// stored returns a snapshot at version 3 of tools, each vector a distinct
// one-term sparse vector, made by embedder info.
func stored(info habilis.EmbedderInfo, cal json.RawMessage, tools ...habilis.Tool) *habilis.Snapshot {
	snap := &habilis.Snapshot{Meta: habilis.CatalogMeta{Version: 3, Embedder: info, Lexical: info, Calibration: cal}}
	term := uint32(0)
	v := func() habilis.Vector { term++; return habilis.Vector{Indices: []uint32{term}, Values: []float32{1}} }
	for _, t := range tools {
		rec := habilis.Record{Tool: t, Hash: t.Hash(), DescriptionVector: v(), DocumentVector: v()}
		for range t.Examples {
			rec.ExampleVectors = append(rec.ExampleVectors, v())
		}
		snap.Records = append(snap.Records, rec)
	}
	return snap
}

func TestPlanChange(t *testing.T) {
	info := habilis.EmbedderInfo{Kind: "lexical", Version: "2-x"}
	fitted := json.RawMessage(`{"margin":0.1,"fitted":true}`)
	estimated := json.RawMessage(`{"margin":0.2}`)
	snap := stored(info, fitted, tool("a", "A"), tool("b", "B"), tool("c", "C"))
	fit := &Calibration{Margin: 0.3, Fitted: true}
	for _, tc := range []struct {
		name       string
		snap       *habilis.Snapshot
		req        writeRequest
		mismatched bool
		names      []string
		margin     float32 // of the calibration kept, -1 for none
		dropFit    bool
	}{
		{"merge", snap, writeRequest{tools: []habilis.Tool{tool("d", "D"), tool("a", "A2")}}, false, []string{"a", "b", "c", "d"}, 0.1, false},
		{"replace", snap, writeRequest{tools: []habilis.Tool{tool("d", "D")}, replace: true}, false, []string{"d"}, 0.1, false},
		{"delete", snap, writeRequest{deletes: []string{"b"}}, false, []string{"a", "c"}, 0.1, false},
		{"fit's calibration", snap, writeRequest{calibration: fit}, false, []string{"a", "b", "c"}, 0.3, false},
		{"fit's calibration on a reindex", snap, writeRequest{calibration: fit}, true, []string{"a", "b", "c"}, 0.3, false},
		{"reindex drops a fitted calibration", snap, writeRequest{}, true, []string{"a", "b", "c"}, -1, true},
		{"reindex keeps an estimated one", stored(info, estimated, tool("a", "A")), writeRequest{}, true, []string{"a"}, 0.2, false},
		{"empty store", &habilis.Snapshot{}, writeRequest{tools: []habilis.Tool{tool("a", "A")}}, false, []string{"a"}, -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := planChange(tc.snap, tc.req, tc.mismatched)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.names, c.names); diff != "" {
				t.Errorf("names (-want +got):\n%s", diff)
			}
			margin := float32(-1)
			if c.fixed != nil {
				margin = c.fixed.Margin
			}
			if margin != tc.margin || c.dropFit != tc.dropFit {
				t.Errorf("kept calibration margin %v, dropFit %v; want %v, %v", margin, c.dropFit, tc.margin, tc.dropFit)
			}
			for i, n := range c.names {
				if c.descTexts[i] != descriptionText(c.next[n]) {
					t.Errorf("descTexts[%d] = %q, not %s's", i, c.descTexts[i], n)
				}
			}
		})
	}
	if _, err := planChange(stored(info, json.RawMessage(`{`)), writeRequest{}, false); err == nil {
		t.Error("planChange over a damaged stored calibration: no error")
	}
}

func TestPlanReuse(t *testing.T) {
	info := habilis.EmbedderInfo{Kind: "lexical", Version: "2-x"}
	other := habilis.EmbedderInfo{Kind: "lexical", Version: "2-y"} // refitted statistics
	snap := stored(info, nil, tool("a", "A", "a1", "a2"), tool("b", "B", "b1"))
	for _, tc := range []struct {
		name     string
		info     habilis.EmbedderInfo
		tools    []habilis.Tool
		embTexts []string
		lexTexts int
		reused   int
	}{
		{"unchanged", info, []habilis.Tool{tool("a", "A", "a1", "a2"), tool("b", "B", "b1")}, nil, 0, 7},
		{"one new example", info, []habilis.Tool{tool("a", "A", "a1", "a3"), tool("b", "B", "b1")}, []string{"a3"}, 1, 5},
		{"new description", info, []habilis.Tool{tool("a", "A", "a1", "a2"), tool("b", "B2", "b1")},
			[]string{descriptionText(tool("b", "B2"))}, 1, 5},
		{"new tool", info, []habilis.Tool{tool("a", "A", "a1", "a2"), tool("b", "B", "b1"), tool("c", "C", "c1")},
			[]string{descriptionText(tool("c", "C")), "c1"}, 1, 7},
		{"refitted embedder", other, []habilis.Tool{tool("a", "A", "a1")},
			[]string{descriptionText(tool("a", "A")), "a1"}, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := planChange(snap, writeRequest{tools: tc.tools, replace: true}, false)
			if err != nil {
				t.Fatal(err)
			}
			e := infoEmbedder{tc.info}
			c.emb = embedders{emb: e, lex: e, sameLex: true}
			planReuse(c)
			if diff := cmp.Diff(tc.embTexts, c.work.embTexts); diff != "" {
				t.Errorf("texts to embed (-want +got):\n%s", diff)
			}
			if len(c.work.lexTexts) != tc.lexTexts || c.rep.Reused != tc.reused {
				t.Errorf("%d documents to embed, %d vectors reused; want %d, %d", len(c.work.lexTexts), c.rep.Reused, tc.lexTexts, tc.reused)
			}
			for k, s := range c.work.embSlots {
				rec := c.recs[s.rec]
				want := descriptionText(rec.Tool)
				if s.kind == slotExample {
					want = rec.Tool.Examples[s.ex]
				}
				if c.work.embTexts[k] != want {
					t.Errorf("text %d %q goes to the slot of %q", k, c.work.embTexts[k], want)
				}
			}
			if got, want := c.unchanged(), tc.name == "unchanged"; got != want {
				t.Errorf("unchanged() = %v, want %v", got, want)
			}
		})
	}
}

func TestDiff(t *testing.T) {
	info := habilis.EmbedderInfo{Kind: "lexical", Version: "2-x"}
	cal := Calibration{Margin: 0.1, Collides: map[string][]string{"a": {"b"}, "b": {"a"}}}
	raw, err := json.Marshal(cal)
	if err != nil {
		t.Fatal(err)
	}
	snap := stored(info, raw, tool("a", "A", "a1", "a2"), tool("b", "B", "b1"), tool("c", "C"))
	for _, tc := range []struct {
		name                    string
		req                     writeRequest
		margin                  float32 // the new calibration's
		changed                 bool
		added, updated, removed []string
		puts                    int
	}{
		{"nothing", writeRequest{}, 0.1, false, nil, nil, nil, 0},
		{"last bits of the calibration", writeRequest{}, 0.1 + 1e-7, false, nil, nil, nil, 0},
		{"calibration only", writeRequest{}, 0.2, true, nil, nil, nil, 0},
		{"add, update, remove", writeRequest{tools: []habilis.Tool{tool("a", "A", "a1", "a2"), tool("b", "B2", "b1"), tool("d", "D")}, replace: true},
			0.1, true, []string{"d"}, []string{"b"}, []string{"c"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := planChange(snap, tc.req, false)
			if err != nil {
				t.Fatal(err)
			}
			c.meta = snap.Meta
			c.meta.Version = 0
			c.recs = make([]habilis.Record, len(c.names))
			for i, n := range c.names {
				if o := c.old[n]; o != nil {
					c.recs[i] = *o
				}
				c.recs[i].Tool, c.recs[i].Hash = c.next[n], c.next[n].Hash()
			}
			c.cal = cal
			c.cal.Margin = tc.margin
			if got := diff(c); got != tc.changed {
				t.Errorf("diff() = %v, want %v", got, tc.changed)
			}
			got := [][]string{c.rep.Added, c.rep.Updated, c.rep.Removed}
			if d := cmp.Diff([][]string{tc.added, tc.updated, tc.removed}, got); d != "" {
				t.Errorf("added, updated, removed (-want +got):\n%s", d)
			}
			if len(c.batch.Put) != tc.puts || len(c.batch.Delete) != len(tc.removed) || c.batch.BaseVersion != 3 {
				t.Errorf("batch puts %d, deletes %v at base %d; want %d, %v at 3", len(c.batch.Put), c.batch.Delete, c.batch.BaseVersion, tc.puts, tc.removed)
			}
		})
	}
}

func TestSameCalibration(t *testing.T) {
	base := Calibration{Margin: 0.1, Threshold: 0.4, Weights: defaultWeights, Prior: map[string]float32{"a": 0.5},
		Collides: map[string][]string{"a": {"b"}, "b": {"a"}}, MarginSource: "examples"}
	for _, tc := range []struct {
		name string
		edit func(*Calibration)
		want bool
	}{
		{"same", func(*Calibration) {}, true},
		{"last bits", func(c *Calibration) { c.Threshold += 1e-7 }, true},
		{"a threshold", func(c *Calibration) { c.Threshold += 1e-3 }, false},
		{"a weight", func(c *Calibration) { c.Weights.Document = 0.6 }, false},
		{"a prior", func(c *Calibration) { c.Prior["a"] = 0.6 }, false},
		{"a prior more", func(c *Calibration) { c.Prior["b"] = 0 }, false},
		{"a collision", func(c *Calibration) { c.Collides["a"] = []string{"c"} }, false},
		{"no collisions", func(c *Calibration) { c.Collides = map[string][]string{} }, false},
		{"a source", func(c *Calibration) { c.MarginSource = "fit" }, false},
		{"fitted", func(c *Calibration) { c.Fitted = true }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			c.Prior = map[string]float32{"a": 0.5}
			c.Collides = map[string][]string{"a": {"b"}, "b": {"a"}}
			tc.edit(&c)
			if got := sameCalibration(base, c); got != tc.want {
				t.Errorf("sameCalibration = %v, want %v", got, tc.want)
			}
		})
	}
	if !sameCalibration(Calibration{Collides: map[string][]string{}}, Calibration{}) {
		t.Error("an empty and a nil map differ; stored, both are absent")
	}
}
