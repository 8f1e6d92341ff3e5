package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/uri"
)

// singletonTriggers is the state of the triggers whose component's spec says
// Singleton (timer://, file:// and postgres:// triggers) when [Context.DeferSingletons]
// was called: Start leaves them alone, StartSingletons and StopSingletons run them
// while this replica is the cluster's leader. Guarded by Context.mu.
type singletonTriggers struct {
	deferred bool
	running  []runningSingleton // started by StartSingletons, in start order
}

type runningSingleton struct {
	id   string
	cons component.Consumer
}

// DeferSingletons makes Start skip the workflows whose trigger is a singleton (its
// component's [component.Spec] has Singleton set): they wait in state Standby until
// StartSingletons. The application calls it before Start when replicas elect a
// leader (helix.cluster.leader, internal/cluster); without it every trigger starts with
// Start, as on a single replica.
func (c *Context) DeferSingletons() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.singletons.deferred = true
	for _, rw := range c.byID {
		if rw.wf.FromURI != "" && c.singletonLocked(rw.wf.FromURI) {
			rw.state = StateStandby
		}
	}
}

// SingletonWorkflows lists the ids of the workflows whose trigger is a singleton, in
// the order they were added.
func (c *Context) SingletonWorkflows() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.singletonIDsLocked()
}

// isSingleton reports whether rawURI, as a trigger, is a singleton: its component's
// spec has Singleton set.
func (c *Context) isSingleton(rawURI string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.singletonLocked(rawURI)
}

func (c *Context) singletonLocked(rawURI string) bool {
	u, err := uri.Parse(rawURI)
	if err != nil {
		return false
	}
	d, ok := c.components[u.Scheme].(component.Described)
	return ok && d.Spec() != nil && d.Spec().Singleton
}

// deferred reports whether Start leaves w's trigger to StartSingletons.
func (c *Context) deferred(w *Workflow) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.singletons.deferred && c.singletonLocked(w.FromURI)
}

// StartSingletons starts a fresh consumer for every deferred singleton trigger (a
// stopped consumer is never restarted: each term of leadership gets new ones, so a
// timer's counter starts again at 1). It does nothing unless DeferSingletons was
// called, the context has started, and the singletons are not running already. When
// one trigger fails to start, the ones started are stopped again and the error is
// returned: a leader runs all of its singleton triggers or none. StartSingletons and
// StopSingletons are meant to be called from one goroutine, the one following the
// leadership (pkg/app); Stop may run concurrently with either.
func (c *Context) StartSingletons(ctx context.Context) error {
	c.mu.Lock()
	if !c.singletons.deferred || !c.started || c.stopped || len(c.singletons.running) > 0 {
		c.mu.Unlock()
		return nil
	}
	var todo []*runtimeWorkflow
	for _, id := range c.singletonIDsLocked() {
		todo = append(todo, c.byID[id])
	}
	c.mu.Unlock()

	var started []runningSingleton
	for _, rw := range todo {
		cons, err := c.singletonConsumer(ctx, rw)
		if err != nil {
			for i := len(started) - 1; i >= 0; i-- {
				_ = started[i].cons.Stop(ctx)
			}
			return err
		}
		started = append(started, runningSingleton{id: rw.wf.ID, cons: cons})
	}
	c.mu.Lock()
	if c.stopped || len(c.singletons.running) > 0 {
		// Stop (or another StartSingletons) came first while these were starting:
		// nobody else would stop them.
		c.mu.Unlock()
		var errs []error
		for i := len(started) - 1; i >= 0; i-- {
			errs = append(errs, started[i].cons.Stop(ctx))
		}
		return errors.Join(errs...)
	}
	c.singletons.running = started
	for _, s := range started {
		c.byID[s.id].state = StateStarted
	}
	c.mu.Unlock()
	return nil
}

func (c *Context) singletonConsumer(ctx context.Context, rw *runtimeWorkflow) (component.Consumer, error) {
	w := rw.wf
	ep, err := c.Endpoint(w.FromURI)
	if err != nil {
		return nil, fmt.Errorf("workflow %s: trigger %w", w.ID, err)
	}
	cons, err := ep.CreateConsumer(c.triggered(rw))
	if err != nil {
		return nil, fmt.Errorf("workflow %s: trigger %s: %w", w.ID, c.ShownURI(w.FromURI), err)
	}
	if err := cons.Start(ctx); err != nil {
		return nil, fmt.Errorf("workflow %s: start trigger %s: %w", w.ID, c.ShownURI(w.FromURI), err)
	}
	return cons, nil
}

// StopSingletons stops the consumers StartSingletons started, in reverse order, as
// Stop stops triggers: no new exchange begins, and the exchange each one has in
// flight may finish until ctx ends (DefaultStopTimeout of the component without a
// deadline); then its context is cancelled. The workflows go back to Standby.
func (c *Context) StopSingletons(ctx context.Context) error {
	c.mu.Lock()
	running := c.takeSingletonsLocked()
	if !c.stopped {
		for _, s := range c.singletonIDsLocked() {
			c.byID[s].state = StateStandby
		}
	}
	c.mu.Unlock()
	var errs []error
	for i := len(running) - 1; i >= 0; i-- {
		if err := running[i].Stop(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// SingletonsRunning reports whether the singleton triggers are running (between a
// successful StartSingletons and StopSingletons or Stop).
func (c *Context) SingletonsRunning() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.singletons.running) > 0
}

// takeSingletonsLocked removes the running singleton consumers, for stopping.
func (c *Context) takeSingletonsLocked() []component.Consumer {
	out := make([]component.Consumer, len(c.singletons.running))
	for i, s := range c.singletons.running {
		out[i] = s.cons
	}
	c.singletons.running = nil
	return out
}

func (c *Context) singletonIDsLocked() []string {
	var ids []string
	for _, w := range c.workflows {
		if w.FromURI != "" && c.singletonLocked(w.FromURI) {
			ids = append(ids, w.ID)
		}
	}
	return ids
}
