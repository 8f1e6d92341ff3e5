package engine

import (
	"context"

	"github.com/arvenza/helix/pkg/exchange"
)

// DurableRunner runs the exchanges of durable workflows ([Workflow].Durable):
// each run is checkpointed step by step so that it survives a crash. The engine
// hands it every exchange a durable workflow gets from outside (its trigger,
// Run, RunUntilStop); the runner runs the workflow back through the engine
// with a [StepRunner] in the context, and such a run is not handed over again.
// A workflow called through direct:// from another runs as a step of that one.
type DurableRunner interface {
	// RunDurable runs ex through the workflow as a durable run and leaves on ex
	// the result the run ended with (its failure as the exception).
	RunDurable(ctx context.Context, workflowID string, ex *exchange.Exchange) error
}

// SetDurableRunner makes r the runner of the context's durable workflows; nil
// runs them like any other.
func (c *Context) SetDurableRunner(r DurableRunner) {
	c.mu.Lock()
	c.durable = r
	c.mu.Unlock()
}

// durableFor returns the runner to hand ex of rw over to, or nil to run it here.
func (c *Context) durableFor(ctx context.Context, rw *runtimeWorkflow, outermost bool) DurableRunner {
	if !rw.wf.Durable || !outermost {
		return nil
	}
	if r, _ := ctx.Value(stepRunnerKey{}).(StepRunner); r != nil {
		return nil // the durable runner's own run
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.durable
}
