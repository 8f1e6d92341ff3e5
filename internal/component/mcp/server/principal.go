package server

import (
	"context"

	"github.com/arvenza/helix/internal/component/mcp/security"
	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/exchange"
)

// withPrincipalHeader returns ctx carrying the exchange header
// exchange.HeaderPrincipal for the authenticated caller of a tools/call, so
// that a workflow (or a pipeline's filter) can bind data to the caller with
// ${principal.subject} or ${principal.claims.tenant}. The header is reserved:
// set here from what the security stack verified, never from the request, so
// a caller cannot claim to be someone else. Anonymous calls carry none.
func withPrincipalHeader(ctx context.Context) context.Context {
	p := principalValue(ctx)
	if p == nil {
		return ctx
	}
	return tool.WithHeaders(ctx, map[string]any{exchange.HeaderPrincipal: p})
}

// principalValue describes the caller of ctx as plain JSON values: id (the
// principal id), name (the API key's name or the token's subject), subject (the
// token's subject, else the API key's name), issuer, roles, scopes and claims
// (every claim of the token). nil without a credential.
func principalValue(ctx context.Context) map[string]any {
	id := security.IdentityFromContext(ctx)
	claims := security.ClaimsFromContext(ctx)
	if id == nil && (claims == nil || claims.Subject == "") {
		return nil
	}
	p := map[string]any{}
	if id != nil {
		p["id"], p["name"], p["subject"] = id.ID, id.Name, id.Name
		p["roles"], p["scopes"] = jsonList(id.Roles), jsonList(id.Scopes)
	}
	if claims != nil {
		p["subject"], p["issuer"] = claims.Subject, claims.Issuer
		if _, ok := p["name"]; !ok {
			p["name"] = claims.Subject
		}
		if len(claims.Roles) > 0 {
			p["roles"] = jsonList(claims.Roles)
		}
		if len(claims.Scopes) > 0 {
			p["scopes"] = jsonList(claims.Scopes)
		}
		if claims.Raw != nil {
			p["claims"] = exchange.DeepCopy(claims.Raw)
		}
	}
	return p
}

// jsonList is l as a JSON list ([]any), so that placeholders and filters walk it
// like any decoded JSON.
func jsonList(l []string) []any {
	out := make([]any, len(l))
	for i, s := range l {
		out[i] = s
	}
	return out
}
