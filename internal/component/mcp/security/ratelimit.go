package security

import (
	"container/list"
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limiter decides whether the client key may make one more request. When it may
// not, retryAfter is the wait until it may; an error means no decision was made
// (a shared store that cannot answer). Implementations are safe for concurrent
// use: the process's own buckets ([limiterStore]) and the buckets replicas share
// in Redis (redislimit, behind [storeLimiter]).
type Limiter interface {
	Allow(ctx context.Context, key string) (ok bool, retryAfter time.Duration, err error)
}

// limiterStore keeps one token bucket per client. Memory is bounded twice:
// the janitor drops buckets idle longer than idleAfter, and a hard cap evicts
// the least recently used bucket when a new client arrives at capacity (so a
// flood of distinct addresses cannot grow the map between sweeps). An evicted
// client starts again with a full bucket; at the cap that is the price of
// bounded memory.
type limiterStore struct {
	limit     rate.Limit
	burst     int
	max       int
	idleAfter time.Duration

	// One mutex guards map and list together; it also makes "look up or
	// create" atomic, so concurrent first requests of one client share one
	// bucket instead of each getting a full burst.
	mu      sync.Mutex
	entries map[string]*list.Element
	lru     *list.List // front: most recently used; values are *bucket

	now func() time.Time // the clock of Allow
}

var _ Limiter = (*limiterStore)(nil)

type bucket struct {
	key  string
	lim  *rate.Limiter
	last time.Time
}

func newLimiterStore(perMinute, maxEntries int, idleAfter time.Duration, now func() time.Time) *limiterStore {
	return &limiterStore{
		now:       now,
		limit:     rate.Limit(float64(perMinute) / 60),
		burst:     perMinute,
		max:       maxEntries,
		idleAfter: idleAfter,
		entries:   map[string]*list.Element{},
		lru:       list.New(),
	}
}

// Allow takes one token from key's bucket at the store's clock; it never fails.
func (st *limiterStore) Allow(_ context.Context, key string) (bool, time.Duration, error) {
	ok, wait := st.allow(key, st.now())
	return ok, wait, nil
}

// allow takes one token from key's bucket. When none is left it returns the
// wait until the next token.
func (st *limiterStore) allow(key string, now time.Time) (bool, time.Duration) {
	st.mu.Lock()
	defer st.mu.Unlock()
	var b *bucket
	if e, ok := st.entries[key]; ok {
		st.lru.MoveToFront(e)
		b = e.Value.(*bucket)
	} else {
		for st.lru.Len() >= st.max {
			oldest := st.lru.Back()
			st.lru.Remove(oldest)
			delete(st.entries, oldest.Value.(*bucket).key)
		}
		b = &bucket{key: key, lim: rate.NewLimiter(st.limit, st.burst)}
		st.entries[key] = st.lru.PushFront(b)
	}
	b.last = now
	if b.lim.AllowN(now, 1) {
		return true, 0
	}
	missing := 1 - b.lim.TokensAt(now)
	return false, time.Duration(missing / float64(st.limit) * float64(time.Second))
}

// sweep drops buckets idle for longer than idleAfter. The list is in
// recency order, so it stops at the first recent one.
func (st *limiterStore) sweep(now time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for e := st.lru.Back(); e != nil; e = st.lru.Back() {
		b := e.Value.(*bucket)
		if now.Sub(b.last) <= st.idleAfter {
			return
		}
		st.lru.Remove(e)
		delete(st.entries, b.key)
	}
}

func (st *limiterStore) size() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.entries)
}
