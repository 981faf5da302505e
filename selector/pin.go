package selector

import "sync"

// pin keeps the memory a stored index is read from in place (the store's
// memory map) alive while selections use it. Selections hold it shared;
// retiring the index takes it whole, so it waits for them, then releases
// the memory.
type pin struct {
	mu       sync.RWMutex
	released bool
	release  func()
}

// acquire returns the index in force, held until done is called, or
// ErrClosed once the router is closed.
func (r *Router) acquire() (ix *index, done func(), err error) {
	for {
		if err := r.check(); err != nil {
			return nil, func() {}, err
		}
		ix := r.cur.Load()
		if ix == nil || ix.pin == nil {
			return ix, func() {}, nil
		}
		ix.pin.mu.RLock()
		if !ix.pin.released {
			return ix, ix.pin.mu.RUnlock, nil
		}
		// Retired between the load and the lock: the next load sees its
		// successor.
		ix.pin.mu.RUnlock()
	}
}

// swap puts ix in force and retires the index it replaces, unless ix
// reads the same memory (a patched index of the same stored one).
func (r *Router) swap(ix *index) {
	if old := r.cur.Swap(ix); old != nil && old.pin != ix.pin {
		old.retire()
	}
}

// retire releases what ix reads in place once no selection uses it.
func (ix *index) retire() {
	if ix == nil || ix.pin == nil {
		return
	}
	ix.pin.mu.Lock()
	defer ix.pin.mu.Unlock()
	if !ix.pin.released {
		ix.pin.released = true
		ix.pin.release()
	}
}
