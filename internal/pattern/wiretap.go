package pattern

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// DefaultWiretapInFlight bounds the taps of one wiretap step that may be in flight at
// once. A tap target slower than the traffic would otherwise pile up goroutines and
// copies without limit.
const DefaultWiretapInFlight = 1024

// WiretapOptions configure [NewWiretap].
type WiretapOptions struct {
	// MaxInFlight bounds concurrent taps; 0 means [DefaultWiretapInFlight]. When the
	// bound is reached further taps are dropped (logged and counted), because a wiretap
	// must never delay the main exchange.
	MaxInFlight int
}

// Wiretap sends a copy of the exchange, InOnly, to an endpoint in the background and
// lets the main exchange go on at once: a slow or failing tap never delays or fails
// it. Tap failures are logged at warn level and counted ([Wiretap.Failed]); taps
// dropped because MaxInFlight were in flight are counted by [Wiretap.Dropped].
//
// The tap runs on a goroutine owned by the engine context ([engine.Context.Go]):
// Stop drains it within the stop deadline and then cancels it. The tap's context is
// the engine's, not the exchange's, so a tap outlives the request that caused it
// (an HTTP caller hanging up does not cancel the audit record).
type Wiretap struct {
	hc       *engine.Context
	template string
	name     string
	slots    chan struct{}
	dropped  atomic.Int64
	failed   atomic.Int64
}

var (
	_ engine.Processor  = (*Wiretap)(nil)
	_ engine.Named      = (*Wiretap)(nil)
	_ component.Service = (*Wiretap)(nil)
)

// NewWiretap returns a wiretap to rawURI (which may hold ${…} placeholders, resolved
// against the exchange when it is tapped).
func NewWiretap(hc *engine.Context, rawURI string, opts WiretapOptions) (*Wiretap, error) {
	if hc == nil {
		return nil, errors.New("wiretap: needs an engine context")
	}
	if rawURI == "" {
		return nil, errors.New("wiretap: needs an endpoint uri, e.g. wiretap: log://audit")
	}
	if !uri.HasPlaceholders(rawURI) {
		if _, err := uri.Parse(rawURI); err != nil {
			return nil, fmt.Errorf("wiretap: %w", err)
		}
	}
	n := opts.MaxInFlight
	if n <= 0 {
		n = DefaultWiretapInFlight
	}
	return &Wiretap{hc: hc, template: rawURI, name: "wiretap " + rawURI, slots: make(chan struct{}, n)}, nil
}

// WithName sets the step name used in logs.
func (w *Wiretap) WithName(name string) *Wiretap { w.name = name; return w }

// Name returns the step name.
func (w *Wiretap) Name() string { return w.name }

// URI returns the (unresolved) tap URI.
func (w *Wiretap) URI() string { return w.template }

// Dropped returns how many taps were dropped because too many were in flight or the
// engine was stopping.
func (w *Wiretap) Dropped() int64 { return w.dropped.Load() }

// Failed returns how many taps failed (their error was logged).
func (w *Wiretap) Failed() int64 { return w.failed.Load() }

// Start creates the producer of a static URI up front, so a misconfigured tap fails
// at start rather than silently at every exchange.
func (w *Wiretap) Start(ctx context.Context) error {
	if uri.HasPlaceholders(w.template) {
		return nil
	}
	if _, err := w.hc.Producer(ctx, w.template); err != nil {
		return fmt.Errorf("%s: %w", w.name, err)
	}
	return nil
}

// Stop is a no-op: the engine context drains and cancels the taps it runs.
func (w *Wiretap) Stop(context.Context) error { return nil }

// Process taps ex and returns at once. Only a tap URI that cannot be resolved against
// the exchange is logged and counted as failed; Process itself never fails.
func (w *Wiretap) Process(_ context.Context, ex *exchange.Exchange) error {
	// Resolved here only to skip (and log) a tap whose URI cannot be resolved; the tap
	// itself goes through SendTemplate so a placeholder URI gets a bounded, cached
	// producer and the component can tell which options came from the exchange.
	target, err := uri.ExpandURI(w.template, ex)
	if err != nil {
		w.failed.Add(1)
		w.hc.Logger().Warn("wiretap: cannot resolve the tap uri; tap skipped", "step", w.name, "exchange", ex.ID(), "error", err)
		return nil
	}
	if w.hc.RunContext().Err() != nil {
		w.dropped.Add(1)
		w.hc.Logger().Warn("wiretap: engine is stopping; tap dropped", "step", w.name, "exchange", ex.ID())
		return nil
	}
	select {
	case w.slots <- struct{}{}:
	default:
		w.dropped.Add(1)
		w.hc.Logger().Warn("wiretap: too many taps in flight; tap dropped", "step", w.name, "exchange", ex.ID(), "max_in_flight", cap(w.slots))
		return nil
	}
	tap := ex.Copy()
	tap.SetPattern(exchange.InOnly)
	tap.SetException(nil)
	w.hc.Go(func(ctx context.Context) {
		defer func() { <-w.slots }()
		defer func() {
			if r := recover(); r != nil {
				w.failed.Add(1)
				w.hc.Logger().Error("wiretap: tap panicked", "step", w.name, "uri", w.hc.ShownURI(target), "exchange", tap.ID(), "panic", r)
			}
		}()
		if err := engine.RunStep(ctx, component.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
			if !uri.HasPlaceholders(w.template) {
				return w.hc.Send(ctx, w.template, ex)
			}
			return w.hc.SendTemplate(ctx, w.template, ex)
		}), tap); err != nil {
			w.failed.Add(1)
			w.hc.Logger().Warn("wiretap: tap failed", "step", w.name, "uri", w.hc.ShownURI(target), "exchange", tap.ID(), "error", err)
		}
	})
	return nil
}
