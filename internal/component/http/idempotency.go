package http

import (
	"context"
	nethttp "net/http"
	"strings"

	"github.com/arvenza/helix/internal/durable"
)

// headerIdempotencyKey is the request header servers that dedupe repeated
// requests (Stripe and the IETF draft "The Idempotency-Key HTTP Header Field")
// read.
const headerIdempotencyKey = "Idempotency-Key"

// setIdempotencyKey sends the idempotency key of a durable run's step as the
// Idempotency-Key header, so that a server honouring it answers a request
// repeated after a crash without doing the work twice. A key the exchange sets
// itself (the header among the request's headers) is the user's and stays —
// unless it is the key the durable run was started with (a trigger's
// Idempotency-Key, which names the run and travels on in its headers): sent with
// every request of the run it would make a server take different requests for
// repeats of one.
func setIdempotencyKey(ctx context.Context, h nethttp.Header) {
	key, ok := durable.KeyFrom(ctx)
	if !ok {
		return
	}
	if own := h.Get(headerIdempotencyKey); own != "" && !startedWith(ctx, own) {
		return
	}
	h.Set(headerIdempotencyKey, key)
}

// startedWith reports whether key is the Idempotency-Key that named ctx's
// durable run (run id <workflow>:<key>).
func startedWith(ctx context.Context, key string) bool {
	id, ok := durable.RunID(ctx)
	return ok && strings.HasSuffix(id, ":"+key)
}
