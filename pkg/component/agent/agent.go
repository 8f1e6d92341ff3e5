// Package agent implements agent://id: the implicit trigger of agents (entries of
// `agents:` without a trigger of their own) and the target that runs an agent on
// the caller's exchange.
//
// An agent is an engine workflow whose one processor runs it (pkg/app builds it
// with pkg/agent/setup), so a target agent://id simply runs that workflow with the
// caller's exchange, the way tool://id runs a tool: the run is counted with the
// agent's workflow and the caller sees its answer as the body. The application
// declares the agent ids while building ([Component.Declare]), so that a target
// naming no agent is a configuration error with a did-you-mean, and hands over the
// services the agents need running (their MCP servers), which start and stop with
// the component.
package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/arvenza/helix/internal/suggest"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// Scheme is the component's scheme.
const Scheme = "agent"

// Component is the agent:// component of one engine context. Safe for concurrent use.
type Component struct {
	hc *engine.Context

	mu       sync.RWMutex
	ids      []string // declared agents, in declaration order
	declared bool
	services []component.Service
	started  []component.Service
}

var (
	_ component.Component = (*Component)(nil)
	_ component.Lifecycle = (*Component)(nil)
)

// New returns the agent component bound to hc; it knows no agent until the
// application declares them.
func New(hc *engine.Context) *Component { return &Component{hc: hc} }

// Declare records ids as agents of this context. Once anything is declared, an
// endpoint naming another id is refused when it is built. Call it before building
// the workflows that use agent:// targets.
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

// IDs returns the declared agent ids in declaration order.
func (c *Component) IDs() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Clone(c.ids)
}

// AddService makes s start with the component (before any trigger) and stop with
// it (after every trigger and target): the MCP servers of the agents.
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

// CreateEndpoint accepts agent://id; options are not supported.
func (c *Component) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	id := u.Host + u.Path
	if id == "" {
		return nil, errors.New("agent endpoint needs the agent id: agent://assistant")
	}
	if _, err := Spec.Parse(u); err != nil {
		return nil, err
	}
	c.mu.RLock()
	known, declared := slices.Contains(c.ids, id), c.declared
	ids := slices.Clone(c.ids)
	c.mu.RUnlock()
	if declared && !known {
		msg := fmt.Sprintf("no agent with id %q", id)
		if s := suggest.Closest(id, ids); s != "" {
			return nil, fmt.Errorf("%s; did you mean %q?", msg, s)
		}
		if len(ids) == 0 {
			return nil, fmt.Errorf("%s; declare it under agents:", msg)
		}
		return nil, fmt.Errorf("%s (agents: %s)", msg, quoted(ids))
	}
	return &endpoint{c: c, id: id, raw: u.Raw}, nil
}

func quoted(ids []string) string {
	out := ""
	for i, id := range ids {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%q", id)
	}
	return out
}

type endpoint struct {
	c   *Component
	id  string
	raw string
}

var _ component.TriggerChecker = (*endpoint)(nil)

func (e *endpoint) URI() string { return e.raw }

// CheckTrigger refuses agent:// as the trigger of a workflow: only an agent's own
// workflow consumes from it, and the application does not check that trigger.
func (e *endpoint) CheckTrigger() error {
	return fmt.Errorf("this is the implicit trigger of the agent %s; a workflow cannot use it as its trigger (call the agent with target: agent://%s, or give this workflow a direct:// trigger)", e.id, e.id)
}

func (e *endpoint) CreateProducer() (component.Producer, error) { return &producer{e: e}, nil }

// CreateConsumer is used by the agent's own workflow: calls arrive through
// engine.Context.Run (MCP servers, agent:// targets, other agents), so there is
// nothing to listen on.
func (e *endpoint) CreateConsumer(component.Processor) (component.Consumer, error) {
	return component.NopService{}, nil
}

type producer struct {
	component.NopService
	e *endpoint
}

// Process runs the agent's workflow on ex: the body is the message, the answer
// becomes the body.
func (p *producer) Process(ctx context.Context, ex *exchange.Exchange) error {
	hc := p.e.c.hc
	if hc == nil {
		return fmt.Errorf("agent://%s: the agent component has no engine context", p.e.id)
	}
	wf, ok := hc.Workflow(p.e.id)
	if !ok || wf.Kind != engine.KindAgent {
		return fmt.Errorf("agent://%s: no agent with this id", p.e.id)
	}
	return hc.Run(ctx, p.e.id, ex)
}
