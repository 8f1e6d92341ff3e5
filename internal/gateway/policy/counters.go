package policy

import (
	"container/list"
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// counters keep the rate buckets and quota counters of one gateway server:
// in this process (local), or in the rate_limit_store Redis that replicas
// share (shared, with local as its fallback).
type counters interface {
	// take takes one call from key's bucket of r; when none is left, wait is
	// the time until the next.
	take(ctx context.Context, key string, r Rate) (ok bool, wait time.Duration)
	// count adds one call to key's counter of the window [start, end) and
	// returns the calls counted in it, this one included.
	count(ctx context.Context, key string, start, end time.Time) int64
	close() error
}

// maxEntries bounds the buckets and counters one process keeps: past it the
// least recently used is dropped (its caller starts afresh: a full bucket, a
// window counted from zero), so a flood of principals or names cannot grow
// memory without end.
const maxEntries = 100_000

// local keeps buckets and counters in this process, in one LRU list.
type local struct {
	now func() time.Time
	max int

	mu      sync.Mutex
	entries map[string]*list.Element // values are *entry
	lru     *list.List               // front: most recently used
}

type entry struct {
	key    string
	bucket *rate.Limiter // rate entries
	window time.Time     // quota entries: the window counted
	n      int64
}

func newLocal(now func() time.Time) *local {
	return &local{now: now, max: maxEntries, entries: map[string]*list.Element{}, lru: list.New()}
}

// get returns key's entry, made by mk when new; l.mu is held.
func (l *local) get(key string, mk func() *entry) *entry {
	if e, ok := l.entries[key]; ok {
		l.lru.MoveToFront(e)
		return e.Value.(*entry)
	}
	for l.lru.Len() >= l.max {
		oldest := l.lru.Back()
		l.lru.Remove(oldest)
		delete(l.entries, oldest.Value.(*entry).key)
	}
	en := mk()
	en.key = key
	l.entries[key] = l.lru.PushFront(en)
	return en
}

func (l *local) take(_ context.Context, key string, r Rate) (bool, time.Duration) {
	limit := rate.Limit(float64(r.N) / r.Per.Seconds())
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.get(key, func() *entry { return &entry{bucket: rate.NewLimiter(limit, r.N)} }).bucket
	if b.AllowN(now, 1) {
		return true, 0
	}
	missing := 1 - b.TokensAt(now)
	return false, time.Duration(missing / float64(limit) * float64(time.Second))
}

func (l *local) count(_ context.Context, key string, start, _ time.Time) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	en := l.get(key, func() *entry { return &entry{} })
	if !en.window.Equal(start) {
		en.window, en.n = start, 0
	}
	en.n++
	return en.n
}

func (l *local) close() error { return nil }

// sharedStore is the Redis of rate_limit_store (redislimit.Store), behind an
// interface so that a build without the Redis client leaves it out.
type sharedStore interface {
	Take(ctx context.Context, key string, n int, per time.Duration) (bool, time.Duration, error)
	Count(ctx context.Context, key string, end time.Time) (int64, error)
	String() string
	Close() error
}

const (
	// storePause is how long a failed store is left alone, as the security
	// stack does: meanwhile this process's own counters decide, so a store that
	// hangs until its timeout delays one call a second, not every call.
	storePause = time.Second
	// storeWarnEvery bounds the warnings about a failing store.
	storeWarnEvery = 10 * time.Second
)

// shared decides with the store, and while it cannot with local: each replica
// then limits alone until the store answers again (the security stack's
// rate_limit_store_fallback: local).
type shared struct {
	server string
	store  sharedStore
	local  *local
	now    func() time.Time
	log    *slog.Logger

	downUntil atomic.Int64 // unix nanos before which the store is not asked
	lastWarn  atomic.Int64
}

// up reports whether the store may be asked now.
func (s *shared) up() bool {
	d := s.downUntil.Load()
	return d == 0 || s.now().UnixNano() >= d
}

// failed notes a store error: a pause, and a warning at most every storeWarnEvery.
func (s *shared) failed(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return // the call went away: no verdict on the store
	}
	now := s.now()
	s.downUntil.Store(now.Add(storePause).UnixNano())
	last := s.lastWarn.Load()
	if last == 0 || now.UnixNano()-last >= int64(storeWarnEvery) {
		if s.lastWarn.CompareAndSwap(last, now.UnixNano()) {
			s.log.Warn("gateway rate limit store cannot decide; each replica limits alone until it answers",
				"server", s.server, "store", s.store.String(), "error", err.Error())
		}
	}
}

func (s *shared) take(ctx context.Context, key string, r Rate) (bool, time.Duration) {
	if s.up() {
		ok, wait, err := s.store.Take(ctx, key, r.N, r.Per)
		if err == nil {
			s.downUntil.Store(0)
			return ok, wait
		}
		s.failed(ctx, err)
	}
	return s.local.take(ctx, key, r)
}

func (s *shared) count(ctx context.Context, key string, start, end time.Time) int64 {
	if s.up() {
		// Counters of a window live until it ends, plus a minute for replicas
		// whose clocks are a little behind.
		n, err := s.store.Count(ctx, key+"@"+start.UTC().Format(time.RFC3339), end.Add(time.Minute))
		if err == nil {
			s.downUntil.Store(0)
			return n
		}
		s.failed(ctx, err)
	}
	return s.local.count(ctx, key, start, end)
}

func (s *shared) close() error { return s.store.Close() }
