package engine

import (
	"context"

	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// Target is the processor behind a `target:` step and Workflow.ToURIs: it sends the
// exchange to an endpoint. URIs with ${…} placeholders are resolved per exchange;
// static ones get their producer at Start, so a misconfigured target fails fast.
type Target struct {
	hc       *Context
	template string
	name     string
}

// NewTarget returns a processor that sends exchanges to rawURI.
func NewTarget(hc *Context, rawURI string) *Target {
	return &Target{hc: hc, template: rawURI, name: "target " + rawURI}
}

// WithName sets the step name used in error messages.
func (t *Target) WithName(name string) *Target { t.name = name; return t }

func (t *Target) Name() string { return t.name }

// URI returns the (unresolved) target URI.
func (t *Target) URI() string { return t.template }

func (t *Target) Process(ctx context.Context, ex *exchange.Exchange) error {
	if !uri.HasPlaceholders(t.template) {
		return t.hc.Send(ctx, t.template, ex)
	}
	return t.hc.SendTemplate(ctx, t.template, ex)
}

// Start creates the producer of a static URI up front.
func (t *Target) Start(ctx context.Context) error {
	if uri.HasPlaceholders(t.template) {
		return nil
	}
	_, err := t.hc.Producer(ctx, t.template)
	return err
}

// Journaled reports whether the producer of the target's static URI records
// parts of its work in a durable run's journal (a producer with a method
// Journaled() bool that returns true: the mcp:// client records the task an
// upstream server runs the call as). A durable run then hands the step a
// journal. A URI with placeholders has no producer before the exchange: false.
func (t *Target) Journaled() bool {
	if uri.HasPlaceholders(t.template) {
		return false
	}
	p, err := t.hc.Producer(context.Background(), t.template)
	if err != nil {
		return false
	}
	j, ok := p.(interface{ Journaled() bool })
	return ok && j.Journaled()
}

// Stop is a no-op: producers belong to the context.
func (t *Target) Stop(context.Context) error { return nil }
