package oauth

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

const (
	testIDToken = "eyJ.id-token-of-the-person.sig"
	testJAG     = "eyJ.id-jag-for-the-mcp-server.sig"
)

// idp is an enterprise IdP's token endpoint: answer decides each exchange's
// answer; every request is recorded.
type idp struct {
	*httptest.Server
	answer func(f url.Values) (int, map[string]any)

	mu   sync.Mutex
	reqs []url.Values
}

func newIdP(t *testing.T, answer func(f url.Values) (int, map[string]any)) *idp {
	t.Helper()
	p := &idp{answer: answer}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		p.mu.Lock()
		p.reqs = append(p.reqs, r.PostForm)
		p.mu.Unlock()
		status, body := p.answer(r.PostForm)
		writeTestJSON(w, status, body)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *idp) requests() []url.Values {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]url.Values(nil), p.reqs...)
}

func issueJAG(url.Values) (int, map[string]any) {
	return http.StatusOK, map[string]any{"access_token": testJAG, "issued_token_type": oauthex.TokenTypeIDJAG, "token_type": "N_A"}
}

func enterpriseServer(t *testing.T) *grantServer {
	gs := newGrantServer(t)
	gs.Meta = func(m map[string]any) {
		m["grant_types_supported"] = []string{grantJWTBearer}
		m["token_endpoint_auth_methods_supported"] = []string{"client_secret_basic"}
	}
	gs.Token = func(r *http.Request, f url.Values) (int, map[string]any) {
		id, secret, ok := r.BasicAuth()
		if !ok || id != "mcp-client" || secret != "mcp-secret" {
			return http.StatusUnauthorized, map[string]any{"error": "invalid_client"}
		}
		if f.Get("grant_type") != grantJWTBearer || f.Get("assertion") != testJAG {
			return http.StatusBadRequest, map[string]any{"error": "invalid_grant"}
		}
		return http.StatusOK, map[string]any{"access_token": "mcp-access-token", "token_type": "Bearer", "expires_in": 3600}
	}
	return gs
}

func TestEnterpriseManagedAuthorization(t *testing.T) {
	t.Parallel()
	gs := enterpriseServer(t)
	p := newIdP(t, issueJAG)
	cc := &ClientCredentials{ClientID: "mcp-client", ClientSecret: "mcp-secret", Scopes: []string{"tools"}, HTTPClient: gs.Client(),
		Enterprise: &Enterprise{IdPTokenURL: p.URL + "/token", IdPClientID: "idp-client", IDToken: testIDToken}}
	tok, err := authorize(t, cc, gs.URL)
	if err != nil {
		t.Fatal(err)
	}
	if tok != "mcp-access-token" {
		t.Fatalf("token %q", tok)
	}
	ex := p.requests()
	if len(ex) != 1 {
		t.Fatalf("%d token exchanges, want 1", len(ex))
	}
	for k, want := range map[string]string{
		"grant_type":           oauthex.GrantTypeTokenExchange,
		"requested_token_type": oauthex.TokenTypeIDJAG,
		"subject_token":        testIDToken,
		"subject_token_type":   oauthex.TokenTypeIDToken,
		"audience":             gs.URL, // the authorization server's issuer
		"resource":             gs.URL + "/mcp",
		"scope":                "tools",
		"client_id":            "idp-client",
	} {
		if got := ex[0].Get(k); got != want {
			t.Errorf("token exchange %s = %q, want %q", k, got, want)
		}
	}
	if ex[0].Has("client_secret") {
		t.Error("a public IdP client sent a secret")
	}
	grants := gs.requests()
	if len(grants) != 1 || grants[0].Get("resource") != gs.URL+"/mcp" || grants[0].Get("scope") != "tools" {
		t.Errorf("JWT bearer grant requests %v", grants)
	}
}

func TestEnterpriseRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		meta      func(map[string]any)
		idp       func(url.Values) (int, map[string]any)
		want      string
		exchanges int
	}{
		{"authorization server without the JWT bearer grant", func(m map[string]any) {
			m["grant_types_supported"] = []string{"client_credentials"}
		}, issueJAG, "does not offer the " + grantJWTBearer + " grant", 0},
		{"IdP refuses the ID token and echoes it", nil, func(f url.Values) (int, map[string]any) {
			return http.StatusBadRequest, map[string]any{"error": "invalid_grant", "echo": f.Get("subject_token")}
		}, "token exchange at", 1},
		{"IdP issues something else", nil, func(url.Values) (int, map[string]any) {
			return http.StatusOK, map[string]any{"access_token": testJAG, "issued_token_type": "urn:ietf:params:oauth:token-type:access_token", "token_type": "Bearer"}
		}, "not an ID-JAG", 1},
		{"IdP answers without a token", nil, func(url.Values) (int, map[string]any) {
			return http.StatusOK, map[string]any{"issued_token_type": oauthex.TokenTypeIDJAG}
		}, "oauth2 enterprise", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			gs := enterpriseServer(t)
			if tc.meta != nil {
				base := gs.Meta
				gs.Meta = func(m map[string]any) { base(m); tc.meta(m) }
			}
			p := newIdP(t, tc.idp)
			cc := &ClientCredentials{ClientID: "mcp-client", ClientSecret: "mcp-secret", HTTPClient: gs.Client(),
				Enterprise: &Enterprise{IdPTokenURL: p.URL + "/token", IdPClientID: "idp-client", IdPClientSecret: "idp-secret-123456", IDToken: testIDToken}}
			_, err := authorize(t, cc, gs.URL)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			for _, secret := range []string{testIDToken, testJAG, "idp-secret-123456", "mcp-secret"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error shows a credential (%s): %v", secret, err)
				}
			}
			if n := len(p.requests()); n != tc.exchanges {
				t.Errorf("%d token exchanges, want %d", n, tc.exchanges)
			}
			if len(gs.requests()) != 0 {
				t.Error("the JWT bearer grant was tried without an ID-JAG")
			}
		})
	}
}

func TestEnterpriseValidate(t *testing.T) {
	t.Parallel()
	err := (&Enterprise{IdPClientID: "c"}).Validate()
	if err == nil || !strings.Contains(err.Error(), "idp_token_url") || !strings.Contains(err.Error(), "id_token") {
		t.Fatalf("err = %v, want idp_token_url and id_token named", err)
	}
}
