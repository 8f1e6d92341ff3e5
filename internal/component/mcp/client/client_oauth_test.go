package client_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
	"github.com/arvenza/helix/internal/component/mcp/client/oauth"
	"github.com/arvenza/helix/internal/component/mcp/client/oauth/oauthtest"
)

// The discover form: only a client, the token endpoint found from the server.
func TestClientAuthOAuth2Discover(t *testing.T) {
	t.Parallel()
	as := oauthtest.NewAuthServer(t)
	rs := oauthtest.NewResourceServer(t, as)
	target := "mcp://" + hostPort(t, rs.URL) + "/mcp/whoami"
	h := authHarness(t, target, map[string]any{
		"type": "oauth2", "discover": true, "client_id": "pre-client", "client_secret": as.ClientSecret, "scopes": "read",
	})
	for i := range 2 {
		ex, err := h.call(t, map[string]any{}, nil)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if got := ex.In().Body(); got != "authorized" {
			t.Fatalf("call %d: body %q", i, got)
		}
	}
	reqs := as.TokenRequests()
	if len(reqs) != 1 {
		t.Fatalf("token requests %d, want 1 (the token is reused)", len(reqs))
	}
	if f := reqs[0]; f.Get("grant_type") != "client_credentials" || f.Get("resource") != rs.Endpoint() || f.Get("scope") != "read" {
		t.Errorf("token request %v, want client_credentials for the server as resource with the configured scope", f)
	}

	// The server stops taking the token: the next call gets a new one.
	as.Forget("access-1-abcdefgh")
	if _, err := h.call(t, map[string]any{}, nil); err != nil {
		t.Fatalf("call after the token was refused: %v", err)
	}
	if n := len(as.TokenRequests()); n != 2 {
		t.Errorf("token requests %d, want a second one after the 401", n)
	}
}

func TestClientAuthOAuth2DiscoverRefusesHostileMetadata(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		prm  func(map[string]any)
		meta func(map[string]any)
		want string
	}{
		{"resource of another server", func(m map[string]any) { m["resource"] = "https://elsewhere.example.com/mcp" }, nil, "protected resource metadata"},
		{"huge resource metadata", func(m map[string]any) { m["padding"] = strings.Repeat("x", 2<<20) }, nil, "protected resource metadata"},
		{"plain-http authorization server elsewhere", func(m map[string]any) { m["authorization_servers"] = []string{"http://auth.example.com"} }, nil, "does not use HTTPS"},
		{"issuer of another server", nil, func(m map[string]any) { m["issuer"] = "https://other.example.com" }, "does not match issuer"},
		{"plain-http token endpoint elsewhere", nil, func(m map[string]any) { m["token_endpoint"] = "http://auth.example.com/token" }, "does not use HTTPS"},
		{"no client credentials grant", nil, func(m map[string]any) { m["grant_types_supported"] = []string{"authorization_code"} }, "does not offer the client_credentials grant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			as := oauthtest.NewAuthServer(t)
			as.Meta = tc.meta
			rs := oauthtest.NewResourceServer(t, as)
			rs.PRM = tc.prm
			h := authHarness(t, "mcp://"+hostPort(t, rs.URL)+"/mcp/whoami?timeout=10s", map[string]any{
				"type": "oauth2", "discover": true, "client_id": "pre-client", "client_secret": as.ClientSecret,
			})
			_, err := h.call(t, map[string]any{}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), as.ClientSecret) {
				t.Errorf("the client secret shows in %v", err)
			}
			if len(as.TokenRequests()) != 0 {
				t.Error("a token was asked for despite the metadata")
			}
		})
	}
}

// The login form: a workflow uses what helix mcp login stored.
func TestClientAuthOAuth2Login(t *testing.T) {
	t.Parallel()
	as := oauthtest.NewAuthServer(t)
	rs := oauthtest.NewResourceServer(t, as)
	dir := t.TempDir()
	store := oauth.Store{Dir: dir}
	target := "mcp://" + hostPort(t, rs.URL) + "/mcp/whoami"

	cfg, err := mcpclient.ParseAuth(map[string]any{"type": "oauth2", "login": true})
	if err != nil {
		t.Fatal(err)
	}
	cfg.LoginDir = dir
	before := authHarnessConfig(t, target, cfg)
	_, err = before.call(t, map[string]any{}, nil)
	if err == nil || !strings.Contains(err.Error(), "helix mcp login "+rs.Endpoint()) {
		t.Fatalf("without a login: err = %v, want the command to run", err)
	}

	h, err := oauth.NewHandler(rs.Endpoint(), oauth.LoginConfig{Store: store, Interactive: true, Open: oauthtest.Browser})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := mcpclient.NewConn(mcpclient.Config{Endpoint: rs.Endpoint(), OAuth: h})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ListTools(context.Background()); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close()

	after := authHarnessConfig(t, target, cfg)
	ex, err := after.call(t, map[string]any{}, nil)
	if err != nil || ex.In().Body() != "authorized" {
		t.Fatalf("with the login: %v", err)
	}
	if n := len(as.AuthRequests()); n != 1 {
		t.Errorf("authorizations %d: the workflow must not start one", n)
	}
}

func TestParseAuthOAuth2Forms(t *testing.T) {
	t.Parallel()
	got, err := mcpclient.ParseAuth(map[string]any{"type": "oauth2", "discover": true, "client_id": "i", "client_secret": "s", "scopes": []any{"a"}})
	if err != nil || !got.Discover || got.TokenURL != "" || !slices.Equal(got.Scopes, []string{"a"}) {
		t.Fatalf("discover form: %+v, %v", got, err)
	}
	if got, err := mcpclient.ParseAuth(map[string]any{"type": "oauth2", "login": true}); err != nil || !got.Login {
		t.Fatalf("login form: %+v, %v", got, err)
	}
	for _, tc := range []struct {
		in   map[string]any
		want string
	}{
		{map[string]any{"type": "oauth2", "discover": true, "token_url": "https://as/token", "client_id": "i", "client_secret": "s"},
			"discover and token_url exclude each other: drop token_url"},
		{map[string]any{"type": "oauth2", "discover": true, "client_id": "i"}, "needs client_secret"},
		{map[string]any{"type": "oauth2", "login": true, "client_id": "i", "discover": true}, "drop client_id, discover"},
		{map[string]any{"type": "oauth2", "discover": "yes", "client_id": "i", "client_secret": "s"}, "discover must be true or false"},
		{map[string]any{"type": "oauth2", "client_id": "i", "client_secret": "s"}, "needs token_url, discover: true"},
	} {
		if _, err := mcpclient.ParseAuth(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseAuth(%v) err = %v, want %q", tc.in, err, tc.want)
		}
	}
}
