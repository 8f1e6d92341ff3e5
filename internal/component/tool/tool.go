// Package tool implements tool://id, the trigger of workflows declared under `tools:`.
//
// A tool has no inbound transport of its own: MCP servers invoke it with
// engine.Context.Run. As a target, tool://id validates (and defaults) the arguments
// exactly as an MCP call would, then runs the tool on the caller's exchange, which lets
// one workflow chain into a tool the way direct:// chains workflows. The in-process
// hand-over is direct://'s: the tool's consumer registers under the tool id.
package tool

import (
	"context"
	"fmt"

	"github.com/arvenza/helix/internal/component/direct"
	tools "github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// Component is the tool:// component of one engine context. Safe for concurrent use.
type Component struct {
	hc     *engine.Context
	direct *direct.Component
}

var _ component.Component = (*Component)(nil)

// NewComponent returns the tool component bound to hc.
func NewComponent(hc *engine.Context) *Component {
	return &Component{hc: hc, direct: direct.New()}
}

// CreateEndpoint accepts tool://id; options are not supported.
func (c *Component) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	id := u.Host + u.Path
	if id == "" {
		return nil, fmt.Errorf("tool endpoint needs the tool id: tool://search")
	}
	if _, err := Spec.Parse(u); err != nil {
		return nil, err
	}
	inner, err := c.direct.CreateEndpoint(u)
	if err != nil {
		return nil, err
	}
	return &endpoint{c: c, id: id, raw: u.Raw, inner: inner}, nil
}

type endpoint struct {
	c     *Component
	id    string
	raw   string
	inner component.Endpoint
}

func (e *endpoint) URI() string { return e.raw }

func (e *endpoint) CreateProducer() (component.Producer, error) {
	inner, err := e.inner.CreateProducer()
	if err != nil {
		return nil, err
	}
	return &producer{e: e, inner: inner}, nil
}

func (e *endpoint) CreateConsumer(p component.Processor) (component.Consumer, error) {
	return e.inner.CreateConsumer(p)
}

type producer struct {
	component.NopService
	e     *endpoint
	inner component.Producer
}

// Process runs the tool's workflow on ex, validating (and defaulting) the arguments
// first exactly as an MCP call would.
func (p *producer) Process(ctx context.Context, ex *exchange.Exchange) error {
	var wf *engine.Workflow
	if hc := p.e.c.hc; hc != nil {
		w, ok := hc.Workflow(p.e.id)
		if !ok {
			return fmt.Errorf("tool://%s: no tool with this id", p.e.id)
		}
		wf = w
	}
	if wf != nil && wf.ValidateInput != nil {
		args, err := tools.BodyArguments(ex.In().Body())
		if err != nil {
			return fmt.Errorf("tool://%s: %w", p.e.id, err)
		}
		args, err = wf.ValidateInput(args)
		if err != nil {
			return fmt.Errorf("tool://%s: invalid arguments: %w", p.e.id, err)
		}
		ex.In().SetBody(args)
	}
	if err := p.inner.Process(ctx, ex); err != nil {
		return fmt.Errorf("tool://%s: %w", p.e.id, err)
	}
	return nil
}
