package capture

import (
	"sync"
	"sync/atomic"
)

// ring keeps the newest captures within a byte budget. Publishers append
// under mu, in constant time (amortised over evictions); readers never take
// mu: they walk the slots backwards from head, and a slot whose sequence is
// not the one expected was overwritten, which ends the walk.
type ring struct {
	limit int64
	slots []atomic.Pointer[Exchange]
	head  atomic.Uint64 // sequence of the next capture; readers start below it

	mu     sync.Mutex
	oldest uint64
	bytes  int64
	kept   atomic.Int64
	used   atomic.Int64
}

// minRecord is the smallest footprint a capture can have, which sizes the
// slot array so that the byte budget, not the slots, is what runs out.
const minRecord = recordOverhead + snapshotOverhead

func newRing(budget int64) *ring {
	n := budget / minRecord
	n = min(max(n, 16), 1<<16)
	return &ring{limit: budget, slots: make([]atomic.Pointer[Exchange], n)}
}

// add appends rec, evicting the oldest captures until the budget holds; false
// when rec alone is over the budget.
func (r *ring) add(rec *Exchange) bool {
	if rec.size > r.limit {
		return false
	}
	n := uint64(len(r.slots))
	r.mu.Lock()
	next := r.head.Load()
	for r.oldest < next && (next-r.oldest >= n || r.bytes+rec.size > r.limit) {
		old := &r.slots[r.oldest%n]
		if o := old.Load(); o != nil {
			r.bytes -= o.size
		}
		old.Store(nil)
		r.oldest++
	}
	rec.seq = next
	r.slots[next%n].Store(rec)
	r.bytes += rec.size
	r.head.Store(next + 1)
	r.kept.Store(int64(next + 1 - r.oldest))
	r.used.Store(r.bytes)
	r.mu.Unlock()
	return true
}

// each calls f with the kept captures, newest first, until f returns false.
func (r *ring) each(f func(*Exchange) bool) {
	n := uint64(len(r.slots))
	head := r.head.Load()
	for s := head; s > 0; s-- {
		seq := s - 1
		rec := r.slots[seq%n].Load()
		if rec == nil || rec.seq != seq || !f(rec) {
			return
		}
		if head-seq >= n {
			return
		}
	}
}

func (r *ring) get(id string) *Exchange {
	var found *Exchange
	r.each(func(e *Exchange) bool {
		if e.ID == id {
			found = e
			return false
		}
		return true
	})
	return found
}

func (r *ring) usage() (kept, bytes int64) { return r.kept.Load(), r.used.Load() }
