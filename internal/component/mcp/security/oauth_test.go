package security

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

const (
	testIssuer   = "https://issuer.example.test"
	testAudience = "helix-mcp-test"
)

// issuer is a test authorization server: it holds signing keys and serves
// them as a JWKS document.
type issuer struct {
	t       *testing.T
	mu      sync.Mutex
	keys    map[string]any // kid → *rsa.PrivateKey | *ecdsa.PrivateKey
	fetches atomic.Int32
	srv     *httptest.Server
}

func newIssuer(t *testing.T) *issuer {
	is := &issuer{t: t, keys: map[string]any{}}
	is.srv = httptest.NewServer(http.HandlerFunc(is.serveJWKS))
	t.Cleanup(is.srv.Close)
	return is
}

func (is *issuer) addRSA(kid string) *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		is.t.Fatal(err)
	}
	is.mu.Lock()
	is.keys[kid] = k
	is.mu.Unlock()
	return k
}

func (is *issuer) addEC(kid string) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		is.t.Fatal(err)
	}
	is.mu.Lock()
	is.keys[kid] = k
	is.mu.Unlock()
	return k
}

func (is *issuer) serveJWKS(w http.ResponseWriter, _ *http.Request) {
	is.fetches.Add(1)
	enc := base64.RawURLEncoding.EncodeToString
	is.mu.Lock()
	defer is.mu.Unlock()
	var keys []map[string]string
	for kid, k := range is.keys {
		switch k := k.(type) {
		case *rsa.PrivateKey:
			keys = append(keys, map[string]string{"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
				"n": enc(k.N.Bytes()), "e": enc(big.NewInt(int64(k.E)).Bytes())})
		case *ecdsa.PrivateKey:
			b, err := k.PublicKey.Bytes()
			if err != nil {
				is.t.Error(err)
				return
			}
			keys = append(keys, map[string]string{"kty": "EC", "kid": kid, "crv": "P-256",
				"x": enc(b[1:33]), "y": enc(b[33:])})
		}
	}
	// An encryption key and an unknown key type must be skipped, not fatal.
	keys = append(keys, map[string]string{"kty": "RSA", "kid": "enc", "use": "enc", "n": "AQAB", "e": "AQAB"},
		map[string]string{"kty": "OKP", "kid": "ed", "crv": "Ed25519", "x": "AA"})
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"keys": keys})
}

// token signs claims (defaults: valid for the test audience, one hour) with
// the key kid; mutate adjusts claims before signing.
func (is *issuer) token(kid string, now time.Time, mutate func(jwt.MapClaims)) string {
	claims := jwt.MapClaims{
		"iss":   testIssuer,
		"sub":   "alice",
		"aud":   testAudience,
		"iat":   now.Unix(),
		"exp":   now.Add(time.Hour).Unix(),
		"scope": "mcp",
	}
	if mutate != nil {
		mutate(claims)
	}
	is.mu.Lock()
	k := is.keys[kid]
	is.mu.Unlock()
	var tok *jwt.Token
	switch k.(type) {
	case *rsa.PrivateKey:
		tok = jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	case *ecdsa.PrivateKey:
		tok = jwt.NewWithClaims(jwt.SigningMethodES256, claims)
	default:
		is.t.Fatalf("no key %q", kid)
	}
	tok.Header["kid"] = kid
	s, err := tok.SignedString(k)
	if err != nil {
		is.t.Fatal(err)
	}
	return s
}

func oauthStack(t *testing.T, is *issuer, clock *fakeClock, extra Config) *Stack {
	cfg := extra
	cfg.ServerID = "oauth"
	cfg.Auth = &OAuthConfig{
		Issuer:   testIssuer,
		Audience: testAudience,
		JWKSURL:  is.srv.URL,
		Scopes:   map[string][]string{"admin-tool": {"admin"}},
	}
	return mustStack(t, cfg, clock)
}

func bearer(tok string) http.Header { return hdr("Authorization", "Bearer "+tok) }

func TestOAuthTokens(t *testing.T) {
	clock := newFakeClock()
	is := newIssuer(t)
	rsaKey := is.addRSA("rsa-1")
	is.addEC("ec-1")
	logs := &logBuffer{}
	// Fourteen bad tokens from one address: the failed-authentication limit
	// would answer the later ones with 429.
	ts := newMCPServer(t, oauthStack(t, is, clock, Config{Logger: logs.logger(), AuthFailureLimit: -1}))
	now := clock.Now()

	// A key of the issuer's that is not published: right kid, wrong key.
	forger := &issuer{t: t, keys: map[string]any{}}
	forger.addRSA("rsa-1")

	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"iss": testIssuer, "aud": testAudience, "sub": "x", "exp": now.Add(time.Hour).Unix()})
	hs.Header["kid"] = "rsa-1"
	hsTok, _ := hs.SignedString(rsaKey.N.Bytes()) // "public key as HMAC secret" confusion attack
	none := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"iss": testIssuer, "aud": testAudience, "sub": "x", "exp": now.Add(time.Hour).Unix()})
	noneTok, _ := none.SignedString(jwt.UnsafeAllowNoneSignatureType)

	cases := []struct {
		name string
		tok  string
		want int
	}{
		{"valid RS256", is.token("rsa-1", now, nil), 200},
		{"valid ES256", is.token("ec-1", now, nil), 200},
		{"audience list containing ours", is.token("rsa-1", now, func(c jwt.MapClaims) { c["aud"] = []string{"other", testAudience} }), 200},
		{"expired", is.token("rsa-1", now, func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Hour).Unix() }), 401},
		{"no exp", is.token("rsa-1", now, func(c jwt.MapClaims) { delete(c, "exp") }), 401},
		{"not yet valid", is.token("rsa-1", now, func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Hour).Unix() }), 401},
		{"wrong audience", is.token("rsa-1", now, func(c jwt.MapClaims) { c["aud"] = "someone-else" }), 401},
		{"no audience", is.token("rsa-1", now, func(c jwt.MapClaims) { delete(c, "aud") }), 401},
		{"wrong issuer", is.token("rsa-1", now, func(c jwt.MapClaims) { c["iss"] = "https://evil.example" }), 401},
		{"bad signature", forger.token("rsa-1", now, nil), 401},
		{"tampered payload", tamper(is.token("rsa-1", now, nil)), 401},
		{"HS256 with the public key", hsTok, 401},
		{"alg none", noneTok, 401},
		{"garbage", "not.a.jwt", 401},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := rawInit(t, ts.URL+"/mcp", bearer(tc.tok))
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d (%s)", resp.StatusCode, tc.want, body)
			}
			if tc.want == 401 {
				want := `Bearer realm="helix-mcp", resource_metadata="` + ts.URL + MetadataPath + `/mcp", error="invalid_token", error_description="`
				if got := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, `"`) {
					t.Errorf("WWW-Authenticate = %q, want %q…\"", got, want)
				}
			}
		})
	}
	if strings.Contains(logs.String(), "eyJ") {
		t.Errorf("a token reached the log:\n%s", logs.String())
	}

	// No token: the challenge points at the metadata, without an error.
	resp, _ := rawInit(t, ts.URL+"/mcp", nil)
	if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != `Bearer realm="helix-mcp", resource_metadata="`+ts.URL+MetadataPath+`/mcp"` {
		t.Errorf("no token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if n := is.fetches.Load(); n != 1 {
		t.Errorf("jwks fetched %d times, want 1 (cached)", n)
	}
}

// tamper flips the subject in the payload, keeping the signature.
func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	payload = []byte(strings.Replace(string(payload), `"alice"`, `"mallory"`, 1))
	parts[1] = base64.RawURLEncoding.EncodeToString(payload)
	return strings.Join(parts, ".")
}

func TestOAuthScopesThroughGoSDKClient(t *testing.T) {
	clock := newFakeClock()
	is := newIssuer(t)
	is.addRSA("k")
	ts := newMCPServer(t, oauthStack(t, is, clock, Config{}))

	plain := mustConnect(t, ts, bearer(is.token("k", clock.Now(), nil)))
	if names := toolNames(t, plain); slices.Contains(names, "admin-tool") || len(names) != 2 {
		t.Errorf("without admin scope tools = %v, want admin-tool hidden", names)
	}
	if text, isErr := callTool(t, plain, "admin-tool"); !isErr || text != "tool admin-tool requires scope admin" {
		t.Errorf("admin-tool without scope = %q (isError %v)", text, isErr)
	}
	if text, isErr := callTool(t, plain, "summarizer"); isErr || text != "ran summarizer" {
		t.Errorf("summarizer = %q (isError %v)", text, isErr)
	}

	admin := mustConnect(t, ts, bearer(is.token("k", clock.Now(), func(c jwt.MapClaims) {
		delete(c, "scope")
		c["scp"] = []string{"mcp", "admin"}
	})))
	if names := toolNames(t, admin); !slices.Contains(names, "admin-tool") {
		t.Errorf("with admin scope tools = %v", names)
	}
	if text, isErr := callTool(t, admin, "admin-tool"); isErr || text != "ran admin-tool" {
		t.Errorf("admin-tool with scope = %q (isError %v)", text, isErr)
	}
}

func TestOAuthMetadata(t *testing.T) {
	is := newIssuer(t)
	is.addRSA("k")
	ts := newMCPServer(t, oauthStack(t, is, nil, Config{APIKeys: []string{"k"}}))

	// The challenge's metadata URL satisfies the go-sdk client's own checks
	// (resource must equal the URL it connects to).
	resp, _ := rawInit(t, ts.URL+"/mcp", nil)
	chs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil || len(chs) != 1 {
		t.Fatalf("challenge %q: %v", resp.Header.Get("WWW-Authenticate"), err)
	}
	mdURL := chs[0].Params["resource_metadata"]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	md, err := oauthex.GetProtectedResourceMetadata(ctx, mdURL, ts.URL+"/mcp", &http.Client{Transport: tr})
	if err != nil {
		t.Fatalf("metadata at %s: %v", mdURL, err)
	}
	if !slices.Equal(md.AuthorizationServers, []string{testIssuer}) || !slices.Equal(md.BearerMethodsSupported, []string{"header"}) ||
		!slices.Equal(md.ScopesSupported, []string{"admin"}) {
		t.Errorf("metadata = %+v", md)
	}

	// The bare well-known path describes the origin; it is public.
	req, _ := http.NewRequest(http.MethodGet, ts.URL+MetadataPath, nil)
	r, body := do(t, req)
	var doc map[string]any
	if r.StatusCode != 200 || json.Unmarshal([]byte(body), &doc) != nil || doc["resource"] != ts.URL {
		t.Errorf("GET %s: %d %s", MetadataPath, r.StatusCode, body)
	}
	if r.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("metadata is not readable cross-origin")
	}

	// API keys keep working beside OAuth.
	if r, _ := rawInit(t, ts.URL+"/mcp", hdr("X-API-Key", "k")); r.StatusCode != 200 {
		t.Errorf("api key beside oauth: %d", r.StatusCode)
	}

	// A configured resource URL wins over the request's host.
	fixed := newMCPServer(t, mustStack(t, Config{Auth: &OAuthConfig{
		Issuer: testIssuer, JWKSURL: is.srv.URL, ResourceURL: "https://mcp.example.test/mcp",
	}}, nil))
	req, _ = http.NewRequest(http.MethodGet, fixed.URL+MetadataPath+"/mcp", nil)
	_, body = do(t, req)
	if !strings.Contains(body, `"resource":"https://mcp.example.test/mcp"`) {
		t.Errorf("configured resource: %s", body)
	}
	r, _ = rawInit(t, fixed.URL+"/mcp", nil)
	if !strings.Contains(r.Header.Get("WWW-Authenticate"), `resource_metadata="https://mcp.example.test`+MetadataPath+`/mcp"`) {
		t.Errorf("configured challenge: %q", r.Header.Get("WWW-Authenticate"))
	}
}

func TestOAuthKeyRotation(t *testing.T) {
	clock := newFakeClock()
	is := newIssuer(t)
	is.addRSA("old")
	ts := newStatelessMCPServer(t, oauthStack(t, is, clock, Config{}))
	if r, _ := rawInit(t, ts.URL+"/mcp", bearer(is.token("old", clock.Now(), nil))); r.StatusCode != 200 {
		t.Fatalf("old key: %d", r.StatusCode)
	}
	is.addRSA("new")
	tok := is.token("new", clock.Now(), nil)
	// Unknown kids right after a fetch do not trigger a fetch storm.
	for range 5 {
		if r, _ := rawInit(t, ts.URL+"/mcp", bearer(tok)); r.StatusCode != 401 {
			t.Fatalf("new key inside the refresh throttle: %d, want 401", r.StatusCode)
		}
	}
	if n := is.fetches.Load(); n != 1 {
		t.Errorf("fetches = %d, want 1 while throttled", n)
	}
	clock.Advance(jwksMinRefresh + time.Second)
	if r, body := rawInit(t, ts.URL+"/mcp", bearer(is.token("new", clock.Now(), nil))); r.StatusCode != 200 {
		t.Fatalf("new key after refresh: %d %s", r.StatusCode, body)
	}
	if n := is.fetches.Load(); n != 2 {
		t.Errorf("fetches = %d, want 2", n)
	}
}

func TestClaimsInRequestContext(t *testing.T) {
	clock := newFakeClock()
	is := newIssuer(t)
	is.addRSA("k")
	s := oauthStack(t, is, clock, Config{})
	var got *Claims
	h := s.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = ClaimsFromContext(r.Context())
		if err := s.ToolAllowed("admin_tool", r.Context()); err == nil {
			t.Error("admin_tool allowed without the admin scope")
		}
	}))
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+is.token("k", clock.Now(), func(c jwt.MapClaims) { c["scope"] = "mcp read" }))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 || got == nil {
		t.Fatalf("status %d, claims %v", rec.Code, got)
	}
	if got.Subject != "alice" || got.Issuer != testIssuer || !slices.Equal(got.Scopes, []string{"mcp", "read"}) {
		t.Errorf("claims = %v", got)
	}
}
