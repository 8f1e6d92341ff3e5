package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"

	"github.com/arvenza/helix/pkg/exchange"
)

// StepError records which step failed; errors.As finds it in a wrapped chain.
type StepError struct {
	Step string
	Err  error
}

func (e *StepError) Error() string {
	if e.Step == "" {
		return e.Err.Error()
	}
	return e.Step + ": " + e.Err.Error()
}

func (e *StepError) Unwrap() error { return e.Err }

// PanicError is a panic recovered from a step.
type PanicError struct {
	Value any
	Stack []byte
	// logged is set once the failure log has a line for this panic, so that the
	// workflows that called the panicking one through direct:// do not log it again.
	logged atomic.Bool
}

func (e *PanicError) Error() string { return fmt.Sprintf("step panicked: %v", e.Value) }

type pipeline struct {
	steps []Processor
	raw   []Processor
	eh    ErrorHandler
	// tracer is the workflow's Context's (tracer.go); nil traces nothing.
	tracer Tracer
	// hc is set on a nested step list (NestedPipeline), whose steps are traced
	// by hc's NestedTracer, if any.
	hc *Context
}

// BuildPipeline chains processors in order, each wrapped by the interceptors (first
// outermost). A step fails when it returns an error or leaves an exception on the
// exchange; a panic in a step becomes a *PanicError. The failure goes to eh (when not
// nil), which may retry, dead-letter or recover; otherwise the pipeline stops and the
// error is returned and set as the exchange's exception. An [Interrupt] never goes
// to eh.
func BuildPipeline(processors []Processor, interceptors []Interceptor, eh ErrorHandler) Processor {
	p := &pipeline{eh: eh}
	for _, raw := range processors {
		if raw == nil {
			continue
		}
		wrapped := Processor(safeProcessor{raw})
		for i := len(interceptors) - 1; i >= 0; i-- {
			wrapped = interceptors[i](wrapped)
		}
		p.steps = append(p.steps, wrapped)
		p.raw = append(p.raw, raw)
	}
	return p
}

func (p *pipeline) Process(ctx context.Context, ex *exchange.Exchange) error {
	if no, ok := p.eh.(NeedsOriginal); ok && no.NeedsOriginalBody() {
		ctx = withOriginalBody(ctx, ex.In().Body())
	}
	resume, ctx := takeResume(ctx)     // resume.go: the workflow's own pipeline only
	runner, ctx := takeStepRunner(ctx) // steprunner.go: likewise
	start := 0
	if resume != nil {
		if s := resume.Start(p.names(), ex); s > 0 && s < len(p.steps) {
			start = s
		}
	}
	for i := start; i < len(p.steps); i++ {
		if err := ctx.Err(); err != nil {
			ex.SetException(err)
			return err
		}
		if resume != nil {
			resume.Before(i, ex)
		}
		var err error
		if runner == nil {
			err = p.runTop(ctx, i, ex)
		} else {
			err = runner.RunTop(ctx, i, StepName(p.raw[i]), ex, func(ctx context.Context) error {
				return p.runTop(ctx, i, ex)
			})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// names are the names of the pipeline's steps.
func (p *pipeline) names() []string {
	names := make([]string, len(p.raw))
	for i, r := range p.raw {
		names[i] = StepName(r)
	}
	return names
}

// runTop runs step i and, when it fails, the error handler; a returned error
// (also set as the exchange's exception) ends the run.
func (p *pipeline) runTop(ctx context.Context, i int, ex *exchange.Exchange) error {
	step := p.steps[i]
	var err error
	switch {
	case p.hc != nil:
		err = p.nestedStep(ctx, i, step, ex)
	case p.tracer == nil:
		err = RunStep(ctx, step, ex)
	default:
		err = p.tracedStep(ctx, i, step, ex)
	}
	if err == nil {
		return nil
	}
	err = &StepError{Step: StepName(p.raw[i]), Err: err}
	// An interrupt is no failure to handle: it ends the run as it is (interrupt.go).
	if p.eh != nil && !IsInterrupt(err) {
		ex.SetException(err)
		err = p.eh.HandleError(ctx, ex, step, err)
		if err == nil {
			ex.SetException(nil)
			return nil
		}
	}
	ex.SetException(err)
	return err
}

// Unwrap lets composite steps see the processors of a pipeline (for lifecycle walks).
func (p *pipeline) Children() []Processor { return p.raw }

// RunStep runs one processor, turning a panic into *PanicError and an exception left
// on the exchange into the returned error.
func RunStep(ctx context.Context, p Processor, ex *exchange.Exchange) error {
	err := p.Process(ctx, ex)
	if err == nil {
		err = ex.Exception()
	}
	return err
}

type safeProcessor struct{ p Processor }

func (s safeProcessor) Process(ctx context.Context, ex *exchange.Exchange) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return s.p.Process(ctx, ex)
}

func (s safeProcessor) Name() string { return StepName(s.p) }

// IsPanic reports whether err came from a recovered panic.
func IsPanic(err error) bool {
	var pe *PanicError
	return errors.As(err, &pe)
}
