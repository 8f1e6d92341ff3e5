package engine

import (
	"context"

	"github.com/arvenza/helix/pkg/exchange"
)

// Resume lets whoever runs a workflow watch its top-level steps go by and start a
// later run at one of them: the MCP server resumes a call that stopped to ask its
// client (an [Interrupt]) at the step that asked, with the exchange as it was
// before that step, so that the steps before it do not run twice.
//
// Only the workflow's own (top-level) pipeline uses it: the first pipeline that
// runs with it in its context takes it out, so the pipelines of composite steps
// and of workflows called through direct:// never see it.
type Resume interface {
	// Start is called once, before the first step, with the names of the
	// top-level steps ([StepName]; a resumer checks that the step it wants is
	// still the one it saw): it returns the index of the step to start at (0, or
	// an index that is no step: the first) and may restore the exchange that step saw.
	Start(steps []string, ex *exchange.Exchange) int
	// Before is called before top-level step i runs, with the exchange it gets.
	Before(i int, ex *exchange.Exchange)
}

type resumeKey struct{}

// WithResume returns ctx carrying r for the next workflow run with it.
func WithResume(ctx context.Context, r Resume) context.Context {
	return context.WithValue(ctx, resumeKey{}, r)
}

// takeResume returns the Resume ctx carries, if any, and ctx without it.
func takeResume(ctx context.Context) (Resume, context.Context) {
	r, _ := ctx.Value(resumeKey{}).(Resume)
	if r == nil {
		return nil, ctx
	}
	return r, context.WithValue(ctx, resumeKey{}, nil)
}
