package killtest

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// runs is how many orders the kill test places; workers how many at once.
const (
	runs    = 100
	workers = 8
	// stallBound is how long an incarnation may go without answering an
	// order before the test calls it stuck (a -race build on a loaded machine
	// starts in a few seconds).
	stallBound = 45 * time.Second
)

// Under load, the helix process is killed (SIGKILL) at random points and
// restarted, again and again. Every order gets its reply (no run lost), every
// run is completed once in the store, and the ledger step of a run ran in at
// most one execution per process: a step that completed is never run again by
// the run's recovery (it ran again only when a kill cut its run off after the
// step's effect and before its checkpoint — the window idempotency keys
// close — which the test counts against the kills).
func TestKillNineUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts helix processes")
	}
	t.Parallel()
	h := NewHarness(t)
	h.Start()

	// A bound for a broken case, not an expectation: a loaded machine makes every
	// incarnation slow (a clean-clone run beside six builds took over three
	// minutes), and a stuck one is caught by the stall bound.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var done atomic.Int32
	replies := make([]string, runs)
	errs := make(chan error, runs)
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range next {
				start := time.Now()
				reply, err := h.Call(ctx, n)
				if d := time.Since(start); d > 5*time.Second {
					t.Logf("order %d took %v", n, d)
				}
				if err != nil {
					errs <- err
					continue
				}
				replies[n] = reply
				done.Add(1)
			}
		}()
	}
	// Orders arrive over a few seconds, so that kills land all along.
	go func() {
		for n := range runs {
			next <- n
			time.Sleep(25 * time.Millisecond)
		}
		close(next)
	}()

	// The killer: every 50–250 ms of running, SIGKILL and restart, until all
	// orders are answered.
	kills := 0
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
loop:
	for {
		select {
		case <-finished:
			break loop
		case <-time.After(time.Duration(50+rand.IntN(200)) * time.Millisecond):
			if done.Load() >= runs {
				continue
			}
			h.Kill()
			kills++
			h.Start()
			// Each incarnation answers at least one order before the next
			// kill (a slow start, such as a -race build's, would otherwise
			// never get to run anything).
			stalled := time.Now().Add(stallBound)
			for before := done.Load(); done.Load() == before && done.Load() < runs; {
				if time.Now().After(stalled) {
					// An incarnation that answers nothing for this long is
					// stuck, not slow: its goroutines say where.
					h.Dump()
					t.Fatalf("an incarnation answered no order in %v (after %d kills); its goroutines are in the output below; runs not completed: %s",
						stallBound, kills, h.Unfinished())
				}
				select {
				case <-finished:
				case <-time.After(5 * time.Millisecond):
					continue
				}
				break
			}
		}
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.Logf("after %d kills, the runs not completed: %s", kills, h.Unfinished())
		return
	}
	if kills < 3 {
		t.Fatalf("only %d kills: the test did not test recovery", kills)
	}

	for n, reply := range replies {
		if want := "done " + strconv.Itoa(n); reply != want {
			t.Errorf("order %d answered %q, want %q", n, reply, want)
		}
	}
	states := h.Runs()
	ledger := h.Ledger()
	var ids []string
	duplicates := 0
	for n := range runs {
		id := "orders:order-" + strconv.Itoa(n)
		ids = append(ids, id)
		if states[id] != "completed" {
			t.Errorf("run %s is %q in the store", id, states[id])
		}
		incs := ledger[id]
		if len(incs) == 0 {
			t.Errorf("run %s: its ledger step never ran", id)
		}
		seen := map[string]bool{}
		for _, inc := range incs {
			if seen[inc] {
				t.Errorf("run %s: its ledger step ran twice in incarnation %s (a completed step ran again)", id, inc)
			}
			seen[inc] = true
		}
		duplicates += len(incs) - 1
	}
	if len(states) != runs {
		t.Errorf("%d runs in the store, want %d", len(states), runs)
	}
	// A kill cuts off at most the runs in flight; only one cut off between its
	// ledger append and that step's checkpoint runs the step again.
	if duplicates > kills*workers {
		t.Errorf("%d ledger steps ran again after %d kills", duplicates, kills)
	}
	for _, e := range extensions {
		if e.Check != nil {
			t.Run(e.Name, func(t *testing.T) { e.Check(t, h, ids) })
		}
	}
	recovered := h.Recovered()
	if recovered == 0 {
		t.Errorf("no run was cut off and recovered in %d kills: the test did not test recovery", kills)
	}
	t.Logf("%d runs, %d kills, %d runs recovered after a kill, %d ledger steps re-run after a kill", runs, kills, recovered, duplicates)
}
