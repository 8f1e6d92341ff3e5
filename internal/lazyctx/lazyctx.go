// Package lazyctx is context.WithCancel for hot paths: a cancellable child of a
// context whose real context.WithCancel child (its Done channel, its place among the
// parent's children, the lock on the parent that costs) is made only when something
// needs it: Done, a context derived from it, context.Cause. Work that only asks Err
// between its steps — an MCP tool call, a workflow run — never pays for it.
// TestLikeWithCancel holds it to what context.WithCancel (and context.WithValue
// around it) answer after any sequence of events and questions.
package lazyctx

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"
)

// Context is a cancellable child of its parent, as context.WithCancel makes one; its
// channel is made on first need. It may carry one key and value, as
// context.WithValue around the child would. Cancel it when the work is done.
type Context struct {
	context.Context // the parent
	key, val        any

	mu       sync.Mutex
	err      error // once set, what Err answers
	byCancel bool  // err was set by Cancel (the parent had not ended)
	ended    bool
	// inner is the context.WithCancel child, once made; cancel cancels it.
	inner  atomic.Pointer[context.Context]
	cancel context.CancelFunc
}

// WithCancel is context.WithCancel(parent), made lazily.
func WithCancel(parent context.Context) *Context { return &Context{Context: parent} }

// WithCancelValue is context.WithValue(context.WithCancel(parent), key, val), made
// lazily. key must be comparable, as for context.WithValue.
func WithCancelValue(parent context.Context, key, val any) *Context {
	return &Context{Context: parent, key: key, val: val}
}

// cancelCtxProbe answers itself for the context package's private key of cancel
// contexts only, which lets Value recognise that key.
var cancelCtxProbe, _ = context.WithCancel(context.Background())

func (c *Context) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		if p := c.inner.Load(); p != nil {
			c.err = (*p).Err()
		} else {
			c.err = c.Context.Err()
		}
	}
	return c.err
}

func (c *Context) Done() <-chan struct{} { return c.child().Done() }

func (c *Context) Deadline() (time.Time, bool) { return c.Context.Deadline() }

func (c *Context) Value(key any) any {
	if c.key != nil && key == c.key {
		return c.val
	}
	if p := c.inner.Load(); p != nil {
		return (*p).Value(key)
	}
	if cancelCtxProbe.Value(key) == any(cancelCtxProbe) {
		// context.Cause, and contexts derived from this one, look for the nearest
		// cancel context: the child, as under context.WithCancel.
		return c.child().Value(key)
	}
	return c.Context.Value(key)
}

// child returns the context.WithCancel child of the parent this context stands
// for, making it on first use.
func (c *Context) child() context.Context {
	if p := c.inner.Load(); p != nil {
		return *p
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.inner.Load(); p != nil {
		return *p
	}
	parent := c.Context
	if c.byCancel {
		// Cancelled while the parent went on: a child cancelled then, whatever the
		// parent did since.
		parent = context.WithoutCancel(parent)
	}
	inner, cancel := context.WithCancel(parent)
	if c.ended {
		cancel()
	}
	c.cancel = cancel
	c.inner.Store(&inner)
	return inner
}

// Cancel ends the context, as the CancelFunc of context.WithCancel does.
func (c *Context) Cancel() {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return
	}
	c.ended = true
	if c.err == nil && c.inner.Load() == nil {
		if c.err = c.Context.Err(); c.err == nil {
			c.err, c.byCancel = context.Canceled, true
		}
	}
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// String names the context as the context package would name
// context.WithCancel(parent), with .WithValue(key, val) when it carries a value.
func (c *Context) String() string {
	name := nameOf(c.Context) + ".WithCancel"
	if c.key != nil {
		name += ".WithValue(" + nameOf(c.key) + ", " + nameOf(c.val) + ")"
	}
	return name
}

// nameOf is how the context package prints a context, key or value.
func nameOf(v any) string {
	switch s := v.(type) {
	case string:
		return s
	case fmt.Stringer:
		return s.String()
	case nil:
		return "<nil>"
	}
	return reflect.TypeOf(v).String()
}
