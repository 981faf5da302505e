package qdrantstore

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/store/storetest"
	"github.com/qdrant/go-client/qdrant"
	"google.golang.org/protobuf/testing/protocmp"
)

func toolNames(recs []habilis.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Tool.Name)
	}
	return out
}

func TestApply(t *testing.T) {
	cur := storetest.Catalog(3, 2, false, 1) // tool-0000..tool-0002
	changed := storetest.Record("tool-0001", 4, false, 99)
	tests := []struct {
		name string
		b    habilis.Batch
		want []string
	}{
		{"put new", habilis.Batch{Put: []habilis.Record{storetest.Record("a", 1, false, 1)}}, []string{"a", "tool-0000", "tool-0001", "tool-0002"}},
		{"put existing", habilis.Batch{Put: []habilis.Record{changed}}, []string{"tool-0000", "tool-0001", "tool-0002"}},
		{"delete", habilis.Batch{Delete: []string{"tool-0000", "tool-0002"}}, []string{"tool-0001"}},
		{"replace", habilis.Batch{Replace: true, Put: []habilis.Record{changed, storetest.Record("b", 0, false, 1)}}, []string{"b", "tool-0001"}},
		{"replace with nothing", habilis.Batch{Replace: true}, []string{}},
		{"replace and delete a known tool", habilis.Batch{Replace: true, Delete: []string{"tool-0000"}}, []string{}},
	}
	for _, tt := range tests {
		got, err := apply(cur, &tt.b)
		if err != nil {
			t.Errorf("%s: apply error %v", tt.name, err)
			continue
		}
		if diff := cmp.Diff(tt.want, toolNames(got), cmp.Comparer(func(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") })); diff != "" {
			t.Errorf("%s: tools mismatch (-want +got):\n%s", tt.name, diff)
		}
	}
	got, _ := apply(cur, &habilis.Batch{Put: []habilis.Record{changed}})
	if diff := cmp.Diff(changed, got[1]); diff != "" {
		t.Errorf("put existing: record not replaced (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(storetest.Catalog(3, 2, false, 1), cur); diff != "" {
		t.Errorf("apply modified the current records (-want +got):\n%s", diff)
	}
}

// TestApplyInvalid checks that every malformed batch is refused before
// anything is built: by validate, or by apply for what depends on the
// stored catalog.
func TestApplyInvalid(t *testing.T) {
	cur := storetest.Catalog(2, 2, false, 1)
	nameless := storetest.Record("x", 1, false, 1)
	nameless.Tool.Name = ""
	short := storetest.Record("short", 3, false, 1)
	short.ExampleVectors = short.ExampleVectors[:2]
	infRadius := storetest.Record("inf", 3, false, 1)
	infRadius.Radius = float32(math.Inf(1))
	nanMargin := storetest.Record("nan", 3, false, 1)
	nanMargin.Margin = float32(math.NaN())
	nanToolMargin := storetest.Record("nan-tool", 3, false, 2)
	m := float32(math.NaN())
	nanToolMargin.Tool.Margin = &m
	long := storetest.Record(strings.Repeat("x", 65), 0, false, 1)

	tests := []struct {
		name string
		b    habilis.Batch
	}{
		{"record without a name", habilis.Batch{Put: []habilis.Record{nameless}}},
		{"delete unknown", habilis.Batch{Delete: []string{"nope"}}},
		{"delete twice", habilis.Batch{Delete: []string{"tool-0000", "tool-0000"}}},
		{"put twice", habilis.Batch{Put: []habilis.Record{cur[0], cur[0]}}},
		{"put and delete", habilis.Batch{Put: []habilis.Record{cur[0]}, Delete: []string{"tool-0000"}}},
		{"example vectors not parallel", habilis.Batch{Put: []habilis.Record{short}}},
		{"infinite radius", habilis.Batch{Put: []habilis.Record{infRadius}}},
		{"NaN margin", habilis.Batch{Put: []habilis.Record{nanMargin}}},
		{"NaN tool margin", habilis.Batch{Put: []habilis.Record{nanToolMargin}}},
		{"name too long", habilis.Batch{Put: []habilis.Record{long}}},
	}
	for _, tt := range tests {
		err := validate(&tt.b)
		if err == nil {
			_, err = apply(cur, &tt.b)
		}
		if !errors.Is(err, habilis.ErrInvalid) {
			t.Errorf("%s: validate and apply error = %v, want ErrInvalid", tt.name, err)
		}
	}
}

func TestVectorSpace(t *testing.T) {
	dense8 := storetest.Catalog(3, 2, false, 1)
	sparse := storetest.Catalog(3, 2, true, 1)
	dense4 := storetest.Generate("four", 2, storetest.Shape{Dim: 4}, 1)
	unsorted := storetest.Record("unsorted", 0, true, 1)
	unsorted.DescriptionVector.Indices[0], unsorted.DescriptionVector.Indices[1] = unsorted.DescriptionVector.Indices[1], unsorted.DescriptionVector.Indices[0]
	ragged := storetest.Record("ragged", 0, true, 1)
	ragged.DescriptionVector.Values = ragged.DescriptionVector.Values[:2]
	ollama := func(dim int) habilis.EmbedderInfo { return habilis.EmbedderInfo{Kind: "ollama", Model: "m", Dim: dim} }

	tests := []struct {
		name    string
		recs    []habilis.Record
		info    habilis.EmbedderInfo
		want    int
		wantErr string // substring; "" for no error
	}{
		{"dense", dense8, ollama(8), 8, ""},
		{"dense, embedder dimension unknown", dense8, habilis.EmbedderInfo{}, 8, ""},
		{"sparse", sparse, habilis.EmbedderInfo{Kind: "lexical"}, 0, ""},
		{"empty catalog takes the embedder's", nil, ollama(384), 384, ""},
		{"empty sparse catalog", nil, habilis.EmbedderInfo{Kind: "lexical"}, 0, ""},
		{"dimension mismatch", dense8, ollama(768), 0, "vector size 8 does not match the embedder's dimension 768"},
		{"sizes differ", append(dense8[:1:1], dense4), ollama(0), 0, "has size 4"},
		{"dense then sparse", append(dense8[:1:1], sparse[0]), habilis.EmbedderInfo{}, 0, "is sparse"},
		{"sparse then dense", append(sparse[:1:1], dense8[0]), habilis.EmbedderInfo{}, 0, "is dense"},
		{"sparse with a dense embedder", sparse, ollama(8), 0, "has dimension 8"},
		{"unsorted sparse", []habilis.Record{unsorted}, habilis.EmbedderInfo{}, 0, "strictly ascending"},
		{"indices and values differ", []habilis.Record{ragged}, habilis.EmbedderInfo{}, 0, "6 indices and 2 values"},
	}
	for _, tt := range tests {
		got, err := vectorSpace(tt.recs, tt.info)
		if tt.wantErr == "" {
			if err != nil || got != tt.want {
				t.Errorf("%s: vectorSpace = %d, %v; want %d, nil", tt.name, got, err, tt.want)
			}
			continue
		}
		if !errors.Is(err, habilis.ErrInvalid) || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: vectorSpace error = %v, want ErrInvalid containing %q", tt.name, err, tt.wantErr)
		}
	}
}

func TestCreateCollection(t *testing.T) {
	tests := []struct {
		name string
		got  *qdrant.CreateCollection
		want *qdrant.CreateCollection
	}{
		{
			"dense",
			createCollection("c", 384, true, vecDescription, vecCentroid),
			&qdrant.CreateCollection{CollectionName: "c", VectorsConfig: qdrant.NewVectorsConfigMap(map[string]*qdrant.VectorParams{
				"description": {Size: 384, Distance: qdrant.Distance_Dot},
				"centroid":    {Size: 384, Distance: qdrant.Distance_Dot},
			})},
		},
		{
			"sparse",
			createCollection("c", 0, false, vecExample),
			&qdrant.CreateCollection{CollectionName: "c", SparseVectorsConfig: qdrant.NewSparseVectorsConfig(map[string]*qdrant.SparseVectorParams{
				"example": {},
			})},
		},
		{
			"sparse with IDF",
			createCollection("c", 0, true, vecExample),
			&qdrant.CreateCollection{CollectionName: "c", SparseVectorsConfig: qdrant.NewSparseVectorsConfig(map[string]*qdrant.SparseVectorParams{
				"example": {Modifier: qdrant.Modifier_Idf.Enum()},
			})},
		},
		{"payload only", createCollection("m", 384, false), &qdrant.CreateCollection{CollectionName: "m"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, tt.got, protocmp.Transform()); diff != "" {
			t.Errorf("%s: request mismatch (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestTenantIndexAndFilter(t *testing.T) {
	want := &qdrant.CreateFieldIndexCollection{
		CollectionName:   "ex",
		Wait:             qdrant.PtrOf(true),
		FieldName:        "tool",
		FieldType:        qdrant.FieldType_FieldTypeKeyword.Enum(),
		FieldIndexParams: qdrant.NewPayloadIndexParamsKeyword(&qdrant.KeywordIndexParams{IsTenant: qdrant.PtrOf(true)}),
	}
	if diff := cmp.Diff(want, tenantIndex("ex"), protocmp.Transform()); diff != "" {
		t.Errorf("tenantIndex mismatch (-want +got):\n%s", diff)
	}
	wantFilter := &qdrant.Filter{Must: []*qdrant.Condition{{
		ConditionOneOf: &qdrant.Condition_Field{Field: &qdrant.FieldCondition{
			Key:   "tool",
			Match: &qdrant.Match{MatchValue: &qdrant.Match_Keyword{Keyword: "get.weather"}},
		}},
	}}}
	if diff := cmp.Diff(wantFilter, toolFilter("get.weather"), protocmp.Transform()); diff != "" {
		t.Errorf("toolFilter mismatch (-want +got):\n%s", diff)
	}
	// The filter matches on the very payload key example points carry.
	p := examplePoint("get.weather", 0, "x", habilis.Vector{}, true)
	if got := p.GetPayload()[toolFilter("t").GetMust()[0].GetField().GetKey()].GetStringValue(); got != "get.weather" {
		t.Errorf("example payload under the filter's key = %q, want get.weather", got)
	}
}

func TestPlan(t *testing.T) {
	n := newNames("shop")
	recs := []habilis.Record{
		storetest.Record("a.b", 2, false, 1),
		storetest.Record("empty", 0, false, 1),
		storetest.Record("z", 1, false, 1),
	}
	g := "v3_00000001"
	per := n.plan(g, LayoutPerTool, recs, 8, false)
	wantAliases := map[string]string{
		"habilis_shop_meta":                 "habilis_shop_v3_00000001_meta",
		"habilis_shop_tools":                "habilis_shop_v3_00000001_tools",
		"habilis_shop_ex_" + toolKey("a.b"): "habilis_shop_v3_00000001_ex_" + toolKey("a.b"),
		"habilis_shop_ex_" + toolKey("z"):   "habilis_shop_v3_00000001_ex_" + toolKey("z"),
	}
	if diff := cmp.Diff(wantAliases, per.aliases); diff != "" {
		t.Errorf("per-tool aliases mismatch (-want +got):\n%s", diff)
	}
	var created []string
	for _, c := range per.creates {
		created = append(created, c.GetCollectionName())
	}
	wantCreated := []string{
		"habilis_shop_v3_00000001_meta", "habilis_shop_v3_00000001_tools",
		"habilis_shop_v3_00000001_ex_" + toolKey("a.b"), "habilis_shop_v3_00000001_ex_" + toolKey("z"),
	}
	if diff := cmp.Diff(wantCreated, created); diff != "" {
		t.Errorf("per-tool collections mismatch (-want +got):\n%s", diff)
	}
	if per.creates[0].GetVectorsConfig() != nil || per.creates[0].GetSparseVectorsConfig() != nil {
		t.Errorf("meta collection has vectors")
	}
	if got := per.creates[2].GetVectorsConfig().GetParamsMap().GetMap()[vecExample].GetSize(); got != 8 {
		t.Errorf("examples collection vector size = %d, want 8", got)
	}

	shared := n.plan(g, LayoutShared, recs, 0, false)
	wantShared := map[string]string{
		"habilis_shop_meta":     "habilis_shop_v3_00000001_meta",
		"habilis_shop_tools":    "habilis_shop_v3_00000001_tools",
		"habilis_shop_examples": "habilis_shop_v3_00000001_examples",
	}
	if diff := cmp.Diff(wantShared, shared.aliases); diff != "" {
		t.Errorf("shared aliases mismatch (-want +got):\n%s", diff)
	}
	if shared.creates[2].GetSparseVectorsConfig().GetMap()[vecExample] == nil {
		t.Errorf("shared sparse examples collection lacks the sparse vector %q", vecExample)
	}
}

func TestAliasSwitch(t *testing.T) {
	n := newNames("shop")
	// Version 4 has tools a and b; version 5 drops b and adds c.
	g4, g5 := "v4_aaaaaaaa", "v5_bbbbbbbb"
	v4 := n.plan(g4, LayoutPerTool, []habilis.Record{storetest.Record("a", 1, false, 1), storetest.Record("b", 1, false, 1)}, 8, false)
	v5 := n.plan(g5, LayoutPerTool, []habilis.Record{storetest.Record("a", 1, false, 1), storetest.Record("c", 1, false, 1)}, 8, false)
	var current []string
	for a := range v4.aliases {
		current = append(current, a)
	}
	got := aliasSwitch(current, v5.aliases, n.metaAlias())
	exA, exB, exC := n.toolExamplesAlias("a"), n.toolExamplesAlias("b"), n.toolExamplesAlias("c")
	// Creates re-point aliases in place, the meta alias last; b's alias,
	// which version 5 lacks, goes only after the commit point.
	want := []*qdrant.AliasOperations{
		qdrant.NewAliasCreate(exA, n.toolExamplesCollection(g5, "a")),
		qdrant.NewAliasCreate(exC, n.toolExamplesCollection(g5, "c")),
		qdrant.NewAliasCreate("habilis_shop_tools", "habilis_shop_v5_bbbbbbbb_tools"),
		qdrant.NewAliasCreate("habilis_shop_meta", "habilis_shop_v5_bbbbbbbb_meta"),
		qdrant.NewAliasDelete(exB),
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("aliasSwitch v4 → v5 mismatch (-want +got):\n%s", diff)
	}
	for _, op := range got {
		if op.GetCreateAlias().GetAliasName() == exB {
			t.Errorf("deleted tool b keeps an alias")
		}
	}

	// The first write only creates.
	first := aliasSwitch(nil, map[string]string{"habilis_shop_meta": "m", "habilis_shop_tools": "t"}, "habilis_shop_meta")
	wantFirst := []*qdrant.AliasOperations{
		qdrant.NewAliasCreate("habilis_shop_tools", "t"),
		qdrant.NewAliasCreate("habilis_shop_meta", "m"),
	}
	if diff := cmp.Diff(wantFirst, first, protocmp.Transform()); diff != "" {
		t.Errorf("first aliasSwitch mismatch (-want +got):\n%s", diff)
	}

	// Restoring points every listed alias back and deletes those only the
	// failed switch made.
	restore := aliasRestore(map[string]string{"habilis_shop_tools": "t4", "habilis_shop_meta": "m4"},
		map[string]string{"habilis_shop_tools": "t5", "habilis_shop_meta": "m5", exB: "b5"})
	wantRestore := []*qdrant.AliasOperations{
		qdrant.NewAliasCreate("habilis_shop_meta", "m4"),
		qdrant.NewAliasCreate("habilis_shop_tools", "t4"),
		qdrant.NewAliasDelete(exB),
	}
	if diff := cmp.Diff(wantRestore, restore, protocmp.Transform()); diff != "" {
		t.Errorf("aliasRestore mismatch (-want +got):\n%s", diff)
	}
}

func TestStaleCollections(t *testing.T) {
	n := newNames("shop")
	all := []string{
		"habilis_shop_v4_aaaaaaaa_tools", "habilis_shop_v4_aaaaaaaa_meta", // previous version
		"habilis_shop_v5_cccccccc_tools",                                  // a losing writer of version 5
		"habilis_shop_v5_bbbbbbbb_tools", "habilis_shop_v5_bbbbbbbb_meta", // committed
		"habilis_shop_v6_dddddddd_tools",   // a write in progress
		"habilis_shop-2_v1_aaaaaaaa_tools", // another catalog
		"habilis_shop_tools",               // an alias, never listed as a collection but never touched
		"unrelated",
	}
	got := staleCollections(n, all, 5, "v5_bbbbbbbb")
	want := []string{"habilis_shop_v4_aaaaaaaa_meta", "habilis_shop_v4_aaaaaaaa_tools", "habilis_shop_v5_cccccccc_tools"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("staleCollections mismatch (-want +got):\n%s", diff)
	}
}

func TestBatches(t *testing.T) {
	tests := []struct {
		n, size int
		want    [][2]int
	}{
		{0, 256, nil},
		{1, 256, [][2]int{{0, 1}}},
		{256, 256, [][2]int{{0, 256}}},
		{600, 256, [][2]int{{0, 256}, {256, 512}, {512, 600}}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, batches(tt.n, tt.size)); diff != "" {
			t.Errorf("batches(%d, %d) mismatch (-want +got):\n%s", tt.n, tt.size, diff)
		}
	}
}
