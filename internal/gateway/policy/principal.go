package policy

import (
	"context"

	"github.com/arvenza/helix/internal/component/mcp/security"
	"github.com/arvenza/helix/internal/gateway"
)

// PrincipalFromContext is who the request of ctx acts for, as the server's
// security stack authenticated it: an API key's entry (its name and roles) or
// an OAuth token (its subject, scopes, the roles of the roles claim, and the
// token itself for passthrough and exchange). ctx is the HTTP request's context,
// or one that security.WithTokenInfo filled from the go-sdk's token info. A
// caller without credentials gets an empty Principal, never nil.
func PrincipalFromContext(ctx context.Context) *gateway.Principal {
	id := security.IdentityFromContext(ctx)
	if id == nil {
		return &gateway.Principal{}
	}
	return &gateway.Principal{ID: id.ID, Name: id.Name, Roles: id.Roles, Scopes: id.Scopes, Token: id.Token}
}
