package console

import (
	"context"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// StartNestedStep makes a tee an engine.NestedTracer: it calls the tracers of
// the tee that trace nested steps (the step counters; not OpenTelemetry's),
// in order, without allocating when only one does.
func (t *tee) StartNestedStep(ctx context.Context, name string, ex *exchange.Exchange) (context.Context, func(error)) {
	var one engine.NestedTracer
	n := 0
	for _, tr := range t.ts {
		if nt, ok := tr.(engine.NestedTracer); ok {
			one, n = nt, n+1
		}
	}
	switch n {
	case 0:
		return ctx, func(error) {}
	case 1:
		return one.StartNestedStep(ctx, name, ex)
	}
	var ends []func(error)
	for _, tr := range t.ts {
		if nt, ok := tr.(engine.NestedTracer); ok {
			var end func(error)
			ctx, end = nt.StartNestedStep(ctx, name, ex)
			ends = append(ends, end)
		}
	}
	return ctx, func(err error) {
		for i := len(ends) - 1; i >= 0; i-- {
			ends[i](err)
		}
	}
}
