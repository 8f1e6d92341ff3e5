package transport

import (
	"context"
	"testing"
)

// A call that finds a free slot takes it without waiting on its POST's context:
// asking ctx.Done would make (and, at the POST's end, close) a channel per call.
func TestAcquireCallWithAFreeSlotLeavesTheContextAlone(t *testing.T) {
	c := newStreamConn(&StreamableHandler{maxCalls: 4}, "s")
	bare := testing.AllocsPerRun(100, func() {
		_, cancel := context.WithCancel(context.Background())
		cancel()
	})
	with := testing.AllocsPerRun(100, func() {
		ctx, cancel := context.WithCancel(context.Background())
		if !c.acquireCall(ctx) {
			t.Fatal("no slot in an idle session")
		}
		c.releaseCall()
		cancel()
	})
	if with != bare {
		t.Errorf("acquireCall and releaseCall with a free slot allocate %v times, want 0", with-bare)
	}
}

// With every slot taken, a call waits for one; its POST ending or the session
// closing ends the wait unserved.
func TestAcquireCallWaits(t *testing.T) {
	c := newStreamConn(&StreamableHandler{maxCalls: 1}, "s")
	if !c.acquireCall(context.Background()) {
		t.Fatal("no slot in an idle session")
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan bool)
	go func() { got <- c.acquireCall(ctx) }()
	cancel()
	if <-got {
		t.Error("a call whose POST ended took a slot")
	}
	go func() { got <- c.acquireCall(context.Background()) }()
	c.releaseCall()
	if !<-got {
		t.Error("a waiting call did not get the slot freed")
	}
	go func() { got <- c.acquireCall(context.Background()) }()
	close(c.done)
	if <-got {
		t.Error("a call of a closed session took a slot")
	}
}
