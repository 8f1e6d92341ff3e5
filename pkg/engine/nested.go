package engine

import (
	"context"

	"github.com/arvenza/helix/pkg/exchange"
)

// NestedTracer is implemented by a [Tracer] that also traces the steps of
// nested step lists: a choice's branches, a multicast's branches, a split's
// steps. It is optional, so a tracer without it (internal/tracing's spans)
// sees the top-level steps only, as before.
type NestedTracer interface {
	// StartNestedStep is called before a nested step runs; name is the step's
	// [StepName] ("helix.yaml:14:9 log"), whose position tells the step apart
	// from every other. The nested steps of one exchange may run at the same
	// time (a parallel multicast or split). The returned function ends the
	// step, with its error (nil for success).
	StartNestedStep(ctx context.Context, name string, ex *exchange.Exchange) (context.Context, func(error))
}

// setNestedTracer keeps t for the nested steps when it implements NestedTracer.
func (c *Context) setNestedTracer(t Tracer) {
	if nt, ok := t.(NestedTracer); ok {
		c.nested.Store(&nt)
		return
	}
	c.nested.Store(nil)
}

// RunNested is [RunStep] for a step of a nested step list of one of hc's
// workflows: when hc's tracer is a [NestedTracer] it traces the step. Without
// one (or with a nil hc) it costs a nil check.
func RunNested(ctx context.Context, hc *Context, p Processor, ex *exchange.Exchange) error {
	if hc != nil {
		if t := hc.nested.Load(); t != nil {
			ctx, end := (*t).StartNestedStep(ctx, StepName(p), ex)
			err := RunStep(ctx, p, ex)
			end(err)
			return err
		}
	}
	return RunStep(ctx, p, ex)
}

// NestedPipeline is [BuildPipeline] without interceptors and error handler
// for a nested step list of one of hc's workflows (a choice branch, a split's
// steps): each step runs as by [RunNested]. The workflow's error handler and
// interceptors apply to the composite step as a whole.
func NestedPipeline(hc *Context, processors []Processor) Processor {
	p := BuildPipeline(processors, nil, nil).(*pipeline)
	p.hc = hc
	return p
}

// nestedStep runs step i of a nested pipeline, traced by hc's NestedTracer
// under the raw step's name (the wrapped one's is the same, but reading it
// would go through the interceptors).
func (p *pipeline) nestedStep(ctx context.Context, i int, step Processor, ex *exchange.Exchange) error {
	if t := p.hc.nested.Load(); t != nil {
		ctx, end := (*t).StartNestedStep(ctx, StepName(p.raw[i]), ex)
		err := RunStep(ctx, step, ex)
		end(err)
		return err
	}
	return RunStep(ctx, step, ex)
}
