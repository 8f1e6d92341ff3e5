package server

import (
	"context"
	"strconv"
	"sync"
)

// postShards is the number of parts of the table of POST contexts. Every POST
// stores and deletes its entry: with one map (sync.Map included) the POSTs of
// many clients at once queued on the same locks, so the entries are spread by
// their tag over locks of their own.
const postShards = 64

// postTable maps a POST's tag (its number in base 36, postTagHeader) to the
// POST's context. Safe for concurrent use; the zero value is ready.
type postTable struct {
	shards [postShards]struct {
		mu sync.Mutex
		m  map[uint64]context.Context
		_  [48]byte // one shard per cache line: neighbours' locks do not share one
	}
}

func (t *postTable) store(n uint64, ctx context.Context) {
	s := &t.shards[n%postShards]
	s.mu.Lock()
	if s.m == nil {
		s.m = map[uint64]context.Context{}
	}
	s.m[n] = ctx
	s.mu.Unlock()
}

func (t *postTable) delete(n uint64) {
	s := &t.shards[n%postShards]
	s.mu.Lock()
	delete(s.m, n)
	s.mu.Unlock()
}

// load returns the context stored under tag, or nil (an unknown tag, or one
// that is no number of base 36).
func (t *postTable) load(tag string) context.Context {
	n, err := strconv.ParseUint(tag, 36, 64)
	if err != nil {
		return nil
	}
	s := &t.shards[n%postShards]
	s.mu.Lock()
	ctx := s.m[n]
	s.mu.Unlock()
	return ctx
}
