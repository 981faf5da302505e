package qdrantstore

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/habilis-router/habilis"
	"github.com/qdrant/go-client/qdrant"
)

// validate refuses what habilis.Batch.Validate refuses, and what Qdrant
// could not store or give back exactly.
func validate(b *habilis.Batch) error {
	if err := b.Validate(); err != nil {
		return err
	}
	for i := range b.Put {
		if err := validRecord(&b.Put[i]); err != nil {
			return fmt.Errorf("put %d: %w", i, err)
		}
	}
	return nil
}

// validRecord refuses what Qdrant could not store or give back exactly.
func validRecord(r *habilis.Record) error {
	name := r.Tool.Name
	if len(name) > 64 {
		return fmt.Errorf("tool %q: name longer than 64 bytes: %w", name, habilis.ErrInvalid)
	}
	for field, f := range map[string]float32{"radius": r.Radius, "margin": r.Margin} {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return fmt.Errorf("tool %q: %s %v is not finite: %w", name, field, f, habilis.ErrInvalid)
		}
	}
	if m := r.Tool.Margin; m != nil && (math.IsNaN(float64(*m)) || math.IsInf(float64(*m), 0)) {
		return fmt.Errorf("tool %q: tool margin %v is not finite: %w", name, *m, habilis.ErrInvalid)
	}
	return nil
}

// apply returns the catalog after the validated batch b on cur (sorted by
// name), or ErrInvalid for a delete of an unknown tool or two tools that
// would share a collection. Neither cur nor b is modified.
func apply(cur []habilis.Record, b *habilis.Batch) ([]habilis.Record, error) {
	byName := make(map[string]habilis.Record, len(cur)+len(b.Put))
	for _, r := range cur {
		byName[r.Tool.Name] = r
	}
	for _, name := range b.Delete {
		if _, ok := byName[name]; !ok {
			return nil, fmt.Errorf("delete %q: no such tool: %w", name, habilis.ErrInvalid)
		}
		delete(byName, name)
	}
	if b.Replace {
		clear(byName)
	}
	for i := range b.Put {
		byName[b.Put[i].Tool.Name] = b.Put[i]
	}
	next := make([]habilis.Record, 0, len(byName))
	for _, r := range byName {
		next = append(next, r)
	}
	slices.SortFunc(next, func(a, b habilis.Record) int { return strings.Compare(a.Tool.Name, b.Tool.Name) })
	names := make([]string, len(next))
	for i, r := range next {
		names[i] = r.Tool.Name
	}
	if err := checkKeys(names); err != nil {
		return nil, fmt.Errorf("%v: %w", err, habilis.ErrInvalid)
	}
	return next, nil
}

// vectorSpace returns the dense size of the catalog's vectors, 0 for sparse
// ones, checking that every vector agrees with every other and with the
// embedder's dimension. A catalog without any vector takes the embedder's.
func vectorSpace(recs []habilis.Record, info habilis.EmbedderInfo) (int, error) {
	var sp space
	for i := range recs {
		if err := sp.record(&recs[i]); err != nil {
			return 0, err
		}
	}
	return sp.size(info)
}

// space is what vectorSpace has seen so far: the dense size, or that the
// vectors are sparse, and the first tool that showed it.
type space struct {
	dim    int
	sparse bool
	first  string
}

// record checks every vector of r.
func (sp *space) record(r *habilis.Record) error {
	if err := sp.check(r.Tool.Name, "description vector", r.DescriptionVector); err != nil {
		return err
	}
	if err := sp.check(r.Tool.Name, "centroid", r.Centroid); err != nil {
		return err
	}
	for j, v := range r.ExampleVectors {
		if err := sp.check(r.Tool.Name, fmt.Sprintf("example vector %d", j), v); err != nil {
			return err
		}
	}
	return nil
}

// check checks one vector, what of tool, against those seen before it.
func (sp *space) check(tool, what string, v habilis.Vector) error {
	if v.IsZero() {
		return nil
	}
	// Records read back from Qdrant are held to the form puts are.
	if err := v.Validate(); err != nil {
		return fmt.Errorf("tool %q: %s: %w", tool, what, err)
	}
	if len(v.Dense) == 0 {
		if sp.dim > 0 {
			return fmt.Errorf("tool %q: %s is sparse but tool %q has dense vectors of size %d: %w", tool, what, sp.first, sp.dim, habilis.ErrInvalid)
		}
		if !sp.sparse {
			sp.sparse, sp.first = true, tool
		}
		return nil
	}
	if sp.sparse {
		return fmt.Errorf("tool %q: %s is dense but tool %q has sparse vectors: %w", tool, what, sp.first, habilis.ErrInvalid)
	}
	if sp.dim == 0 {
		sp.dim, sp.first = len(v.Dense), tool
	} else if len(v.Dense) != sp.dim {
		return fmt.Errorf("tool %q: %s has size %d but tool %q has %d: %w", tool, what, len(v.Dense), sp.first, sp.dim, habilis.ErrInvalid)
	}
	return nil
}

// size checks the vectors seen against the embedder and returns the dense
// size, 0 for sparse vectors, or the embedder's when there were none.
func (sp *space) size(info habilis.EmbedderInfo) (int, error) {
	switch {
	case sp.sparse && info.Dim > 0:
		return 0, fmt.Errorf("vectors are sparse but the embedder %s has dimension %d: %w", info, info.Dim, habilis.ErrInvalid)
	case sp.dim > 0 && info.Dim > 0 && sp.dim != info.Dim:
		return 0, fmt.Errorf("vector size %d does not match the embedder's dimension %d: %w", sp.dim, info.Dim, habilis.ErrInvalid)
	case sp.dim == 0 && !sp.sparse:
		return info.Dim, nil
	}
	return sp.dim, nil
}

// createCollection returns the request creating collection name with the
// given named vectors: dense of size dim compared by dot product (vectors
// are unit length, so it is the cosine, and Qdrant keeps them as given
// where Cosine would renormalise them), or sparse when dim is 0, with
// Qdrant's IDF modifier when idf is set. No vector names gives a
// payload-only collection (the meta collection).
func createCollection(name string, dim int, idf bool, vectorNames ...string) *qdrant.CreateCollection {
	c := &qdrant.CreateCollection{CollectionName: name}
	if len(vectorNames) == 0 {
		return c
	}
	if dim > 0 {
		m := make(map[string]*qdrant.VectorParams, len(vectorNames))
		for _, v := range vectorNames {
			m[v] = &qdrant.VectorParams{Size: uint64(dim), Distance: qdrant.Distance_Dot}
		}
		c.VectorsConfig = qdrant.NewVectorsConfigMap(m)
		return c
	}
	m := make(map[string]*qdrant.SparseVectorParams, len(vectorNames))
	for _, v := range vectorNames {
		p := &qdrant.SparseVectorParams{}
		if idf {
			p.Modifier = qdrant.Modifier_Idf.Enum()
		}
		m[v] = p
	}
	c.SparseVectorsConfig = qdrant.NewSparseVectorsConfig(m)
	return c
}

// tenantIndex returns the request indexing the shared examples collection by
// tool, marked is_tenant so Qdrant stores each tool's points together.
func tenantIndex(collection string) *qdrant.CreateFieldIndexCollection {
	return &qdrant.CreateFieldIndexCollection{
		CollectionName:   collection,
		Wait:             qdrant.PtrOf(true),
		FieldName:        keyTool,
		FieldType:        qdrant.FieldType_FieldTypeKeyword.Enum(),
		FieldIndexParams: qdrant.NewPayloadIndexParamsKeyword(&qdrant.KeywordIndexParams{IsTenant: qdrant.PtrOf(true)}),
	}
}

// toolFilter selects one tool's examples in the shared layout.
func toolFilter(tool string) *qdrant.Filter {
	return &qdrant.Filter{Must: []*qdrant.Condition{qdrant.NewMatchKeyword(keyTool, tool)}}
}

// layoutPlan is the set of collections of one version and the alias each is
// reached by.
type layoutPlan struct {
	group string
	// creates lists the collections in creation order, meta first.
	creates []*qdrant.CreateCollection
	// aliases maps each alias to its collection.
	aliases map[string]string
}

// plan lays out version g of recs.
func (n names) plan(g string, layout Layout, recs []habilis.Record, dim int, idf bool) layoutPlan {
	p := layoutPlan{group: g, aliases: map[string]string{}}
	add := func(alias string, c *qdrant.CreateCollection) {
		p.creates = append(p.creates, c)
		p.aliases[alias] = c.CollectionName
	}
	add(n.metaAlias(), createCollection(n.metaCollection(g), 0, false))
	tools := createCollection(n.toolsCollection(g), dim, idf, vecDescription, vecCentroid)
	// The lexical document vector is sparse whatever the main embedder.
	if tools.SparseVectorsConfig == nil {
		tools.SparseVectorsConfig = qdrant.NewSparseVectorsConfig(map[string]*qdrant.SparseVectorParams{})
	}
	tools.SparseVectorsConfig.Map[vecDocument] = &qdrant.SparseVectorParams{}
	add(n.toolsAlias(), tools)
	if layout == LayoutShared {
		add(n.examplesAlias(), createCollection(n.examplesCollection(g), dim, idf, vecExample))
		return p
	}
	for i := range recs {
		if len(recs[i].Tool.Examples) == 0 {
			continue
		}
		name := recs[i].Tool.Name
		add(n.toolExamplesAlias(name), createCollection(n.toolExamplesCollection(g, name), dim, idf, vecExample))
	}
	return p
}

// aliasSwitch returns the one UpdateAliases request that moves a catalog
// from its current aliases to next. It is built so that every prefix of it
// leaves the catalog readable: released Qdrant (ToC::update_aliases) applies
// the actions of one request one by one under a lock that holds readers
// off, but keeps the actions before a failing one. So it never deletes an
// alias it then recreates: it re-points every next alias with a create
// (which replaces an existing alias of that name), the meta alias last,
// since a snapshot reads the version the meta alias names and nothing else
// through aliases; only then does it delete the aliases next does not have
// (tools removed, a layout change), which cannot fail.
func aliasSwitch(current []string, next map[string]string, metaAlias string) []*qdrant.AliasOperations {
	keys := make([]string, 0, len(next))
	for a := range next {
		if a != metaAlias {
			keys = append(keys, a)
		}
	}
	slices.Sort(keys)
	ops := make([]*qdrant.AliasOperations, 0, len(current)+len(next))
	for _, a := range keys {
		ops = append(ops, qdrant.NewAliasCreate(a, next[a]))
	}
	if c, ok := next[metaAlias]; ok {
		ops = append(ops, qdrant.NewAliasCreate(metaAlias, c))
	}
	stale := slices.Clone(current)
	slices.Sort(stale)
	for _, a := range slices.Compact(stale) {
		if _, ok := next[a]; !ok {
			ops = append(ops, qdrant.NewAliasDelete(a))
		}
	}
	return ops
}

// aliasRestore returns the request that puts a catalog's aliases back as
// they were (prev: alias to collection, as listed before a switch) after a
// switch to next failed partway: it re-points the aliases of prev and
// deletes those only next has.
func aliasRestore(prev, next map[string]string) []*qdrant.AliasOperations {
	keys := slices.Sorted(maps.Keys(prev))
	ops := make([]*qdrant.AliasOperations, 0, len(keys))
	for _, a := range keys {
		ops = append(ops, qdrant.NewAliasCreate(a, prev[a]))
	}
	for _, a := range slices.Sorted(maps.Keys(next)) {
		if _, ok := prev[a]; !ok {
			ops = append(ops, qdrant.NewAliasDelete(a))
		}
	}
	return ops
}

// batches splits n items into consecutive [lo, hi) ranges of at most size.
func batches(n, size int) [][2]int {
	var out [][2]int
	for lo := 0; lo < n; lo += size {
		out = append(out, [2]int{lo, min(lo+size, n)})
	}
	return out
}
