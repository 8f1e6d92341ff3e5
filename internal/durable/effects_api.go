package durable

import "context"

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
