package transport

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// waitFor polls cond (the limiter's queue is observed, not timed).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestAdmissionOffAdmitsEverything(t *testing.T) {
	t.Parallel()
	a := NewAdmission(AdmissionOptions{MaxRunning: 0, Queue: 1})
	if a != nil {
		t.Fatalf("MaxRunning 0 gave an admission control")
	}
	for range 1000 {
		if !a.Acquire(context.Background(), 1) {
			t.Fatal("nil admission refused")
		}
	}
	a.Release(1)
	if s := a.Stats(); s != (AdmissionStats{}) {
		t.Fatalf("nil stats %+v", s)
	}
}

// TestAdmissionQueueBound: MaxRunning run, Queue wait, the next is refused at
// once (without waiting for the timeout), and the counters say so.
func TestAdmissionQueueBound(t *testing.T) {
	t.Parallel()
	a := NewAdmission(AdmissionOptions{MaxRunning: 2, Queue: 1, QueueTimeout: time.Hour})
	ctx := context.Background()
	for range 2 {
		if !a.Acquire(ctx, 1) {
			t.Fatal("refused under the limit")
		}
	}
	got := make(chan bool)
	go func() { got <- a.Acquire(ctx, 1) }()
	waitFor(t, "one waiter", func() bool { return a.Stats().Waiting == 1 })
	start := time.Now()
	if a.Acquire(ctx, 1) {
		t.Fatal("admitted beyond limit and queue")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("a full queue made the refusal wait %v", d)
	}
	a.Release(1)
	if !<-got {
		t.Fatal("the waiter was not admitted when a slot freed")
	}
	a.Release(1)
	a.Release(1)
	s := a.Stats()
	if s.Running != 0 || s.Waiting != 0 || s.Admitted != 3 || s.Queued != 1 || s.Refused != 1 || s.QueueWait <= 0 {
		t.Fatalf("stats %+v", s)
	}
}

// TestAdmissionQueueTimeout: a queued request that gets no slot within the
// queue timeout is refused, and leaves the queue.
func TestAdmissionQueueTimeout(t *testing.T) {
	t.Parallel()
	a := NewAdmission(AdmissionOptions{MaxRunning: 1, Queue: 4, QueueTimeout: 10 * time.Millisecond})
	ctx := context.Background()
	if !a.Acquire(ctx, 1) {
		t.Fatal("refused the first")
	}
	if a.Acquire(ctx, 1) {
		t.Fatal("admitted while the slot is held")
	}
	s := a.Stats()
	if s.Waiting != 0 || s.Refused != 1 || s.Queued != 1 || s.Running != 1 {
		t.Fatalf("after the timeout %+v", s)
	}
	a.Release(1)
	if !a.Acquire(ctx, 1) {
		t.Fatal("refused after the release")
	}
	a.Release(1)
}

// TestAdmissionFIFO: waiters are admitted in the order they came, a large one
// at the head holding back smaller ones behind it (no overtaking).
func TestAdmissionFIFO(t *testing.T) {
	t.Parallel()
	a := NewAdmission(AdmissionOptions{MaxRunning: 3, Queue: 10, QueueTimeout: time.Hour})
	ctx := context.Background()
	if !a.Acquire(ctx, 3) {
		t.Fatal("refused")
	}
	order := make(chan int, 10)
	sizes := []int{2, 1, 1, 3}
	var wg sync.WaitGroup
	for i, n := range sizes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !a.Acquire(ctx, n) {
				t.Errorf("waiter %d refused", i)
				return
			}
			order <- i
		}()
		waitFor(t, "the waiter to queue", func() bool { return a.Stats().Waiting == i+1 })
	}
	// One slot free: the head wants 2, so nobody may pass it.
	a.Release(1)
	select {
	case i := <-order:
		t.Fatalf("waiter %d overtook the head", i)
	case <-time.After(20 * time.Millisecond):
	}
	a.Release(2) // 3 free: the head (2) and the next (1) enter
	if i, j := <-order, <-order; !(i == 0 && j == 1 || i == 1 && j == 0) {
		t.Fatalf("admitted %d and %d, want 0 and 1", i, j)
	}
	if w := a.Stats().Waiting; w != 2 {
		t.Fatalf("waiting %d, want 2", w)
	}
	a.Release(2) // the first waiter's slots: waiter 2 (1) enters, 3 (3) waits
	if i := <-order; i != 2 {
		t.Fatalf("admitted %d, want 2", i)
	}
	a.Release(1)
	a.Release(1)
	if i := <-order; i != 3 {
		t.Fatalf("admitted %d, want 3", i)
	}
	a.Release(3)
	wg.Wait()
	if s := a.Stats(); s.Running != 0 || s.Waiting != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// TestAdmissionCancelWhileQueued: a waiter whose context ends leaves the queue
// at once, and its place goes to the next; a large head leaving lets the
// smaller ones behind it in.
func TestAdmissionCancelWhileQueued(t *testing.T) {
	t.Parallel()
	a := NewAdmission(AdmissionOptions{MaxRunning: 2, Queue: 2, QueueTimeout: time.Hour})
	bg := context.Background()
	if !a.Acquire(bg, 1) {
		t.Fatal("refused")
	}
	ctx, cancel := context.WithCancel(bg)
	big := make(chan bool)
	go func() { big <- a.Acquire(ctx, 2) }()
	waitFor(t, "the big waiter", func() bool { return a.Stats().Waiting == 1 })
	small := make(chan bool)
	go func() { small <- a.Acquire(bg, 1) }()
	waitFor(t, "the small waiter", func() bool { return a.Stats().Waiting == 2 })
	cancel()
	if <-big {
		t.Fatal("a cancelled waiter was admitted")
	}
	if !<-small {
		t.Fatal("the waiter behind a cancelled head was not admitted")
	}
	if s := a.Stats(); s.Running != 2 || s.Waiting != 0 {
		t.Fatalf("stats %+v", s)
	}
	a.Release(1)
	a.Release(1)
}

// TestAdmissionNoSlotLeak: requests that panic, and waiters cancelled at random
// moments, give every slot back (run with -race).
func TestAdmissionNoSlotLeak(t *testing.T) {
	t.Parallel()
	a := NewAdmission(AdmissionOptions{MaxRunning: 4, Queue: 8, QueueTimeout: 5 * time.Millisecond})
	handle := func(ctx context.Context, i int) (admitted bool) {
		defer func() { _ = recover() }()
		if !a.Acquire(ctx, 1+i%3) {
			return false
		}
		defer a.Release(1 + i%3)
		if i%5 == 0 {
			panic("the handler failed")
		}
		time.Sleep(time.Duration(i%3) * time.Millisecond)
		return true
	}
	var wg sync.WaitGroup
	for i := range 400 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%7)*time.Millisecond)
			defer cancel()
			handle(ctx, i)
		}()
	}
	wg.Wait()
	s := a.Stats()
	if s.Running != 0 || s.Waiting != 0 {
		t.Fatalf("leaked: %+v", s)
	}
	if s.Admitted+s.Refused != 400 {
		t.Fatalf("admitted %d + refused %d != 400", s.Admitted, s.Refused)
	}
	if !a.Acquire(context.Background(), 4) {
		t.Fatal("the whole limit is not free")
	}
	a.Release(4)
}

// TestAdmissionReleaseWithoutAcquirePanics: a bug in a caller shows at once.
func TestAdmissionReleaseWithoutAcquirePanics(t *testing.T) {
	t.Parallel()
	a := NewAdmission(AdmissionOptions{MaxRunning: 1})
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	a.Release(1)
}

// TestAdmissionUncontendedAllocs: under the limit, admission allocates nothing.
func TestAdmissionUncontendedAllocs(t *testing.T) {
	a := NewAdmission(AdmissionOptions{MaxRunning: 8})
	ctx := context.Background()
	if n := testing.AllocsPerRun(1000, func() {
		if !a.Acquire(ctx, 1) {
			t.Fatal("refused")
		}
		a.Release(1)
	}); n != 0 {
		t.Fatalf("%v allocations per admitted request", n)
	}
	var off *Admission
	if n := testing.AllocsPerRun(1000, func() { off.Acquire(ctx, 1); off.Release(1) }); n != 0 {
		t.Fatalf("%v allocations with admission off", n)
	}
}

func TestAdmissionDefaults(t *testing.T) {
	t.Parallel()
	a := NewAdmission(AdmissionOptions{MaxRunning: 3})
	if s := a.Stats(); s.MaxRunning != 3 || s.Queue != 3 || a.timeout != DefaultAdmissionQueueTimeout {
		t.Fatalf("defaults %+v %v", s, a.timeout)
	}
	if a := NewAdmission(AdmissionOptions{MaxRunning: 3, Queue: -1}); a.Stats().Queue != 0 {
		t.Fatal("Queue -1 is no queue")
	}
	if AutoMaxRunning() < AutoMaxRunningFactor {
		t.Fatal("auto below one CPU's share")
	}
}

// TestAdmissionCost: pings, session opens and cancellations cost no slot; every
// other request of a POST one, the refusal naming the first.
func TestAdmissionCost(t *testing.T) {
	t.Parallel()
	req := func(id int64, method string) *jsonrpc.Request {
		rid, _ := jsonrpc.MakeID(float64(id))
		return &jsonrpc.Request{ID: rid, Method: method}
	}
	free := []*jsonrpc.Request{req(1, "ping"), req(2, "initialize"), req(3, "server/discover"), req(4, "tasks/cancel")}
	if n, _ := admissionCost(free); n != 0 {
		t.Fatalf("free requests cost %d", n)
	}
	n, first := admissionCost(append(free, req(5, "tools/call"), req(6, "tools/list"), req(7, "resources/read")))
	if want, _ := jsonrpc.MakeID(float64(5)); n != 3 || first != want {
		t.Fatalf("cost %d first %v", n, first)
	}
}
