package durable

import (
	"context"
	"fmt"
	"strings"

	"github.com/arvenza/helix/pkg/exchange"
)

// StepKey is the idempotency key of the side effect the step now running on ex
// is about to cause: [KeyFrom] with its last part, the redelivery, set to ex's
// HelixRedeliveryCount. A failure the workflow's error handler retries is a new
// attempt with a key of its own; a step run again after a crash (the same
// attempt) has the same key. ok is false when the run is not durable.
func StepKey(ctx context.Context, ex *exchange.Exchange) (string, bool) {
	key, ok := KeyFrom(ctx)
	if !ok || ex == nil {
		return key, ok
	}
	n, isInt := ex.In().Header(exchange.HeaderRedeliveryCount).(int)
	if !isInt || n <= 0 {
		return key, true
	}
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		key = key[:i]
	}
	return fmt.Sprintf("%s/%d", key, n), true
}
