package runloop_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/arvenza/helix/internal/runloop"
)

const (
	timeout = 30 * time.Second
	grace   = time.Second
)

// untilStopped is a loop that ends as soon as it is asked to.
func untilStopped(_ context.Context, stop <-chan struct{}) { <-stop }

func TestStopBeforeStart(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var l runloop.Loop
		start := time.Now()
		if err := l.Stop(context.Background(), timeout, grace); err != nil {
			t.Fatalf("stop of a loop never started: %v", err)
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("stop of a loop never started waited %v", waited)
		}
		// Stop is final: a Start that lost the race with it runs nothing.
		ran := false
		if l.Start(func(context.Context, <-chan struct{}) { ran = true }) {
			t.Error("start after stop accepted")
		}
		synctest.Wait()
		if ran {
			t.Error("the loop ran after stop")
		}
		if err := l.Stop(context.Background(), timeout, grace); err != nil {
			t.Fatal(err)
		}
	})
}

func TestStartTwice(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var l runloop.Loop
		runs := 0
		body := func(ctx context.Context, stop <-chan struct{}) { runs++; <-stop }
		if !l.Start(body) {
			t.Fatal("first start refused")
		}
		if l.Start(body) {
			t.Error("second start accepted")
		}
		if err := l.Stop(context.Background(), timeout, grace); err != nil {
			t.Fatal(err)
		}
		if l.Start(body) {
			t.Error("start after stop accepted")
		}
		if runs != 1 {
			t.Errorf("body ran %d times, want 1", runs)
		}
	})
}

// Stop may be called again, and at the same time from several goroutines (a
// reload and a shutdown): each returns once the loop has ended.
func TestStopTwiceAndConcurrently(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var l runloop.Loop
		l.Start(func(_ context.Context, stop <-chan struct{}) {
			<-stop
			time.Sleep(3 * time.Second) // finishing the work in flight
		})
		start := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for i := range errs {
			wg.Go(func() { errs[i] = l.Stop(context.Background(), timeout, grace) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("stop %d: %v", i, err)
			}
		}
		if waited := time.Since(start); waited != 3*time.Second {
			t.Errorf("stops returned after %v, want when the loop ended (3s)", waited)
		}
		if err := l.Stop(context.Background(), timeout, grace); err != nil {
			t.Errorf("stop after the end: %v", err)
		}
		if waited := time.Since(start); waited != 3*time.Second {
			t.Errorf("stop after the end waited until %v", waited)
		}
	})
}

// Stop lets the work in flight finish with its context intact, then cancels that
// context (whatever the loop started with it ends too).
func TestStopWaitsForTheWorkInFlight(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var l runloop.Loop
		var work context.Context
		var errDuringWork error
		l.Start(func(ctx context.Context, stop <-chan struct{}) {
			work = ctx
			<-stop
			time.Sleep(10 * time.Second)
			errDuringWork = ctx.Err()
		})
		if err := l.Stop(context.Background(), timeout, grace); err != nil {
			t.Fatal(err)
		}
		if errDuringWork != nil {
			t.Errorf("the work's context ended before it finished: %v", errDuringWork)
		}
		if work.Err() == nil {
			t.Error("the work's context outlives Stop")
		}
	})
}

// A poll that does not look at stop (a query running) is cancelled through its
// context when Stop's context ends, and Stop returns once it has.
func TestStopCancelsARunningPoll(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var l runloop.Loop
		var pollErr error
		l.Start(func(ctx context.Context, _ <-chan struct{}) {
			<-ctx.Done() // the poll: ends only when cancelled
			time.Sleep(100 * time.Millisecond)
			pollErr = ctx.Err()
		})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start := time.Now()
		if err := l.Stop(ctx, timeout, grace); err != nil {
			t.Fatal(err)
		}
		if !errors.Is(pollErr, context.Canceled) {
			t.Errorf("the poll ended with %v, want context.Canceled", pollErr)
		}
		if waited := time.Since(start); waited != 2*time.Second+100*time.Millisecond {
			t.Errorf("stop took %v, want the context's 2s and the poll's 100ms", waited)
		}
	})
}

// Without a deadline on its context, Stop waits timeout before cancelling.
func TestStopWithoutDeadlineWaitsTheTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var l runloop.Loop
		l.Start(func(ctx context.Context, _ <-chan struct{}) { <-ctx.Done() })
		start := time.Now()
		if err := l.Stop(context.Background(), timeout, grace); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited != timeout {
			t.Errorf("stop took %v, want %v", waited, timeout)
		}
	})
}

// A loop that ignores cancellation too is given grace, then Stop gives up with
// ErrIgnoredCancellation rather than hanging the shutdown.
func TestStopGivesUpOnALoopIgnoringCancellation(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var l runloop.Loop
		release := make(chan struct{})
		l.Start(func(context.Context, <-chan struct{}) { <-release })
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		err := l.Stop(ctx, timeout, grace)
		if !errors.Is(err, runloop.ErrIgnoredCancellation) {
			t.Errorf("stop: %v, want ErrIgnoredCancellation", err)
		}
		if waited := time.Since(start); waited != time.Second+grace {
			t.Errorf("stop gave up after %v, want 1s + grace", waited)
		}
		close(release)
		// Once the loop has ended, Stop succeeds.
		if err := l.Stop(context.Background(), timeout, grace); err != nil {
			t.Errorf("stop after the loop ended: %v", err)
		}
	})
}

// A cancelled context does not keep Stop from returning nil when the loop ends
// promptly on stop.
func TestStopWithCancelledContext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var l runloop.Loop
		l.Start(untilStopped)
		synctest.Wait() // the loop is waiting for stop
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := l.Stop(ctx, timeout, grace); err != nil {
			t.Fatalf("stop: %v", err)
		}
	})
}
