package security

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// identityOf sends one request with hdr through s and returns the Identity the
// handler found in the request's context (nil when none), and the token info
// identity restored through WithTokenInfo.
func identityOf(t *testing.T, s *Stack, hdr http.Header) (*Identity, *Identity) {
	t.Helper()
	var got, restored *Identity
	reached := false
	h := s.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached = true
		got = IdentityFromContext(r.Context())
		if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
			restored = IdentityFromContext(WithTokenInfo(context.Background(), ti))
		}
	}))
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}"))
	req.Header = hdr
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if !reached {
		t.Fatalf("the request was refused: %d %s", rec.Code, rec.Body.String())
	}
	return got, restored
}

func TestAPIKeyIdentity(t *testing.T) {
	s := mustStack(t, Config{APIKeys: []string{"plain-key", "alice-key", "bob-key"},
		APIKeyPrincipals: []KeyPrincipal{{}, {Name: "alice", Roles: []string{"support"}}}}, newFakeClock())
	for _, tc := range []struct {
		key  string
		want Identity
	}{
		{"alice-key", Identity{ID: "key#1", Name: "alice", Roles: []string{"support"}}},
		{"plain-key", Identity{ID: "key#0"}},
		{"bob-key", Identity{ID: "key#2"}}, // past the principals: nameless
	} {
		got, _ := identityOf(t, s, hdr("X-API-Key", tc.key))
		if got == nil || got.ID != tc.want.ID || got.Name != tc.want.Name || !slices.Equal(got.Roles, tc.want.Roles) || got.Token != "" {
			t.Errorf("key %s: identity %+v, want %+v", tc.key, got, tc.want)
		}
	}
	open := mustStack(t, Config{}, newFakeClock())
	if got, _ := identityOf(t, open, hdr()); got != nil {
		t.Errorf("an open server's caller has identity %v", got)
	}
	if _, err := New(Config{APIKeys: []string{"k"}, APIKeyPrincipals: []KeyPrincipal{{Name: "a"}, {Name: "b"}}}); err == nil {
		t.Error("more principals than keys were accepted")
	}
}

func TestOAuthIdentityWithRoles(t *testing.T) {
	clock := newFakeClock()
	is := newIssuer(t)
	is.addRSA("k")
	for _, tc := range []struct {
		claim  string
		mutate func(jwt.MapClaims)
	}{
		{"", func(c jwt.MapClaims) { c["roles"] = []any{"support", "triage"} }},
		{"groups", func(c jwt.MapClaims) { c["groups"] = "support triage" }},
		{"realm_access.roles", func(c jwt.MapClaims) { c["realm_access"] = map[string]any{"roles": []any{"support", "triage"}} }},
	} {
		t.Run(tc.claim, func(t *testing.T) {
			s := mustStack(t, Config{ServerID: "oauth", Auth: &OAuthConfig{Issuer: testIssuer, Audience: testAudience,
				JWKSURL: is.srv.URL, RolesClaim: tc.claim}}, clock)
			tok := is.token("k", clock.Now(), func(c jwt.MapClaims) { c["scope"] = "mcp tickets:write"; tc.mutate(c) })
			got, restored := identityOf(t, s, bearer(tok))
			for _, id := range []*Identity{got, restored} {
				if id == nil || id.Name != "alice" || !slices.Equal(id.Roles, []string{"support", "triage"}) ||
					!slices.Equal(id.Scopes, []string{"mcp", "tickets:write"}) || id.Token != tok || !strings.HasPrefix(id.ID, "sub:") {
					t.Errorf("identity %+v", id)
				}
			}
			// The token stays out of what is printed and logged.
			var logs strings.Builder
			slog.New(slog.NewTextHandler(&logs, nil)).Info("x", "who", got)
			if strings.Contains(fmt.Sprint(got), tok) || strings.Contains(logs.String(), tok) || !strings.Contains(logs.String(), "alice") {
				t.Errorf("printed %s, logged %s", got, logs.String())
			}
		})
	}
}

// Claims in a context (without the stack's Identity) give an identity without
// the token; a token info the stack did not make gives none.
func TestIdentityFromClaimsAlone(t *testing.T) {
	c := &Claims{Issuer: testIssuer, Subject: "alice", Roles: []string{"support"}, Scopes: []string{"mcp"}}
	ctx := WithTokenInfo(context.Background(), &auth.TokenInfo{UserID: "x", Extra: map[string]any{tokenInfoClaimsKey: c}})
	id := IdentityFromContext(ctx)
	if id == nil || id.Name != "alice" || id.ID != oauthPrincipalID(testIssuer, "alice") || id.Token != "" || !slices.Equal(id.Roles, c.Roles) {
		t.Errorf("identity %+v", id)
	}
	foreign := WithTokenInfo(context.Background(), &auth.TokenInfo{UserID: "someone", Scopes: []string{"mcp"}})
	if id := IdentityFromContext(foreign); id != nil {
		t.Errorf("a foreign token info gave %+v", id)
	}
}
