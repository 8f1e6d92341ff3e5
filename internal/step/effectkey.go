package step

import (
	"context"

	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// keyedTarget is a target step whose side effect, in a durable run, carries an
// idempotency key of its own: the key the step runs with (the top-level step's
// <run>/<step>/<redelivery>, refined by any enclosing composite step) with the
// target's position in the YAML appended (and the redelivery part counting the
// error handler's retries of the exchange: durable.WithRedelivery). Two targets inside one top-level step
// (a choice branch, a workflow called through direct://) thus never share a key,
// and the same target gets the same key when a crash makes the run do the step
// again. Outside a durable run it is the target as it is.
type keyedTarget struct {
	*engine.Target
	at string // file:line:col of the step
}

func (t keyedTarget) Process(ctx context.Context, ex *exchange.Exchange) error {
	return t.Target.Process(durable.SubKey(durable.WithRedelivery(ctx, ex), t.at), ex)
}
