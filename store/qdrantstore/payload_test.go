package qdrantstore

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/store/storetest"
	"github.com/qdrant/go-client/qdrant"
	"google.golang.org/protobuf/proto"
)

// retrieved turns a point as sent into the point Qdrant gives back: the
// payload as is and the input vectors as output vectors, through the wire
// encoding.
func retrieved(t *testing.T, p *qdrant.PointStruct) *qdrant.RetrievedPoint {
	t.Helper()
	b, err := proto.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var sent qdrant.PointStruct
	if err := proto.Unmarshal(b, &sent); err != nil {
		t.Fatal(err)
	}
	out := map[string]*qdrant.VectorOutput{}
	for name, v := range sent.GetVectors().GetVectors().GetVectors() {
		switch x := v.GetVector().(type) {
		case *qdrant.Vector_Dense:
			out[name] = &qdrant.VectorOutput{Vector: &qdrant.VectorOutput_Dense{Dense: x.Dense}}
		case *qdrant.Vector_Sparse:
			out[name] = &qdrant.VectorOutput{Vector: &qdrant.VectorOutput_Sparse{Sparse: x.Sparse}}
		default:
			t.Fatalf("vector %q of unexpected kind %T", name, x)
		}
	}
	return &qdrant.RetrievedPoint{
		Id:      sent.GetId(),
		Payload: sent.GetPayload(),
		Vectors: &qdrant.VectorsOutput{VectorsOptions: &qdrant.VectorsOutput_Vectors{Vectors: &qdrant.NamedVectorsOutput{Vectors: out}}},
	}
}

// roundTrip stores rec as a tool point and example points and reads it back.
func roundTrip(t *testing.T, rec habilis.Record, shared bool) habilis.Record {
	t.Helper()
	tp := retrieved(t, toolPoint(&rec))
	got, n, withVecs, err := toolFromPoint(tp.GetPayload(), tp.GetVectors())
	if err != nil {
		t.Fatalf("toolFromPoint(%q): %v", rec.Tool.Name, err)
	}
	var exs []example
	// Read the examples back in reverse, as a scroll in id order might.
	for i := len(rec.Tool.Examples) - 1; i >= 0; i-- {
		var v habilis.Vector
		if rec.ExampleVectors != nil {
			v = rec.ExampleVectors[i]
		}
		ep := retrieved(t, examplePoint(rec.Tool.Name, i, rec.Tool.Examples[i], v, shared))
		e, err := exampleFromPoint(ep.GetPayload(), ep.GetVectors())
		if err != nil {
			t.Fatalf("exampleFromPoint: %v", err)
		}
		exs = append(exs, e)
	}
	if err := attachExamples(&got, n, withVecs, exs); err != nil {
		t.Fatalf("attachExamples(%q): %v", rec.Tool.Name, err)
	}
	return got
}

func TestRecordRoundTrip(t *testing.T) {
	noMeta := storetest.Record("bare", 1, false, 3)
	noMeta.Tool.Meta = nil
	noMeta.Tool.InputSchema = nil
	emptyMeta := storetest.Record("empty.meta", 0, true, 5)
	emptyMeta.Tool.Meta = map[string]string{}
	zeroMargin := storetest.Record("zero-margin", 2, false, 10) // seed%5 == 0: Tool.Margin points at 0
	noVectors := storetest.Record("no_vectors", 2, false, 1)
	noVectors.ExampleVectors = nil
	noVectors.Centroid = habilis.Vector{}
	zeroExample := storetest.Record("zero-example", 2, true, 4)
	zeroExample.ExampleVectors[1] = habilis.Vector{}

	tests := []struct {
		name string
		rec  habilis.Record
	}{
		{"dense, no examples", storetest.Record("get.weather", 0, false, 2)},
		{"dense, one example", storetest.Record("get-weather", 1, false, 3)},
		{"dense, three examples, margin override", storetest.Record("Get_Weather", 3, false, 4)},
		{"sparse, no examples", storetest.Record("search", 0, true, 7)},
		{"sparse, five examples", storetest.Record("search.web", 5, true, 8)},
		{"no meta, no schema", noMeta},
		{"empty meta", emptyMeta},
		{"tool margin of zero", zeroMargin},
		{"examples without vectors", noVectors},
		{"a zero example vector", zeroExample},
		{"wide dense", storetest.Generate("wide", 4, storetest.Shape{Dim: 1024}, 6)},
	}
	for _, tt := range tests {
		for _, shared := range []bool{false, true} {
			got := roundTrip(t, tt.rec, shared)
			if diff := cmp.Diff(tt.rec, got); diff != "" {
				t.Errorf("%s (shared %v): round trip mismatch (-want +got):\n%s", tt.name, shared, diff)
			}
		}
	}
	if zeroMargin.Tool.Margin == nil || *zeroMargin.Tool.Margin != 0 {
		t.Fatalf("test record %q should have a zero tool margin", zeroMargin.Tool.Name)
	}
}

func TestToolPointShape(t *testing.T) {
	rec := storetest.Record("get.weather", 0, false, 2)
	p := toolPoint(&rec)
	if id := p.GetId().GetUuid(); !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(id) {
		t.Errorf("tool point id %q is not a UUID", id)
	}
	if toolPointID("get.weather").GetUuid() == toolPointID("get-weather").GetUuid() {
		t.Errorf("two tools share a point id")
	}
	vecs := p.GetVectors().GetVectors().GetVectors()
	if _, ok := vecs[vecCentroid]; ok {
		t.Errorf("tool without examples has a centroid vector")
	}
	if got := len(vecs[vecDescription].GetDense().GetData()); got != 8 {
		t.Errorf("description vector has %d dimensions, want 8", got)
	}
	if got := p.GetPayload()[keySchema].GetStringValue(); got != string(rec.Tool.InputSchema) {
		t.Errorf("schema payload = %q, want the schema's JSON %q", got, rec.Tool.InputSchema)
	}
	if got := p.GetPayload()[keyExamples].GetIntegerValue(); got != 0 {
		t.Errorf("examples payload = %d, want 0", got)
	}
	sp := examplePoint("get.weather", 3, "hi", habilis.Vector{Indices: []uint32{1}, Values: []float32{1}}, true)
	if sp.GetId().GetUuid() == "" || sp.GetId().GetUuid() == sharedExampleID("get.weather", 2).GetUuid() {
		t.Errorf("shared example id %v is not a distinct UUID", sp.GetId())
	}
	if got := examplePoint("x", 3, "hi", habilis.Vector{}, false).GetId().GetNum(); got != 3 {
		t.Errorf("per-tool example id = %d, want its index 3", got)
	}
}

func TestMetaRoundTrip(t *testing.T) {
	for _, l := range []live{
		{meta: withTime(storetest.Meta(8, 1), 5), layout: LayoutPerTool, group: "v5_01234567", tools: 3, dim: 8},
		{meta: withTime(storetest.Meta(0, 2), 9), layout: LayoutShared, group: "v9_89abcdef", tools: 0},
		{meta: habilis.CatalogMeta{Version: 1, UpdatedAt: time.Unix(0, 1).UTC(), EmbedderState: []byte{}, Calibration: json.RawMessage(`{}`)}, layout: LayoutShared, group: "v1_00000000"},
	} {
		p := retrieved(t, metaPoint(l))
		if len(p.GetVectors().GetVectors().GetVectors()) != 0 {
			t.Errorf("meta point has vectors")
		}
		got, err := liveFromPayload(p.GetPayload())
		if err != nil {
			t.Fatalf("liveFromPayload: %v", err)
		}
		if diff := cmp.Diff(l, got, cmp.AllowUnexported(live{})); diff != "" {
			t.Errorf("meta round trip mismatch (-want +got):\n%s", diff)
		}
	}
}

func withTime(m habilis.CatalogMeta, version uint64) habilis.CatalogMeta {
	m.Version = version
	m.UpdatedAt = time.Date(2025, 3, 4, 5, 6, 7, 891011121, time.UTC)
	return m
}

func TestPayloadErrors(t *testing.T) {
	rec := storetest.Record("t", 2, false, 1)
	good := toolPoint(&rec).GetPayload()
	for _, key := range []string{keyName, keyDescription, keyExamples, keyRadius, keyHasRadius, keyMargin, keyHash} {
		p := clonePayload(good)
		delete(p, key)
		if _, _, _, err := toolFromPoint(p, nil); err == nil {
			t.Errorf("toolFromPoint without %q: no error", key)
		}
	}
	p := clonePayload(good)
	p[keyMeta] = qdrant.NewValueFromFields(map[string]*qdrant.Value{"n": qdrant.NewValueInt(1)})
	if _, _, _, err := toolFromPoint(p, nil); err == nil {
		t.Errorf("toolFromPoint with a number in meta: no error")
	}
	p = clonePayload(good)
	p[keyExamples] = qdrant.NewValueInt(-1)
	if _, _, _, err := toolFromPoint(p, nil); err == nil {
		t.Errorf("toolFromPoint with -1 examples: no error")
	}

	l := live{meta: withTime(storetest.Meta(0, 1), 1), layout: LayoutShared, group: "v1_00000000"}
	m := metaPoint(l).GetPayload()
	m[keyLayout] = qdrant.NewValueString("columnar")
	if _, err := liveFromPayload(m); err == nil {
		t.Errorf("liveFromPayload with an unknown layout: no error")
	}
	m = metaPoint(l).GetPayload()
	m[keyEmbedderState] = qdrant.NewValueString("not base64!")
	if _, err := liveFromPayload(m); err == nil {
		t.Errorf("liveFromPayload with a bad embedder state: no error")
	}

	rec2 := habilis.Record{Tool: habilis.Tool{Name: "t"}}
	for _, exs := range [][]example{
		{{index: 0}},                         // too few
		{{index: 0}, {index: 0}},             // repeated
		{{index: 0}, {index: 2}},             // out of range
		{{index: 0}, {index: 1}, {index: 2}}, // too many
	} {
		if err := attachExamples(&rec2, 2, true, exs); err == nil {
			t.Errorf("attachExamples(%v): no error", exs)
		}
	}
}

func TestPayloadNumbersAcceptBothKinds(t *testing.T) {
	// Qdrant keeps payloads as JSON, where 1.0 and 1 may come back either way.
	r := payloadReader{p: map[string]*qdrant.Value{
		"i": qdrant.NewValueDouble(3), "f": qdrant.NewValueInt(2), "x": qdrant.NewValueDouble(1.5),
	}}
	if got := r.int("i"); got != 3 {
		t.Errorf("int(3.0) = %d", got)
	}
	if got := r.float("f"); got != 2 {
		t.Errorf("float(2) = %v", got)
	}
	if r.err != nil {
		t.Errorf("unexpected error %v", r.err)
	}
	r.int("x")
	if r.err == nil {
		t.Errorf("int(1.5): no error")
	}
}

func clonePayload(p map[string]*qdrant.Value) map[string]*qdrant.Value {
	out := make(map[string]*qdrant.Value, len(p))
	for k, v := range p {
		out[k] = v
	}
	return out
}

func TestVectorConversion(t *testing.T) {
	if toQdrant(habilis.Vector{}) != nil || toQdrant(habilis.Vector{Dense: []float32{}}) != nil {
		t.Errorf("zero vectors are sent")
	}
	sparse := habilis.Vector{Indices: []uint32{3, 9}, Values: []float32{0.6, 0.8}}
	if got := toQdrant(sparse).GetSparse(); got == nil || !cmp.Equal(got.GetIndices(), sparse.Indices) {
		t.Errorf("toQdrant(sparse) = %v", toQdrant(sparse))
	}
	// The deprecated wire form carries sparse values in Data with indices
	// beside; it must not be read as dense.
	//lint:ignore SA1019 older servers still send the deprecated form
	old := &qdrant.VectorOutput{Data: []float32{0.6, 0.8}, Indices: &qdrant.SparseIndices{Data: []uint32{3, 9}}}
	if diff := cmp.Diff(sparse, fromQdrant(old)); diff != "" {
		t.Errorf("fromQdrant(deprecated sparse) mismatch (-want +got):\n%s", diff)
	}
	//lint:ignore SA1019 older servers still send the deprecated form
	oldDense := &qdrant.VectorOutput{Data: []float32{0.6, 0.8}}
	if diff := cmp.Diff(habilis.Vector{Dense: []float32{0.6, 0.8}}, fromQdrant(oldDense)); diff != "" {
		t.Errorf("fromQdrant(deprecated dense) mismatch (-want +got):\n%s", diff)
	}
	if !fromQdrant(nil).IsZero() {
		t.Errorf("fromQdrant(nil) is not the zero vector")
	}
}
