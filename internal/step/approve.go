package step

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/arvenza/helix/internal/ask"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// Headers the approve step sets.
const (
	// HeaderApproval is how an approve step ended: approved, rejected or timeout.
	HeaderApproval = "HelixApproval"
	// HeaderApprovalBy names who decided (a principal, "callback link", "timer").
	HeaderApprovalBy = "HelixApprovalBy"
	// HeaderApprovalURL is the callback URL of the approval, set before the
	// step's notify: steps run.
	HeaderApprovalURL = "HelixApprovalUrl"
)

func init() {
	Define(Kind{
		Name: "approve",
		Description: "Waits until a person approves or rejects, then goes on (or fails on a rejection or timeout, by default). " +
			"The person answers through MCP elicitation when an MCP client called the workflow, through the step's callback URL (a signed link good for one answer: header HelixApprovalUrl, which the notify: steps can send to a chat), " +
			"or with `helix runs approve`. Header HelixApproval is approved, rejected or timeout, HelixApprovalBy who decided. " +
			"In a durable workflow the run parks: it holds no goroutine and survives restarts until the answer comes; otherwise the step waits in memory.",
		Shape: config.Shape{Type: config.TypeObject, What: "an approve step", Short: "message", Keys: []config.Key{
			{Name: "message", Required: true, Shape: config.Shape{Type: config.TypeString,
				Description: "What the person is asked; ${body.x}, ${header.X} and ${env:NAME} placeholders are resolved."}},
			questionIDKey(),
			{Name: "timeout", Shape: config.Shape{Type: config.TypeDuration,
				Description: "How long to wait for the answer; absent: until it comes."}},
			onOutcomeKey("on_reject", "a rejection"),
			onOutcomeKey("on_timeout", "the timeout"),
			notifyKey(HeaderApprovalURL),
		}},
		Build: buildApprove,
	})
}

// approveStep waits for a person's yes or no:
//
//	steps:
//	  - approve:
//	      message: "Refund ${body.amount} EUR to ${body.customer}?"
//	      timeout: 48h
//	      on_timeout: continue
//	      notify:
//	        - target: slack://ops?text=Approve: ${header.HelixApprovalUrl}
type approveStep struct {
	name                string
	hc                  *engine.Context
	id                  string
	message             string
	timeout             time.Duration
	rejectGo, timeoutGo bool
	notify              engine.Processor
}

var _ ask.Asker = (*approveStep)(nil)

func buildApprove(bc *BuildContext, s config.StepConfig, d *config.Decoder, v *config.Values) (engine.Processor, error) {
	st := &approveStep{name: Name(s), hc: bc.HC, message: v.String("message"), timeout: v.Duration("timeout"),
		rejectGo: continues(v, "on_reject"), timeoutGo: continues(v, "on_timeout")}
	st.id = questionID(d, v, st.name)
	CheckPlaceholders(d, v.NodeOf("message"), v.PathOf("message"), st.message)
	if v.Has("timeout") && st.timeout <= 0 {
		d.Errorf(v.NodeOf("timeout"), v.PathOf("timeout"), "timeout must be a positive duration, not %s", st.timeout).Hint = "remove timeout: to wait until the answer comes"
	}
	st.notify = buildNotify(bc, v)
	durable.MarkWaiting(bc.HC)
	return st, d.Err()
}

func (a *approveStep) Name() string     { return a.name }
func (a *approveStep) AsksClient() bool { return true }

func (a *approveStep) Process(ctx context.Context, ex *exchange.Exchange) error {
	if r, ok := durable.ResolutionFor(ctx, a.id); ok {
		return a.apply(ex, r)
	}
	msg, err := uri.Expand(a.message, ex)
	if err != nil {
		return fmt.Errorf("approve: message: %w", err)
	}
	wt := durable.Wait{Kind: durable.WaitApprove, Key: a.id, Message: msg}
	if a.timeout > 0 {
		wt.Due = time.Now().Add(a.timeout)
	}
	waits := waitsOf(a.hc)
	if runID, ok := durable.RunID(ctx); ok {
		url := waits.URL(runID, wt)
		if err := runNotify(ctx, a.notify, ex, HeaderApprovalURL, url); err != nil {
			return fmt.Errorf("approve: %w", err)
		}
		logWaitURL(a.hc, a.notify, a.name, runID, url)
		return durable.Park(wt)
	}
	client := ask.FromContext(ctx)
	if waits == nil && client == nil {
		return errors.New("approve: nobody can answer: the workflow is not durable, no MCP client called it, and the app has no callback route; " +
			"call it as an MCP tool, or make the workflow durable (durable: true) so that `helix runs approve` can answer")
	}
	r, err := a.waitInMemory(ctx, ex, waits, client, wt)
	if err != nil {
		return err
	}
	return a.apply(ex, r)
}

// waitInMemory waits for the first answer of the callback URL and the MCP
// client's user, holding the goroutine (the run is not durable).
func (a *approveStep) waitInMemory(ctx context.Context, ex *exchange.Exchange, waits *durable.Waits, client ask.Client, wt durable.Wait) (durable.Resolution, error) {
	var held *durable.Held
	if waits == nil { // the MCP client alone: its elicitation is the wait
		var cancel context.CancelFunc = func() {}
		if !wt.Due.IsZero() {
			ctx, cancel = context.WithDeadline(ctx, wt.Due)
		}
		defer cancel()
		r, err := a.elicit(ctx, client, wt)
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			return durable.Resolution{Kind: durable.ResolvedTimeout, By: "timer"}, nil
		}
		return r, err
	}
	held = waits.Hold(wt)
	defer held.Release()
	if err := runNotify(ctx, a.notify, ex, HeaderApprovalURL, held.URL); err != nil {
		return durable.Resolution{}, fmt.Errorf("approve: %w", err)
	}
	logWaitURL(a.hc, a.notify, a.name, "", held.URL)
	wctx, stop := context.WithCancel(ctx)
	defer stop() // ends the elicitation when the callback answered first
	interrupted := make(chan error, 1)
	if client != nil {
		go func() {
			r, err := a.elicit(wctx, client, wt)
			switch {
			case err == nil:
				held.Resolve(r)
			case engine.IsInterrupt(err):
				// An MCP 2026-07-28 client answers by calling again: the run
				// stops here as elicit: does. Any other failure of the client
				// leaves the callback URL to answer.
				interrupted <- err
				stop()
			}
		}()
	}
	r, err := held.Wait(wctx)
	if err != nil {
		select {
		case ierr := <-interrupted:
			return r, ierr
		default:
		}
		return r, fmt.Errorf("approve: %w", err)
	}
	return r, nil
}

// elicit asks the MCP client's user (a form without fields: accept approves,
// decline or cancel rejects).
func (a *approveStep) elicit(ctx context.Context, c ask.Client, wt durable.Wait) (durable.Resolution, error) {
	ans, err := c.Elicit(ctx, &ask.Elicitation{ID: a.id, Message: wt.Message, Schema: map[string]any{"type": "object", "properties": map[string]any{}}})
	if err != nil {
		return durable.Resolution{}, err
	}
	if ans.Action == ask.ActionAccept {
		return durable.Resolution{Kind: durable.ResolvedApproved, By: "mcp client"}, nil
	}
	return durable.Resolution{Kind: durable.ResolvedRejected, By: "mcp client"}, nil
}

// apply ends the step as the resolution says.
func (a *approveStep) apply(ex *exchange.Exchange, r durable.Resolution) error {
	in := ex.In()
	in.SetHeader(HeaderApproval, r.Kind)
	if r.By != "" {
		in.SetHeader(HeaderApprovalBy, r.By)
	}
	switch r.Kind {
	case durable.ResolvedApproved:
		return nil
	case durable.ResolvedRejected:
		if a.rejectGo {
			return nil
		}
		return fmt.Errorf("approve: rejected by %s (%s); set on_reject: continue to go on and check header %s", orSomeone(r.By), a.id, HeaderApproval)
	case durable.ResolvedTimeout:
		if a.timeoutGo {
			return nil
		}
		return fmt.Errorf("approve: nobody answered within %s (%s); set on_timeout: continue to go on and check header %s", a.timeout, a.id, HeaderApproval)
	}
	return fmt.Errorf("approve: the wait ended with %q, which is no approval or rejection", r.Kind)
}

func orSomeone(by string) string {
	if by == "" {
		return "someone"
	}
	return by
}
