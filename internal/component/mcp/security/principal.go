package security

import (
	"context"
	"strconv"
	"strings"
)

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

// Principal ids are also rate-limit keys (with the client addresses of
// request.clientKey), session owners and parts of agent session keys, so two
// different callers must never get the same id. Each kind starts with its own
// tag — "key#", "sub:", "ip:" — none a prefix of another, so ids of different
// kinds never meet; within "sub:" the issuer and the subject are each
// length-prefixed, so no issuer or subject, separators and all, can end where
// another pair's does (iss "a|b" sub "c" and iss "a" sub "b|c" differ). An id is
// self-delimiting, so joining it with other parts stays unambiguous too.

// keyPrincipalID is the principal of the index-th configured API key.
func keyPrincipalID(index int) string { return "key#" + strconv.Itoa(index) }

// oauthPrincipalID is the principal of a token: "sub:<len>:<issuer><len>:<subject>".
func oauthPrincipalID(issuer, subject string) string {
	return "sub:" + lengthPrefixed(issuer) + lengthPrefixed(subject)
}

// lengthPrefixed is s preceded by its length in bytes and a colon.
func lengthPrefixed(s string) string { return strconv.Itoa(len(s)) + ":" + s }

func isKeyPrincipal(id string) bool { return strings.HasPrefix(id, "key#") }

// PrincipalFromContext returns the principal the security stack authenticated
// for the request whose context ctx is: "key#<index>" for an API key, or
// "sub:<len>:<issuer><len>:<subject>" for an OAuth token (lengths in bytes, so
// that no issuer or subject can pass for another pair). It returns "" when the
// request carried no valid credential (an open server, or a trusted proxy
// forwarding without one) or did not pass through a stack.
func PrincipalFromContext(ctx context.Context) string {
	id, _ := ctx.Value(principalKey{}).(string)
	return id
}
