package kafka

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// markRecorder is a consumer whose marks for commit are recorded instead of
// going to a client, and whose workflow records the offsets it ran (and whether
// they ran with asynchronous sends).
type markRecorder struct {
	c *consumer

	mu    sync.Mutex
	marks []int64
	runs  []string
}

func newMarkRecorder(t *testing.T) *markRecorder {
	t.Helper()
	m := &markRecorder{}
	u, err := uri.Parse("kafka://orders")
	if err != nil {
		t.Fatal(err)
	}
	ep, err := New(Options{}).CreateEndpoint(u)
	if err != nil {
		t.Fatal(err)
	}
	m.c = &consumer{e: ep.(*endpoint), p: component.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
		m.mu.Lock()
		defer m.mu.Unlock()
		mode := "sync"
		if acksFrom(ctx) != nil {
			mode = "async"
		}
		m.runs = append(m.runs, exchange.Stringify(ex.In().Header(HeaderOffset))+" "+mode)
		return nil
	})}
	m.c.runCtx, m.c.cancelRun = context.WithCancel(context.Background())
	t.Cleanup(m.c.cancelRun)
	m.c.markCommit = func(rs ...*kgo.Record) {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, r := range rs {
			m.marks = append(m.marks, r.Offset)
		}
	}
	return m
}

func (m *markRecorder) marked() []int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.marks)
}

// record is a finished record of partition 0 at offset, with sends sends still
// waiting for their acknowledgement.
func record(w *worker, offset int64, sends int) pendingRecord {
	a := &acks{w: w}
	for range sends {
		a.add()
	}
	a.seal()
	return pendingRecord{&kgo.Record{Topic: "orders", Offset: offset}, a}
}

// TestMarkingKeepsOffsetOrder: a finished record is marked at once only when no
// record before it waits for acknowledgements; otherwise it waits in the queue,
// and the acknowledgement of the one before it marks both with one mark (of the
// later record, which commits both offsets).
func TestMarkingKeepsOffsetOrder(t *testing.T) {
	t.Parallel()
	m := newMarkRecorder(t)
	c, w := m.c, newWorker()

	if !c.finished(w, record(w, 0, 0)) {
		t.Fatal("finished refused a record")
	}
	if got := m.marked(); !slices.Equal(got, []int64{0}) {
		t.Fatalf("a record with nothing before it and no sends: marks %v, want [0]", got)
	}
	waiting := record(w, 1, 1)
	c.finished(w, waiting)
	c.finished(w, record(w, 2, 0))
	if _, ended := c.markReady(w); ended {
		t.Fatal("markReady says the worker ended")
	}
	if got := m.marked(); !slices.Equal(got, []int64{0}) {
		t.Fatalf("offset 1 waits for its send: marks %v, want [0] (offset 2 must not be marked before 1)", got)
	}
	if len(w.queue) != 2 {
		t.Fatalf("queue holds %d records, want 2", len(w.queue))
	}
	select {
	case <-w.wake: // offset 1 joined an empty queue
	default:
	}
	waiting.a.finish(nil)
	select {
	case <-w.wake:
	default:
		t.Fatal("the last acknowledgement did not wake the marker")
	}
	c.markReady(w)
	if got := m.marked(); !slices.Equal(got, []int64{0, 2}) {
		t.Fatalf("after offset 1's acknowledgement: marks %v, want [0 2] (one mark for offsets 1 and 2)", got)
	}
	c.finished(w, record(w, 3, 0))
	if got := m.marked(); !slices.Equal(got, []int64{0, 2, 3}) {
		t.Fatalf("queue empty again: marks %v, want [0 2 3]", got)
	}
}

// TestMarkingRunsAFailedSendAgainFirst: a record whose asynchronous send failed
// runs through the workflow again with synchronous sends before it is marked, and
// the records after it are marked only after that.
func TestMarkingRunsAFailedSendAgainFirst(t *testing.T) {
	t.Parallel()
	m := newMarkRecorder(t)
	c, w := m.c, newWorker()

	bad := record(w, 7, 1)
	c.finished(w, bad)
	c.finished(w, record(w, 8, 0))
	bad.a.finish(errors.New("broker refused"))
	if got := m.marked(); len(got) != 0 {
		t.Fatalf("marks %v before the failed record ran again", got)
	}
	marked := make(chan struct{})
	go c.mark(w, marked)
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	w.notify()
	<-marked
	if got := m.marked(); !slices.Equal(got, []int64{7, 8}) {
		t.Fatalf("marks %v, want [7 8]", got)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.Equal(m.runs, []string{"7 sync"}) {
		t.Fatalf("workflow runs %v, want the failed record once with synchronous sends", m.runs)
	}
}

// TestMarkingQueueIsBounded: a worker whose queue is full waits until the
// marker takes records out.
func TestMarkingQueueIsBounded(t *testing.T) {
	t.Parallel()
	m := newMarkRecorder(t)
	c, w := m.c, newWorker()
	head := record(w, 0, 1)
	c.finished(w, head)
	for i := 1; i < maxPendingPerPartition; i++ {
		c.finished(w, record(w, int64(i), 0))
	}
	done := make(chan bool)
	go func() { done <- c.finished(w, record(w, maxPendingPerPartition, 0)) }()
	w.mu.Lock()
	n := len(w.queue)
	w.mu.Unlock()
	if n != maxPendingPerPartition {
		t.Fatalf("queue holds %d records, want the bound %d", n, maxPendingPerPartition)
	}
	head.a.finish(nil)
	c.markReady(w)
	if !<-done {
		t.Fatal("finished gave up instead of waiting for room")
	}
	if got := m.marked(); !slices.Equal(got, []int64{maxPendingPerPartition - 1, maxPendingPerPartition}) {
		t.Fatalf("marks %v, want [%d %d]", got, maxPendingPerPartition-1, maxPendingPerPartition)
	}
}
