package security

import (
	"net/http"
	"time"
)

// ChargeCalls takes n more tokens of the rate limit for a request the stack
// already admitted (which took one): the MCP transport calls it for the calls of a
// JSON-RPC batch beyond the first, so that rate_limit counts calls, not POSTs. r
// must be the request as the stack passed it on (its principal in the context).
// ok is false, with the wait until a token is free, when the limit refuses; err
// when the shared store could not decide. Without a rate limit it always allows.
func (s *Stack) ChargeCalls(r *http.Request, n int) (ok bool, retryAfter time.Duration, err error) {
	if s.rate == nil || n <= 0 {
		return true, 0, nil
	}
	// The key serve used: the authenticated principal, else the client address.
	key := PrincipalFromContext(r.Context())
	if key == "" {
		q := s.identify(r)
		key = q.clientKey()
	}
	for range n {
		if ok, retryAfter, err = s.rate.Allow(r.Context(), key); err != nil || !ok {
			return ok, retryAfter, err
		}
	}
	return true, 0, nil
}
