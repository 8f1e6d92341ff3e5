package console

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/arvenza/helix/pkg/exchange"
)

// clockedTracer records the times a tee hands it and the order of its ends.
type clockedTracer struct {
	plainTracer
	tag    string
	log    *[]string
	starts *[]time.Time
	ends   *[][2]time.Time
	none   *bool // when set and true, return no Ender
}

type clockedEnd struct{ c clockedTracer }

func (e clockedEnd) End(err error, start, now time.Time) {
	*e.c.log = append(*e.c.log, e.c.tag+" end "+err.Error())
	*e.c.ends = append(*e.c.ends, [2]time.Time{start, now})
}

func (c clockedTracer) StartExchangeAt(ctx context.Context, now time.Time, _, _, _ string, _ *exchange.Exchange) (context.Context, Ender) {
	return c.start(ctx, now)
}

func (c clockedTracer) StartStepAt(ctx context.Context, now time.Time, _ string, _ int, _ *exchange.Exchange) (context.Context, Ender) {
	return c.start(ctx, now)
}

func (c clockedTracer) start(ctx context.Context, now time.Time) (context.Context, Ender) {
	*c.log = append(*c.log, c.tag+" start")
	*c.starts = append(*c.starts, now)
	if c.none != nil && *c.none {
		return ctx, nil
	}
	return ctx, clockedEnd{c}
}

// loggingTracer is a plain engine.Tracer that logs its starts and ends.
type loggingTracer struct {
	tag string
	log *[]string
}

func (l loggingTracer) StartExchange(ctx context.Context, _, _, _ string, _ *exchange.Exchange) (context.Context, func(error)) {
	return l.start(ctx)
}

func (l loggingTracer) StartStep(ctx context.Context, _ string, _ int, _ *exchange.Exchange) (context.Context, func(error)) {
	return l.start(ctx)
}

func (l loggingTracer) start(ctx context.Context) (context.Context, func(error)) {
	*l.log = append(*l.log, l.tag+" start")
	return ctx, func(err error) { *l.log = append(*l.log, l.tag+" end "+err.Error()) }
}

// The console's clocked tracers share one clock reading at the start and one
// at the end; plain tracers (OpenTelemetry's) are called as before; ends run
// in reverse order, for exchanges and steps alike; a nil Ender is skipped.
func TestTeeSharesOneClockAndEndsInReverse(t *testing.T) {
	t.Parallel()
	var log []string
	var starts []time.Time
	var ends [][2]time.Time
	a := clockedTracer{tag: "a", log: &log, starts: &starts, ends: &ends}
	b := clockedTracer{tag: "b", log: &log, starts: &starts, ends: &ends}
	tr := Tee(loggingTracer{tag: "otel", log: &log}, a, b)
	for round, step := range []bool{false, true, false} {
		log, starts, ends = nil, nil, nil
		var end func(error)
		if step {
			_, end = tr.StartStep(context.Background(), "s", 0, nil)
		} else {
			_, end = tr.StartExchange(context.Background(), "workflow", "w", "", nil)
		}
		end(errors.New("boom"))
		want := []string{"otel start", "a start", "b start", "b end boom", "a end boom", "otel end boom"}
		if len(log) != len(want) {
			t.Fatalf("round %d: log %q, want %q", round, log, want)
		}
		for i := range want {
			if log[i] != want[i] {
				t.Fatalf("round %d: log %q, want %q", round, log, want)
			}
		}
		if len(starts) != 2 || starts[0] != starts[1] || starts[0].IsZero() {
			t.Fatalf("round %d: start times %v, want one shared reading", round, starts)
		}
		if len(ends) != 2 || ends[0] != ends[1] || ends[0][0] != starts[0] || ends[0][1].Before(ends[0][0]) {
			t.Fatalf("round %d: ends got (start, now) %v after starts %v", round, ends, starts)
		}
	}

	// A tracer that has nothing to end this time (no Ender) is not ended,
	// though it was the run before with the same pooled end state.
	none := false
	quiet := clockedTracer{tag: "q", log: &log, starts: &starts, ends: &ends, none: &none}
	tr = Tee(quiet, b)
	_, end := tr.StartExchange(context.Background(), "workflow", "w", "", nil)
	end(errors.New("first"))
	none = true
	log = nil
	_, end = tr.StartExchange(context.Background(), "workflow", "w", "", nil)
	end(errors.New("e"))
	want := []string{"q start", "b start", "b end e"}
	if len(log) != len(want) || log[0] != want[0] || log[1] != want[1] || log[2] != want[2] {
		t.Fatalf("log %q, want %q", log, want)
	}
}
