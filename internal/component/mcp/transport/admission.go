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
	// AutoMaxRunningFactor times GOMAXPROCS is where the adaptive limit of
	// max_running: auto starts.
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
	// Adaptive (max_running: auto) makes the limit follow what the server can
	// do (admission_adaptive.go): it starts at MaxRunning (0: AutoMaxRunning)
	// and stays between GOMAXPROCS and AdaptiveMaxRunning. Queue 0 then
	// follows the limit, and a request waits at most the usual time of a call.
	Adaptive bool
}

// AutoMaxRunning is where the limit of max_running: auto starts on this process.
func AutoMaxRunning() int { return AutoMaxRunningFactor * runtime.GOMAXPROCS(0) }

// Admission bounds the requests of one server running at once, with a short
// FIFO queue bounded in length and in time. Every transport of the server shares
// it. A request that was admitted runs to its end: only waiting can fail. The
// uncontended path takes a mutex and allocates nothing.
type Admission struct {
	queue   int
	timeout time.Duration

	mu      sync.Mutex
	limit   int // changes only with an adaptive limit
	running int
	head    *admissionWaiter // FIFO of waiters (head: the oldest)
	tail    *admissionWaiter
	waiting int

	admitted  atomic.Uint64 // requests admitted (at once or after waiting)
	queued    atomic.Uint64 // requests that waited (admitted or not)
	refused   atomic.Uint64 // requests refused (queue full, wait timed out)
	waitNanos atomic.Uint64 // total wait of queued requests

	refusedDoor atomic.Uint64 // calls refused at the door (also in refused)

	// The adaptive limit (nil: a fixed one). control, hist, limited, queueFollows
	// and the queue timeout it sets are guarded by mu; sched by ticking.
	control      *adaptiveControl
	queueFollows bool        // the queue is as long as the limit
	hist         latencyHist // the window's call latencies
	ranSum       int         // the calls running as each of them ended
	limited      bool        // the window saw a request wait or be refused for a slot
	sched        *schedLatency
	epoch        time.Time    // the monotonic origin of lastTick
	lastTick     atomic.Int64 // nanoseconds since epoch at the window's start
	ticking      atomic.Bool
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
	if o.Adaptive && o.MaxRunning <= 0 {
		o.MaxRunning = AutoMaxRunning()
	}
	if o.MaxRunning <= 0 {
		return nil
	}
	a := &Admission{limit: o.MaxRunning, queue: o.Queue, timeout: o.QueueTimeout}
	if o.Adaptive {
		procs := runtime.GOMAXPROCS(0)
		a.control = newAdaptiveControl(o.MaxRunning, procs, AdaptiveMaxRunning)
		a.limit = int(a.control.limit)
		a.queueFollows = o.Queue == 0
		a.sched = newSchedLatency()
		a.sched.read(schedQuantile) // the baseline of the first window
		a.epoch = time.Now()
	}
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
	// Adaptive: MaxRunning is the adaptive limit's value now. RefusedAtDoor
	// are the refusals before the body was parsed (also counted in Refused).
	Adaptive      bool
	RefusedAtDoor uint64
}

// Stats returns the counters; the zero value on nil.
func (a *Admission) Stats() AdmissionStats {
	if a == nil {
		return AdmissionStats{}
	}
	a.mu.Lock()
	running, waiting, limit, queue := a.running, a.waiting, a.limit, a.queueLimitLocked()
	a.mu.Unlock()
	return AdmissionStats{MaxRunning: limit, Queue: queue, Running: running, Waiting: waiting,
		Admitted: a.admitted.Load(), Queued: a.queued.Load(), Refused: a.refused.Load(),
		QueueWait: time.Duration(a.waitNanos.Load()), Adaptive: a.control != nil,
		RefusedAtDoor: a.refusedDoor.Load()}
}

// Acquire takes n slots (a batch of n requests; more than the limit take all of
// them), waiting in FIFO order at most the queue timeout, and reports whether
// it got them; each true must be followed by Release(n). It refuses at once when
// the queue is full, and when ctx ends while it waits. A nil Admission admits.
func (a *Admission) Acquire(ctx context.Context, n int) bool {
	if a == nil {
		return true
	}
	a.mu.Lock()
	n = a.costLocked(n)
	if a.head == nil && a.fitsLocked(n) {
		a.running += n
		a.mu.Unlock()
		a.admitted.Add(1)
		return true
	}
	a.limited = true
	if a.waiting >= a.queueLimitLocked() {
		a.mu.Unlock()
		a.refused.Add(1)
		return false
	}
	w := &admissionWaiter{n: n, ready: make(chan struct{})}
	a.pushLocked(w)
	timeout := a.timeout
	if a.control != nil {
		timeout = a.control.queueTimeout(a.timeout)
	}
	a.mu.Unlock()
	a.queued.Add(1)

	start := time.Now()
	t := time.NewTimer(timeout)
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

// costLocked is the slots n requests take: at least 1, at most the limit (the
// highest an adaptive limit can reach: Release must give back what Acquire
// took, whatever the limit became in between).
func (a *Admission) costLocked(n int) int {
	hi := a.limit
	if a.control != nil {
		hi = a.control.max
	}
	return min(max(n, 1), hi)
}

// Release gives back n slots Acquire(n) took.
func (a *Admission) Release(n int) {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.releaseLocked(n)
	a.mu.Unlock()
}

// ReleaseTimed is Release for a request admitted at start: an adaptive limit
// learns from the time the slots were held.
func (a *Admission) ReleaseTimed(n int, start time.Time) {
	if a == nil {
		return
	}
	if a.control == nil {
		a.Release(n)
		return
	}
	now := time.Now()
	a.mu.Lock()
	a.hist.add(now.Sub(start))
	a.ranSum += a.running
	a.releaseLocked(n)
	a.mu.Unlock()
	a.maybeTick(now)
}

func (a *Admission) releaseLocked(n int) {
	n = a.costLocked(n)
	a.running -= n
	if a.running < 0 {
		a.mu.Unlock()
		panic("transport: Admission.Release without Acquire")
	}
	a.grantLocked()
}

// fitsLocked reports whether n more slots may run now: within the limit, or
// alone when n is more than an adaptive limit that shrank below it.
func (a *Admission) fitsLocked(n int) bool {
	return a.running+n <= a.limit || (a.running == 0 && n > a.limit)
}

// queueLimitLocked is the number of requests that may wait for a slot.
func (a *Admission) queueLimitLocked() int {
	if a.queueFollows {
		return a.limit
	}
	return a.queue
}

// maybeTick closes the control window when it is adaptiveInterval old: one
// caller computes the new limit, the others go on.
func (a *Admission) maybeTick(now time.Time) {
	at := now.Sub(a.epoch)
	last := time.Duration(a.lastTick.Load())
	if at-last < adaptiveInterval || !a.ticking.CompareAndSwap(false, true) {
		return
	}
	defer a.ticking.Store(false)
	if last = time.Duration(a.lastTick.Load()); at-last < adaptiveInterval {
		return // another caller just closed it
	}
	a.lastTick.Store(int64(at))
	w := controlWindow{sched: a.sched.read(schedQuantile)}
	a.mu.Lock()
	w.median, w.calls, w.limited = a.hist.median(), a.hist.n, a.limited
	if a.hist.n > 0 {
		w.running = float64(a.ranSum) / float64(a.hist.n)
	}
	a.hist.reset()
	a.limited, a.ranSum = false, 0
	a.limit = a.control.update(w)
	a.grantLocked() // a higher limit admits waiters now
	a.mu.Unlock()
}

// atDoor reports whether the POST of body is refused at the door, before it
// is parsed (admission_door.go), and the id to answer with: an Acquire would
// refuse it now (every slot taken, the queue full) and body is certainly one
// request that takes a slot (doorCall). It counts the refusal when it says yes.
func (a *Admission) atDoor(body []byte) (id []byte, refused bool) {
	if a == nil || !a.full(false) {
		return nil, false
	}
	if id, refused = doorCall(body); !refused {
		return nil, false
	}
	if a.full(true) {
		a.refused.Add(1)
		a.refusedDoor.Add(1)
		return id, true
	}
	return nil, false
}

// full reports whether an Acquire of one slot would be refused at once: no
// slot free (or waiters ahead) and the queue full. note records it as a
// request held back by the limit.
func (a *Admission) full(note bool) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	f := (a.head != nil || !a.fitsLocked(1)) && a.waiting >= a.queueLimitLocked()
	if f && note {
		a.limited = true
	}
	return f
}

// grantLocked admits the waiters at the head that now fit, in order.
func (a *Admission) grantLocked() {
	for w := a.head; w != nil && a.fitsLocked(w.n); w = a.head {
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
