package engine

// direct:// lives here, not in a component package: see DirectComponent.

import (
	"context"
	"fmt"
	"sync"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// DirectComponent is the direct:// component. It is built into the engine because
// calling another workflow in-process is the engine's own business: every context
// has one (see NewContext), as the spec's Go programs expect. internal/component/direct
// names it for registration and docs. Safe for concurrent use.
type DirectComponent struct {
	mu        sync.RWMutex
	consumers map[string]*directConsumer
}

var _ component.Component = (*DirectComponent)(nil)

// NewDirect returns an empty direct component.
func NewDirect() *DirectComponent {
	return &DirectComponent{consumers: map[string]*directConsumer{}}
}

func (c *DirectComponent) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	name := u.Host + u.Path
	if name == "" {
		return nil, fmt.Errorf("direct endpoint needs a name: direct://orders")
	}
	if _, err := DirectSpec.Parse(u); err != nil {
		return nil, err
	}
	return &directEndpoint{c: c, name: name, raw: u.Raw}, nil
}

// Names lists the names that currently have a consumer.
func (c *DirectComponent) Names() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]string, 0, len(c.consumers))
	for n := range c.consumers {
		out = append(out, n)
	}
	return out
}

type directEndpoint struct {
	c    *DirectComponent
	name string
	raw  string
}

func (e *directEndpoint) URI() string { return e.raw }

func (e *directEndpoint) CreateProducer() (component.Producer, error) {
	return &directProducer{e: e}, nil
}

func (e *directEndpoint) CreateConsumer(p component.Processor) (component.Consumer, error) {
	return &directConsumer{e: e, p: p}, nil
}

type directProducer struct {
	component.NopService
	e *directEndpoint
}

func (p *directProducer) Process(ctx context.Context, ex *exchange.Exchange) error {
	p.e.c.mu.RLock()
	target, ok := p.e.c.consumers[p.e.name]
	p.e.c.mu.RUnlock()
	if !ok {
		return fmt.Errorf("direct://%s: no workflow is listening (define a workflow with trigger direct://%s, or check that it started)", p.e.name, p.e.name)
	}
	return target.p.Process(ctx, ex)
}

type directConsumer struct {
	e *directEndpoint
	p component.Processor
}

func (c *directConsumer) Start(context.Context) error {
	c.e.c.mu.Lock()
	defer c.e.c.mu.Unlock()
	if _, taken := c.e.c.consumers[c.e.name]; taken {
		return fmt.Errorf("direct://%s already has a consumer: two workflows cannot share one direct name", c.e.name)
	}
	c.e.c.consumers[c.e.name] = c
	return nil
}

// Stop unregisters the name, but only when this consumer holds it: a consumer whose
// Start failed because the name was taken must not remove the other one.
func (c *directConsumer) Stop(context.Context) error {
	c.e.c.mu.Lock()
	defer c.e.c.mu.Unlock()
	if c.e.c.consumers[c.e.name] == c {
		delete(c.e.c.consumers, c.e.name)
	}
	return nil
}

// DirectSpec is the direct:// component's description.
var DirectSpec = &component.Spec{
	Scheme:    "direct",
	Summary:   "synchronous in-process call of another workflow",
	Direction: component.Both,
	Syntax:    "direct://name",
	Description: `As a trigger, direct://name makes a workflow callable by name; as a target it
calls that workflow on the caller's goroutine with the caller's exchange, so the reply is
simply the body afterwards and an error in the called workflow is the caller's error.
Headers and variables travel with the exchange both ways. Two workflows cannot share one
name, and calling a name no workflow listens on is an error.`,
	Path: []component.PathPart{
		{Name: "name", Required: true, Description: "the name the workflow is called by"},
	},
	Examples: []component.Example{
		{URI: "direct://greet", Description: "trigger of a workflow called greet, or a target calling it"},
	},
	Since: "0.1",
}

// Spec returns the component's description.
func (c *DirectComponent) Spec() *component.Spec { return DirectSpec }
