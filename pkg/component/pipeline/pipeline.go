// Package pipeline implements pipeline://id: the implicit trigger of the RAG
// pipelines (entries of `pipelines:`) and the target that queries one on the
// caller's exchange.
//
// A pipeline is an engine workflow (Kind pipeline) whose one processor queries it
// (pkg/app builds it with pkg/rag/pipeline), so a target pipeline://id runs that
// workflow with the caller's exchange: the body is the query (text, or
// {query, top_k, filter}) and the results become the body. The application
// declares the pipeline ids while building ([Component.Declare]), so that a target
// naming no pipeline is a configuration error with a did-you-mean, and hands over
// the running pipelines ([Component.AddService]), which start (opening their stores
// and ingesting in the background) before any trigger and stop after them.
package pipeline

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
const Scheme = "pipeline"

// Component is the pipeline:// component of one engine context. Safe for concurrent use.
type Component struct {
	hc *engine.Context

	mu       sync.RWMutex
	ids      []string // declared pipelines, in declaration order
	declared bool
	services []component.Service
	started  []component.Service
}

var (
	_ component.Component = (*Component)(nil)
	_ component.Lifecycle = (*Component)(nil)
)

// New returns the pipeline component bound to hc; it knows no pipeline until the
// application declares them.
func New(hc *engine.Context) *Component { return &Component{hc: hc} }

// Declare records ids as pipelines of this context. Once anything is declared, an
// endpoint naming another id is refused when it is built. Call it before building
// the workflows that use pipeline:// targets.
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

// IDs returns the declared pipeline ids in declaration order.
func (c *Component) IDs() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Clone(c.ids)
}

// AddService makes s start with the component (before any trigger) and stop with
// it (after every trigger and target): the pipelines themselves.
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

// CreateEndpoint accepts pipeline://id; options are not supported.
func (c *Component) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	id := u.Host + u.Path
	if id == "" {
		return nil, errors.New("pipeline endpoint needs the pipeline id: pipeline://doc-search")
	}
	if _, err := Spec.Parse(u); err != nil {
		return nil, err
	}
	c.mu.RLock()
	known, declared := slices.Contains(c.ids, id), c.declared
	ids := slices.Clone(c.ids)
	c.mu.RUnlock()
	if declared && !known {
		msg := fmt.Sprintf("no pipeline with id %q", id)
		if s := suggest.Closest(id, ids); s != "" {
			return nil, fmt.Errorf("%s; did you mean %q?", msg, s)
		}
		if len(ids) == 0 {
			return nil, fmt.Errorf("%s; declare it under pipelines:", msg)
		}
		return nil, fmt.Errorf("%s (pipelines: %s)", msg, quoted(ids))
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

// CheckTrigger refuses pipeline:// as the trigger of a workflow: only the
// pipeline's own workflow consumes from it.
func (e *endpoint) CheckTrigger() error {
	return fmt.Errorf("this is the implicit trigger of the pipeline %s; a workflow cannot use it as its trigger (query the pipeline with target: pipeline://%s or a rag-retrieve step, or feed it with a rag-ingest step)", e.id, e.id)
}

func (e *endpoint) CreateProducer() (component.Producer, error) { return &producer{e: e}, nil }

// CreateConsumer is used by the pipeline's own workflow: queries arrive through
// engine.Context.Run (MCP servers, pipeline:// targets, agents), so there is
// nothing to listen on.
func (e *endpoint) CreateConsumer(component.Processor) (component.Consumer, error) {
	return component.NopService{}, nil
}

type producer struct {
	component.NopService
	e *endpoint
}

// Process runs the pipeline's workflow on ex: the body is the query, the results
// become the body.
func (p *producer) Process(ctx context.Context, ex *exchange.Exchange) error {
	hc := p.e.c.hc
	if hc == nil {
		return fmt.Errorf("pipeline://%s: the pipeline component has no engine context", p.e.id)
	}
	wf, ok := hc.Workflow(p.e.id)
	if !ok || wf.Kind != engine.KindPipeline {
		return fmt.Errorf("pipeline://%s: no pipeline with this id", p.e.id)
	}
	return hc.Run(ctx, p.e.id, ex)
}
