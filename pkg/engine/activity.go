package engine

import "sync"

// activity counts running work like sync.WaitGroup, except that Add may be called
// while Wait is in progress. External callers of [Context.Run] (MCP tool calls,
// management requests) and asynchronous steps keep starting exchanges while Stop
// drains; a WaitGroup forbids Add concurrent with Wait once the count is zero,
// whereas here new work simply extends the drain, which Stop bounds by its deadline.
type activity struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n drops to 0; nil when no one waits
}

func (a *activity) Add(delta int) {
	a.mu.Lock()
	defer a.mu.Unlock()
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
