package engine

import (
	"context"

	"github.com/arvenza/helix/pkg/exchange"
)

// StepRunner runs the top-level steps of a workflow on behalf of whoever started
// it: the durable runtime checkpoints the exchange after each step and, when a
// run resumes after a crash, restores a step's recorded result instead of
// running the step again.
//
// Like [Resume], only the workflow's own (top-level) pipeline uses it: the first
// pipeline that runs with it takes it out of the context, so composite steps and
// workflows called through direct:// run their steps as usual (a composite step
// is one step to the runner).
type StepRunner interface {
	// RunTop runs top-level step i (name is its [StepName], which holds its
	// position in the file) on ex. run is the whole of the step: the step
	// itself and, when it fails, the workflow's error handler (its redeliveries
	// happen inside one call to run), leaving the exchange as the next step
	// gets it; its error ends the run. A runner may instead restore ex from a
	// result it recorded and return without calling run.
	RunTop(ctx context.Context, i int, name string, ex *exchange.Exchange, run func(context.Context) error) error
}

type stepRunnerKey struct{}

// WithStepRunner returns ctx carrying r for the next workflow run with it.
func WithStepRunner(ctx context.Context, r StepRunner) context.Context {
	return context.WithValue(ctx, stepRunnerKey{}, r)
}

// takeStepRunner returns the StepRunner ctx carries, if any, and ctx without it.
func takeStepRunner(ctx context.Context) (StepRunner, context.Context) {
	r, _ := ctx.Value(stepRunnerKey{}).(StepRunner)
	if r == nil {
		return nil, ctx
	}
	return r, context.WithValue(ctx, stepRunnerKey{}, nil)
}
