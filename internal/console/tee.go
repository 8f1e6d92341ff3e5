package console

import (
	"context"
	"sync"
	"time"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// Clocked is implemented by the console's own tracers (the step counters, the
// overview's latency, the capture) so that a tee reads the clock once for all
// of them: once when an exchange or a step starts and once when it ends,
// instead of once per tracer. A tracer in a tee that is Clocked is called
// through these methods only; on its own it is an ordinary engine.Tracer.
type Clocked interface {
	// StartExchangeAt is StartExchange at time now; a nil Ender means there is
	// nothing to do at the end.
	StartExchangeAt(ctx context.Context, now time.Time, kind, id, trigger string, ex *exchange.Exchange) (context.Context, Ender)
	// StartStepAt is StartStep at time now; a nil Ender as above.
	StartStepAt(ctx context.Context, now time.Time, name string, index int, ex *exchange.Exchange) (context.Context, Ender)
}

// Ender ends what a Clocked tracer started at start, at time now. An Ender is
// an interface rather than a func so that a tracer can hand out a pointer it
// already has (a counter) without allocating a closure per exchange.
type Ender interface {
	End(err error, start, now time.Time)
}

// Tee returns one tracer that calls each non-nil tracer of ts in order (the
// application's OpenTelemetry tracer, the console's capture and step
// counters), and their ends in reverse order; nil when none is left, so the
// engine pays only its nil check. The tee allocates nothing per exchange or
// step: its end state comes from a pool.
func Tee(ts ...engine.Tracer) engine.Tracer {
	var live []engine.Tracer
	for _, t := range ts {
		if t != nil {
			live = append(live, t)
		}
	}
	switch len(live) {
	case 0:
		return nil
	case 1:
		return live[0]
	}
	t := &tee{ts: live, clocked: make([]Clocked, len(live))}
	for i, tr := range live {
		t.clocked[i], _ = tr.(Clocked)
		t.anyClocked = t.anyClocked || t.clocked[i] != nil
	}
	t.pool.New = func() any {
		e := &teeEnd{t: t, plain: make([]func(error), len(live)), enders: make([]Ender, len(live))}
		e.fn = e.end
		return e
	}
	return t
}

type tee struct {
	ts      []engine.Tracer
	clocked []Clocked // clocked[i] is ts[i] when it is Clocked, else nil
	// anyClocked: some tracer takes the shared start time (else no clock read).
	anyClocked bool
	pool       sync.Pool // of *teeEnd
}

// teeEnd is one exchange's or step's end: what each tracer returned, and the
// start time the Clocked ones share. fn is end bound once when the teeEnd is
// made, so that handing it to the engine allocates nothing.
type teeEnd struct {
	t      *tee
	start  time.Time
	plain  []func(error)
	enders []Ender
	fn     func(error)
}

// end runs the tracers' ends in reverse order and returns e to the pool (the
// engine calls an end func once), cleared so that the pool holds no exchange.
func (e *teeEnd) end(err error) {
	var now time.Time
	for i := len(e.plain) - 1; i >= 0; i-- {
		if en := e.enders[i]; en != nil {
			if now.IsZero() {
				now = time.Now()
			}
			en.End(err, e.start, now)
			e.enders[i] = nil
		} else if f := e.plain[i]; f != nil {
			f(err)
			e.plain[i] = nil
		}
	}
	e.t.pool.Put(e)
}

func (t *tee) StartExchange(ctx context.Context, kind, id, trigger string, ex *exchange.Exchange) (context.Context, func(error)) {
	e := t.pool.Get().(*teeEnd)
	if t.anyClocked {
		e.start = time.Now()
	}
	for i, tr := range t.ts {
		if c := t.clocked[i]; c != nil {
			ctx, e.enders[i] = c.StartExchangeAt(ctx, e.start, kind, id, trigger, ex)
		} else {
			ctx, e.plain[i] = tr.StartExchange(ctx, kind, id, trigger, ex)
		}
	}
	return ctx, e.fn
}

func (t *tee) StartStep(ctx context.Context, name string, index int, ex *exchange.Exchange) (context.Context, func(error)) {
	e := t.pool.Get().(*teeEnd)
	if t.anyClocked {
		e.start = time.Now()
	}
	for i, tr := range t.ts {
		if c := t.clocked[i]; c != nil {
			ctx, e.enders[i] = c.StartStepAt(ctx, e.start, name, index, ex)
		} else {
			ctx, e.plain[i] = tr.StartStep(ctx, name, index, ex)
		}
	}
	return ctx, e.fn
}

// Primary is the first tracer of the tee (the application's OpenTelemetry
// tracer when tracing is on): code that needs that tracer's own type (the MCP
// server's spans) finds it behind the tee.
func (t *tee) Primary() engine.Tracer { return t.ts[0] }

// Tracers are the tracers of the tee, in order (tests find the console's
// capture among them).
func (t *tee) Tracers() []engine.Tracer { return t.ts }
