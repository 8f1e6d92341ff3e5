package client

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestTrackerContextIsAValueContext checks that the context withTracker returns
// behaves as context.WithValue(ctx, trackerKey{}, t) would.
func TestTrackerContextIsAValueContext(t *testing.T) {
	t.Parallel()
	type key struct{}
	cause := errors.New("stopped")
	parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), key{}, "v"))
	deadlined, stop := context.WithTimeout(parent, time.Hour)
	defer stop()
	tr := newCallTracker()
	ctx := withTracker(deadlined, tr)
	if trackerFrom(ctx) != tr {
		t.Fatal("the tracker is not found in its context")
	}
	child, cancelChild := context.WithCancel(context.WithValue(ctx, key{}, "w"))
	defer cancelChild()
	if trackerFrom(child) != tr || child.Value(key{}) != "w" || ctx.Value(key{}) != "v" {
		t.Fatal("values do not pass through the tracker's context")
	}
	if d1, ok1 := ctx.Deadline(); true {
		if d2, ok2 := deadlined.Deadline(); d1 != d2 || ok1 != ok2 {
			t.Fatal("deadline differs from the parent's")
		}
	}
	if ctx.Done() != deadlined.Done() || ctx.Err() != nil {
		t.Fatal("Done/Err differ from the parent's")
	}
	cancel(cause)
	select {
	case <-child.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("cancelling the parent did not reach the child")
	}
	if !errors.Is(ctx.Err(), context.Canceled) || context.Cause(child) != cause {
		t.Fatalf("err %v, cause %v", ctx.Err(), context.Cause(child))
	}
	if trackerFrom(context.Background()) != nil {
		t.Fatal("a context without a tracker has one")
	}
}
