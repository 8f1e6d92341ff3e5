package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/arvenza/helix/pkg/exchange"
)

// ErrorHandlerOptions configure [NewErrorHandler]. The zero value means: no
// redelivery, no dead letter (the error simply ends the exchange).
type ErrorHandlerOptions struct {
	// MaximumRedeliveries is how many times the failed step is run again before giving
	// up (0 = never). The first run does not count: 3 means up to 4 runs in all.
	// -1 means forever, as in Camel: until the step succeeds, the exchange is
	// cancelled or the engine stops.
	MaximumRedeliveries int
	// RedeliveryDelay is the wait before the first redelivery.
	RedeliveryDelay time.Duration
	// BackoffMultiplier multiplies the delay after each redelivery; 0 or 1 keeps it
	// constant (delay, delay, …); 2 doubles it (delay, 2·delay, 4·delay …).
	BackoffMultiplier float64
	// MaximumRedeliveryDelay caps the delay; 0 means no cap.
	MaximumRedeliveryDelay time.Duration
	// DeadLetterURI receives a copy of the exchange once redeliveries are exhausted;
	// "" means none.
	DeadLetterURI string
}

// Validate reports options that make no sense, so config loading can point at them.
func (o ErrorHandlerOptions) Validate() error {
	var errs []error
	if o.MaximumRedeliveries < -1 {
		errs = append(errs, fmt.Errorf("maximum-redeliveries must be -1 (forever), 0 or more, got %d", o.MaximumRedeliveries))
	}
	if o.RedeliveryDelay < 0 {
		errs = append(errs, fmt.Errorf("redelivery-delay must not be negative, got %s", o.RedeliveryDelay))
	}
	if o.BackoffMultiplier < 0 {
		errs = append(errs, fmt.Errorf("backoff-multiplier must be 0 or more, got %g", o.BackoffMultiplier))
	}
	if o.MaximumRedeliveryDelay < 0 {
		errs = append(errs, fmt.Errorf("maximum-redelivery-delay must not be negative, got %s", o.MaximumRedeliveryDelay))
	}
	return errors.Join(errs...)
}

// Delay returns the wait before redelivery attempt (1-based):
// RedeliveryDelay·BackoffMultiplier^(attempt-1), capped by MaximumRedeliveryDelay.
func (o ErrorHandlerOptions) Delay(attempt int) time.Duration {
	d := float64(max(o.RedeliveryDelay, 0))
	if o.BackoffMultiplier > 1 {
		for i := 1; i < attempt; i++ {
			d *= o.BackoffMultiplier
			// Stop growing once past the cap (or past what a Duration can hold) so a
			// large attempt count cannot overflow.
			if (o.MaximumRedeliveryDelay > 0 && d >= float64(o.MaximumRedeliveryDelay)) || d >= float64(1<<62) {
				break
			}
		}
	}
	if o.MaximumRedeliveryDelay > 0 && d > float64(o.MaximumRedeliveryDelay) {
		return o.MaximumRedeliveryDelay
	}
	if d >= float64(1<<62) {
		return time.Duration(1 << 62)
	}
	return time.Duration(d)
}

// NeedsOriginal is implemented by error handlers that need the body as it was when
// the exchange entered the workflow (a dead letter channel sends that body). The
// pipeline only records it for such handlers, because it costs a deep copy per exchange.
type NeedsOriginal interface {
	NeedsOriginalBody() bool
}

type originalBodyKey struct{}

// originalBody is boxed so that a nil body can be told apart from "not recorded".
type originalBody struct{ body any }

// withOriginalBody records body as the original body for the pipeline running with
// the returned context. A nested workflow (direct://) records its own, scoped to its
// own pipeline call, so each error handler sees the body its workflow started with.
func withOriginalBody(ctx context.Context, body any) context.Context {
	return context.WithValue(ctx, originalBodyKey{}, originalBody{body: exchange.DeepCopy(body)})
}

// OriginalBody returns the body the exchange had when it entered the current workflow,
// when the workflow's error handler asked for it (see [NeedsOriginal]).
func OriginalBody(ctx context.Context) (any, bool) {
	ob, ok := ctx.Value(originalBodyKey{}).(originalBody)
	return ob.body, ok
}

type workflowIDKey struct{}

// withWorkflowID records which workflow's pipeline is running; the dead letter channel
// reports it as HelixFailedWorkflow (ex.FromWorkflow() would name the outermost caller
// when the failure happens in a workflow reached through direct://). id is a string,
// passed boxed so that a run does not box it again.
func withWorkflowID(ctx context.Context, id any) context.Context {
	return context.WithValue(ctx, workflowIDKey{}, id)
}

// WorkflowID returns the id of the workflow whose pipeline is running with ctx, or "".
func WorkflowID(ctx context.Context) string {
	id, _ := ctx.Value(workflowIDKey{}).(string)
	return id
}

// defaultErrorHandler implements Camel's redelivery policy and dead letter channel.
//
// When a step fails it is run again, on the same exchange, up to MaximumRedeliveries
// times (-1: until it succeeds), waiting Delay(k) before the k-th redelivery (the wait ends early when the
// exchange's context or the engine's run context is cancelled) and setting header
// HelixRedeliveryCount to k. A fail() in Starlang, an error returned by a component
// and a recovered panic are all failures it redelivers.
//
// When redeliveries are exhausted and DeadLetterURI is set, a copy of the exchange is
// sent InOnly to it, carrying the ORIGINAL body (as it entered the workflow) and headers
// HelixExceptionMessage, HelixFailedStep, HelixFailedWorkflow and HelixRedeliveryCount;
// the copy has no exception set, so a dead letter workflow runs normally.
//
// Unlike Camel's dead letter channel (which marks the failure handled), the error
// still propagates to the caller after dead-lettering: an MCP tool call still returns
// isError: true (spec §10.1), an HTTP caller still gets an error. The dead letter
// channel is a record of the failure, not a recovery.
//
// Safe for concurrent use; one handler serves every exchange of its workflow.
type defaultErrorHandler struct {
	hc   *Context
	opts ErrorHandlerOptions
}

var (
	_ ErrorHandler  = (*defaultErrorHandler)(nil)
	_ NeedsOriginal = (*defaultErrorHandler)(nil)
)

// NewErrorHandler returns a [defaultErrorHandler] sending dead letters through hc.
// MaximumRedeliveries below -1 is treated as 0; call opts.Validate to report it.
func NewErrorHandler(hc *Context, opts ErrorHandlerOptions) ErrorHandler {
	if opts.MaximumRedeliveries < -1 {
		opts.MaximumRedeliveries = 0
	}
	return &defaultErrorHandler{hc: hc, opts: opts}
}

// Options returns the handler's options.
func (h *defaultErrorHandler) Options() ErrorHandlerOptions { return h.opts }

// NeedsOriginalBody reports whether the pipeline must record the original body.
func (h *defaultErrorHandler) NeedsOriginalBody() bool { return h.opts.DeadLetterURI != "" }

// HandleError redelivers failed, then dead-letters; it returns nil when a redelivery
// succeeded, else the last error (joined with the dead letter error when sending the
// dead letter failed too).
func (h *defaultErrorHandler) HandleError(ctx context.Context, ex *exchange.Exchange, failed Processor, err error) error {
	step := StepName(failed)
	var se *StepError
	if errors.As(err, &se) {
		step = se.Step
	}
	attempts := 0
	forever := h.opts.MaximumRedeliveries == -1
	for attempt := 1; forever || attempt <= h.opts.MaximumRedeliveries; attempt++ {
		if ctx.Err() != nil {
			break // the caller is gone: another run could not be delivered anyway
		}
		if !h.wait(ctx, h.opts.Delay(attempt)) {
			break
		}
		attempts = attempt
		ex.SetException(nil)
		ex.In().SetHeader(exchange.HeaderRedeliveryCount, attempt)
		h.hc.Logger().Debug("redelivering", "workflow", WorkflowID(ctx), "step", step, "exchange", ex.ID(), "attempt", attempt, "error", err)
		rerr := RunStep(ctx, failed, ex)
		if rerr == nil {
			return nil
		}
		err = &StepError{Step: step, Err: rerr}
	}
	if h.opts.DeadLetterURI == "" {
		return err
	}
	if dlErr := h.deadLetter(ctx, ex, step, attempts, err); dlErr != nil {
		h.hc.Logger().Error("dead letter channel failed", "uri", h.hc.ShownURI(h.opts.DeadLetterURI), "workflow", WorkflowID(ctx), "exchange", ex.ID(), "error", dlErr)
		return errors.Join(err, fmt.Errorf("dead letter %s: %w", h.hc.ShownURI(h.opts.DeadLetterURI), dlErr))
	}
	return err
}

// wait sleeps d unless the exchange or the engine is cancelled first; it reports
// whether the full delay passed.
func (h *defaultErrorHandler) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-h.hc.RunContext().Done():
		return false
	}
}

func (h *defaultErrorHandler) deadLetter(ctx context.Context, ex *exchange.Exchange, step string, attempts int, err error) error {
	dl := ex.Copy()
	dl.SetPattern(exchange.InOnly)
	dl.SetException(nil)
	if body, ok := OriginalBody(ctx); ok {
		dl.In().SetBody(exchange.DeepCopy(body))
	}
	wf := WorkflowID(ctx)
	if wf == "" {
		wf = ex.FromWorkflow()
	}
	msg := dl.In()
	msg.SetHeader(exchange.HeaderExceptionMessage, err.Error())
	msg.SetHeader(exchange.HeaderFailedStep, step)
	msg.SetHeader(exchange.HeaderFailedWorkflow, wf)
	msg.SetHeader(exchange.HeaderRedeliveryCount, attempts)
	// The failure must be recorded even when the caller has gone away (an MCP client
	// that hung up): detach from the exchange's cancellation, but still give up when
	// the engine stops.
	dctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(h.hc.RunContext(), cancel)
	defer stop()
	return h.hc.Send(dctx, h.opts.DeadLetterURI, dl)
}
