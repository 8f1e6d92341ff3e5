package console

import (
	"context"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// Tee returns one tracer that calls each non-nil tracer of ts in order (the
// application's OpenTelemetry tracer, the console's capture and step
// counters); nil when none is left, so the engine pays only its nil check.
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
	return tee(live)
}

type tee []engine.Tracer

func (t tee) StartExchange(ctx context.Context, kind, id, trigger string, ex *exchange.Exchange) (context.Context, func(error)) {
	ends := make([]func(error), len(t))
	for i, tr := range t {
		ctx, ends[i] = tr.StartExchange(ctx, kind, id, trigger, ex)
	}
	return ctx, func(err error) {
		for i := len(ends) - 1; i >= 0; i-- {
			ends[i](err)
		}
	}
}

func (t tee) StartStep(ctx context.Context, name string, index int, ex *exchange.Exchange) (context.Context, func(error)) {
	ends := make([]func(error), len(t))
	for i, tr := range t {
		ctx, ends[i] = tr.StartStep(ctx, name, index, ex)
	}
	return ctx, func(err error) {
		for i := len(ends) - 1; i >= 0; i-- {
			ends[i](err)
		}
	}
}

// Primary is the first tracer of the tee (the application's OpenTelemetry
// tracer when tracing is on): code that needs that tracer's own type (the MCP
// server's spans) finds it behind the tee.
func (t tee) Primary() engine.Tracer { return t[0] }
