// Package direct implements direct://name: synchronous, in-process request/reply
// between workflows of one context. The caller's exchange runs through the consuming
// workflow's pipeline on the caller's goroutine, so the reply is simply the body
// afterwards and an error in the called workflow is the caller's error.
package direct

import (
	"context"
	"fmt"
	"sync"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// Component is the direct:// component. One instance per engine context; safe for
// concurrent use.
type Component struct {
	mu        sync.RWMutex
	consumers map[string]*consumer
}

var _ component.Component = (*Component)(nil)

// New returns an empty direct component.
func New() *Component { return &Component{consumers: map[string]*consumer{}} }

func (c *Component) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	name := u.Host + u.Path
	if name == "" {
		return nil, fmt.Errorf("direct endpoint needs a name: direct://orders")
	}
	if _, err := Spec.Parse(u); err != nil {
		return nil, err
	}
	return &endpoint{c: c, name: name, raw: u.Raw}, nil
}

// Names lists the names that currently have a consumer.
func (c *Component) Names() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]string, 0, len(c.consumers))
	for n := range c.consumers {
		out = append(out, n)
	}
	return out
}

type endpoint struct {
	c    *Component
	name string
	raw  string
}

func (e *endpoint) URI() string { return e.raw }

func (e *endpoint) CreateProducer() (component.Producer, error) { return &producer{e: e}, nil }

func (e *endpoint) CreateConsumer(p component.Processor) (component.Consumer, error) {
	return &consumer{e: e, p: p}, nil
}

type producer struct {
	component.NopService
	e *endpoint
}

func (p *producer) Process(ctx context.Context, ex *exchange.Exchange) error {
	p.e.c.mu.RLock()
	target, ok := p.e.c.consumers[p.e.name]
	p.e.c.mu.RUnlock()
	if !ok {
		return fmt.Errorf("direct://%s: no workflow is listening (define a workflow with trigger direct://%s, or check that it started)", p.e.name, p.e.name)
	}
	return target.p.Process(ctx, ex)
}

type consumer struct {
	e *endpoint
	p component.Processor
}

func (c *consumer) Start(context.Context) error {
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
func (c *consumer) Stop(context.Context) error {
	c.e.c.mu.Lock()
	defer c.e.c.mu.Unlock()
	if c.e.c.consumers[c.e.name] == c {
		delete(c.e.c.consumers, c.e.name)
	}
	return nil
}
