// Package oauthtest has an authorization server and an OAuth-protected MCP server
// for tests of Helix's MCP client authorization: small, in-process, and recording
// what the client sent them.
package oauthtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// AuthServer is an OAuth authorization server: metadata (RFC 8414), dynamic
// registration, an authorization endpoint that redirects at once (a person who
// always says yes), tokens for the authorization code, refresh and client
// credentials grants, and revocation.
type AuthServer struct {
	URL string

	// Settings, to change before the client runs.
	ExpiresIn      int                  // access token lifetime in seconds (default 3600)
	IssParameter   bool                 // advertise and send iss in the redirect
	RedirectIss    string               // the iss sent when set (a wrong one, say)
	NoRevocation   bool                 // advertise no revocation endpoint
	ClientSecret   string               // secret of the pre-registered client "pre-client"
	TokenErrorBody string               // when set, the token endpoint answers 400 with it
	TokenRedirect  string               // when set, the token endpoint redirects there (307)
	Meta           func(map[string]any) // changes the metadata document
	OIDCOnly       bool                 // serve the metadata only as OpenID configuration

	mu        sync.Mutex
	n         int
	codes     map[string]string   // code → scope
	access    map[string][]string // access token → scopes
	refresh   map[string][]string // refresh token → scopes
	authReqs  []url.Values
	tokenReqs []url.Values
	revoked   []string
	regs      int
}

// NewAuthServer starts an authorization server for the test.
func NewAuthServer(t testing.TB) *AuthServer {
	as := &AuthServer{ExpiresIn: 3600, ClientSecret: "pre-secret-0123456789",
		codes: map[string]string{}, access: map[string][]string{}, refresh: map[string][]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		if as.OIDCOnly {
			http.NotFound(w, r)
			return
		}
		as.metadata(w, r)
	})
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		if !as.OIDCOnly {
			http.NotFound(w, r)
			return
		}
		as.metadata(w, r)
	})
	mux.HandleFunc("GET /authorize", as.authorize)
	mux.HandleFunc("POST /token", as.token)
	mux.HandleFunc("POST /register", as.register)
	mux.HandleFunc("POST /revoke", as.revoke)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	as.URL = srv.URL
	return as
}

func (as *AuthServer) metadata(w http.ResponseWriter, _ *http.Request) {
	m := map[string]any{
		"issuer":                                as.URL,
		"authorization_endpoint":                as.URL + "/authorize",
		"token_endpoint":                        as.URL + "/token",
		"registration_endpoint":                 as.URL + "/register",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token", "client_credentials"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_post", "client_secret_basic", "none"},
		"scopes_supported":                      []string{"read", "admin"},
	}
	if !as.NoRevocation {
		m["revocation_endpoint"] = as.URL + "/revoke"
	}
	if as.IssParameter {
		m["authorization_response_iss_parameter_supported"] = true
	}
	if as.Meta != nil {
		as.Meta(m)
	}
	writeJSON(w, http.StatusOK, m)
}

func (as *AuthServer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	as.mu.Lock()
	as.authReqs = append(as.authReqs, q)
	as.n++
	code := fmt.Sprintf("code-%d", as.n)
	as.codes[code] = q.Get("scope")
	as.mu.Unlock()
	to, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || q.Get("code_challenge") == "" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	v := to.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	switch {
	case as.RedirectIss != "":
		v.Set("iss", as.RedirectIss)
	case as.IssParameter:
		v.Set("iss", as.URL)
	}
	to.RawQuery = v.Encode()
	http.Redirect(w, r, to.String(), http.StatusFound)
}

func (as *AuthServer) token(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	f := r.PostForm
	if id, secret, ok := r.BasicAuth(); ok {
		f.Set("client_id", id)
		f.Set("client_secret", secret)
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	as.tokenReqs = append(as.tokenReqs, f)
	if as.TokenRedirect != "" {
		http.Redirect(w, r, as.TokenRedirect, http.StatusTemporaryRedirect)
		return
	}
	if as.TokenErrorBody != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, as.TokenErrorBody)
		return
	}
	var scopes []string
	switch f.Get("grant_type") {
	case "authorization_code":
		s, ok := as.codes[f.Get("code")]
		if !ok || f.Get("code_verifier") == "" {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		delete(as.codes, f.Get("code"))
		scopes = strings.Fields(s)
	case "refresh_token":
		s, ok := as.refresh[f.Get("refresh_token")]
		if !ok {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "unknown refresh token"})
			return
		}
		scopes = s
	case "client_credentials":
		if f.Get("client_id") != "pre-client" || f.Get("client_secret") != as.ClientSecret {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
			return
		}
		scopes = strings.Fields(f.Get("scope"))
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	as.n++
	at, rt := fmt.Sprintf("access-%d-abcdefgh", as.n), fmt.Sprintf("refresh-%d-abcdefgh", as.n)
	as.access[at] = scopes
	resp := map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": as.ExpiresIn, "scope": strings.Join(scopes, " ")}
	if f.Get("grant_type") != "client_credentials" {
		as.refresh[rt] = scopes
		resp["refresh_token"] = rt
	}
	writeJSON(w, http.StatusOK, resp)
}

func (as *AuthServer) register(w http.ResponseWriter, r *http.Request) {
	var meta map[string]any
	_ = json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&meta)
	as.mu.Lock()
	as.regs++
	id := fmt.Sprintf("dcr-client-%d", as.regs)
	as.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{"client_id": id, "redirect_uris": meta["redirect_uris"], "token_endpoint_auth_method": "none"})
}

func (as *AuthServer) revoke(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	as.mu.Lock()
	defer as.mu.Unlock()
	tok := r.PostForm.Get("token")
	as.revoked = append(as.revoked, tok)
	delete(as.access, tok)
	delete(as.refresh, tok)
}

// Scopes returns the scopes of a valid access token.
func (as *AuthServer) Scopes(token string) ([]string, bool) {
	as.mu.Lock()
	defer as.mu.Unlock()
	s, ok := as.access[token]
	return s, ok
}

// Forget makes an access token invalid, as a server-side revocation or restart
// would.
func (as *AuthServer) Forget(token string) {
	as.mu.Lock()
	defer as.mu.Unlock()
	delete(as.access, token)
}

// AuthRequests returns the query of each authorization request.
func (as *AuthServer) AuthRequests() []url.Values {
	as.mu.Lock()
	defer as.mu.Unlock()
	return slices.Clone(as.authReqs)
}

// TokenRequests returns the form of each token request (client credentials of a
// Basic header included).
func (as *AuthServer) TokenRequests() []url.Values {
	as.mu.Lock()
	defer as.mu.Unlock()
	return slices.Clone(as.tokenReqs)
}

// Revoked returns the tokens revoked, in order.
func (as *AuthServer) Revoked() []string {
	as.mu.Lock()
	defer as.mu.Unlock()
	return slices.Clone(as.revoked)
}

// Registrations returns how many clients registered dynamically.
func (as *AuthServer) Registrations() int {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.regs
}

// ResourceServer is an MCP server (Streamable HTTP at /mcp, one tool "whoami")
// that takes the tokens of an AuthServer.
type ResourceServer struct {
	URL string // the server's base; the MCP endpoint is URL+"/mcp"
	AS  *AuthServer

	// CallScope, when set, is needed (besides a valid token) for tools/call:
	// without it the server answers 403 insufficient_scope.
	CallScope string
	// PRM changes the protected resource metadata document; PRMStatus, when set,
	// is the status its location answers (404: none).
	PRM       func(map[string]any)
	PRMStatus int
	// Unnamed leaves resource_metadata out of the 401 challenge: the client has to
	// look at the well-known location.
	Unnamed bool

	mu       sync.Mutex
	statuses []int
}

// NewResourceServer starts an MCP server protected by as.
func NewResourceServer(t testing.TB, as *AuthServer) *ResourceServer {
	rs := &ResourceServer{AS: as}
	s := sdk.NewServer(&sdk.Implementation{Name: "protected", Version: "1.0.0"}, nil)
	s.AddTool(&sdk.Tool{Name: "whoami", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "authorized"}}}, nil
		})
	mcpHandler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", rs.metadata)
	mux.Handle("/mcp", rs.guard(mcpHandler))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	rs.URL = srv.URL
	return rs
}

// Endpoint is the MCP endpoint.
func (rs *ResourceServer) Endpoint() string { return rs.URL + "/mcp" }

// Statuses returns the HTTP status of each MCP request that reached the guard.
func (rs *ResourceServer) Statuses() []int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return slices.Clone(rs.statuses)
}

func (rs *ResourceServer) metadata(w http.ResponseWriter, _ *http.Request) {
	if rs.PRMStatus != 0 {
		http.Error(w, "no metadata", rs.PRMStatus)
		return
	}
	m := map[string]any{"resource": rs.Endpoint(), "authorization_servers": []string{rs.AS.URL}, "scopes_supported": []string{"read"}}
	if rs.PRM != nil {
		rs.PRM(m)
	}
	writeJSON(w, http.StatusOK, m)
}

func (rs *ResourceServer) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		status := rs.check(r.Header.Get("Authorization"), msg.Method)
		rs.mu.Lock()
		rs.statuses = append(rs.statuses, status)
		rs.mu.Unlock()
		challenge := fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp", scope="read"`, rs.URL)
		if rs.Unnamed {
			challenge = `Bearer scope="read"`
		}
		switch status {
		case http.StatusUnauthorized:
			w.Header().Set("WWW-Authenticate", challenge)
			http.Error(w, "unauthorized", status)
		case http.StatusForbidden:
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope="read %s", resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, rs.CallScope, rs.URL))
			http.Error(w, "forbidden", status)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

func (rs *ResourceServer) check(authz, method string) int {
	tok, ok := strings.CutPrefix(authz, "Bearer ")
	if !ok {
		return http.StatusUnauthorized
	}
	scopes, ok := rs.AS.Scopes(tok)
	if !ok {
		return http.StatusUnauthorized
	}
	if method == "tools/call" && rs.CallScope != "" && !slices.Contains(scopes, rs.CallScope) {
		return http.StatusForbidden
	}
	return http.StatusOK
}

// Browser is an Open function for a LoginConfig: it follows the authorization
// URL's redirects as a browser would, which brings the code to the loopback
// listener.
func Browser(ctx context.Context, authURL string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
