package engine

import (
	"context"

	"github.com/arvenza/helix/pkg/exchange"
)

// Tracer starts the spans of exchanges and steps (internal/tracing implements it with
// OpenTelemetry). A Context without one (the default) traces nothing and pays
// only a nil check per exchange and per step. Implementations must be safe for
// concurrent use; the returned function ends the span, recording the error (nil
// for success).
type Tracer interface {
	// StartExchange is called when an exchange enters the pipeline of workflow id
	// (kind "workflow", "tool", "agent" or "pipeline"; trigger is its trigger URI).
	StartExchange(ctx context.Context, kind, id, trigger string, ex *exchange.Exchange) (context.Context, func(error))
	// StartStep is called before step index of a workflow's pipeline runs; name
	// is the step's [StepName].
	StartStep(ctx context.Context, name string, index int, ex *exchange.Exchange) (context.Context, func(error))
}

// SetTracer makes t trace every exchange and top-level step of the context's
// workflows, and their nested steps when t is a [NestedTracer]; nil switches
// tracing off. Call it before Start.
func (c *Context) SetTracer(t Tracer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tracer = t
	c.setNestedTracer(t)
	for _, rw := range c.byID {
		setPipelineTracer(rw.pipeline, t)
	}
}

// Tracer returns the tracer set with SetTracer, or nil.
func (c *Context) Tracer() Tracer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tracer
}

func setPipelineTracer(p Processor, t Tracer) {
	if pl, ok := p.(*pipeline); ok {
		pl.tracer = t
	}
}

// tracedStep is RunStep inside the step's span.
func (p *pipeline) tracedStep(ctx context.Context, i int, step Processor, ex *exchange.Exchange) error {
	ctx, end := p.tracer.StartStep(ctx, StepName(p.raw[i]), i, ex)
	err := RunStep(ctx, step, ex)
	end(err)
	return err
}
