package console_test

import (
	"context"
	"testing"

	"github.com/arvenza/helix/internal/console"
	"github.com/arvenza/helix/internal/console/capture"
	"github.com/arvenza/helix/internal/console/overview"
	"github.com/arvenza/helix/internal/console/stepstats"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// otelLike stands for the application's own tracer (OpenTelemetry's, when
// tracing is on): a plain engine.Tracer whose ends allocate nothing.
type otelLike struct{}

func nothing(error) {}

func (otelLike) StartExchange(ctx context.Context, _, _, _ string, _ *exchange.Exchange) (context.Context, func(error)) {
	return ctx, nothing
}

func (otelLike) StartStep(ctx context.Context, _ string, _ int, _ *exchange.Exchange) (context.Context, func(error)) {
	return ctx, nothing
}

// consoleTee is the tee the console installs (pkg/app/console.go): the
// application's tracer, then the capture, the step counters and the
// overview's latency. The capture samples one exchange in a million, so the
// exchanges run here are not captured.
func consoleTee(tb testing.TB) (engine.Tracer, *stepstats.Stats, *overview.Latency) {
	c := capture.New(capture.Options{Sample: 1e-6})
	tb.Cleanup(c.Close)
	st := stepstats.New([]stepstats.Def{{Kind: "workflow", ID: "w", Steps: 2}})
	lat := overview.NewLatency()
	return console.Tee(otelLike{}, c, st, lat), st, lat
}

// runExchange is what the engine does for one exchange of two steps.
func runExchange(tr engine.Tracer, ex *exchange.Exchange) {
	ctx, end := tr.StartExchange(context.Background(), "workflow", "w", "direct://w", ex)
	for i := range 2 {
		_, e := tr.StartStep(ctx, "s", i, ex)
		e(nil)
	}
	end(nil)
}

// With the console on and the exchange not captured, the console's tracers
// allocate only the two context values of an exchange (the capture's "not
// captured" mark and the step counters' workflow), nothing per step, and
// still count the exchange, its steps and its latency. (Not parallel:
// AllocsPerRun counts the process.)
func TestConsoleTeeCostPerExchange(t *testing.T) {
	tr, st, lat := consoleTee(t)
	ex := exchange.NewWithBody(exchange.InOut, "x")
	runExchange(tr, ex) // the pools and the latency histogram are made
	allocs := testing.AllocsPerRun(1000, func() { runExchange(tr, ex) })
	if allocs > 2 && !raceEnabled {
		t.Fatalf("an exchange of two steps allocates %v times in the console's tracers, want at most 2", allocs)
	}
	got, _ := st.Get("workflow", "w")
	if got.Exchange.Count != 1002 || got.Steps[0].Count != 1002 || got.Steps[1].Count != 1002 {
		t.Fatalf("step counts = %+v, want 1002 exchanges and steps", got)
	}
	if _, _, n := lat.Quantiles("w"); n != 1002 {
		t.Fatalf("latency counted %d exchanges, want 1002", n)
	}
}

// BenchmarkConsoleTee is the console's tracers alone on one exchange of two
// steps that is not captured.
func BenchmarkConsoleTee(b *testing.B) {
	tr, _, _ := consoleTee(b)
	ex := exchange.NewWithBody(exchange.InOut, "x")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			runExchange(tr, ex)
		}
	})
}
