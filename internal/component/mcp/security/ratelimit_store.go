package security

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"
)

// The values of Config.RateLimitStoreFallback.
const (
	// FallbackLocal decides with this process's own buckets while the store
	// cannot: each replica then limits alone, as without a store (the default).
	FallbackLocal = "local"
	// FallbackRefuse answers 503 while the store cannot decide.
	FallbackRefuse = "refuse"
)

// ErrStoreUnavailable is the error of a decision the shared store could not make
// while the fallback is FallbackRefuse.
var ErrStoreUnavailable = errors.New("rate limit store unavailable")

const (
	// storePause is how long a failed store is left alone: requests meanwhile
	// go straight to the fallback, so a store that hangs until the timeout
	// delays one request a second, not every request.
	storePause = time.Second
	// storeWarnEvery bounds the warnings about a failing store: a request rate
	// must not become a log line rate.
	storeWarnEvery = 10 * time.Second
)

// namedLimiter is a shared store: a Limiter that names itself for logs (its URL
// without password) and holds connections until Close.
type namedLimiter interface {
	Limiter
	String() string
	Close() error
}

// storeLimiter decides with the shared store, and while the store cannot (an
// error, the timeout, or the pause after one) with the fallback: this process's
// buckets, or nil for a refusal ([ErrStoreUnavailable]). Every request the store
// did not decide is counted in failures; failures are logged as one warning per
// storeWarnEvery at most, and the store's recovery as one info line.
type storeLimiter struct {
	server   string
	store    namedLimiter
	fallback Limiter // nil: refuse
	now      func() time.Time
	log      *slog.Logger
	failures *atomic.Uint64

	downUntil atomic.Int64 // unix nanos before which the store is not asked; 0: up
	lastWarn  atomic.Int64 // unix nanos of the last warning
	warnedAt  atomic.Uint64
}

var _ Limiter = (*storeLimiter)(nil)

func (l *storeLimiter) Allow(ctx context.Context, key string) (bool, time.Duration, error) {
	now := l.now()
	if down := l.downUntil.Load(); down == 0 || now.UnixNano() >= down {
		ok, wait, err := l.store.Allow(ctx, key)
		if err == nil {
			if down != 0 && l.downUntil.CompareAndSwap(down, 0) {
				l.log.Info("rate limit store answers again", "server", l.server, "store", l.store.String())
			}
			return ok, wait, nil
		}
		if ctx.Err() != nil {
			// The request went away (client gone): no verdict on the store.
			return false, 0, ctx.Err()
		}
		l.downUntil.Store(now.Add(storePause).UnixNano())
		l.warn(now, err)
	}
	l.failures.Add(1)
	if l.fallback == nil {
		return false, 0, ErrStoreUnavailable
	}
	return l.fallback.Allow(ctx, key)
}

func (l *storeLimiter) warn(now time.Time, err error) {
	last := l.lastWarn.Load()
	if last != 0 && now.UnixNano()-last < int64(storeWarnEvery) || !l.lastWarn.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	total := l.failures.Load() + 1 // this request is counted after the warning
	since := total - l.warnedAt.Swap(total)
	decided := "each replica limits alone with its own buckets"
	if l.fallback == nil {
		decided = "requests are refused with 503"
	}
	l.log.Warn("rate limit store cannot decide; "+decided+" until it answers",
		"server", l.server, "store", l.store.String(), "error", err.Error(),
		"undecided_since_last_warning", since, "retry_in", storePause.String())
}

// checkFallback says what is wrong with a Config.RateLimitStoreFallback.
func checkFallback(name string) error {
	switch name {
	case "", FallbackLocal, FallbackRefuse:
		return nil
	}
	return fmt.Errorf("rate_limit_store_fallback must be %s or %s, got %q", FallbackLocal, FallbackRefuse, name)
}

// newStoreLimiter puts store in front of memory (the process's buckets), with
// cfg's fallback, which checkFallback accepted.
func newStoreLimiter(cfg Config, store namedLimiter, memory Limiter, now func() time.Time, log *slog.Logger) *storeLimiter {
	l := &storeLimiter{server: cfg.ServerID, store: store, now: now, log: log, failures: cfg.RateLimitStoreFailures}
	if cfg.RateLimitStoreFallback != FallbackRefuse {
		l.fallback = memory
	}
	if l.failures == nil {
		l.failures = &atomic.Uint64{}
	}
	return l
}
