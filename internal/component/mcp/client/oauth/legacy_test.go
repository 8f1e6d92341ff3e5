package oauth

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestLegacyIssuerAtSameOriginPath: a server without protected resource metadata
// whose root metadata names an issuer under a path of its own origin (the
// 2025-03-26 convention) is used; metadata naming another origin, or the same
// metadata behind protected resource metadata, is still refused.
func TestLegacyIssuerAtSameOriginPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		noPRM  bool
		issuer func(base string) string
		want   string // "" means a token
	}{
		{"no resource metadata, issuer under a path of the origin", true, func(b string) string { return b + "/oauth" }, ""},
		{"no resource metadata, issuer on another origin", true, func(string) string { return "https://attacker.example.com" }, "does not match issuer"},
		{"no resource metadata, issuer on another port", true, func(b string) string {
			u, _ := url.Parse(b)
			return "http://" + u.Hostname() + ":1/oauth"
		}, "does not match issuer"},
		{"resource metadata found: the rule stands", false, func(b string) string { return b + "/oauth" }, "does not match issuer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			gs := newGrantServer(t)
			gs.NoPRM = tc.noPRM
			gs.Meta = func(m map[string]any) {
				m["issuer"] = tc.issuer(gs.URL)
				m["token_endpoint"] = gs.URL + "/token"
			}
			gs.Token = func(r *http.Request, f url.Values) (int, map[string]any) {
				if id, secret, _ := r.BasicAuth(); id+f.Get("client_id") != "c" || secret+f.Get("client_secret") != "s" {
					return http.StatusUnauthorized, map[string]any{"error": "invalid_client"}
				}
				return http.StatusOK, map[string]any{"access_token": "legacy-token", "token_type": "Bearer"}
			}
			req := httptest.NewRequest(http.MethodPost, gs.URL+"/mcp", nil)
			tok, err := authorizeWith(t, &ClientCredentials{ClientID: "c", ClientSecret: "s", HTTPClient: gs.Client()}, req, `Bearer`)
			if tc.want == "" {
				if err != nil || tok != "legacy-token" {
					t.Fatalf("token %q, err %v", tok, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if len(gs.requests()) != 0 {
				t.Error("a token was asked for at endpoints of refused metadata")
			}
		})
	}
}

// TestLegacyIssuerLeavesOtherAnswers: only the root metadata documents of the
// origin are read, and what cannot be read as a same-origin issuer passes as it
// came.
func TestLegacyIssuerLeavesOtherAnswers(t *testing.T) {
	t.Parallel()
	bodies := map[string]string{
		"/.well-known/oauth-authorization-server":       `not json`,
		"/.well-known/openid-configuration":             `{"issuer": 42}`,
		"/.well-known/oauth-authorization-server/other": `{"issuer": "ISSUER/oauth"}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.ReplaceAll(bodies[r.URL.Path], "ISSUER", "http://"+r.Host))
	}))
	t.Cleanup(srv.Close)
	rt := &legacyIssuer{base: http.DefaultTransport, origin: srv.URL}
	for path, body := range bodies {
		req := httptest.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.RequestURI = ""
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := strings.ReplaceAll(body, "ISSUER", srv.URL); string(got) != want {
			t.Errorf("%s: got %s, want it unchanged", path, got)
		}
	}
	if sameOriginPath(srv.URL+"/", srv.URL) || sameOriginPath(srv.URL+"/x?q=1", srv.URL) || !sameOriginPath(srv.URL+"/x", srv.URL) {
		t.Error("sameOriginPath")
	}
}
