package durable

import (
	"context"
	"strconv"
	"strings"

	"github.com/arvenza/helix/pkg/exchange"
)

// SubKey returns ctx carrying the idempotency key ctx carries with "/"+part
// appended, or ctx itself when it carries none (the run is not durable). Steps
// that cause side effects inside one top-level step give each its own key this
// way: a target step appends its position in the YAML, a split or multicast the
// element's or branch's index, an agent its turn and tool call. The key stays
// the same when a crash makes the run do the step again, and differs between two
// side effects of one step.
func SubKey(ctx context.Context, part string) context.Context {
	key, ok := KeyFrom(ctx)
	if !ok {
		return ctx
	}
	return WithKey(ctx, key+"/"+part)
}

// WithRedelivery returns ctx whose idempotency key counts the redeliveries of
// ex: the key's redelivery part (<run id>/<step>/<redelivery>/…) becomes ex's
// HelixRedeliveryCount. A failure the workflow's error handler retries is a new
// attempt, whose side effects must not be taken for repeats of the failed one;
// a step done again after a crash is the same attempt and keeps its key. ctx is
// returned as it is outside a durable run and before any redelivery.
func WithRedelivery(ctx context.Context, ex *exchange.Exchange) context.Context {
	n, isInt := ex.In().Header(exchange.HeaderRedeliveryCount).(int)
	if !isInt || n <= 0 {
		return ctx
	}
	key, ok := KeyFrom(ctx)
	run, inRun := RunID(ctx)
	if !ok || !inRun || !strings.HasPrefix(key, run+"/") {
		return ctx
	}
	parts := strings.SplitN(key[len(run)+1:], "/", 3) // step, redelivery, the rest
	if len(parts) < 2 {
		return ctx
	}
	parts[1] = strconv.Itoa(n)
	return WithKey(ctx, run+"/"+strings.Join(parts, "/"))
}
