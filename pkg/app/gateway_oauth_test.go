package app_test

import (
	"testing"

	"github.com/arvenza/helix/internal/component/mcp/client/oauth/oauthtest"
)

// TestGatewayUpstreamOAuthDiscover: an upstream whose auth: is the oauth2
// discover form (the token endpoint found from the upstream's metadata) is
// authorized as an mcp:// target is: the gateway gets a client-credentials
// token for it and its tools answer, through the pool's sessions.
func TestGatewayUpstreamOAuthDiscover(t *testing.T) {
	t.Parallel()
	as := oauthtest.NewAuthServer(t)
	rs := oauthtest.NewResourceServer(t, as)
	a := startYAML(t, `
mcps:
  - id: gw
    addr: "127.0.0.1:0"
    upstreams:
      - id: up
        url: `+rs.Endpoint()+`
        auth: { type: oauth2, discover: true, client_id: pre-client, client_secret: "`+as.ClientSecret+`", scopes: read }
`)
	cs := mcpSession(t, a, "gw")
	for i := range 2 {
		if text, isErr := callTool(t, cs, "up.whoami", map[string]any{}); text != "authorized" || isErr {
			t.Fatalf("call %d: up.whoami = %q (isError %v)", i, text, isErr)
		}
	}
	reqs := as.TokenRequests()
	if len(reqs) == 0 || reqs[0].Get("grant_type") != "client_credentials" || reqs[0].Get("resource") != rs.Endpoint() {
		t.Errorf("token requests %v, want client_credentials for the upstream as resource", reqs)
	}
}
