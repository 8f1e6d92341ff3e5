package policy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/arvenza/helix/internal/component/mcp/security"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
)

// The principals of API keys written as {key, name, roles} reach policies
// through the security stack: alice's role lets her call what bob may not.
func TestPrincipalsFromAPIKeys(t *testing.T) {
	t.Parallel()
	stack, err := security.New(security.Config{ServerID: "gw", APIKeys: []string{"alice-key", "bob-key"},
		APIKeyPrincipals: []security.KeyPrincipal{{Name: "alice", Roles: []string{"support"}}, {Name: "bob"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer stack.Close()
	g := mustGuard(t, []config.PolicyConfig{{Tools: []string{"github.*"}, Allow: &config.PrincipalMatch{Roles: []string{"support"}}}}, Options{})
	who := func(key string) *gateway.Principal {
		var p *gateway.Principal
		h := stack.Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { p = PrincipalFromContext(r.Context()) }))
		req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		req.Header.Set("X-API-Key", key)
		h.ServeHTTP(httptest.NewRecorder(), req)
		return p
	}
	a, b := who("alice-key"), who("bob-key")
	if a == nil || a.Name != "alice" || a.ID != "key#0" || !slices.Equal(a.Roles, []string{"support"}) || a.Token != "" {
		t.Fatalf("alice is %+v", a)
	}
	if b == nil || b.Name != "bob" || len(b.Roles) != 0 {
		t.Fatalf("bob is %+v", b)
	}
	if err := g.Before(context.Background(), call(a, "github.search", `{}`)); err != nil {
		t.Errorf("alice: %v", err)
	}
	if err := g.Before(context.Background(), call(b, "github.search", `{}`)); err == nil {
		t.Error("bob was let through")
	}
	if p := PrincipalFromContext(context.Background()); p == nil || p.ID != "" || p.Name != "" {
		t.Errorf("no credentials: %+v", p)
	}
}
