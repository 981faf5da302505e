package qdrantstore

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/habilis-router/habilis"
	"github.com/qdrant/go-client/qdrant"
)

// Named vectors and payload keys. Tool points carry the named vectors
// "description" and "centroid"; example points "example". A zero vector
// (a tool without examples has no centroid) is left out of the point, which
// Qdrant allows for named vectors, and reads back as habilis.Vector{}.
const (
	vecDescription = "description"
	vecCentroid    = "centroid"
	// vecDocument is the lexical document vector, always sparse, whatever
	// the form of the main embedder's vectors.
	vecDocument = "document"
	vecExample  = "example"

	keyName          = "name"
	keyDescription   = "description"
	keySchema        = "schema"
	keyExamples      = "examples"
	keyExampleVecs   = "example_vectors"
	keyRadius        = "radius"
	keyHasRadius     = "has_radius"
	keyRadiusExample = "radius_example"
	keyMargin        = "margin"
	keyToolMargin    = "tool_margin"
	keyHash          = "hash"
	keyExecutor      = "executor"
	keyMeta          = "meta"

	keyTool  = "tool"
	keyIndex = "index"
	keyText  = "text"

	keyVersion         = "version"
	keyEmbedderKind    = "embedder_kind"
	keyEmbedderModel   = "embedder_model"
	keyEmbedderDim     = "embedder_dim"
	keyEmbedderVersion = "embedder_version"
	keyEmbedderState   = "embedder_state"
	keyLexicalKind     = "lexical_kind"
	keyLexicalModel    = "lexical_model"
	keyLexicalDim      = "lexical_dim"
	keyLexicalVersion  = "lexical_version"
	keyLexicalState    = "lexical_state"
	keyCalibration     = "calibration"
	keyUpdatedAt       = "updated_at"
	keyLayout          = "layout"
	keyGroup           = "group"
	keyTools           = "tools"
	keyDim             = "dim"
)

// metaPointID is the id of the one point of a meta collection.
const metaPointID = 1

// live is what the meta point says about the committed version.
type live struct {
	meta   habilis.CatalogMeta
	layout Layout
	group  string // "" for an empty, never-written store
	tools  int
	dim    int // dense size of the vectors; 0 for sparse
}

// metaPoint stores the catalog meta and how the version is laid out. The
// embedder state (arbitrary bytes) is base64; the calibration is a JSON
// string kept byte for byte.
func metaPoint(l live) *qdrant.PointStruct {
	m := l.meta
	p := map[string]*qdrant.Value{
		keyVersion:         qdrant.NewValueInt(int64(m.Version)),
		keyEmbedderKind:    qdrant.NewValueString(m.Embedder.Kind),
		keyEmbedderModel:   qdrant.NewValueString(m.Embedder.Model),
		keyEmbedderDim:     qdrant.NewValueInt(int64(m.Embedder.Dim)),
		keyEmbedderVersion: qdrant.NewValueString(m.Embedder.Version),
		keyLexicalKind:     qdrant.NewValueString(m.Lexical.Kind),
		keyLexicalModel:    qdrant.NewValueString(m.Lexical.Model),
		keyLexicalDim:      qdrant.NewValueInt(int64(m.Lexical.Dim)),
		keyLexicalVersion:  qdrant.NewValueString(m.Lexical.Version),
		keyUpdatedAt:       qdrant.NewValueInt(m.UpdatedAt.UnixNano()),
		keyLayout:          qdrant.NewValueString(string(l.layout)),
		keyGroup:           qdrant.NewValueString(l.group),
		keyTools:           qdrant.NewValueInt(int64(l.tools)),
		keyDim:             qdrant.NewValueInt(int64(l.dim)),
	}
	if m.EmbedderState != nil {
		p[keyEmbedderState] = qdrant.NewValueString(base64.StdEncoding.EncodeToString(m.EmbedderState))
	}
	if m.LexicalState != nil {
		p[keyLexicalState] = qdrant.NewValueString(base64.StdEncoding.EncodeToString(m.LexicalState))
	}
	if m.Calibration != nil {
		p[keyCalibration] = qdrant.NewValueString(string(m.Calibration))
	}
	return &qdrant.PointStruct{
		Id:      qdrant.NewIDNum(metaPointID),
		Vectors: qdrant.NewVectorsMap(map[string]*qdrant.Vector{}),
		Payload: p,
	}
}

// liveFromPayload reads a meta point's payload.
func liveFromPayload(p map[string]*qdrant.Value) (live, error) {
	r := payloadReader{p: p}
	var l live
	l.meta.Version = uint64(r.int(keyVersion))
	l.meta.Embedder = r.embedderInfo(keyEmbedderKind, keyEmbedderModel, keyEmbedderDim, keyEmbedderVersion)
	l.meta.EmbedderState = r.optBase64(keyEmbedderState)
	l.meta.Lexical = r.embedderInfo(keyLexicalKind, keyLexicalModel, keyLexicalDim, keyLexicalVersion)
	l.meta.LexicalState = r.optBase64(keyLexicalState)
	if s, ok := r.optStr(keyCalibration); ok {
		l.meta.Calibration = json.RawMessage(s)
	}
	l.meta.UpdatedAt = time.Unix(0, r.int(keyUpdatedAt)).UTC()
	l.layout = Layout(r.str(keyLayout))
	l.group = r.str(keyGroup)
	l.tools = int(r.int(keyTools))
	l.dim = int(r.int(keyDim))
	if r.err != nil {
		return l, fmt.Errorf("meta point: %w", r.err)
	}
	switch l.layout {
	case LayoutPerTool, LayoutShared:
	default:
		return l, fmt.Errorf("meta point: unknown layout %q", l.layout)
	}
	return l, nil
}

// toolPointID derives a stable UUID from a tool's name, so a tool keeps its
// id across versions and can be fetched by name without a filter.
func toolPointID(tool string) *qdrant.PointId {
	return qdrant.NewIDUUID(uuidOf("tool\x00" + tool))
}

// sharedExampleID derives the UUID of example i of tool in the shared
// layout. Per-tool collections number their examples 0, 1, 2...
func sharedExampleID(tool string, i int) *qdrant.PointId {
	return qdrant.NewIDUUID(uuidOf("example\x00" + tool + "\x00" + strconv.Itoa(i)))
}

// uuidOf formats the first 16 bytes of SHA-256(s) as a version 8
// (custom) UUID.
func uuidOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	b := sum[:16]
	b[6] = b[6]&0x0f | 0x80
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// toolPoint is a record without its examples: definition and gate in the
// payload, description and centroid as named vectors. Floats are stored as
// doubles, which hold every float32 exactly.
func toolPoint(r *habilis.Record) *qdrant.PointStruct {
	t := &r.Tool
	p := map[string]*qdrant.Value{
		keyName:          qdrant.NewValueString(t.Name),
		keyDescription:   qdrant.NewValueString(t.Description),
		keyExamples:      qdrant.NewValueInt(int64(len(t.Examples))),
		keyExampleVecs:   qdrant.NewValueBool(r.ExampleVectors != nil),
		keyRadius:        qdrant.NewValueDouble(float64(r.Radius)),
		keyHasRadius:     qdrant.NewValueBool(r.HasRadius),
		keyRadiusExample: qdrant.NewValueString(r.RadiusExample),
		keyMargin:        qdrant.NewValueDouble(float64(r.Margin)),
		keyHash:          qdrant.NewValueString(r.Hash),
	}
	if t.InputSchema != nil {
		p[keySchema] = qdrant.NewValueString(string(t.InputSchema))
	}
	if t.Margin != nil {
		p[keyToolMargin] = qdrant.NewValueDouble(float64(*t.Margin))
	}
	if t.Executor != nil {
		p[keyExecutor] = qdrant.NewValueString(string(t.Executor))
	}
	if t.Meta != nil {
		fields := make(map[string]*qdrant.Value, len(t.Meta))
		for k, v := range t.Meta {
			fields[k] = qdrant.NewValueString(v)
		}
		p[keyMeta] = qdrant.NewValueFromFields(fields)
	}
	vecs := map[string]*qdrant.Vector{}
	if v := toQdrant(r.DescriptionVector); v != nil {
		vecs[vecDescription] = v
	}
	if v := toQdrant(r.Centroid); v != nil {
		vecs[vecCentroid] = v
	}
	if v := toQdrant(r.DocumentVector); v != nil {
		vecs[vecDocument] = v
	}
	return &qdrant.PointStruct{Id: toolPointID(t.Name), Vectors: qdrant.NewVectorsMap(vecs), Payload: p}
}

// toolFromPoint reads a tool point back into a record whose examples are
// still to be attached: it returns the number of examples and whether the
// record had example vectors.
func toolFromPoint(payload map[string]*qdrant.Value, vectors *qdrant.VectorsOutput) (rec habilis.Record, nExamples int, exampleVecs bool, err error) {
	r := payloadReader{p: payload}
	t := &rec.Tool
	t.Name = r.str(keyName)
	t.Description = r.str(keyDescription)
	if s, ok := r.optStr(keySchema); ok {
		t.InputSchema = json.RawMessage(s)
	}
	if f, ok := r.optFloat(keyToolMargin); ok {
		m := float32(f)
		t.Margin = &m
	}
	if s, ok := r.optStr(keyExecutor); ok {
		t.Executor = json.RawMessage(s)
	}
	if st, ok := r.optStruct(keyMeta); ok {
		t.Meta = make(map[string]string, len(st.GetFields()))
		for k, v := range st.GetFields() {
			s, isStr := v.GetKind().(*qdrant.Value_StringValue)
			if !isStr {
				return rec, 0, false, fmt.Errorf("tool point %q: meta %q is not a string", t.Name, k)
			}
			t.Meta[k] = s.StringValue
		}
	}
	nExamples = int(r.int(keyExamples))
	exampleVecs = r.bool(keyExampleVecs)
	rec.Radius = float32(r.float(keyRadius))
	rec.HasRadius = r.bool(keyHasRadius)
	rec.RadiusExample = r.str(keyRadiusExample)
	rec.Margin = float32(r.float(keyMargin))
	rec.Hash = r.str(keyHash)
	if r.err != nil {
		return rec, 0, false, fmt.Errorf("tool point %q: %w", t.Name, r.err)
	}
	if nExamples < 0 {
		return rec, 0, false, fmt.Errorf("tool point %q: %d examples", t.Name, nExamples)
	}
	named := vectors.GetVectors().GetVectors()
	rec.DescriptionVector = fromQdrant(named[vecDescription])
	rec.Centroid = fromQdrant(named[vecCentroid])
	rec.DocumentVector = fromQdrant(named[vecDocument])
	return rec, nExamples, exampleVecs, nil
}

// examplePoint is example i of tool. Per-tool collections number points by
// index; the shared collection derives a UUID from tool and index.
func examplePoint(tool string, i int, text string, v habilis.Vector, shared bool) *qdrant.PointStruct {
	id := qdrant.NewIDNum(uint64(i))
	if shared {
		id = sharedExampleID(tool, i)
	}
	vecs := map[string]*qdrant.Vector{}
	if qv := toQdrant(v); qv != nil {
		vecs[vecExample] = qv
	}
	return &qdrant.PointStruct{
		Id:      id,
		Vectors: qdrant.NewVectorsMap(vecs),
		Payload: map[string]*qdrant.Value{
			keyTool:  qdrant.NewValueString(tool),
			keyIndex: qdrant.NewValueInt(int64(i)),
			keyText:  qdrant.NewValueString(text),
		},
	}
}

// example is one example point read back.
type example struct {
	tool   string
	index  int
	text   string
	vector habilis.Vector
}

func exampleFromPoint(payload map[string]*qdrant.Value, vectors *qdrant.VectorsOutput) (example, error) {
	r := payloadReader{p: payload}
	e := example{tool: r.str(keyTool), index: int(r.int(keyIndex)), text: r.str(keyText)}
	if r.err != nil {
		return e, fmt.Errorf("example point: %w", r.err)
	}
	e.vector = fromQdrant(vectors.GetVectors().GetVectors()[vecExample])
	return e, nil
}

// attachExamples sets the examples of rec from exs, which must be exactly
// indexes 0..n-1 in any order.
func attachExamples(rec *habilis.Record, n int, withVectors bool, exs []example) error {
	if len(exs) != n {
		return fmt.Errorf("tool %q: %d example points, want %d", rec.Tool.Name, len(exs), n)
	}
	if n == 0 {
		return nil
	}
	texts := make([]string, n)
	vecs := make([]habilis.Vector, n)
	seen := make([]bool, n)
	for _, e := range exs {
		if e.index < 0 || e.index >= n || seen[e.index] {
			return fmt.Errorf("tool %q: example index %d out of range or repeated", rec.Tool.Name, e.index)
		}
		seen[e.index] = true
		texts[e.index] = e.text
		vecs[e.index] = e.vector
	}
	rec.Tool.Examples = texts
	if withVectors {
		rec.ExampleVectors = vecs
	}
	return nil
}

// toQdrant converts v, or returns nil for a zero vector.
func toQdrant(v habilis.Vector) *qdrant.Vector {
	switch {
	case v.IsZero():
		return nil
	case len(v.Dense) == 0:
		return qdrant.NewVectorSparse(v.Indices, v.Values)
	default:
		return qdrant.NewVectorDense(v.Dense)
	}
}

// fromQdrant converts a vector read back; a missing one is the zero vector.
// Sparse is tested first: the deprecated wire fields carry both kinds in
// Data, and only sparse ones have indices.
func fromQdrant(o *qdrant.VectorOutput) habilis.Vector {
	if o == nil {
		return habilis.Vector{}
	}
	if s := o.GetSparseVector(); s != nil && len(s.GetIndices()) > 0 {
		return habilis.Vector{Indices: s.GetIndices(), Values: s.GetValues()}
	}
	if d := o.GetDenseVector(); d != nil && len(d.GetData()) > 0 {
		return habilis.Vector{Dense: d.GetData()}
	}
	return habilis.Vector{}
}

// payloadReader reads typed payload fields, remembering the first problem so
// that callers check once.
type payloadReader struct {
	p   map[string]*qdrant.Value
	err error
}

func (r *payloadReader) fail(key, want string) {
	if r.err == nil {
		r.err = fmt.Errorf("payload %q: missing or not %s", key, want)
	}
}

// embedderInfo reads an embedder's identity from the four fields named.
func (r *payloadReader) embedderInfo(kind, model, dim, version string) habilis.EmbedderInfo {
	return habilis.EmbedderInfo{Kind: r.str(kind), Model: r.str(model), Dim: int(r.int(dim)), Version: r.str(version)}
}

func (r *payloadReader) str(key string) string { return required(r, key, "a string", r.optStr) }

// required returns what opt reads at key, failing r with want when it is
// missing or of another type.
func required[T any](r *payloadReader, key, want string, opt func(string) (T, bool)) T {
	v, ok := opt(key)
	if !ok {
		r.fail(key, want)
	}
	return v
}

func (r *payloadReader) optStr(key string) (string, bool) {
	v, ok := r.p[key].GetKind().(*qdrant.Value_StringValue)
	if !ok {
		return "", false
	}
	return v.StringValue, true
}

// optBase64 decodes a base64 string field; nil when it is absent.
func (r *payloadReader) optBase64(key string) []byte {
	s, ok := r.optStr(key)
	if !ok {
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		if r.err == nil {
			r.err = fmt.Errorf("payload %q: %v", key, err)
		}
		return nil
	}
	return b
}

func (r *payloadReader) int(key string) int64 {
	switch v := r.p[key].GetKind().(type) {
	case *qdrant.Value_IntegerValue:
		return v.IntegerValue
	case *qdrant.Value_DoubleValue:
		if v.DoubleValue == math.Trunc(v.DoubleValue) && math.Abs(v.DoubleValue) < 1<<53 {
			return int64(v.DoubleValue)
		}
	}
	r.fail(key, "an integer")
	return 0
}

func (r *payloadReader) float(key string) float64 { return required(r, key, "a number", r.optFloat) }

// optFloat accepts integers too: a whole double may come back as one.
func (r *payloadReader) optFloat(key string) (float64, bool) {
	switch v := r.p[key].GetKind().(type) {
	case *qdrant.Value_DoubleValue:
		return v.DoubleValue, true
	case *qdrant.Value_IntegerValue:
		return float64(v.IntegerValue), true
	}
	return 0, false
}

func (r *payloadReader) bool(key string) bool {
	v, ok := r.p[key].GetKind().(*qdrant.Value_BoolValue)
	if !ok {
		r.fail(key, "a boolean")
		return false
	}
	return v.BoolValue
}

func (r *payloadReader) optStruct(key string) (*qdrant.Struct, bool) {
	v, ok := r.p[key].GetKind().(*qdrant.Value_StructValue)
	if !ok {
		return nil, false
	}
	return v.StructValue, true
}
