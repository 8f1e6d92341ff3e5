package engine

import (
	"context"
	"reflect"
	"sync"
	"sync/atomic"
	"time"
)

// runContext is the context of a [Context.RunUntilStop] run: the caller's ctx with
// the workflow id (withWorkflowID), ended when the run returns or when Stop gives up
// draining, as a context.WithCancel child of ctx would be. The child itself is made
// only when something needs its channel (Done, a context derived from this one,
// context.Cause): most runs only ask Err between steps, and a child of a
// cancellable ctx costs allocations and a lock on ctx.
type runContext struct {
	context.Context // the caller's
	id              any

	mu    sync.Mutex
	err   error // once set, what Err answers
	byEnd bool  // err was set by end (the caller's ctx had not ended)
	ended bool
	// inner is the context.WithCancel child, once made; cancel cancels it.
	inner  atomic.Pointer[context.Context]
	cancel context.CancelFunc
}

// cancelCtxProbe answers itself for the context package's private key of cancel
// contexts only, which lets Value recognise that key.
var cancelCtxProbe, _ = context.WithCancel(context.Background())

func (rc *runContext) Err() error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.err == nil {
		if p := rc.inner.Load(); p != nil {
			rc.err = (*p).Err()
		} else {
			rc.err = rc.Context.Err()
		}
	}
	return rc.err
}

func (rc *runContext) Done() <-chan struct{} { return rc.child().Done() }

func (rc *runContext) Deadline() (time.Time, bool) { return rc.Context.Deadline() }

func (rc *runContext) Value(key any) any {
	if key == (workflowIDKey{}) {
		return rc.id
	}
	if p := rc.inner.Load(); p != nil {
		return (*p).Value(key)
	}
	if cancelCtxProbe.Value(key) == any(cancelCtxProbe) {
		// context.Cause, and contexts derived from this one, look for the nearest
		// cancel context: the child, as under context.WithCancel.
		return rc.child().Value(key)
	}
	return rc.Context.Value(key)
}

// child returns the context.WithCancel child of the caller's ctx this context
// stands for, making it on first use.
func (rc *runContext) child() context.Context {
	if p := rc.inner.Load(); p != nil {
		return *p
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if p := rc.inner.Load(); p != nil {
		return *p
	}
	parent := rc.Context
	if rc.byEnd {
		// Ended while ctx went on: a child cancelled then, whatever ctx did since.
		parent = context.WithoutCancel(parent)
	}
	inner, cancel := context.WithCancel(parent)
	if rc.ended {
		cancel()
	}
	rc.cancel = cancel
	rc.inner.Store(&inner)
	return inner
}

// end ends the context, as cancelling a context.WithCancel child would: the run
// returned, or Stop abandoned it.
func (rc *runContext) end() {
	rc.mu.Lock()
	if rc.ended {
		rc.mu.Unlock()
		return
	}
	rc.ended = true
	if rc.err == nil && rc.inner.Load() == nil {
		if rc.err = rc.Context.Err(); rc.err == nil {
			rc.err, rc.byEnd = context.Canceled, true
		}
	}
	cancel := rc.cancel
	rc.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// String names the context as the context package would name
// withWorkflowID(context.WithCancel(ctx)).
func (rc *runContext) String() string {
	var name string
	if s, ok := rc.Context.(interface{ String() string }); ok {
		name = s.String()
	} else {
		name = reflect.TypeOf(rc.Context).String()
	}
	id, _ := rc.id.(string)
	return name + ".WithCancel.WithValue(engine.workflowIDKey, " + id + ")"
}
