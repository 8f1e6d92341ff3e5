package oauth

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// TestDiscoverResourceFallbacks covers where the client credentials handler looks
// for the protected resource metadata.
func TestDiscoverResourceFallbacks(t *testing.T) {
	t.Parallel()
	serve := func(paths map[string]func(base string) map[string]any) *httptest.Server {
		mux := http.NewServeMux()
		srv := httptest.NewServer(mux)
		for p, doc := range paths {
			mux.HandleFunc("GET "+p, func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(doc(srv.URL))
			})
		}
		t.Cleanup(srv.Close)
		return srv
	}
	prm := func(resource, as string) func(string) map[string]any {
		return func(base string) map[string]any {
			return map[string]any{"resource": base + resource, "authorization_servers": []string{base + as}}
		}
	}
	for _, tc := range []struct {
		name    string
		paths   map[string]func(string) map[string]any
		named   string // resource_metadata of the challenge, relative to the server
		wantAS  string // relative to the server
		wantRes string
	}{
		{"named in the challenge", map[string]func(string) map[string]any{"/custom/prm.json": prm("/mcp", "/as1")}, "/custom/prm.json", "/as1", "/mcp"},
		{"path-based well-known", map[string]func(string) map[string]any{"/.well-known/oauth-protected-resource/mcp": prm("/mcp", "/as2")}, "", "/as2", "/mcp"},
		{"root well-known", map[string]func(string) map[string]any{"/.well-known/oauth-protected-resource": prm("", "/as3")}, "", "/as3", ""},
		{"none: the server is its own authorization server", nil, "", "", "/mcp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := serve(tc.paths)
			var challenges []oauthex.Challenge
			if tc.named != "" {
				challenges = []oauthex.Challenge{{Scheme: "bearer", Params: map[string]string{"resource_metadata": srv.URL + tc.named}}}
			}
			got, err := discoverResource(context.Background(), challenges, srv.URL+"/mcp", srv.Client())
			if err != nil {
				t.Fatal(err)
			}
			if got.AuthorizationServers[0] != srv.URL+tc.wantAS || got.Resource != srv.URL+tc.wantRes {
				t.Errorf("got AS %v resource %q, want %s and %s", got.AuthorizationServers, got.Resource, srv.URL+tc.wantAS, srv.URL+tc.wantRes)
			}
		})
	}
}
