package security

import (
	"context"
	"net/http"
	"net/netip"
	"time"
)

// TokenVerifier validates OAuth bearer JWTs exactly as an MCP server's stack
// does (issuer, audience, expiry, JWKS keys, the roles claim), for another
// listener that accepts the same tokens: the web console (internal/console).
type TokenVerifier struct{ v *oauthVerifier }

// NewTokenVerifier checks c and returns its verifier; keys are fetched on the
// first token. Close releases it.
func NewTokenVerifier(c OAuthConfig) (*TokenVerifier, error) {
	o := defaultOptions()
	v, err := newOAuthVerifier(c, o.httpClient, o.now, o.jwksMaxWait)
	if err != nil {
		return nil, err
	}
	return &TokenVerifier{v: v}, nil
}

// Verify returns the claims of a valid token, or why it is not.
func (t *TokenVerifier) Verify(ctx context.Context, raw string) (*Claims, error) {
	return t.v.verify(ctx, raw)
}

// Close stops the key cache.
func (t *TokenVerifier) Close() { t.v.jwks.close() }

// FailureLimiter is the MCP servers' auth_failure_limit for another listener:
// failed authentications per client address (IPv6 per /64) in fixed windows;
// at the limit the client is refused until its window ends. It is bounded
// and owns no goroutine.
type FailureLimiter struct{ st *failureStore }

// NewFailureLimiter returns a limiter of limit failures per window (0 and
// below: the defaults, DefaultAuthFailureLimit per DefaultAuthFailureWindow),
// remembering at most maxClients addresses.
func NewFailureLimiter(limit int, window time.Duration, maxClients int) *FailureLimiter {
	if limit <= 0 {
		limit = DefaultAuthFailureLimit
	}
	if window <= 0 {
		window = DefaultAuthFailureWindow
	}
	if maxClients <= 0 {
		maxClients = 100_000
	}
	return &FailureLimiter{st: newFailureStore(limit, window, maxClients)}
}

// Blocked reports whether r's client is locked out, and for how long.
func (f *FailureLimiter) Blocked(r *http.Request) (time.Duration, bool) {
	return f.st.blocked(peerKey(r), time.Now())
}

// Failure records a failed authentication of r's client.
func (f *FailureLimiter) Failure(r *http.Request) { f.st.failure(peerKey(r), time.Now()) }

// peerKey is the direct peer's clientKey: the console trusts no forwarding
// header (it is served on the management listener, not behind a proxy).
func peerKey(r *http.Request) string {
	q := request{}
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		q.client = ap.Addr().Unmap()
	}
	return q.clientKey()
}
