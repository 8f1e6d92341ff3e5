package security

import (
	"context"
	"fmt"
	"log/slog"
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

// Identity is who a request acts as, as policies see it: the principal id, the
// name and roles of its API key entry or the subject and roles claim of its
// token, the token's scopes, and the bearer token itself for a gateway that
// passes it on or exchanges it. Token is a secret: Identity's String and
// LogValue leave it out; never log it, never put it in an error.
type Identity struct {
	ID     string
	Name   string
	Roles  []string
	Scopes []string
	Token  string
}

func (i *Identity) String() string {
	return fmt.Sprintf("id=%s name=%s roles=%v scopes=%v", i.ID, i.Name, i.Roles, i.Scopes)
}

// LogValue keeps the token out of structured logs.
func (i *Identity) LogValue() slog.Value {
	return slog.GroupValue(slog.String("id", i.ID), slog.String("name", i.Name),
		slog.Any("roles", i.Roles), slog.Any("scopes", i.Scopes))
}

type identityKey struct{}

func withIdentity(ctx context.Context, id *Identity) context.Context {
	if id == nil {
		return ctx
	}
	return context.WithValue(ctx, identityKey{}, id)
}

// identity is what the stack knows of p; nil for a caller without credentials.
func (s *Stack) identity(p principal) *Identity {
	switch {
	case p.key >= 0:
		id := &Identity{ID: p.id}
		if p.key < len(s.keyWho) {
			id.Name, id.Roles = s.keyWho[p.key].Name, s.keyWho[p.key].Roles
		}
		return id
	case p.claims != nil:
		return &Identity{ID: p.id, Name: p.claims.Subject, Roles: p.claims.Roles, Scopes: p.claims.Scopes, Token: p.token}
	}
	return nil
}

// IdentityFromContext returns who the request of ctx acts as: what the stack
// put in the HTTP request's context, or what [WithTokenInfo] restored from the
// go-sdk's token info (claims without an identity give one without the token).
// It returns nil for a request without credentials.
func IdentityFromContext(ctx context.Context) *Identity {
	if id, ok := ctx.Value(identityKey{}).(*Identity); ok {
		return id
	}
	// Claims the stack verified carry their issuer; those WithTokenInfo made up
	// from a foreign token info (a user id only) name nobody policies know.
	if c := ClaimsFromContext(ctx); c != nil && c.Issuer != "" && c.Subject != "" {
		return &Identity{ID: oauthPrincipalID(c.Issuer, c.Subject), Name: c.Subject, Roles: c.Roles, Scopes: c.Scopes}
	}
	return nil
}
