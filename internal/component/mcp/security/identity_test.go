package security

import (
	"crypto/rsa"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// signedToken signs claims with the issuer's RSA key kid, with extra JOSE
// header parameters (crit …) next to alg, typ and kid.
func (is *issuer) signedToken(kid string, header map[string]any, claims jwt.MapClaims) string {
	is.t.Helper()
	is.mu.Lock()
	k, ok := is.keys[kid].(*rsa.PrivateKey)
	is.mu.Unlock()
	if !ok {
		is.t.Fatalf("no RSA key %q", kid)
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = kid
	for name, v := range header {
		tok.Header[name] = v
	}
	s, err := tok.SignedString(k)
	if err != nil {
		is.t.Fatal(err)
	}
	return s
}

// wantInvalidToken checks a 401 whose challenge says invalid_token and whose
// error_description (and body) name what is wrong.
func wantInvalidToken(t *testing.T, resp *http.Response, body, about string) {
	t.Helper()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401 (%s)", resp.StatusCode, body)
	}
	challenge := resp.Header.Get("WWW-Authenticate")
	if !strings.Contains(challenge, `error="invalid_token"`) {
		t.Errorf("WWW-Authenticate %q lacks error=\"invalid_token\"", challenge)
	}
	_, desc, ok := strings.Cut(challenge, `error_description="`)
	if !ok || !strings.Contains(desc, about) {
		t.Errorf("WWW-Authenticate %q: want an error_description about %q", challenge, about)
	}
	if !strings.Contains(body, about) {
		t.Errorf("body %q does not say what is wrong (%q)", body, about)
	}
}

// TestOAuthTokenWithoutSubjectRefused: RFC 9068 §2.2 makes sub required in an
// access token; a token without one (or with an empty or non-string one) names
// nobody and must not become a principal.
func TestOAuthTokenWithoutSubjectRefused(t *testing.T) {
	clock := newFakeClock()
	is := newIssuer(t)
	is.addRSA("rsa-1")
	ts := newMCPServer(t, oauthStack(t, is, clock, Config{AuthFailureLimit: -1}))
	now := clock.Now()
	cases := []struct {
		name   string
		mutate func(jwt.MapClaims)
	}{
		{"no sub", func(c jwt.MapClaims) { delete(c, "sub") }},
		{"empty sub", func(c jwt.MapClaims) { c["sub"] = "" }},
		{"numeric sub", func(c jwt.MapClaims) { c["sub"] = 42 }},
		{"array sub", func(c jwt.MapClaims) { c["sub"] = []string{"alice"} }},
		{"null sub", func(c jwt.MapClaims) { c["sub"] = nil }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := rawInit(t, ts.URL+"/mcp", bearer(is.token("rsa-1", now, tc.mutate)))
			wantInvalidToken(t, resp, body, "sub")
		})
	}
}

// TestOAuthCritHeaderHonoured: RFC 7515 §4.1.11 — a token whose crit header
// lists extensions the recipient does not understand must be rejected. Helix
// understands none, so any crit is refused (also a malformed one).
func TestOAuthCritHeaderHonoured(t *testing.T) {
	clock := newFakeClock()
	is := newIssuer(t)
	is.addRSA("rsa-1")
	ts := newMCPServer(t, oauthStack(t, is, clock, Config{AuthFailureLimit: -1}))
	now := clock.Now()
	claims := func() jwt.MapClaims {
		return jwt.MapClaims{"iss": testIssuer, "sub": "alice", "aud": testAudience, "exp": now.Add(time.Hour).Unix()}
	}
	cases := []struct {
		name   string
		header map[string]any
	}{
		{"exp as a critical header", map[string]any{"crit": []string{"exp"}, "exp": now.Add(time.Hour).Unix()}},
		{"unknown extension", map[string]any{"crit": []string{"urn:example:must-understand"}, "urn:example:must-understand": true}},
		{"b64 (RFC 7797)", map[string]any{"crit": []string{"b64"}, "b64": true}},
		{"empty list", map[string]any{"crit": []string{}}},
		{"not a list", map[string]any{"crit": "exp"}},
		{"names a parameter that is absent", map[string]any{"crit": []string{"nbf"}}},
		{"null", map[string]any{"crit": nil}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := rawInit(t, ts.URL+"/mcp", bearer(is.signedToken("rsa-1", tc.header, claims())))
			wantInvalidToken(t, resp, body, "crit")
		})
	}
	// The same token without crit is fine: the refusal is the header's doing.
	resp, body := rawInit(t, ts.URL+"/mcp", bearer(is.signedToken("rsa-1", nil, claims())))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("token without crit: %d %s", resp.StatusCode, body)
	}
}

// principalOf passes one request with a token of iss/sub, signed by is, through
// a stack whose issuer is iss, and returns the principal and the go-sdk user id
// it got.
func principalOf(t *testing.T, is *issuer, iss, sub string) (principal, userID string) {
	t.Helper()
	clock := newFakeClock()
	s := mustStack(t, Config{ServerID: "p", Auth: &OAuthConfig{Issuer: iss, Audience: testAudience, JWKSURL: is.srv.URL}}, clock)
	h := s.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		principal = PrincipalFromContext(r.Context())
		if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
			userID = ti.UserID
		}
	}))
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+is.signedToken("k", nil, jwt.MapClaims{
		"iss": iss, "sub": sub, "aud": testAudience, "exp": clock.Now().Add(time.Hour).Unix()}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || principal == "" || userID == "" {
		t.Fatalf("iss %q sub %q: status %d, principal %q, user id %q (%s)", iss, sub, rec.Code, principal, userID, rec.Body)
	}
	return principal, userID
}

// TestOAuthPrincipalsDoNotCollide: a principal is issuer + subject, and no
// choice of the two (separators included) gives another pair's principal, nor
// the go-sdk user id that binds a session, nor any other kind of rate-limit key.
func TestOAuthPrincipalsDoNotCollide(t *testing.T) {
	pairs := [][2]string{
		{"a|b", "c"}, {"a", "b|c"},
		{"https://i.example", "x|y"}, {"https://i.example|x", "y"},
		{"https://i.example", "ip:203.0.113.7"}, {"https://i.example", "key#0"},
		{"sub:x", "y"}, {"x", "sub:y"}, {"https://i.example", "5:a"}, {"https://i.example", "\x00"},
	}
	is := newIssuer(t)
	is.addRSA("k")
	principals := map[string][2]string{}
	users := map[string][2]string{}
	for _, pr := range pairs {
		p, u := principalOf(t, is, pr[0], pr[1])
		if other, dup := principals[p]; dup {
			t.Errorf("iss %q sub %q and iss %q sub %q share the principal %q", pr[0], pr[1], other[0], other[1], p)
		}
		if other, dup := users[u]; dup {
			t.Errorf("iss %q sub %q and iss %q sub %q share the session user id %q", pr[0], pr[1], other[0], other[1], u)
		}
		principals[p], users[u] = pr, pr
		// Client addresses and API keys have keys of their own kinds.
		if strings.HasPrefix(p, "ip:") || strings.HasPrefix(p, "key#") {
			t.Errorf("iss %q sub %q has the principal %q of another kind of client", pr[0], pr[1], p)
		}
	}
}

// TestTokenRefusalTextIsBounded: a hostile crit header (many names, huge names,
// quotes, newlines, non-ASCII) gives a short refusal, and the challenge text is
// a valid RFC 6750 error_description whatever the message holds.
func TestTokenRefusalTextIsBounded(t *testing.T) {
	var names []any
	for i := range 10_000 {
		names = append(names, strings.Repeat("x\"\\\r\n\u00e9", 1000)+string(rune('a'+i%26)))
	}
	err := checkCrit(map[string]any{"crit": names})
	if err == nil {
		t.Fatal("a crit header with 10000 names was accepted")
	}
	if n := len(err.Error()); n > 1000 {
		t.Errorf("refusal is %d bytes long", n)
	}
	if !strings.Contains(err.Error(), "and 9995 more") {
		t.Errorf("refusal %q does not say how many names it left out", err)
	}
	desc := challengeText(err.Error())
	if len(desc) > maxChallengeText {
		t.Errorf("error_description is %d bytes, want at most %d", len(desc), maxChallengeText)
	}
	for i := 0; i < len(desc); i++ {
		if c := desc[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			t.Fatalf("error_description %q holds byte %#x, which RFC 6750 §3 does not allow", desc, c)
		}
	}
	if err := checkCrit(map[string]any{"crit": []any{1, 2}}); err == nil || !strings.Contains(err.Error(), "strings") {
		t.Errorf("crit [1, 2]: %v, want a refusal asking for names as strings", err)
	}
	if err := checkCrit(map[string]any{"alg": "RS256"}); err != nil {
		t.Errorf("no crit: %v", err)
	}
}

// TestTokenRefusalHidesJWKSDetails: when the issuer's key set cannot be fetched,
// the client learns that no key verifies its token, not where Helix fetches keys
// from nor how that failed (the log has both).
func TestTokenRefusalHidesJWKSDetails(t *testing.T) {
	clock := newFakeClock()
	is := newIssuer(t)
	is.addRSA("k")
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "internal detail", http.StatusInternalServerError)
	}))
	t.Cleanup(broken.Close)
	logs := &logBuffer{}
	s := mustStack(t, Config{ServerID: "jwks", Logger: logs.logger(), Auth: &OAuthConfig{
		Issuer: testIssuer, Audience: testAudience, JWKSURL: broken.URL + "/private-jwks-path"}}, clock)
	ts := httptest.NewServer(s.Middleware(http.NotFoundHandler()))
	t.Cleanup(ts.Close)
	resp, body := rawInit(t, ts.URL+"/mcp", bearer(is.token("k", clock.Now(), nil)))
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401 (%s)", resp.StatusCode, body)
	}
	challenge := resp.Header.Get("WWW-Authenticate")
	for _, secret := range []string{"private-jwks-path", broken.Listener.Addr().String(), "Internal Server Error"} {
		if strings.Contains(body, secret) || strings.Contains(challenge, secret) {
			t.Errorf("the client learns %q: body %q, challenge %q", secret, body, challenge)
		}
	}
	if !strings.Contains(body, "no key of the issuer verifies this token") {
		t.Errorf("body %q does not say why the token was refused", body)
	}
	if !strings.Contains(logs.String(), "private-jwks-path") {
		t.Errorf("the log lacks the fetch failure:\n%s", logs.String())
	}
}
