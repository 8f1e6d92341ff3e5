// Package creds decides how the gateway authenticates to an upstream on behalf
// of a caller (gateway.Credentials), one of three ways per upstream:
//
//   - gateway (the default): the gateway's own credentials, set once on the
//     upstream's connection by its auth: block; nothing per caller.
//   - passthrough: the caller's bearer token, only when the token (already
//     verified by the server's security stack) names the upstream in its aud.
//   - exchange: the caller's token exchanged at a security token service for
//     one minted for the upstream (RFC 8693), cached until shortly before it
//     expires.
//
// Tokens sent to an upstream never reach the client: Scrub takes them out of
// every error the relay hands back.
package creds

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/arvenza/helix/internal/component/mcp/security"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
)

// CodeRefused is the JSON-RPC error code of a call refused because the caller's
// credentials may not be used for the upstream (a server error of the
// implementation-defined range).
const CodeRefused = -32001

// Options tune Credentials; the zero value is ready.
type Options struct {
	// HTTPClient calls the token exchange endpoint; nil means a client with a
	// 10-second timeout that follows no redirect.
	HTTPClient *http.Client
	// Now is the clock of the exchange cache; nil means time.Now.
	Now func() time.Time
	// ExpiryMargin is how long before its expiry an exchanged token stops being
	// reused (so that it cannot expire on its way to the upstream); 0 means 30s.
	ExpiryMargin time.Duration
	// MaxCached bounds the exchanged tokens kept; 0 means 10,000.
	MaxCached int
}

// New returns the Credentials of the upstream cfg. cfg must pass Check; New
// reports the first problem Check finds otherwise.
func New(cfg config.UpstreamConfig, opts Options) (gateway.Credentials, error) {
	if errs := Check(cfg); len(errs) > 0 {
		return nil, errs[0]
	}
	switch cfg.Credentials {
	case config.CredentialsPassthrough:
		return &passthrough{upstream: cfg.ID, audience: cfg.Audience}, nil
	case config.CredentialsExchange:
		return newExchange(cfg, opts), nil
	default:
		return gatewayCredentials{}, nil
	}
}

// gatewayCredentials are the gateway's own: the upstream connection's auth:
// block authenticates every request, whoever calls, so sessions may be shared.
type gatewayCredentials struct{}

func (gatewayCredentials) Header(context.Context, *gateway.Principal) (http.Header, error) {
	return nil, nil
}

func (gatewayCredentials) SessionKey(*gateway.Principal) string { return "" }

// passthrough sends the caller's own bearer token upstream, when the token was
// minted for that upstream too.
type passthrough struct {
	upstream string
	audience string
}

// Header checks the audience of the caller's token: its claims as the
// security stack verified them (security.ClaimsFromContext, which a request's
// context carries, or one made with security.WithTokenInfo). A token whose aud
// does not name the upstream is refused: passing it on would let the upstream
// replay it against the gateway or any other service of that audience.
func (c *passthrough) Header(ctx context.Context, p *gateway.Principal) (http.Header, error) {
	if p == nil || p.Token == "" {
		return nil, refuse("upstream %s takes the caller's own OAuth token, and this call came without one", c.upstream)
	}
	claims := security.ClaimsFromContext(ctx)
	if claims == nil {
		return nil, refuse("upstream %s takes the caller's own OAuth token, and this call's credential is no verified OAuth token (an API key cannot be passed through)", c.upstream)
	}
	if !slices.Contains(claims.Audience, c.audience) {
		return nil, refuse("the caller's token is not for upstream %s: its audience does not include %s", c.upstream, c.audience)
	}
	return bearer(p.Token), nil
}

// SessionKey keeps the sessions of different subjects apart; a caller's
// renewed token keeps its sessions.
func (c *passthrough) SessionKey(p *gateway.Principal) string { return subjectKey(p) }

// subjectKey derives a session key from who the caller is, never from the
// token: a digest of the principal's id, so that the key (which may be logged)
// names nobody either.
func subjectKey(p *gateway.Principal) string {
	id := ""
	if p != nil {
		id = p.ID
	}
	if id == "" {
		// An anonymous caller is refused by Header; its key is still one of its own.
		return "anonymous"
	}
	sum := sha256.Sum256([]byte(id))
	return "subject:" + hex.EncodeToString(sum[:12])
}

func bearer(token string) http.Header {
	return http.Header{"Authorization": {"Bearer " + token}}
}

func refuse(format string, args ...any) *gateway.Refusal {
	return &gateway.Refusal{Code: CodeRefused, Message: fmt.Sprintf(format, args...), Reason: gateway.OutcomeDenied}
}
