package engine

import (
	"sync"

	"github.com/arvenza/helix/internal/lazyctx"
)

// activity counts running work like sync.WaitGroup, except that Add may be called
// while Wait is in progress. External callers of [Context.Run] (MCP tool calls,
// management requests) and asynchronous steps keep starting exchanges while Stop
// drains; a WaitGroup forbids Add concurrent with Wait once the count is zero,
// whereas here new work simply extends the drain, which Stop bounds by its deadline.
type activity struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n drops to 0; nil when no one waits
	// cancels holds the contexts of the running work that abandon must end
	// (addCancellable), free the unused slots of cancels: registering under the
	// lock Add takes anyway is cheaper than a context.AfterFunc per run on the
	// shared run context, whose lock every concurrent run would contend for.
	cancels   []*lazyctx.Context
	free      []int
	abandoned bool
}

func (a *activity) Add(delta int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.addLocked(delta)
}

func (a *activity) addLocked(delta int) {
	a.n += delta
	if a.n < 0 {
		panic("engine: negative activity count")
	}
	if a.n == 0 && a.zero != nil {
		close(a.zero)
		a.zero = nil
	}
}

func (a *activity) Done() { a.Add(-1) }

// addCancellable is Add(1) for work that abandon ends by ending its context; once
// abandoned, it is ended at once. Pass the slot it returns to doneCancellable.
func (a *activity) addCancellable(rc *lazyctx.Context) (slot int) {
	a.mu.Lock()
	a.addLocked(1)
	if a.abandoned {
		a.mu.Unlock()
		rc.Cancel()
		return -1
	}
	if k := len(a.free); k > 0 {
		slot = a.free[k-1]
		a.free = a.free[:k-1]
		a.cancels[slot] = rc
	} else {
		slot = len(a.cancels)
		a.cancels = append(a.cancels, rc)
	}
	a.mu.Unlock()
	return slot
}

// doneCancellable is Done for work added with addCancellable.
func (a *activity) doneCancellable(slot int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if slot >= 0 && !a.abandoned {
		a.cancels[slot] = nil
		a.free = append(a.free, slot)
	}
	a.addLocked(-1)
}

// abandon cancels the work added with addCancellable, now and from now on.
func (a *activity) abandon() {
	a.mu.Lock()
	if a.abandoned {
		a.mu.Unlock()
		return
	}
	a.abandoned = true
	cancels := a.cancels
	a.cancels, a.free = nil, nil
	a.mu.Unlock()
	for _, rc := range cancels {
		if rc != nil {
			rc.Cancel()
		}
	}
}

// Wait blocks until the count is zero.
func (a *activity) Wait() {
	a.mu.Lock()
	if a.n == 0 {
		a.mu.Unlock()
		return
	}
	if a.zero == nil {
		a.zero = make(chan struct{})
	}
	ch := a.zero
	a.mu.Unlock()
	<-ch
}

// Count is the work running now (in-flight exchanges for /metrics).
func (a *activity) Count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}
