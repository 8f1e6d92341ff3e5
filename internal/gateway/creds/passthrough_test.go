package creds

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/arvenza/helix/internal/component/mcp/security"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
)

// testIssuer signs tokens (ES256) and serves its key as a JWKS document, so that
// tokens pass the real security stack.
type testIssuer struct {
	key *ecdsa.PrivateKey
	url string
}

const gatewayAudience = "https://gateway.example.test/mcp"

func newTestIssuer(t *testing.T) *testIssuer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		enc := base64.RawURLEncoding.EncodeToString
		json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{
			"kty": "EC", "crv": "P-256", "kid": "k1", "use": "sig", "alg": "ES256",
			"x": enc(k.X.FillBytes(make([]byte, 32))), "y": enc(k.Y.FillBytes(make([]byte, 32))),
		}}})
	}))
	t.Cleanup(srv.Close)
	return &testIssuer{key: k, url: srv.URL}
}

func (is *testIssuer) token(t *testing.T, sub string, aud ...string) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"iss": is.url, "sub": sub, "aud": aud, "exp": time.Now().Add(time.Hour).Unix(),
	})
	tok.Header["kid"] = "k1"
	s, err := tok.SignedString(is.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// headerThroughStack sends token through the gateway's security stack (OAuth
// with audience gatewayAudience, and one API key) to a handler that asks c for
// the upstream's headers, as the core does for a call.
func headerThroughStack(t *testing.T, is *testIssuer, c gateway.Credentials, token string) (http.Header, string, error) {
	t.Helper()
	stack, err := security.New(security.Config{
		Auth:             &security.OAuthConfig{Issuer: is.url, Audience: gatewayAudience, JWKSURL: is.url},
		APIKeys:          []string{"an-api-key-of-the-gateway"},
		AuthFailureLimit: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stack.Close)
	var (
		h    http.Header
		key  string
		herr error
		ran  bool
	)
	handler := stack.Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		ran = true
		p := &gateway.Principal{ID: security.PrincipalFromContext(r.Context()), Token: strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")}
		h, herr = c.Header(r.Context(), p)
		key = c.SessionKey(p)
	}))
	req := httptest.NewRequest(http.MethodPost, "http://gateway.example.test/mcp", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	if !ran {
		t.Fatalf("the security stack refused the token: %d %s", rec.Code, rec.Body)
	}
	return h, key, herr
}

func passthroughCreds(t *testing.T) gateway.Credentials {
	t.Helper()
	c, err := New(config.UpstreamConfig{ID: "github", URL: "https://mcp.github.test/mcp",
		Credentials: config.CredentialsPassthrough, Audience: "https://mcp.github.test"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPassthroughSendsATokenNamingTheUpstream(t *testing.T) {
	t.Parallel()
	is := newTestIssuer(t)
	c := passthroughCreds(t)
	tok := is.token(t, "alice", gatewayAudience, "https://mcp.github.test")
	h, key, err := headerThroughStack(t, is, c, tok)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Get("Authorization"); got != "Bearer "+tok {
		t.Fatalf("Authorization = %q, want the caller's token", got)
	}
	if key == "" || strings.Contains(key, tok) || strings.Contains(key, "alice") {
		t.Fatalf("session key %q: want a non-empty key that names neither the token nor the subject", key)
	}
}

func TestPassthroughRefusesATokenForAnotherAudience(t *testing.T) {
	t.Parallel()
	is := newTestIssuer(t)
	c := passthroughCreds(t)
	tok := is.token(t, "alice", gatewayAudience) // good for the gateway only
	_, _, err := headerThroughStack(t, is, c, tok)
	var r *gateway.Refusal
	if !errors.As(err, &r) {
		t.Fatalf("err = %v, want a *gateway.Refusal", err)
	}
	if !strings.Contains(r.Message, "not for upstream github") || strings.Contains(r.Message, tok) {
		t.Fatalf("refusal %q: want it to say the token is not for the upstream, without the token", r.Message)
	}
	if r.Reason != gateway.OutcomeDenied || r.Code != CodeRefused {
		t.Fatalf("refusal reason %q code %d", r.Reason, r.Code)
	}
}

func TestPassthroughRefusesAnAPIKey(t *testing.T) {
	t.Parallel()
	is := newTestIssuer(t)
	c := passthroughCreds(t)
	_, _, err := headerThroughStack(t, is, c, "an-api-key-of-the-gateway")
	var r *gateway.Refusal
	if !errors.As(err, &r) || !strings.Contains(r.Message, "API key cannot be passed through") {
		t.Fatalf("err = %v, want a refusal saying an API key is not passed through", err)
	}
	if strings.Contains(r.Message, "an-api-key-of-the-gateway") {
		t.Fatalf("the refusal shows the key: %q", r.Message)
	}
}

func TestPassthroughRefusesACallWithoutToken(t *testing.T) {
	t.Parallel()
	c := passthroughCreds(t)
	for _, p := range []*gateway.Principal{nil, {ID: "sub:1:a1:b"}} {
		if _, err := c.Header(context.Background(), p); !errors.As(err, new(*gateway.Refusal)) {
			t.Fatalf("principal %+v: err = %v, want a refusal", p, err)
		}
	}
}

func TestPassthroughSessionKeysFollowTheSubject(t *testing.T) {
	t.Parallel()
	c := passthroughCreds(t)
	alice1 := c.SessionKey(&gateway.Principal{ID: "sub:4:iss_5:alice", Token: "token-one"})
	alice2 := c.SessionKey(&gateway.Principal{ID: "sub:4:iss_5:alice", Token: "token-two"})
	bob := c.SessionKey(&gateway.Principal{ID: "sub:4:iss_3:bob", Token: "token-one"})
	if alice1 != alice2 {
		t.Fatalf("a renewed token changed the session key: %q, %q", alice1, alice2)
	}
	if alice1 == bob {
		t.Fatalf("two subjects share the session key %q", bob)
	}
	if anon := c.SessionKey(&gateway.Principal{}); anon == "" || anon == alice1 {
		t.Fatalf("anonymous key %q", anon)
	}
}

func TestGatewayCredentialsAddNothingAndShareSessions(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"", config.CredentialsGateway} {
		c, err := New(config.UpstreamConfig{ID: "files", Command: "server", Credentials: mode}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		p := &gateway.Principal{ID: "key#0", Token: "secret-token-value"}
		h, err := c.Header(context.Background(), p)
		if err != nil || len(h) != 0 {
			t.Fatalf("mode %q: Header = %v, %v; want no headers (auth: does the work)", mode, h, err)
		}
		if k := c.SessionKey(p); k != "" {
			t.Fatalf("mode %q: SessionKey = %q, want \"\" (callers share)", mode, k)
		}
	}
}
