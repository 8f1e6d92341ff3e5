package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/arvenza/helix/internal/component/mcp/security"
)

// AllowAll is the Guard of a gateway without policies: everyone sees and may
// call everything, results pass untouched.
type AllowAll struct{}

func (AllowAll) Visible(context.Context, *Principal, Kind, string) bool { return true }
func (AllowAll) Before(context.Context, *Call) error                    { return nil }
func (AllowAll) WantsResult(*Call) bool                                 { return false }
func (AllowAll) After(_ context.Context, _ *Call, r json.RawMessage) (json.RawMessage, error) {
	return r, nil
}
func (AllowAll) Timeout(*Call) time.Duration { return 0 }

// NoAudit is the Auditor of a gateway without audit:.
type NoAudit struct{}

func (NoAudit) Record(context.Context, *Record) {}
func (NoAudit) Close(context.Context) error     { return nil }

// GatewayCredentials are the credentials of an upstream with credentials:
// gateway: the pool's HTTP client already carries its auth:, so a call adds
// nothing and every caller may share sessions.
type GatewayCredentials struct{}

func (GatewayCredentials) Header(context.Context, *Principal) (http.Header, error) { return nil, nil }
func (GatewayCredentials) SessionKey(*Principal) string                            { return "" }

// PrincipalOf is who the security stack authenticated for the HTTP request
// whose context is rctx (nil outside HTTP) and whose headers are h: the
// principal id, the OAuth subject and scopes, and the bearer token. API key
// names and roles come from the policy package's naming, which pkg/app puts in
// Options.Principal.
func PrincipalOf(rctx context.Context, h http.Header) *Principal {
	p := &Principal{}
	if rctx == nil {
		return p
	}
	p.ID = security.PrincipalFromContext(rctx)
	if c := security.ClaimsFromContext(rctx); c != nil {
		p.Name, p.Scopes = c.Subject, c.Scopes
	}
	if p.ID != "" && h != nil {
		if tok, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer "); ok {
			p.Token = strings.TrimSpace(tok)
		}
	}
	return p
}

// principalName is how a record names p: its name, else its id, else anonymous.
func principalName(p *Principal) string {
	switch {
	case p == nil:
		return "anonymous"
	case p.Name != "":
		return p.Name
	case p.ID != "":
		return p.ID
	}
	return "anonymous"
}
