package server

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestCallGateCountsAndRefusesOnceClosed(t *testing.T) {
	g := newCallGate()
	for range 2 {
		if !g.enter() {
			t.Fatal("an open gate refused work")
		}
	}
	g.leave()
	if g.isClosed() {
		t.Fatal("closed before close")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	g.close()
	if !g.isClosed() || g.enter() {
		t.Fatal("a closed gate let work in")
	}
	if err := g.wait(ctx); err == nil {
		t.Fatal("wait returned with work still running")
	}
	done := make(chan error)
	go func() { done <- g.wait(context.Background()) }()
	g.leave()
	if err := <-done; err != nil {
		t.Fatalf("wait after the last leave: %v", err)
	}
	if err := g.wait(context.Background()); err != nil {
		t.Fatalf("wait of an idle gate: %v", err)
	}
}

// Work entering and leaving on many goroutines while the gate closes: once
// closeAndWait returns, nothing admitted is still running and nothing more gets in.
func TestCallGateCloseAndWaitUnderConcurrency(t *testing.T) {
	for range 20 {
		g := newCallGate()
		var running, admittedLate atomic.Int64
		var closed atomic.Bool
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 200 {
					if !g.enter() {
						continue
					}
					if closed.Load() {
						admittedLate.Add(1)
					}
					running.Add(1)
					running.Add(-1)
					g.leave()
				}
			}()
		}
		if err := g.closeAndWait(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := running.Load(); n != 0 {
			t.Fatalf("%d calls still running after closeAndWait", n)
		}
		closed.Store(true)
		wg.Wait()
		if n := admittedLate.Load(); n != 0 {
			t.Fatalf("%d calls admitted after closeAndWait", n)
		}
	}
}
