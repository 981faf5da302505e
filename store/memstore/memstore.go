// Package memstore is a habilis.Store held in memory: for throwaway
// catalogs (an inline Prefilter catalog, fit's and eval's scratch
// catalogs, the tools of live MCP servers) that need nothing cleaned up and
// nothing on disk. It uses only the standard library and the root package,
// so any layer may import it.
package memstore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/habilis-router/habilis"
)

// Store is a habilis.Store held in memory. Writes are atomic (validated in
// full, then applied under the lock) and versioned like every store's;
// records are copied in and out, so no caller shares memory with it.
type Store struct {
	mu      sync.RWMutex
	meta    habilis.CatalogMeta
	records map[string]habilis.Record
	closed  bool
}

// New returns an empty store.
func New() *Store {
	return &Store{records: map[string]habilis.Record{}}
}

// Snapshot returns a copy of the catalog, sorted by tool name.
func (s *Store) Snapshot(ctx context.Context) (*habilis.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory store: snapshot: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, fmt.Errorf("memory store: snapshot: %w", habilis.ErrClosed)
	}
	snap := &habilis.Snapshot{Meta: cloneMeta(s.meta), Records: make([]habilis.Record, 0, len(s.records))}
	for _, name := range slices.Sorted(maps.Keys(s.records)) {
		snap.Records = append(snap.Records, cloneRecord(s.records[name]))
	}
	return snap, nil
}

// Version returns the version of the last committed write.
func (s *Store) Version(ctx context.Context) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("memory store: version: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, fmt.Errorf("memory store: version: %w", habilis.ErrClosed)
	}
	return s.meta.Version, nil
}

// Write commits b whole or, on any error, not at all.
func (s *Store) Write(ctx context.Context, b *habilis.Batch) (habilis.CatalogMeta, error) {
	if b == nil {
		return habilis.CatalogMeta{}, fmt.Errorf("memory store: write: no batch: %w", habilis.ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return habilis.CatalogMeta{}, fmt.Errorf("memory store: write: %w", err)
	}
	if err := b.Validate(); err != nil {
		return habilis.CatalogMeta{}, fmt.Errorf("memory store: write: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return habilis.CatalogMeta{}, fmt.Errorf("memory store: write: %w", habilis.ErrClosed)
	}
	if b.BaseVersion != s.meta.Version {
		return habilis.CatalogMeta{}, fmt.Errorf("memory store: write: base version %d, stored %d: %w", b.BaseVersion, s.meta.Version, habilis.ErrConflict)
	}
	for _, name := range b.Delete {
		if _, ok := s.records[name]; !ok {
			return habilis.CatalogMeta{}, fmt.Errorf("memory store: write: delete %q: no such tool: %w", name, habilis.ErrInvalid)
		}
	}
	// Everything is checked: from here on the write cannot fail.
	next := s.records
	if b.Replace {
		next = make(map[string]habilis.Record, len(b.Put))
	}
	for _, name := range b.Delete {
		delete(next, name)
	}
	for i := range b.Put {
		next[b.Put[i].Tool.Name] = cloneRecord(b.Put[i])
	}
	s.records = next
	s.meta = cloneMeta(b.Meta)
	s.meta.Version = b.BaseVersion + 1
	s.meta.UpdatedAt = time.Now().UTC()
	return cloneMeta(s.meta), nil
}

// Close releases the records; further calls return ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed, s.records = true, nil
	return nil
}

func cloneMeta(m habilis.CatalogMeta) habilis.CatalogMeta {
	m.EmbedderState = slices.Clone(m.EmbedderState)
	m.LexicalState = slices.Clone(m.LexicalState)
	m.Calibration = slices.Clone(m.Calibration)
	return m
}

func cloneRecord(r habilis.Record) habilis.Record {
	r.Tool = cloneTool(r.Tool)
	r.DescriptionVector = r.DescriptionVector.Clone()
	r.Centroid = r.Centroid.Clone()
	r.DocumentVector = r.DocumentVector.Clone()
	if r.ExampleVectors != nil {
		vs := make([]habilis.Vector, len(r.ExampleVectors))
		for i, v := range r.ExampleVectors {
			vs[i] = v.Clone()
		}
		r.ExampleVectors = vs
	}
	return r
}

func cloneTool(t habilis.Tool) habilis.Tool {
	t.Examples = slices.Clone(t.Examples)
	t.InputSchema = slices.Clone(t.InputSchema)
	t.Executor = slices.Clone(t.Executor)
	t.Meta = maps.Clone(t.Meta)
	if t.Margin != nil {
		m := *t.Margin
		t.Margin = &m
	}
	return t
}
