package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// CodeServerBusy is the JSON-RPC error code of a request the server's admission
// control refused (server busy): its data is {"retry_after": seconds}. The HTTP
// answer carrying it is 503 with the same Retry-After.
const CodeServerBusy = -32030

// Defaults of AdmissionOptions.
const (
	// DefaultAdmissionQueueFactor times MaxRunning is the default of
	// AdmissionOptions.Queue: the queue holds as many requests as run at once.
	DefaultAdmissionQueueFactor = 1
	// DefaultAdmissionQueueTimeout is the default of AdmissionOptions.QueueTimeout.
	DefaultAdmissionQueueTimeout = 50 * time.Millisecond
	// AutoMaxRunningFactor times GOMAXPROCS is the limit of max_running: auto.
	AutoMaxRunningFactor = 4
)

// AdmissionOptions configure a server's admission control: at most MaxRunning
// requests run at once, at most Queue more wait for a slot, each at most
// QueueTimeout; the others are refused before any work (503, CodeServerBusy).
type AdmissionOptions struct {
	// MaxRunning is the number of requests running at once; <= 0: no admission
	// control (NewAdmission returns nil).
	MaxRunning int
	// Queue is the number of requests waiting for a slot; 0: MaxRunning, < 0: none
	// (a request that finds every slot taken is refused at once).
	Queue int
	// QueueTimeout bounds the wait of a queued request; 0: the default (50ms).
	QueueTimeout time.Duration
}

// AutoMaxRunning is the MaxRunning of max_running: auto on this process.
func AutoMaxRunning() int { return AutoMaxRunningFactor * runtime.GOMAXPROCS(0) }

// Admission bounds the requests of one server running at once, with a short
// FIFO queue bounded in length and in time. Every transport of the server shares
// it. A request that was admitted runs to its end: only waiting can fail. The
// uncontended path takes a mutex and allocates nothing.
type Admission struct {
	limit   int
	queue   int
	timeout time.Duration

	mu      sync.Mutex
	running int
	head    *admissionWaiter // FIFO of waiters (head: the oldest)
	tail    *admissionWaiter
	waiting int

	admitted  atomic.Uint64 // requests admitted (at once or after waiting)
	queued    atomic.Uint64 // requests that waited (admitted or not)
	refused   atomic.Uint64 // requests refused (queue full, wait timed out)
	waitNanos atomic.Uint64 // total wait of queued requests
}

type admissionWaiter struct {
	n          int
	ready      chan struct{} // closed when granted
	granted    bool
	next, prev *admissionWaiter
}

// NewAdmission returns the admission control o describes, nil when
// o.MaxRunning <= 0 (no control: Acquire on nil admits everything).
func NewAdmission(o AdmissionOptions) *Admission {
	if o.MaxRunning <= 0 {
		return nil
	}
	a := &Admission{limit: o.MaxRunning, queue: o.Queue, timeout: o.QueueTimeout}
	switch {
	case a.queue == 0:
		a.queue = DefaultAdmissionQueueFactor * o.MaxRunning
	case a.queue < 0:
		a.queue = 0
	}
	if a.timeout <= 0 {
		a.timeout = DefaultAdmissionQueueTimeout
	}
	return a
}

// AdmissionStats are the counters of an Admission.
type AdmissionStats struct {
	MaxRunning, Queue int
	Running, Waiting  int
	Admitted, Queued  uint64
	Refused           uint64
	QueueWait         time.Duration // the total wait of the requests that queued
}

// Stats returns the counters; the zero value on nil.
func (a *Admission) Stats() AdmissionStats {
	if a == nil {
		return AdmissionStats{}
	}
	a.mu.Lock()
	running, waiting := a.running, a.waiting
	a.mu.Unlock()
	return AdmissionStats{MaxRunning: a.limit, Queue: a.queue, Running: running, Waiting: waiting,
		Admitted: a.admitted.Load(), Queued: a.queued.Load(), Refused: a.refused.Load(),
		QueueWait: time.Duration(a.waitNanos.Load())}
}

// Acquire takes n slots (a batch of n requests; more than the limit take all of
// them), waiting in FIFO order at most the queue timeout, and reports whether
// it got them; each true must be followed by Release(n). It refuses at once when
// the queue is full, and when ctx ends while it waits. A nil Admission admits.
func (a *Admission) Acquire(ctx context.Context, n int) bool {
	if a == nil {
		return true
	}
	n = min(max(n, 1), a.limit)
	a.mu.Lock()
	if a.head == nil && a.running+n <= a.limit {
		a.running += n
		a.mu.Unlock()
		a.admitted.Add(1)
		return true
	}
	if a.waiting >= a.queue {
		a.mu.Unlock()
		a.refused.Add(1)
		return false
	}
	w := &admissionWaiter{n: n, ready: make(chan struct{})}
	a.pushLocked(w)
	a.mu.Unlock()
	a.queued.Add(1)

	start := time.Now()
	t := time.NewTimer(a.timeout)
	defer t.Stop()
	var ok bool
	select {
	case <-w.ready:
		ok = true
	case <-t.C:
	case <-ctx.Done():
	}
	if !ok {
		a.mu.Lock()
		if w.granted {
			// Granted as the wait ended: take it when there is time left, else
			// hand it on.
			ok = ctx.Err() == nil
			if !ok {
				a.running -= w.n
				a.grantLocked()
			}
		} else {
			a.removeLocked(w)
			a.grantLocked() // a large head leaving may let smaller ones in
		}
		a.mu.Unlock()
	}
	a.waitNanos.Add(uint64(time.Since(start)))
	if ok {
		a.admitted.Add(1)
	} else {
		a.refused.Add(1)
	}
	return ok
}

// Release gives back n slots Acquire(n) took.
func (a *Admission) Release(n int) {
	if a == nil {
		return
	}
	n = min(max(n, 1), a.limit)
	a.mu.Lock()
	a.running -= n
	if a.running < 0 {
		a.mu.Unlock()
		panic("transport: Admission.Release without Acquire")
	}
	a.grantLocked()
	a.mu.Unlock()
}

// grantLocked admits the waiters at the head that now fit, in order.
func (a *Admission) grantLocked() {
	for w := a.head; w != nil && a.running+w.n <= a.limit; w = a.head {
		a.removeLocked(w)
		a.running += w.n
		w.granted = true
		close(w.ready)
	}
}

func (a *Admission) pushLocked(w *admissionWaiter) {
	w.prev = a.tail
	if a.tail != nil {
		a.tail.next = w
	} else {
		a.head = w
	}
	a.tail = w
	a.waiting++
}

func (a *Admission) removeLocked(w *admissionWaiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		a.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		a.tail = w.prev
	}
	w.next, w.prev = nil, nil
	a.waiting--
}

// busyRetryAfter is the Retry-After of a refused request, in seconds (HTTP's
// granularity; the queue is short, so the next second usually has room).
const busyRetryAfter = 1

// BusyError is the JSON-RPC error of a request admission control refused.
func BusyError() *jsonrpc.Error {
	return &jsonrpc.Error{Code: CodeServerBusy,
		Message: fmt.Sprintf("server busy: too many requests are running and waiting; retry after %d s", busyRetryAfter),
		Data:    json.RawMessage(fmt.Sprintf(`{"retry_after":%d}`, busyRetryAfter))}
}

// refuseBusy answers a request admission control refused: 503, Retry-After and
// the JSON-RPC busy error for id.
func refuseBusy(w http.ResponseWriter, id jsonrpc.ID) {
	w.Header().Set("Retry-After", fmt.Sprint(busyRetryAfter))
	writeJSONRPCError(w, http.StatusServiceUnavailable, id, BusyError())
}

// admissionCost is the number of slots the requests of a POST take: its calls
// other than ping, initialize, server/discover and tasks/cancel (never refused: a
// ping must always be answered, opening a session (or discovering the server, its
// 2026-07-28 counterpart) is cheap and bounded by max_sessions, and a
// cancellation must reach what it cancels). Notifications (notifications/cancelled included)
// and answers to the server's own requests cost nothing and are never refused.
func admissionCost(calls []*jsonrpc.Request) (n int, first jsonrpc.ID) {
	for _, c := range calls {
		switch c.Method {
		case "ping", "initialize", "server/discover", "tasks/cancel":
			continue
		}
		if n == 0 {
			first = c.ID
		}
		n++
	}
	return n, first
}
