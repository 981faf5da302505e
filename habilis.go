// Package habilis is the vocabulary of the habilis tool router: tools and
// their catalogs, vectors and the embedders that make them, the store that
// keeps them, and the decisions selection produces.
//
// The package has no dependencies beyond the standard library. Indexing and
// selection live in package selector, collision analysis in package
// collision, and backends (embedders, stores, the gRPC API) in packages of
// their own.
package habilis

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Tool is one entry of a catalog, in its normalised form: whatever shape the
// catalog file had, arguments are a JSON Schema object.
type Tool struct {
	// Name is unique in a catalog and follows MCP's rules (letters,
	// digits, '_', '-' and '.', 1 to 64 characters), plus '&', which real
	// catalogs use ("PDF&URLTool").
	Name string `json:"name"`
	// Description says what the tool does; it is never empty.
	Description string `json:"description"`
	// Examples are requests the tool should handle, in users' words. A tool
	// with none is routed by its description only.
	Examples []string `json:"examples,omitempty"`
	// InputSchema is a JSON Schema with "type": "object" describing the
	// tool's arguments. It is never nil after parsing.
	InputSchema json.RawMessage `json:"inputSchema"`
	// Margin, when set, overrides the catalog's margin for this tool's gate.
	Margin *float32 `json:"margin,omitempty"`
	// Executor, when set, says how the tool runs (package fill interprets
	// it). A tool without one is selection-only.
	Executor json.RawMessage `json:"executor,omitempty"`
	// Meta holds free-form annotations carried with the tool.
	Meta map[string]string `json:"meta,omitempty"`
}

// Vector is a unit-length embedding, dense or sparse. Dense vectors set
// Dense; sparse ones set Indices (strictly ascending) and Values of the same
// length. Every score in habilis is a dot product of two vectors of the same
// embedder, so a cosine similarity.
type Vector struct {
	Dense   []float32 `json:"dense,omitempty"`
	Indices []uint32  `json:"indices,omitempty"`
	Values  []float32 `json:"values,omitempty"`
}

// IsSparse reports whether v is in sparse form.
func (v Vector) IsSparse() bool { return v.Dense == nil && v.Indices != nil }

// IsZero reports whether v holds no coordinates at all (e.g. the lexical
// embedding of a text with no known terms).
func (v Vector) IsZero() bool { return len(v.Dense) == 0 && len(v.Indices) == 0 }

// Clone returns a copy of v that shares no memory with it, in the same
// form (a nil slice stays nil).
func (v Vector) Clone() Vector {
	return Vector{Dense: slices.Clone(v.Dense), Indices: slices.Clone(v.Indices), Values: slices.Clone(v.Values)}
}

// Purpose tells an embedder what a text is for. Some models embed queries
// and documents differently (instruction prefixes, asymmetric weighting).
type Purpose int

const (
	// Document is catalog text: descriptions and examples.
	Document Purpose = iota
	// Query is a user's request at selection time.
	Query
)

// EmbedderInfo identifies an embedder and the space its vectors live in.
// Two embedders whose infos differ make incomparable vectors.
type EmbedderInfo struct {
	// Kind is the embedder family: "lexical", "ollama", "openai".
	Kind string `json:"kind"`
	// Model names the model within the family ("" for lexical).
	Model string `json:"model,omitempty"`
	// Dim is the dense dimension, or 0 for sparse embedders.
	Dim int `json:"dim"`
	// Version changes whenever the same kind and model would produce
	// different vectors (a new tokeniser, new fitted statistics). An
	// embedder with fitted statistics writes it "ALGORITHM-STATE":
	// ALGORITHM changes when the same text and state would give another
	// vector, STATE names the statistics, which a store keeps beside the
	// vectors.
	Version string `json:"version,omitempty"`
}

// Algorithm returns the part of Version before its first "-" (all of it
// when there is none): what stored vectors and new ones must share, fitted
// statistics aside.
func (i EmbedderInfo) Algorithm() string {
	a, _, _ := strings.Cut(i.Version, "-")
	return a
}

// String returns "kind:model (dim N)" for messages.
func (i EmbedderInfo) String() string { return i.describe(false) }

// Detail is String with the algorithm, when Version names one ("lexical
// (sparse, algorithm 2)"), so that messages tell two versions of one
// embedder apart.
func (i EmbedderInfo) Detail() string { return i.describe(true) }

func (i EmbedderInfo) describe(algorithm bool) string {
	s := i.Kind
	if i.Model != "" {
		s += ":" + i.Model
	}
	if i.Dim > 0 {
		s += fmt.Sprintf(" (dim %d", i.Dim)
	} else {
		s += " (sparse"
	}
	if a := i.Algorithm(); algorithm && a != "" {
		s += ", algorithm " + a
	}
	return s + ")"
}

// Space reports whether vectors of i and j can be compared: same kind,
// model, dimension and Algorithm. The fitted statistics may differ.
func (i EmbedderInfo) Space(j EmbedderInfo) bool {
	return i.Kind == j.Kind && i.Model == j.Model && i.Dim == j.Dim && i.Algorithm() == j.Algorithm()
}

// Embedder turns texts into unit vectors.
type Embedder interface {
	// Info identifies the embedder. It is cheap and does no I/O; a dense
	// embedder that has not yet detected its dimension reports Dim 0 until
	// its first Embed call.
	Info() EmbedderInfo
	// Embed returns one vector per text, in order. It returns ErrUnavailable
	// (wrapped) when the backend cannot be reached and ErrInvalid when a
	// text cannot be embedded.
	Embed(ctx context.Context, texts []string, p Purpose) ([]Vector, error)
}

// CorpusEmbedder is an Embedder whose vectors depend on statistics of the
// catalog it indexes, like the lexical embedder's term weights. The
// selector refits it on every catalog change and stores the state in the
// same write as the vectors, so the query path and the stored vectors always
// agree.
type CorpusEmbedder interface {
	Embedder
	// Fit returns an embedder fitted to the corpus (every document text of
	// the catalog) and its state, to be persisted with the catalog.
	Fit(ctx context.Context, corpus []string) (CorpusEmbedder, []byte, error)
	// Restore returns the embedder fitted with a state Fit produced.
	// It returns ErrInvalid for a state it cannot read.
	Restore(state []byte) (CorpusEmbedder, error)
}

// Record is a tool as stored: its definition, a hash of that definition,
// and its vectors. The selector computes every field; stores keep them.
type Record struct {
	Tool Tool `json:"tool"`
	// Hash is a hex content hash of Tool, used to skip unchanged tools.
	Hash string `json:"hash"`
	// DescriptionVector embeds the tool's name, description and argument
	// names.
	DescriptionVector Vector `json:"description_vector"`
	// ExampleVectors are parallel to Tool.Examples.
	ExampleVectors []Vector `json:"example_vectors,omitempty"`
	// Centroid is the normalised mean of ExampleVectors; zero when the tool
	// has no examples.
	Centroid Vector `json:"centroid"`
	// Radius is the smallest similarity of an example to Centroid, valid
	// when HasRadius (two examples or more).
	Radius    float32 `json:"radius"`
	HasRadius bool    `json:"has_radius"`
	// RadiusExample is the text of that least-similar example.
	RadiusExample string `json:"radius_example,omitempty"`
	// Margin is the margin in force for this tool when it was indexed.
	Margin float32 `json:"margin"`
	// DocumentVector is the lexical embedding of the whole tool document
	// (name, description, argument names and examples): hybrid mode's
	// lexical signal, whatever the main embedder. Zero when the router runs
	// without a lexical embedder.
	DocumentVector Vector `json:"document_vector"`
}

// CatalogMeta is what a store keeps about the catalog as a whole.
type CatalogMeta struct {
	// Version increases by one with every committed write; 0 is an empty,
	// never-written store.
	Version uint64 `json:"version"`
	// Embedder identifies the embedder that made every stored vector.
	Embedder EmbedderInfo `json:"embedder"`
	// EmbedderState is a CorpusEmbedder's fitted state, or nil.
	EmbedderState []byte `json:"embedder_state,omitempty"`
	// Lexical identifies the lexical embedder behind DocumentVector, and
	// LexicalState is its fitted state (the same as EmbedderState when the
	// main embedder is the lexical one).
	Lexical      EmbedderInfo `json:"lexical"`
	LexicalState []byte       `json:"lexical_state,omitempty"`
	// Calibration is the selector's catalog-wide settings (margins,
	// thresholds, fusion weights), opaque to stores.
	Calibration json.RawMessage `json:"calibration,omitempty"`
	// UpdatedAt is when the last write committed.
	UpdatedAt time.Time `json:"updated_at"`
}

// Snapshot is a catalog as of one committed write.
type Snapshot struct {
	Meta    CatalogMeta
	Records []Record // sorted by tool name
}

// Batch is one atomic write: every put and delete and the new meta commit
// together, or nothing does.
type Batch struct {
	// BaseVersion is the Meta.Version the batch was computed from. A store
	// whose version differs returns ErrConflict and writes nothing.
	BaseVersion uint64
	// Replace drops every stored tool not in Put.
	Replace bool
	Put     []Record
	Delete  []string
	// Meta replaces the stored meta; the store sets Version and UpdatedAt.
	Meta CatalogMeta
	// Index is the selector's search index of the catalog the batch
	// commits, opaque to stores. An IndexStore keeps it with the catalog
	// (nil drops the stored one, which no longer matches); other stores
	// ignore it.
	Index []byte
	// IndexPatch, when set while Index is nil, is what the selector adds to
	// the stored index to describe the catalog the batch commits: an
	// IndexStore keeps its stored index as it is and replaces its stored
	// patch with this one, so that a write of a few tools writes a few
	// tools' worth of index. Index, when set, drops the stored patch.
	IndexPatch []byte
}

// IndexStore is a Store that keeps the selector's search index beside
// the catalog (Batch.Index), so that a router can open a stored catalog
// without rebuilding its index from the records.
type IndexStore interface {
	Store
	// Index returns the meta of the last committed write with the index
	// stored by it, or a nil Data when that write stored none. Data may
	// lie in the store's own memory: it stays valid until Release is
	// called, and must not be written to.
	Index(ctx context.Context) (*StoredIndex, error)
}

// StoredIndex is an index as IndexStore.Index returns it.
type StoredIndex struct {
	Meta CatalogMeta
	Data []byte
	// Patch is the patch stored with Data (Batch.IndexPatch) by the
	// writes since Data was, or nil; like Data, it may lie in the store's
	// memory until Release.
	Patch []byte
	// Release ends the use of Data; it is safe to call more than once.
	Release func()
}

// Store persists a catalog. Implementations: store/boltstore (embedded,
// default) and store/qdrantstore. The selector holds the search structures;
// stores only keep and return records, so every store gives the same answers.
type Store interface {
	// Snapshot returns the catalog as of the last committed write. An empty
	// store returns a Snapshot with Meta.Version 0 and no records.
	Snapshot(ctx context.Context) (*Snapshot, error)
	// Write commits b atomically. It returns ErrConflict when b.BaseVersion
	// is not the stored version, ErrInvalid for a malformed batch (a record
	// without a name, a delete of an unknown tool), and leaves the store
	// unchanged on any error.
	Write(ctx context.Context, b *Batch) (CatalogMeta, error)
	// Version returns the version of the last committed write, the
	// Meta.Version a Snapshot taken now would have, without reading the
	// catalog: what a router polls to notice writes made by other
	// processes sharing the store. It returns ErrUnavailable when the
	// store cannot be reached.
	Version(ctx context.Context) (uint64, error)
	// Close releases the store. Further calls return ErrClosed.
	Close() error
}

// Mode is how selection ranks tools.
type Mode string

const (
	// ModeDescription ranks by similarity to each tool's description.
	ModeDescription Mode = "description"
	// ModeCentroid ranks by similarity to each tool's example centroid and
	// keeps tools whose score reaches their radius minus their margin.
	ModeCentroid Mode = "centroid"
	// ModeHybrid fuses centroid, description, nearest-example and lexical
	// signals, with the gate deciding abstention.
	ModeHybrid Mode = "hybrid"
)

// ParseMode returns the Mode named s ("" is the default, hybrid).
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case "":
		return ModeHybrid, nil
	case ModeDescription, ModeCentroid, ModeHybrid:
		return Mode(s), nil
	}
	return "", fmt.Errorf("mode %q: want description, centroid or hybrid: %w", s, ErrInvalid)
}

// SelectOptions tune one selection. The zero value selects up to 5 tools in
// hybrid mode, fail-closed.
type SelectOptions struct {
	// K is how many tools to return at most; 0 means 5.
	K int
	// Mode is the ranking; "" means hybrid.
	Mode Mode
	// Pinned tools are always returned (marked Pinned), in addition to the
	// k best.
	Pinned []string
	// Denied tools are never returned.
	Denied []string
	// FailOpen returns the k best tools whether or not they pass their
	// gates (each match says whether it passed); the decision still says
	// whether it abstained. Without it, only tools that pass are returned.
	FailOpen bool
}

// Match is one tool in a decision, with the figures that explain it.
type Match struct {
	Tool string `json:"tool"`
	// Score ranks the matches; its meaning depends on the mode (a cosine in
	// description and centroid modes, a fused score in hybrid mode).
	Score float32 `json:"score"`
	// CentroidScore is the query's similarity to the tool's centroid (0
	// for tools without examples).
	CentroidScore float32 `json:"centroid_score"`
	// DescriptionScore is the query's similarity to the description vector.
	DescriptionScore float32 `json:"description_score"`
	// ExampleScore is the similarity of the nearest example, computed when
	// hybrid mode weights it (omitted otherwise: it costs a comparison with
	// every example of the tool).
	ExampleScore float32 `json:"example_score,omitempty"`
	// Radius is the tool's radius, or the catalog-wide threshold plus the
	// margin for tools with fewer than two examples (see RadiusSource).
	Radius float32 `json:"radius"`
	// RadiusSource is "examples" or "catalog" (the catalog-wide threshold).
	RadiusSource string  `json:"radius_source"`
	Margin       float32 `json:"margin"`
	// Passed reports whether the tool passed its gate: its gate score
	// reached Gate. In centroid and description modes the gate score is
	// the centroid score (the description score for tools without
	// examples) and Gate is Radius − Margin, raised to the catalog's noise
	// floor; in hybrid mode it is the tool's evidence and Gate the
	// catalog's hybrid threshold. With the lexical embedder the evidence
	// is the mean of the Rocchio score (centroid with the description) and
	// the lexical document score; with a model embedder it is the Rocchio
	// score. A tool without
	// examples is gated on its description score against the catalog's
	// description threshold in every mode.
	Passed bool `json:"passed"`
	// Gate is the threshold the tool's gate score had to reach.
	Gate float32 `json:"gate"`
	// GateScore is the score compared with Gate.
	GateScore float32 `json:"gate_score"`
	// Confidence is the calibrated confidence that this tool applies, in
	// [0, 1] (hybrid mode; the gate score elsewhere).
	Confidence float32 `json:"confidence"`
	// CollidesWith lists the tools whose regions overlap this one's.
	CollidesWith []string `json:"collides_with"`
	// Pinned reports a tool returned because the request pinned it.
	Pinned bool `json:"pinned,omitempty"`
}

// Decision is the answer to one selection.
type Decision struct {
	Query string `json:"query"`
	Mode  Mode   `json:"mode"`
	// Abstained reports that no tool fits: every candidate failed its gate.
	Abstained bool `json:"abstained"`
	// Reason says why, in words, when Abstained or Ambiguous.
	Reason string `json:"reason"`
	// Ambiguous reports that the best tool that passes its gate collides
	// at high severity with another tool that passes its own; it does not
	// depend on K.
	Ambiguous bool `json:"ambiguous"`
	// Matches holds up to K tools, best first (pinned tools come last):
	// those that pass their gates, or with FailOpen the K best whatever
	// their gates say. When Abstained and not FailOpen it is empty.
	Matches []Match `json:"matches"`
	// CatalogVersion is the version of the catalog the decision was made
	// against (CatalogMeta.Version): the tools, their vectors and the
	// embedder state that embedded the query all come from it.
	CatalogVersion uint64 `json:"catalog_version"`
}

// Severity grades a collision.
type Severity string

const (
	SeverityLow    Severity = "low"
	SeverityMedium Severity = "medium"
	SeverityHigh   Severity = "high"
)

// Rank orders severities: low 1, medium 2, high 3, anything else 0.
func (s Severity) Rank() int {
	switch s {
	case SeverityLow:
		return 1
	case SeverityMedium:
		return 2
	case SeverityHigh:
		return 3
	}
	return 0
}

// Collision reports two tools whose regions of the vector space overlap.
type Collision struct {
	A string `json:"a"`
	B string `json:"b"`
	// CentroidSimilarity is c_a · c_b.
	CentroidSimilarity float32 `json:"centroid_similarity"`
	// Overlap is how far the two gate caps intersect, in radians: the sum of
	// their angular radii minus the angle between the centroids. Positive
	// means the caps intersect.
	Overlap float32 `json:"overlap"`
	// Leaks are examples of one tool that pass the other's gate or rank it
	// first when left out of their own tool.
	Leaks []Leak `json:"leaks"`
	// MisroutesAB counts the examples of A that, left out of A, are routed
	// to B and pass its gate (as a new request like them would be);
	// MisroutesBA those of B routed to A. MisrouteRate is their share of
	// the two tools' held-out examples.
	MisroutesAB  int      `json:"misroutes_a_to_b"`
	MisroutesBA  int      `json:"misroutes_b_to_a"`
	MisrouteRate float32  `json:"misroute_rate"`
	Severity     Severity `json:"severity"`
	// NearestAB counts the examples of A that, left out of A, rank B first
	// of the other tools, misrouted or not; NearestBA those of B ranking A
	// first. Tools that are each other's nearest for many of their examples
	// share a border that new requests cross; severity needs it.
	NearestAB int `json:"nearest_a_to_b"`
	NearestBA int `json:"nearest_b_to_a"`
}

// Leak is one example of tool From that falls into tool Into's region.
type Leak struct {
	From    string `json:"from"`
	Into    string `json:"into"`
	Example string `json:"example"`
	// Score is the example's similarity to Into's centroid; OwnScore to its
	// own tool's centroid computed without it.
	Score    float32 `json:"score"`
	OwnScore float32 `json:"own_score"`
	// RanksFirst reports that Into outranks From for this example.
	RanksFirst bool `json:"ranks_first"`
	// PassesGate reports that the example passes Into's gate.
	PassesGate bool `json:"passes_gate"`
}

// Validate checks the form documented for Vector: dense, or sparse with
// strictly ascending indices and as many values. It returns ErrInvalid.
func (v Vector) Validate() error {
	switch {
	case v.Dense != nil && (v.Indices != nil || v.Values != nil):
		return fmt.Errorf("vector both dense and sparse: %w", ErrInvalid)
	case len(v.Indices) != len(v.Values):
		return fmt.Errorf("vector with %d indices and %d values: %w", len(v.Indices), len(v.Values), ErrInvalid)
	}
	for i := 1; i < len(v.Indices); i++ {
		if v.Indices[i] <= v.Indices[i-1] {
			return fmt.Errorf("vector indices not strictly ascending at %d: %w", i, ErrInvalid)
		}
	}
	return nil
}

// Validate checks what every store refuses in a batch, so that all stores
// refuse the same batches: a record without a name, a name put twice, as
// many example vectors as examples, well-formed vectors, and deletes that
// name a tool once and do not also put it. It returns ErrInvalid.
func (b *Batch) Validate() error {
	puts := make(map[string]bool, len(b.Put))
	for i := range b.Put {
		r := &b.Put[i]
		name := r.Tool.Name
		switch {
		case name == "":
			return fmt.Errorf("put %d: tool without a name: %w", i, ErrInvalid)
		case puts[name]:
			return fmt.Errorf("put %q: twice in one batch: %w", name, ErrInvalid)
		case len(r.ExampleVectors) != len(r.Tool.Examples):
			return fmt.Errorf("put %q: %d example vectors for %d examples: %w", name, len(r.ExampleVectors), len(r.Tool.Examples), ErrInvalid)
		}
		puts[name] = true
		for _, f := range []struct {
			what string
			v    Vector
		}{{"description vector", r.DescriptionVector}, {"centroid", r.Centroid}, {"document vector", r.DocumentVector}} {
			if err := f.v.Validate(); err != nil {
				return fmt.Errorf("put %q: %s: %w", name, f.what, err)
			}
		}
		for j, v := range r.ExampleVectors {
			if err := v.Validate(); err != nil {
				return fmt.Errorf("put %q: example vector %d: %w", name, j, err)
			}
		}
	}
	deletes := make(map[string]bool, len(b.Delete))
	for _, name := range b.Delete {
		switch {
		case name == "":
			return fmt.Errorf("delete: tool without a name: %w", ErrInvalid)
		case puts[name]:
			return fmt.Errorf("delete %q: also put in the same batch: %w", name, ErrInvalid)
		case deletes[name]:
			return fmt.Errorf("delete %q: twice in one batch: %w", name, ErrInvalid)
		}
		deletes[name] = true
	}
	return nil
}

// Hash returns the hex SHA-256 of t's JSON encoding. After catalog.Parse the
// encoding is canonical (sorted schema keys, sorted meta), so equal tools
// hash equal and any change to any field changes the hash.
func (t Tool) Hash() string {
	h := sha256.New()
	h.Write([]byte("habilis.Tool v1\n"))
	b, err := json.Marshal(t)
	if err != nil {
		// A Tool built by hand may hold invalid raw JSON; hash its bytes
		// as strings so Hash still tells tools apart.
		b, _ = json.Marshal(struct {
			Tool
			InputSchema string `json:"inputSchema"`
			Executor    string `json:"executor"`
		}{t, string(t.InputSchema), string(t.Executor)})
	}
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// Content is one item of a result, in MCP's JSON shape.
type Content struct {
	// Type is "text", "image", "audio", "resource" or "resource_link".
	Type     string          `json:"type"`
	Text     string          `json:"text,omitempty"`
	MimeType string          `json:"mimeType,omitempty"`
	Data     string          `json:"data,omitempty"` // base64
	URI      string          `json:"uri,omitempty"`
	Name     string          `json:"name,omitempty"`
	Resource json.RawMessage `json:"resource,omitempty"`
}

// ToolResult is a tool's outcome in the shape of MCP's CallToolResult,
// plus fields of habilis' own.
type ToolResult struct {
	Content           []Content `json:"content"`
	StructuredContent any       `json:"structuredContent,omitempty"`
	// IsError reports that the tool ran and failed, timed out, answered
	// with a non-2xx status, or was not allowed to run; Content says why.
	IsError bool `json:"isError,omitempty"`
	// SelectionOnly reports a tool without an executor: nothing ran.
	SelectionOnly bool `json:"selectionOnly,omitempty"`
	// Ran reports that the executor was started (whatever came of it). It
	// is not part of MCP's result shape.
	Ran bool `json:"-"`
	// Truncated reports output cut at the output limit.
	Truncated bool `json:"truncated,omitempty"`
}

// Text returns the text of all text items, joined by newlines.
func (r *ToolResult) Text() string {
	var parts []string
	for _, c := range r.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}
