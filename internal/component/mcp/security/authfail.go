package security

import (
	"container/list"
	"sync"
	"time"
)

// Defaults of the failed-authentication limit (Config.AuthFailureLimit and
// Config.AuthFailureWindow; YAML auth_failure_limit and auth_failure_window).
const (
	// DefaultAuthFailureLimit failed authentications of one client address
	// within the window lock it out until the window ends. Ten leaves room for a
	// client that retries with a mistyped key or runs an OAuth discovery
	// (which starts with a 401) a few times; a key-guessing client gets ten
	// guesses a minute instead of thousands a second.
	DefaultAuthFailureLimit = 10
	// DefaultAuthFailureWindow is the window of DefaultAuthFailureLimit.
	DefaultAuthFailureWindow = time.Minute
)

// failureStore counts failed authentications per client address (IPv6 per
// /64) in fixed windows; limit 0 never locks out (the counts still sample logs). It owns no goroutine: windows that ended are dropped
// from the least recently failed end on every access, and a hard cap evicts the
// least recently failed address when a new one arrives at capacity.
type failureStore struct {
	limit  int
	window time.Duration
	max    int

	mu      sync.Mutex
	entries map[string]*list.Element
	lru     *list.List // front: most recent failure; values are *failures
}

type failures struct {
	key     string
	start   time.Time // window start: the window's first failure
	last    time.Time // most recent failure
	count   int       // failures in the window
	refused int       // requests refused with 429 in the window
	// refusedBefore is what the previous window refused, reported with the
	// first failure of the next one.
	refusedBefore int
}

func newFailureStore(limit int, window time.Duration, maxEntries int) *failureStore {
	return &failureStore{limit: limit, window: window, max: maxEntries,
		entries: map[string]*list.Element{}, lru: list.New()}
}

// expireLocked drops the entries whose window ended; the list is in order of the
// last failure, and a window never outlives its last failure by more than window.
func (st *failureStore) expireLocked(now time.Time) {
	for e := st.lru.Back(); e != nil; e = st.lru.Back() {
		f := e.Value.(*failures)
		if now.Sub(f.last) < st.window {
			return
		}
		st.lru.Remove(e)
		delete(st.entries, f.key)
	}
}

// blocked reports whether key is locked out, and for how long. A locked-out
// request is counted (reported with the next window's first failure).
func (st *failureStore) blocked(key string, now time.Time) (wait time.Duration, ok bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.expireLocked(now)
	e, found := st.entries[key]
	if !found {
		return 0, false
	}
	f := e.Value.(*failures)
	end := f.start.Add(st.window)
	if st.limit <= 0 || f.count < st.limit || !now.Before(end) {
		return 0, false
	}
	f.refused++
	return end.Sub(now), true
}

// failure records a failed authentication of key. It returns the failure's
// number within the window (1 for the first) and, for the first one of a
// window, how many requests the previous window refused.
func (st *failureStore) failure(key string, now time.Time) (n int, refusedBefore int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.expireLocked(now)
	var f *failures
	if e, found := st.entries[key]; found {
		st.lru.MoveToFront(e)
		f = e.Value.(*failures)
	} else {
		for st.lru.Len() >= st.max {
			oldest := st.lru.Back()
			st.lru.Remove(oldest)
			delete(st.entries, oldest.Value.(*failures).key)
		}
		f = &failures{key: key, start: now}
		st.entries[key] = st.lru.PushFront(f)
	}
	if !now.Before(f.start.Add(st.window)) {
		// A new window: keep what the last one refused, for the log.
		f.refusedBefore, f.start, f.count, f.refused = f.refused, now, 0, 0
	}
	f.last = now
	f.count++
	if f.count == 1 {
		refusedBefore, f.refusedBefore = f.refusedBefore, 0
	}
	return f.count, refusedBefore
}
