// Package capture records what the console's Exchanges pages show: for a
// sampled share of the exchanges that run, the workflow, trigger, caller,
// timing, outcome, and the headers and body before and after each top-level
// step, as bounded, redacted text.
//
// It is an engine.Tracer. The exchange path never waits for a page: a
// capture is built by the goroutine that runs the exchange, without any lock,
// and published when the exchange ends into a ring whose only lock is held by
// publishers for a constant-time append (pages read the ring without it), then
// handed to live subscribers with a send that never blocks (a slow subscriber
// misses exchanges and is told how many). Memory is bounded by MaxBytes
// whatever the traffic: each snapshot is truncated, and the ring evicts its
// oldest captures to stay under the budget.
package capture

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arvenza/helix/internal/console"
	"github.com/arvenza/helix/internal/redact"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// Defaults of Options.
const (
	// DefaultSample captures every exchange (within the rate below).
	DefaultSample = 1.0
	// DefaultMaxBytes is the memory the ring may hold.
	DefaultMaxBytes = 64 << 20
	// DefaultBodyLimit caps one snapshot's body text.
	DefaultBodyLimit = 8 << 10
	// DefaultPerSecond caps how many exchanges are captured per second: below
	// it every sampled exchange is captured, above it the rest of the second's
	// exchanges run without a capture, so that a flood costs the data path a
	// counter increment per exchange and the ring keeps a spread of seconds
	// rather than the last fraction of one.
	DefaultPerSecond = 200
	// DefaultReplayLimit caps the encoded input kept for a replay; a larger
	// input cannot be replayed.
	DefaultReplayLimit = 64 << 10
	// maxSteps is how many top-level steps of one exchange are recorded.
	maxSteps = 64
)

// HeaderReplayOf marks an exchange the console replayed: its value is the
// capture id of the exchange whose input it re-sent.
const HeaderReplayOf = "HelixConsoleReplayOf"

// Options configure a Capture.
type Options struct {
	// Sample is the share of exchanges captured, 0 < Sample ≤ 1 (0: DefaultSample).
	Sample float64
	// MaxBytes bounds the memory of the captures kept (0: DefaultMaxBytes).
	MaxBytes int64
	// BodyLimit caps each snapshot's body text in bytes (0: DefaultBodyLimit).
	BodyLimit int
	// PerSecond caps captures per second (0: DefaultPerSecond; negative: no cap).
	PerSecond int
	// ReplayLimit caps the encoded input kept for a replay (0: DefaultReplayLimit).
	ReplayLimit int
	// RedactFields are more header and body field names whose values are
	// hidden, besides the built-in secret names (see IsSecretName).
	RedactFields []string
	// ShowURI returns a trigger URI as it may be shown (its component's
	// secret options hidden); nil: every query value is masked.
	ShowURI func(raw string) string
	// Principal returns who an exchange runs for, from the context the
	// trigger (an MCP server's security stack) left; nil or "": nobody known.
	Principal func(ctx context.Context) string
}

// Capture is the engine.Tracer that records exchanges, and the store the
// pages read.
type Capture struct {
	opts      Options
	every     uint64 // capture one exchange in every … (from Sample)
	seen      atomic.Uint64
	ids       atomic.Uint64
	second    atomic.Int64 // the unix second perSecond counts in
	inSecond  atomic.Int64
	redactor  redactor
	ring      *ring
	subs      subscribers
	dropped   atomic.Uint64 // captures larger than the whole budget
	stopped   atomic.Bool
	closeOnce sync.Once
}

// New returns a capture with o's settings (defaults filled in).
func New(o Options) *Capture {
	if o.Sample <= 0 || o.Sample > 1 {
		o.Sample = DefaultSample
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.BodyLimit <= 0 {
		o.BodyLimit = DefaultBodyLimit
	}
	if o.PerSecond == 0 {
		o.PerSecond = DefaultPerSecond
	}
	if o.ReplayLimit <= 0 {
		o.ReplayLimit = DefaultReplayLimit
	}
	c := &Capture{opts: o, redactor: newRedactor(o.RedactFields), ring: newRing(o.MaxBytes)}
	c.subs.done = make(chan struct{})
	// Sampling is by count (one in every N), not by a random draw: it needs no
	// random source on the exchange path and spreads evenly.
	c.every = uint64(1/o.Sample + 0.5)
	if c.every < 1 {
		c.every = 1
	}
	return c
}

// Options returns the settings in force (defaults filled in).
func (c *Capture) Options() Options { return c.opts }

// Close stops recording and ends every subscription.
func (c *Capture) Close() {
	c.closeOnce.Do(func() {
		c.stopped.Store(true)
		c.subs.closeAll()
	})
}

type ctxKey struct{}

// active is the capture of the exchange a context runs; nested is set on the
// context of a workflow another one called (direct://), whose steps are the
// caller's one step and are not recorded apart.
type active struct {
	rec    *Exchange
	nested bool
}

// skipped marks the context of an exchange that is not captured (and of a
// workflow a captured one called): one shared value, so that skipping costs
// the context's node and nothing else.
var skipped = &active{nested: true}

// replayKey carries a replay's request to the tracer.
type replayKey struct{}

// ReplayTicket is filled in by the tracer when the exchange a replay sends
// starts: the capture id of the new exchange.
type ReplayTicket struct {
	Of string // the capture id replayed
	By string // the console user who asked
	ID string // the new exchange's capture id, set by the tracer
}

// WithReplay returns ctx for running a replay of capture id of, asked by by:
// the exchange run with it is always captured (whatever the sampling), marked
// as a replay, and t.ID tells its capture id.
func WithReplay(ctx context.Context, t *ReplayTicket) context.Context {
	return context.WithValue(ctx, replayKey{}, t)
}

var _ engine.Tracer = (*Capture)(nil)

func noop(error) {}

var _ console.Clocked = (*Capture)(nil)

// StartExchange records ex when it is sampled.
func (c *Capture) StartExchange(ctx context.Context, kind, id, trigger string, ex *exchange.Exchange) (context.Context, func(error)) {
	now := time.Now()
	ctx, e := c.StartExchangeAt(ctx, now, kind, id, trigger, ex)
	return ctx, endFunc(e, now)
}

// endFunc is e as an engine tracer's end func (the capture used on its own).
func endFunc(e console.Ender, start time.Time) func(error) {
	if e == nil {
		return noop
	}
	return func(err error) { e.End(err, start, time.Now()) }
}

// StartExchangeAt implements console.Clocked: an exchange that is not
// sampled costs a context value and two counters, no clock read (the
// sampling's second is now's) and no end.
func (c *Capture) StartExchangeAt(ctx context.Context, now time.Time, kind, id, trigger string, ex *exchange.Exchange) (context.Context, console.Ender) {
	if a, ok := ctx.Value(ctxKey{}).(*active); ok && a != nil {
		// A workflow called by a captured (or skipped) one: recorded as the
		// caller's step, its own steps are not.
		if a.nested {
			return ctx, nil
		}
		return context.WithValue(ctx, ctxKey{}, skipped), nil
	}
	ticket, _ := ctx.Value(replayKey{}).(*ReplayTicket)
	if ticket == nil && !c.sampled(now) {
		return context.WithValue(ctx, ctxKey{}, skipped), nil
	}
	rec := &Exchange{
		ID:         strconv.FormatUint(c.ids.Add(1), 10),
		ExchangeID: ex.ID(),
		Workflow:   id,
		Kind:       kind,
		Start:      now,
	}
	if trigger != "" {
		if c.opts.ShowURI != nil {
			rec.Trigger = redact.Secrets(c.opts.ShowURI(trigger))
		} else {
			rec.Trigger = c.redactor.text(trigger)
		}
	}
	if c.opts.Principal != nil {
		rec.Principal = c.opts.Principal(ctx)
	}
	if ticket != nil {
		ticket.ID = rec.ID
		rec.ReplayOf = ticket.Of
		rec.Principal = "console: " + ticket.By
	}
	c.redactor.snapshotInto(&rec.Input, ex, c.opts.BodyLimit) // in place: a small frame (redact.go)
	c.keepReplayInput(rec, ex)
	return context.WithValue(ctx, ctxKey{}, &active{rec: rec}), &exchangeEnd{c: c, rec: rec, ex: ex}
}

// exchangeEnd ends a captured exchange.
type exchangeEnd struct {
	c   *Capture
	rec *Exchange
	ex  *exchange.Exchange
}

func (e *exchangeEnd) End(err error, _, now time.Time) { e.c.end(e.rec, e.ex, err, now) }

// keepReplayInput keeps ex's input exactly as received (secrets included,
// never shown: only a replay reads it) when it is whole within ReplayLimit.
func (c *Capture) keepReplayInput(rec *Exchange, ex *exchange.Exchange) {
	if rec.Input.Truncated {
		rec.NotReplayable = "its input was truncated in the capture"
		return
	}
	raw, err := exchange.TakeSnapshot(ex).Encode(c.opts.ReplayLimit)
	if err != nil {
		rec.NotReplayable = "its input was not kept whole (" + err.Error() + ")"
		return
	}
	rec.replay = raw
}

// sampled decides, with two counters, whether this exchange is captured.
func (c *Capture) sampled(now time.Time) bool {
	if c.stopped.Load() {
		return false
	}
	if c.every > 1 && c.seen.Add(1)%c.every != 0 {
		return false
	}
	if c.opts.PerSecond < 0 {
		return true
	}
	sec := now.Unix()
	if s := c.second.Load(); s != sec {
		if c.second.CompareAndSwap(s, sec) {
			c.inSecond.Store(0)
		}
	}
	return c.inSecond.Add(1) <= int64(c.opts.PerSecond)
}

// StartStep records the exchange after a top-level step of a captured
// exchange (the snapshot before a step is the one after the step before it,
// or the input).
func (c *Capture) StartStep(ctx context.Context, name string, index int, ex *exchange.Exchange) (context.Context, func(error)) {
	now := time.Now()
	ctx, e := c.StartStepAt(ctx, now, name, index, ex)
	return ctx, endFunc(e, now)
}

// StartStepAt implements console.Clocked: nothing (no end) for a step of an
// exchange that is not captured.
func (c *Capture) StartStepAt(ctx context.Context, _ time.Time, name string, index int, ex *exchange.Exchange) (context.Context, console.Ender) {
	a, _ := ctx.Value(ctxKey{}).(*active)
	if a == nil || a.rec == nil {
		return ctx, nil
	}
	rec := a.rec
	if len(rec.Steps) >= maxSteps {
		rec.StepsNotShown++
		return ctx, nil
	}
	return ctx, &stepEnd{c: c, rec: rec, ex: ex, index: index, name: name}
}

// stepEnd ends a step of a captured exchange: the snapshot after it.
type stepEnd struct {
	c     *Capture
	rec   *Exchange
	ex    *exchange.Exchange
	index int
	name  string
}

func (e *stepEnd) End(err error, start, now time.Time) {
	c := e.c
	// Written in place, not built here and copied: this runs at the bottom of
	// a tool call's stack (redact.go's snapshotInto).
	e.rec.Steps = append(e.rec.Steps, Step{Index: e.index, Name: e.name, Start: start, Duration: now.Sub(start)})
	st := &e.rec.Steps[len(e.rec.Steps)-1]
	if err != nil {
		st.Error = c.redactor.text(err.Error())
	}
	c.redactor.snapshotInto(&st.After, e.ex, c.opts.BodyLimit)
}

func (c *Capture) end(rec *Exchange, ex *exchange.Exchange, err error, now time.Time) {
	rec.End = now
	rec.Status = StatusOK
	if err == nil {
		err = ex.Exception()
	}
	if err != nil && !engine.IsInterrupt(err) {
		rec.Status = StatusFailed
		rec.Error = c.redactor.text(err.Error())
		rec.ErrorStep = errorStep(rec, ex)
	}
	rec.size = rec.footprint()
	if c.stopped.Load() {
		return
	}
	if !c.ring.add(rec) {
		c.dropped.Add(1)
		return
	}
	c.subs.publish(rec)
}

// errorStep is where the failure happened: the failing step's position and
// name, from the step that returned an error or the failed-step header.
func errorStep(rec *Exchange, ex *exchange.Exchange) string {
	for i := len(rec.Steps) - 1; i >= 0; i-- {
		if s := rec.Steps[i]; s.Error != "" {
			return s.Path()
		}
	}
	if s := ex.In().HeaderString(exchange.HeaderFailedStep); s != "" {
		return s
	}
	return ""
}

// Stats is what the capture holds and has missed.
type Stats struct {
	Kept, Bytes, MaxBytes int64
	// Dropped counts captures larger than the whole budget.
	Dropped uint64
}

// Stats returns the ring's current figures.
func (c *Capture) Stats() Stats {
	n, b := c.ring.usage()
	return Stats{Kept: n, Bytes: b, MaxBytes: c.opts.MaxBytes, Dropped: c.dropped.Load()}
}

// Get returns the capture with id, or nil when it is not (or no longer) kept.
func (c *Capture) Get(id string) *Exchange { return c.ring.get(id) }

// ReplayInput is the encoded input of capture rec (an exchange.Snapshot),
// nil when it cannot be replayed (rec.NotReplayable says why).
func (c *Capture) ReplayInput(rec *Exchange) []byte { return rec.replay }
