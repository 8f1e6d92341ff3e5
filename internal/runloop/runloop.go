// Package runloop runs a trigger's loop (a timer's ticks, a directory poll, a
// database poll or LISTEN) on one goroutine it owns, and stops it: ask the loop to
// end, wait for the work in flight, and when the caller cannot wait any longer,
// cancel that work and give it a moment to notice.
package runloop

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrIgnoredCancellation is Stop's error when the loop did not end within the
// grace period after its context was cancelled.
var ErrIgnoredCancellation = errors.New("the exchange in flight ignored cancellation")

// Loop is one goroutine between Start and Stop, used once: Stop is final. The zero
// Loop is ready to start.
type Loop struct {
	mu      sync.Mutex
	stopped bool               // Stop was called
	stop    chan struct{}      // closed by the first Stop after Start: start no new work
	done    chan struct{}      // closed when the loop returned; nil before Start
	cancel  context.CancelFunc // cancels the loop's context
}

// Start runs body on a new goroutine and reports whether it did: a Loop runs
// once, so Start after Start, or after Stop (even a Stop that came first, racing
// the Start), runs nothing and returns false.
//
// body's context is the loop's own, not its caller's (a Start context only bounds
// starting): it is cancelled when Stop gives up waiting, and once Stop returns.
// stop is closed by Stop: body should return at its next check, after finishing
// the work in flight.
func (l *Loop) Start(body func(ctx context.Context, stop <-chan struct{})) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done != nil || l.stopped {
		return false
	}
	ctx, cancel := context.WithCancel(context.Background())
	stop, done := make(chan struct{}), make(chan struct{})
	l.stop, l.done, l.cancel = stop, done, cancel
	go func() {
		defer close(done)
		body(ctx, stop)
	}()
	return true
}

// Stop closes stop and waits for the loop to return. When ctx ends first (or,
// if ctx has no deadline, timeout passes) the loop's context is cancelled and
// Stop waits up to grace more before it returns ErrIgnoredCancellation. Stop
// before Start returns nil at once, and the Loop never starts. Stop may be called
// again and concurrently: each call waits for the same end.
func (l *Loop) Stop(ctx context.Context, timeout, grace time.Duration) error {
	l.mu.Lock()
	first := !l.stopped
	l.stopped = true
	if l.done == nil {
		l.mu.Unlock()
		return nil
	}
	if first {
		close(l.stop)
	}
	done, cancel := l.done, l.cancel
	l.mu.Unlock()
	defer cancel()

	if _, ok := ctx.Deadline(); !ok {
		var cancelTimeout context.CancelFunc
		ctx, cancelTimeout = context.WithTimeout(ctx, timeout)
		defer cancelTimeout()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	cancel()
	giveUp := time.NewTimer(grace)
	defer giveUp.Stop()
	select {
	case <-done:
		return nil
	case <-giveUp.C:
		return ErrIgnoredCancellation
	}
}
