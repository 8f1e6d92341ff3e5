package app_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	testIssuer   = "https://issuer.test/realms/helix"
	testResource = "https://mcp.test/mcp"
)

// issuer signs tokens with a key whose public half its JWKS endpoint serves.
type issuer struct {
	key  *rsa.PrivateKey
	jwks *httptest.Server
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
		"n": base64.RawURLEncoding.EncodeToString(key.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(key.E)).Bytes()),
	}}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
	}))
	t.Cleanup(srv.Close)
	return &issuer{key: key, jwks: srv}
}

// token signs claims (defaults: this issuer, the resource as audience, valid for an
// hour) with key, or the issuer's key when key is nil.
func (is *issuer) token(t *testing.T, key *rsa.PrivateKey, override jwt.MapClaims) string {
	t.Helper()
	claims := jwt.MapClaims{
		"iss": testIssuer, "aud": testResource, "sub": "ada",
		"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix(),
	}
	for k, v := range override {
		claims[k] = v
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = "k1"
	if key == nil {
		key = is.key
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// OAuth resource-server mode configured in YAML: JWTs are verified against the
// issuer's JWKS, the metadata is public, and per-tool scopes reach tools/list and
// tools/call through the go-sdk's token info.
func TestOAuthEndToEnd(t *testing.T) {
	t.Parallel()
	is := newIssuer(t)
	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	yaml := `
helix:
  management: { enabled: false }
` + fourWorkflows + `
mcps:
  - id: secured
    addr: "127.0.0.1:0"
    expose: [code-assistant, admin-tool]
    auth:
      issuer: ` + testIssuer + `
      resource_url: ` + testResource + `   # also the audience
      jwks_url: ` + is.jwks.URL + `/certs
      scopes:
        "*": [mcp]
        admin-tool: [admin]
`
	a := startSecure(t, yaml, nil)
	if a.ManagementAddr() != "" {
		t.Errorf("management server runs although disabled: %s", a.ManagementAddr())
	}
	rc := newRawClient(t)
	serverBase := serverURL(t, a, "secured")
	endpoint := serverBase + "/mcp"

	bearer := func(tok string) []string { return []string{"Authorization", "Bearer " + tok} }
	for _, tc := range []struct {
		name string
		kv   []string
		want int
	}{
		{"valid", bearer(is.token(t, nil, jwt.MapClaims{"scope": "mcp"})), 200},
		{"no token", nil, 401},
		{"expired", bearer(is.token(t, nil, jwt.MapClaims{"exp": time.Now().Add(-time.Hour).Unix()})), 401},
		{"wrong audience", bearer(is.token(t, nil, jwt.MapClaims{"aud": "https://other.test/mcp"})), 401},
		{"wrong issuer", bearer(is.token(t, nil, jwt.MapClaims{"iss": "https://evil.test"})), 401},
		{"bad signature", bearer(is.token(t, otherKey, nil)), 401},
		{"not a JWT", bearer("mcp-public-key"), 401},
	} {
		resp, body := rc.post(endpoint, initBody, tc.kv...)
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %d %q, want %d", tc.name, resp.StatusCode, body, tc.want)
			continue
		}
		if tc.want == 401 {
			want := `resource_metadata="https://mcp.test/.well-known/oauth-protected-resource/mcp"`
			if h := resp.Header.Get("WWW-Authenticate"); !strings.Contains(h, want) {
				t.Errorf("%s: WWW-Authenticate %q lacks %s", tc.name, h, want)
			}
		}
	}

	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		resp, body := rc.do(http.MethodGet, serverBase+path, nil)
		var md struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			ScopesSupported      []string `json:"scopes_supported"`
		}
		if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &md) != nil {
			t.Fatalf("GET %s: %d %q", path, resp.StatusCode, body)
		}
		if md.Resource != testResource || fmt.Sprint(md.AuthorizationServers) != "["+testIssuer+"]" ||
			fmt.Sprint(md.ScopesSupported) != "[admin mcp]" {
			t.Errorf("GET %s: %+v", path, md)
		}
	}

	// Scopes: "mcp" sees code_assistant only; admin_tool needs "admin" as well. With
	// protocol versions before 2026-07-28 the go-sdk runs handlers outside the HTTP
	// request's context; the token then reaches the tool hook through the request's
	// TokenInfo.
	for _, version := range []string{"", "2025-06-18", "2025-03-26"} {
		t.Run("scopes protocol "+version, func(t *testing.T) {
			user, err := sdkSessionVersion(t, endpoint, http.Header{"Authorization": {"Bearer " + is.token(t, nil, jwt.MapClaims{"scope": "mcp"})}}, version)
			if err != nil {
				t.Fatal(err)
			}
			if got := user.InitializeResult().ProtocolVersion; version != "" && got != version {
				t.Fatalf("negotiated %s, want %s", got, version)
			}
			if got := strings.Join(listedNames(t, user), ","); got != "code_assistant" {
				t.Errorf("tools for scope mcp: %s", got)
			}
			if err := callRefused(t, user, "admin_tool", nil); err != nil {
				t.Errorf("admin_tool without scope: %v", err)
			}
			if text, isErr := call(t, user, "code_assistant", map[string]any{"q": "x"}); isErr || text != "code: x" {
				t.Errorf("code_assistant: %q isError=%v", text, isErr)
			}
			root, err := sdkSessionVersion(t, endpoint, http.Header{"Authorization": {"Bearer " + is.token(t, nil, jwt.MapClaims{"sub": "root", "scp": []string{"mcp", "admin"}})}}, version)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(listedNames(t, root), ","); got != "admin_tool,code_assistant" {
				t.Errorf("tools for scopes mcp+admin: %s", got)
			}
			if text, isErr := call(t, root, "admin_tool", nil); isErr || text != "admin done" {
				t.Errorf("admin_tool with scope: %q isError=%v", text, isErr)
			}
		})
	}

	// Over SSE the go-sdk attaches no token to messages: the scopes are those of the
	// token that opened the event stream (the claims travel in its context).
	t.Run("scopes over SSE", func(t *testing.T) {
		connect := func(tok string) *sdk.ClientSession {
			base := &http.Transport{}
			t.Cleanup(base.CloseIdleConnections)
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "sse", Version: "1"}, nil).Connect(ctx,
				&sdk.SSEClientTransport{Endpoint: serverBase + "/sse",
					HTTPClient: &http.Client{Transport: headerTransport{h: http.Header{"Authorization": {"Bearer " + tok}}, base: base}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cs.Close() })
			return cs
		}
		user := connect(is.token(t, nil, jwt.MapClaims{"scope": "mcp"}))
		if got := strings.Join(listedNames(t, user), ","); got != "code_assistant" {
			t.Errorf("SSE tools for scope mcp: %s", got)
		}
		if err := callRefused(t, user, "admin_tool", nil); err != nil {
			t.Errorf("SSE admin_tool without scope: %v", err)
		}
		root := connect(is.token(t, nil, jwt.MapClaims{"scope": "mcp admin"}))
		if text, isErr := call(t, root, "admin_tool", nil); isErr || text != "admin done" {
			t.Errorf("SSE admin_tool with scope: %q isError=%v", text, isErr)
		}
	})
}
