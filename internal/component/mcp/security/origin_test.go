package security

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestForeignOriginRefusedWhateverIsConfigured: the MCP specification has
// servers answer 403 to a request whose Origin is not theirs (DNS rebinding,
// cross-site requests). It must hold whatever else is configured: API keys,
// OAuth, a rate limit, trusted proxies, or cors_origins with "*" (which admits
// any web origin, not the opaque "null" of sandboxed pages and files).
func TestForeignOriginRefusedWhateverIsConfigured(t *testing.T) {
	key := hdr("X-API-Key", "k")
	for _, tc := range []struct {
		name   string
		cfg    Config
		origin string
		extra  http.Header
		want   int
	}{
		{"api key, foreign origin", Config{APIKeys: []string{"k"}}, "http://evil.example", key, 403},
		{"api key, null origin", Config{APIKeys: []string{"k"}}, "null", key, 403},
		{"rate limit, foreign origin", Config{RateLimit: 100}, "https://evil.example", nil, 403},
		{"trusted proxy, foreign origin", Config{TrustedProxies: []string{"127.0.0.1"}}, "http://evil.example", nil, 403},
		{"any cors origin, null origin", Config{CORSOrigins: []string{"*"}}, "null", nil, 403},
		{"listed origin, null origin", Config{CORSOrigins: []string{"http://localhost:3000"}}, "NULL", nil, 403},
		{"oauth, foreign origin, before the token", Config{Auth: &OAuthConfig{Issuer: "https://issuer.example",
			Audience: "helix", JWKSURL: "https://issuer.example/jwks"}}, "http://evil.example", nil, 403},
		// Loopback pages (a local inspector) reach a loopback listener without a list.
		{"api key, loopback origin", Config{APIKeys: []string{"k"}}, "http://localhost:6274", key, 200},
		{"api key, 127.0.0.1 origin", Config{APIKeys: []string{"k"}}, "http://127.0.0.1:6274", key, 200},
		{"listed origin", Config{CORSOrigins: []string{"https://app.example"}}, "https://app.example", nil, 200},
		{"any cors origin", Config{CORSOrigins: []string{"*"}}, "https://app.example", nil, 200},
		{"no origin", Config{APIKeys: []string{"k"}}, "", key, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := newMCPServer(t, mustStack(t, tc.cfg, nil))
			h := hdr()
			for k, vs := range tc.extra {
				h[k] = vs
			}
			if tc.origin != "" {
				h.Set("Origin", tc.origin)
			}
			resp, body := rawInit(t, ts.URL+"/mcp", h)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, body)
			}
			if tc.want == 403 && !strings.Contains(body, "Origin") {
				t.Errorf("the 403 does not say that the Origin was refused: %q", body)
			}
		})
	}
}

// TestTwoOriginHeadersRefused: a browser sends one Origin; a request with two
// (a listed one first) must not slip a foreign one through.
func TestTwoOriginHeadersRefused(t *testing.T) {
	ts := newMCPServer(t, mustStack(t, Config{CORSOrigins: []string{"http://localhost:3000"}}, nil))
	h := hdr("Origin", "http://localhost:3000")
	h.Add("Origin", "http://evil.example")
	if resp, body := rawInit(t, ts.URL+"/mcp", h); resp.StatusCode != 403 {
		t.Fatalf("status %d, want 403: %s", resp.StatusCode, body)
	}
}

// TestOriginGuardWithoutSecurityKeys: a server without any security key gets
// the same Origin rule through OriginGuard.
func TestOriginGuardWithoutSecurityKeys(t *testing.T) {
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	ts := httptest.NewServer(OriginGuard(next))
	t.Cleanup(ts.Close)
	for origin, want := range map[string]int{"": 200, "http://localhost:3000": 200, "http://[::1]:3000": 200,
		"null": 403, "http://evil.example": 403, "http://127.0.0.1.evil.example": 403, "localhost": 403} {
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader("{}"))
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Origin %q: status %d, want %d", origin, resp.StatusCode, want)
		}
	}
}

// TestOriginRefusalsCountUnderOneReason: the rejection counters are labelled
// by reason; a client's Origin text must not become a label of its own.
func TestOriginRefusalsCountUnderOneReason(t *testing.T) {
	rej := &Rejections{}
	ts := newMCPServer(t, mustStack(t, Config{APIKeys: []string{"k"}, Rejections: rej}, nil))
	for _, o := range []string{"http://a.example", "b-without-colon", "null", strings.Repeat("x", 5000)} {
		rawInit(t, ts.URL+"/mcp", hdr("Origin", o, "X-API-Key", "k"))
	}
	snap := rej.Snapshot()
	if len(snap) != 1 || snap[0].Reason != "origin not allowed" || snap[0].Count != 4 {
		t.Fatalf("rejections %+v, want 4 under \"origin not allowed\"", snap)
	}
}
