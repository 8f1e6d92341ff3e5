// Package implicit is the component behind agent:// and pipeline://: the
// implicit trigger of workflows the application builds from a declaration
// (agents:, pipelines:) and the target that runs one on the caller's exchange.
//
// Such a workflow is an engine workflow of its own Kind whose one processor does
// the work, so a target scheme://id simply runs that workflow with the caller's
// exchange (the way tool://id runs a tool) and the run is counted with it. The
// application declares the ids while building ([Component.Declare]), so that a
// target naming none is a configuration error with a did-you-mean, and hands over
// the services the declared workflows need ([Component.AddService]: MCP servers of
// agents, pipelines with their stores), which start before any trigger and stop
// after them.
package implicit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/arvenza/helix/internal/suggest"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// Kind describes one scheme of this component.
type Kind struct {
	Scheme string      // "agent"
	Noun   string      // "agent", in messages
	Kind   engine.Kind // the Kind of the declared workflows
	// Section is the YAML list the ids are declared in ("agents:").
	Section string
	// Example is an id for the "needs the id" message ("assistant").
	Example string
	// Instead tells a workflow that tried scheme://id as its trigger what to do
	// instead; %[1]s is the id.
	Instead string
	Spec    *component.Spec
}

// Component is one scheme's component of one engine context. Safe for concurrent
// use.
type Component struct {
	kind Kind
	hc   *engine.Context

	mu       sync.RWMutex
	ids      []string // declared, in declaration order
	declared bool
	services []component.Service
	started  []component.Service
}

var (
	_ component.Component = (*Component)(nil)
	_ component.Lifecycle = (*Component)(nil)
)

// New returns the component of kind bound to hc; it knows no id until the
// application declares them.
func New(hc *engine.Context, kind Kind) *Component { return &Component{kind: kind, hc: hc} }

// Declare records ids as declared in this context. Once anything is declared, an
// endpoint naming another id is refused when it is built. Call it before building
// the workflows that use the scheme's targets.
func (c *Component) Declare(ids ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.declared = true
	for _, id := range ids {
		if !slices.Contains(c.ids, id) {
			c.ids = append(c.ids, id)
		}
	}
}

// IDs returns the declared ids in declaration order.
func (c *Component) IDs() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Clone(c.ids)
}

// AddService makes s start with the component (before any trigger) and stop with
// it (after every trigger and target).
func (c *Component) AddService(s component.Service) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.services = append(c.services, s)
}

// Start starts the services in the order they were added; when one fails, those
// already started are stopped.
func (c *Component) Start(ctx context.Context) error {
	c.mu.Lock()
	services := slices.Clone(c.services)
	c.mu.Unlock()
	for _, s := range services {
		if err := s.Start(ctx); err != nil {
			_ = c.Stop(context.WithoutCancel(ctx))
			return err
		}
		c.mu.Lock()
		c.started = append(c.started, s)
		c.mu.Unlock()
	}
	return nil
}

// Stop stops the started services in reverse order; errors are joined.
func (c *Component) Stop(ctx context.Context) error {
	c.mu.Lock()
	started := c.started
	c.started = nil
	c.mu.Unlock()
	var errs []error
	for i := len(started) - 1; i >= 0; i-- {
		errs = append(errs, started[i].Stop(ctx))
	}
	return errors.Join(errs...)
}

// Spec returns the component's description.
func (c *Component) Spec() *component.Spec { return c.kind.Spec }

// CreateEndpoint accepts scheme://id; options are not supported.
func (c *Component) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	k := c.kind
	id := u.Host + u.Path
	if id == "" {
		return nil, fmt.Errorf("%s endpoint needs the %s id: %s://%s", k.Scheme, k.Noun, k.Scheme, k.Example)
	}
	if _, err := k.Spec.Parse(u); err != nil {
		return nil, err
	}
	c.mu.RLock()
	known, declared := slices.Contains(c.ids, id), c.declared
	ids := slices.Clone(c.ids)
	c.mu.RUnlock()
	if declared && !known {
		msg := fmt.Sprintf("no %s with id %q", k.Noun, id)
		if s := suggest.Closest(id, ids); s != "" {
			return nil, fmt.Errorf("%s; did you mean %q?", msg, s)
		}
		if len(ids) == 0 {
			return nil, fmt.Errorf("%s; declare it under %s", msg, k.Section)
		}
		quoted := make([]string, len(ids))
		for i, id := range ids {
			quoted[i] = fmt.Sprintf("%q", id)
		}
		return nil, fmt.Errorf("%s (%s %s)", msg, k.Section, strings.Join(quoted, ", "))
	}
	return &endpoint{c: c, id: id, raw: u.Raw}, nil
}

type endpoint struct {
	c   *Component
	id  string
	raw string
}

var _ component.TriggerChecker = (*endpoint)(nil)

func (e *endpoint) URI() string { return e.raw }

// CheckTrigger refuses scheme:// as the trigger of a workflow: only the declared
// workflow itself consumes from it, and the application does not check that
// trigger.
func (e *endpoint) CheckTrigger() error {
	k := e.c.kind
	return fmt.Errorf("this is the implicit trigger of the %s %s; a workflow cannot use it as its trigger (%s)", k.Noun, e.id, fmt.Sprintf(k.Instead, e.id))
}

func (e *endpoint) CreateProducer() (component.Producer, error) { return &producer{e: e}, nil }

// CreateConsumer is used by the declared workflow itself: calls arrive through
// engine.Context.Run (MCP servers, targets, agents), so there is nothing to
// listen on.
func (e *endpoint) CreateConsumer(component.Processor) (component.Consumer, error) {
	return component.NopService{}, nil
}

type producer struct {
	component.NopService
	e *endpoint
}

// Process runs the declared workflow on ex.
func (p *producer) Process(ctx context.Context, ex *exchange.Exchange) error {
	k, hc := p.e.c.kind, p.e.c.hc
	if hc == nil {
		return fmt.Errorf("%s://%s: the %s component has no engine context", k.Scheme, p.e.id, k.Noun)
	}
	wf, ok := hc.Workflow(p.e.id)
	if !ok || wf.Kind != k.Kind {
		return fmt.Errorf("%s://%s: no %s with this id", k.Scheme, p.e.id, k.Noun)
	}
	return hc.Run(ctx, p.e.id, ex)
}
