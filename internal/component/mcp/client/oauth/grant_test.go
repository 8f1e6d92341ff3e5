package oauth

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// grantServer is an MCP server's protected resource metadata and its
// authorization server on one test server: metadata that Meta may change, and a
// token endpoint that Token answers. It records every token request.
type grantServer struct {
	*httptest.Server
	Meta  func(m map[string]any)
	Token func(r *http.Request, form url.Values) (int, map[string]any)
	// NoPRM: the server has no protected resource metadata (2025-03-26).
	NoPRM bool

	mu   sync.Mutex
	reqs []url.Values
}

func newGrantServer(t *testing.T) *grantServer {
	t.Helper()
	gs := &grantServer{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		if gs.NoPRM {
			http.NotFound(w, r)
			return
		}
		writeTestJSON(w, http.StatusOK, map[string]any{"resource": gs.URL + "/mcp", "authorization_servers": []string{gs.URL}})
	})
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		m := map[string]any{
			"issuer":                           gs.URL,
			"authorization_endpoint":           gs.URL + "/authorize",
			"token_endpoint":                   gs.URL + "/token",
			"response_types_supported":         []string{"code"},
			"code_challenge_methods_supported": []string{"S256"},
		}
		if gs.Meta != nil {
			gs.Meta(m)
		}
		writeTestJSON(w, http.StatusOK, m)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		gs.mu.Lock()
		gs.reqs = append(gs.reqs, r.PostForm)
		gs.mu.Unlock()
		status, body := gs.Token(r, r.PostForm)
		writeTestJSON(w, status, body)
	})
	gs.Server = httptest.NewServer(mux)
	t.Cleanup(gs.Close)
	return gs
}

func (gs *grantServer) requests() []url.Values {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	return append([]url.Values(nil), gs.reqs...)
}

// authorize runs c's Authorize as the transport would when the server answers 401
// to a request (with the token c last handed out, if any) and returns the token c
// then hands out.
func authorize(t *testing.T, c *ClientCredentials, serverURL string) (string, error) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, serverURL+"/mcp", nil)
	c.mu.Lock()
	if c.last != "" {
		req.Header.Set("Authorization", "Bearer "+c.last)
	}
	c.mu.Unlock()
	return authorizeWith(t, c, req, `Bearer resource_metadata="`+serverURL+`/.well-known/oauth-protected-resource/mcp"`)
}

// authorizeWith is authorize with the 401's challenge.
func authorizeWith(t *testing.T, c *ClientCredentials, req *http.Request, challenge string) (string, error) {
	t.Helper()
	resp := &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{"Www-Authenticate": {challenge}},
		Body: io.NopCloser(strings.NewReader(""))}
	if err := c.Authorize(context.Background(), req, resp); err != nil {
		return "", err
	}
	ts, err := c.TokenSource(context.Background())
	if err != nil || ts == nil {
		t.Fatalf("no token source after Authorize: %v", err)
	}
	tok, err := ts.Token()
	if err != nil {
		t.Fatal(err)
	}
	return tok.AccessToken, nil
}

func writeTestJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
