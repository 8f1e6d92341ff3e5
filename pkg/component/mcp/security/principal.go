package security

import "context"

type principalKey struct{}

// withPrincipal records who the request acts as, for the MCP transports: a
// session belongs to the principal that opened it.
func withPrincipal(ctx context.Context, p principal) context.Context {
	if p.claims == nil && !isKeyPrincipal(p.id) {
		// No credential (an open server, or a trusted proxy that sent none):
		// nobody in particular.
		return ctx
	}
	return context.WithValue(ctx, principalKey{}, p.id)
}

func isKeyPrincipal(id string) bool { return len(id) > 4 && id[:4] == "key#" }

// PrincipalFromContext returns the principal the security stack authenticated
// for the request whose context ctx is: "key#<index>" for an API key, or
// "sub:<issuer>|<subject>" for an OAuth token. It returns "" when the request
// carried no valid credential (an open server, or a trusted proxy forwarding
// without one) or did not pass through a stack.
func PrincipalFromContext(ctx context.Context) string {
	id, _ := ctx.Value(principalKey{}).(string)
	return id
}
