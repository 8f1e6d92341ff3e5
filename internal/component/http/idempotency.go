package http

import (
	"context"
	nethttp "net/http"

	"github.com/arvenza/helix/internal/durable"
)

// headerIdempotencyKey is the request header servers that dedupe repeated
// requests (Stripe and the IETF draft "The Idempotency-Key HTTP Header Field")
// read.
const headerIdempotencyKey = "Idempotency-Key"

// setIdempotencyKey sends the idempotency key of a durable run's step as the
// Idempotency-Key header, so that a server honouring it answers a request
// repeated after a crash without doing the work twice. A key the exchange sets
// itself (the header among the request's headers) is the user's and stays.
func setIdempotencyKey(ctx context.Context, h nethttp.Header) {
	key, ok := durable.KeyFrom(ctx)
	if !ok || h.Get(headerIdempotencyKey) != "" {
		return
	}
	h.Set(headerIdempotencyKey, key)
}
