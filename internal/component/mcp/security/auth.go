package security

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// keyDigest is the SHA-256 of an API key. Keys are compared as digests so the
// comparison takes the same time whatever the presented key's length
// (subtle.ConstantTimeCompare returns early on a length mismatch).
type keyDigest [sha256.Size]byte

func digestKey(k string) keyDigest { return sha256.Sum256([]byte(k)) }

// matchKey returns the index of the configured key equal to candidate, or -1.
// Every configured key is compared, matched or not, so timing does not reveal
// which key (or whether any key) matched first.
func (s *Stack) matchKey(candidate string) int {
	if candidate == "" {
		return -1
	}
	d := digestKey(candidate)
	idx := -1
	for i := range s.keys {
		eq := subtle.ConstantTimeCompare(s.keys[i][:], d[:])
		idx = subtle.ConstantTimeSelect(eq&subtle.ConstantTimeEq(int32(idx), -1), i, idx)
	}
	return idx
}

// principal is who a request acts as: the rate-limit key and, for JWTs, the
// validated claims.
type principal struct {
	id     string // "key#0", "sub:alice", "ip:203.0.113.7"
	key    int    // the API key's index; -1 for others
	claims *Claims
	token  string // the verified bearer token of claims; a secret
}

// bearerToken extracts the token of "Authorization: Bearer <token>"; the
// scheme is case-insensitive (RFC 9110 §11.1).
func bearerToken(r *http.Request) string {
	f := strings.Fields(r.Header.Get("Authorization"))
	if len(f) == 2 && strings.EqualFold(f[0], "bearer") {
		return f[1]
	}
	return ""
}

// authenticate identifies the principal or answers 401. Requests through a
// trusted proxy are never refused here (the gateway authenticated them), but
// credentials they carry are still honoured for identity and scopes.
func (s *Stack) authenticate(w http.ResponseWriter, r *http.Request, q request) (principal, bool) {
	anon := principal{id: q.clientKey(), key: -1}
	if len(s.keys) == 0 && s.oauth == nil {
		// No auth configured: presented keys are meaningless and must not
		// select a rate-limit bucket, or a client could mint fresh buckets.
		return anon, true
	}
	bearer := bearerToken(r)
	apiKey := r.Header.Get("X-API-Key")
	presented := bearer != "" || apiKey != "" || r.Header.Get("Authorization") != ""

	// Both headers are checked unconditionally (no short-circuit) so the time
	// spent does not say which header carried a valid key.
	i1, i2 := s.matchKey(bearer), s.matchKey(apiKey)
	if i := max(i1, i2); i >= 0 {
		return principal{id: keyPrincipalID(i), key: i}, true
	}

	reason := "missing credentials"
	if presented {
		reason = "invalid api key"
	}
	var tokenErr error
	if s.oauth != nil && bearer != "" {
		claims, err := s.oauth.verify(r.Context(), bearer)
		if err == nil {
			return principal{id: oauthPrincipalID(claims.Issuer, claims.Subject), key: -1, claims: claims, token: bearer}, true
		}
		tokenErr = err
		reason = "invalid token: " + tokenRefusal(err)
	}
	if q.viaTrusted {
		return anon, true
	}

	challenge := `Bearer realm="` + Realm + `"`
	if s.oauth != nil {
		challenge += `, resource_metadata="` + s.oauth.metadataURL(r, q.viaTrusted) + `"`
	}
	if presented {
		challenge += `, error="invalid_token"`
	}
	if tokenErr != nil {
		// RFC 6750 §3: what is wrong, for the developer of the client.
		challenge += `, error_description="` + challengeText(tokenRefusal(tokenErr)) + `"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	level, attrs := s.authFailed(q)
	if tokenErr != nil {
		attrs = append(attrs, "error", tokenErr.Error())
	}
	s.rejectAt(level, w, r, q, http.StatusUnauthorized, reason, attrs...)
	return principal{key: -1}, false
}

// tokenRefusal says to the client why its token was refused. A token whose key
// could not be found or fetched gets a fixed text: the underlying error names
// the JWKS URL and the issuer's failures, which are for the log only.
func tokenRefusal(err error) string {
	var te *tokenError
	switch {
	case errors.As(err, &te):
		return te.msg
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return "no key of the issuer verifies this token (unknown kid or algorithm, or the issuer's key set is unavailable)"
	}
	return err.Error()
}

// maxChallengeText bounds error_description: a header, not a report.
const maxChallengeText = 300

// challengeText makes s fit an RFC 6750 error_description: printable ASCII
// without '"' and '\' (§3), at most maxChallengeText bytes. Other bytes become
// '?', quotes become apostrophes.
func challengeText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < maxChallengeText; i++ {
		switch c := s[i]; {
		case c == '"':
			b.WriteByte('\'')
		case c == '\\' || c < 0x20 || c > 0x7e:
			b.WriteByte('?')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Claims are the validated claims of a JWT bearer token. The middleware puts
// them into the request context; [ClaimsFromContext] reads them back.
type Claims struct {
	Issuer   string
	Subject  string
	Audience []string
	Scopes   []string
	// Roles are the values of the roles claim (OAuthConfig.RolesClaim).
	Roles     []string
	ExpiresAt time.Time
	// Raw holds every claim as decoded from the token.
	Raw map[string]any
}

type claimsKey struct{}

// ClaimsFromContext returns the JWT claims stored by the middleware, or nil.
func ClaimsFromContext(ctx context.Context) *Claims {
	c, _ := ctx.Value(claimsKey{}).(*Claims)
	return c
}

// WithTokenInfo returns ctx carrying the scopes of ti (the go-sdk's
// [mcp.RequestExtra].TokenInfo), for callers of [Stack.ToolAllowed] whose
// context does not descend from the HTTP request. A nil ti returns ctx as is.
func WithTokenInfo(ctx context.Context, ti *auth.TokenInfo) context.Context {
	if ti == nil {
		return ctx
	}
	if c, ok := ti.Extra[tokenInfoClaimsKey].(*Claims); ok {
		ctx = context.WithValue(ctx, claimsKey{}, c)
		if id, ok := ti.Extra[tokenInfoIdentityKey].(*Identity); ok {
			ctx = withIdentity(ctx, id)
		}
		return ctx
	}
	return context.WithValue(ctx, claimsKey{}, &Claims{Subject: ti.UserID, Scopes: ti.Scopes, ExpiresAt: ti.Expiration})
}

// tokenInfoClaimsKey is where the full Claims travel inside auth.TokenInfo,
// tokenInfoIdentityKey the Identity (with the token, for the gateway).
const (
	tokenInfoClaimsKey   = "helix.claims"
	tokenInfoIdentityKey = "helix.identity"
)

// serveWithClaims hands the request on with the claims in its context, both
// under our key and as a go-sdk auth.TokenInfo. The latter is what the SDK
// passes to tool handlers (RequestExtra.TokenInfo) and what binds a
// Streamable HTTP session to its user, so a session id stolen by another user
// is refused. The SDK keeps that context key private; its own
// RequireBearerToken middleware is the only way to set it, so it is fed the
// token we already verified.
func (s *Stack) serveWithClaims(w http.ResponseWriter, r *http.Request, next http.Handler, p principal) {
	c := p.claims
	ti := &auth.TokenInfo{
		Scopes:     c.Scopes,
		Expiration: c.ExpiresAt,
		UserID:     oauthPrincipalID(c.Issuer, c.Subject), // unambiguous, like the principal
		Extra:      map[string]any{tokenInfoClaimsKey: c, tokenInfoIdentityKey: IdentityFromContext(r.Context())},
	}
	r = r.WithContext(context.WithValue(r.Context(), claimsKey{}, c))
	verified := func(context.Context, string, *http.Request) (*auth.TokenInfo, error) { return ti, nil }
	inject := auth.RequireBearerToken(verified, &auth.RequireBearerTokenOptions{
		AllowMissingExpiration: true,
		ClockSkew:              jwtLeeway, // the same tolerance verify applied
	})
	inject(next).ServeHTTP(w, r)
}

// String keeps claims printable without dumping the raw token contents.
func (c *Claims) String() string {
	return fmt.Sprintf("sub=%s iss=%s scopes=%v", c.Subject, c.Issuer, c.Scopes)
}
