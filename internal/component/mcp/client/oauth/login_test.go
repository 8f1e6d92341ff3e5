package oauth_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
	"github.com/arvenza/helix/internal/component/mcp/client/oauth"
	"github.com/arvenza/helix/internal/component/mcp/client/oauth/oauthtest"
)

// connect returns a connection to rs authorized by h, logging into logs.
func connect(t *testing.T, rs *oauthtest.ResourceServer, h *oauth.Handler, logs *bytes.Buffer) *mcpclient.Conn {
	t.Helper()
	cfg := mcpclient.Config{Endpoint: rs.Endpoint(), OAuth: h, Timeout: 20 * time.Second}
	if logs != nil {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	c, err := mcpclient.NewConn(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func interactive(store oauth.Store, extra ...func(*oauth.LoginConfig)) oauth.LoginConfig {
	cfg := oauth.LoginConfig{Store: store, Interactive: true, Open: oauthtest.Browser, Timeout: 10 * time.Second}
	for _, f := range extra {
		f(&cfg)
	}
	return cfg
}

// login runs the authorization code flow against rs and returns the stored login.
func login(t *testing.T, rs *oauthtest.ResourceServer, store oauth.Store) *oauth.Login {
	t.Helper()
	h, err := oauth.NewHandler(rs.Endpoint(), interactive(store))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := connect(t, rs, h, nil).ListTools(context.Background()); err != nil {
		t.Fatalf("list tools with a login: %v", err)
	}
	l, err := store.Load(rs.Endpoint())
	if err != nil || l == nil {
		t.Fatalf("no login stored: %v", err)
	}
	return l
}

// stored returns a non-interactive handler on the login stored for rs.
func stored(t *testing.T, rs *oauthtest.ResourceServer, store oauth.Store) *oauth.Handler {
	t.Helper()
	h, err := oauth.NewHandler(rs.Endpoint(), oauth.LoginConfig{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func countGrants(as *oauthtest.AuthServer, grant string) int {
	n := 0
	for _, f := range as.TokenRequests() {
		if f.Get("grant_type") == grant {
			n++
		}
	}
	return n
}

func TestLoginStoresWhatRefreshNeedsInPrivateFiles(t *testing.T) {
	t.Parallel()
	as := oauthtest.NewAuthServer(t)
	rs := oauthtest.NewResourceServer(t, as)
	dir := filepath.Join(t.TempDir(), "tokens")
	store := oauth.Store{Dir: dir}

	l := login(t, rs, store)
	if l.ClientID != "dcr-client-1" || l.TokenURL != as.URL+"/token" || l.Token.RefreshToken == "" || !slices.Contains(l.Scopes, "read") {
		t.Errorf("stored login = %+v, want the dynamic registration, token URL, refresh token and scope read", l)
	}
	reqs := as.AuthRequests()
	if len(reqs) != 1 || reqs[0].Get("resource") != rs.Endpoint() || reqs[0].Get("code_challenge_method") != "S256" ||
		!strings.HasPrefix(reqs[0].Get("redirect_uri"), "http://127.0.0.1:") {
		t.Errorf("authorization requests = %v, want one with resource, PKCE S256 and a loopback redirect", reqs)
	}
	if tr := as.TokenRequests(); tr[0].Get("resource") != rs.Endpoint() {
		t.Errorf("token request resource = %q, want %q", tr[0].Get("resource"), rs.Endpoint())
	}
	st, err := os.Stat(dir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("token dir mode = %v (%v), want 0700", st.Mode().Perm(), err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 1 {
		t.Fatalf("files = %v, want one login", files)
	}
	if st, _ := os.Stat(files[0]); st.Mode().Perm() != 0o600 {
		t.Errorf("login file mode = %v, want 0600", st.Mode().Perm())
	}

	// A later process uses the stored token: no new authorization.
	res, err := connect(t, rs, stored(t, rs, store), nil).CallTool(context.Background(), "whoami", nil)
	if err != nil || len(as.AuthRequests()) != 1 {
		t.Fatalf("call with the stored login: %v (authorization requests: %d)", err, len(as.AuthRequests()))
	}
	if body, _ := mcpclient.BodyFromResult(res); body != "authorized" {
		t.Errorf("body = %q", body)
	}
}

func TestStoredTokenIsRefreshedBeforeItExpires(t *testing.T) {
	t.Parallel()
	as := oauthtest.NewAuthServer(t)
	as.ExpiresIn = 1 // within oauth2's expiry margin: expired as soon as it is used again
	rs := oauthtest.NewResourceServer(t, as)
	store := oauth.Store{Dir: t.TempDir()}
	first := login(t, rs, store)

	if _, err := connect(t, rs, stored(t, rs, store), nil).CallTool(context.Background(), "whoami", nil); err != nil {
		t.Fatal(err)
	}
	if n := countGrants(as, "refresh_token"); n == 0 {
		t.Fatal("the expired token was not refreshed")
	}
	if slices.Contains(rs.Statuses(), 401) && rs.Statuses()[len(rs.Statuses())-1] != 200 {
		t.Errorf("statuses %v: the refreshed token should have been accepted", rs.Statuses())
	}
	now, _ := store.Load(rs.Endpoint())
	if now.Token.AccessToken == first.Token.AccessToken {
		t.Error("the refreshed token was not stored")
	}
}

func TestRefusedTokenIsRefreshedOnce(t *testing.T) {
	t.Parallel()
	as := oauthtest.NewAuthServer(t)
	rs := oauthtest.NewResourceServer(t, as)
	store := oauth.Store{Dir: t.TempDir()}
	first := login(t, rs, store)
	as.Forget(first.Token.AccessToken) // the server no longer takes it, though it has not expired

	if _, err := connect(t, rs, stored(t, rs, store), nil).CallTool(context.Background(), "whoami", nil); err != nil {
		t.Fatalf("call after the server refused the token: %v", err)
	}
	if n := countGrants(as, "refresh_token"); n != 1 {
		t.Errorf("refresh grants = %d, want 1", n)
	}
	if len(as.AuthRequests()) != 1 {
		t.Errorf("a refresh should have been enough, got %d authorizations", len(as.AuthRequests()))
	}
	now, _ := store.Load(rs.Endpoint())
	if now.Token.AccessToken == first.Token.AccessToken {
		t.Error("the refreshed token was not stored")
	}
}

func TestWithoutUsableLoginTheErrorNamesHelixMCPLogin(t *testing.T) {
	t.Parallel()
	as := oauthtest.NewAuthServer(t)
	rs := oauthtest.NewResourceServer(t, as)
	store := oauth.Store{Dir: t.TempDir()}

	_, err := connect(t, rs, stored(t, rs, store), nil).ListTools(context.Background())
	var lre *oauth.LoginRequiredError
	if !errors.As(err, &lre) || !strings.Contains(err.Error(), "helix mcp login "+rs.Endpoint()) || !strings.Contains(err.Error(), "no login stored") {
		t.Fatalf("err = %v, want a LoginRequiredError naming helix mcp login %s", err, rs.Endpoint())
	}

	// Revoked at the server: the refresh is refused too, and a person has to log in.
	l := login(t, rs, store)
	if _, err := oauth.Revoke(context.Background(), l, nil); err != nil {
		t.Fatal(err)
	}
	_, err = connect(t, rs, stored(t, rs, store), nil).ListTools(context.Background())
	if !errors.As(err, &lre) || !strings.Contains(err.Error(), "refreshing it did not help") {
		t.Fatalf("err = %v, want a LoginRequiredError after the refused refresh", err)
	}
}

func TestInsufficientScopeStepsUpKeepingGrantedScopes(t *testing.T) {
	t.Parallel()
	as := oauthtest.NewAuthServer(t)
	rs := oauthtest.NewResourceServer(t, as)
	rs.CallScope = "admin"
	store := oauth.Store{Dir: t.TempDir()}
	l := login(t, rs, store)
	if slices.Contains(l.Scopes, "admin") {
		t.Fatalf("first login already has admin: %v", l.Scopes)
	}

	// Without a person the step-up is an error that says what the server wants.
	_, err := connect(t, rs, stored(t, rs, store), nil).CallTool(context.Background(), "whoami", nil)
	if err == nil || !strings.Contains(err.Error(), "more scopes") || !strings.Contains(err.Error(), "admin") {
		t.Fatalf("non-interactive step-up: err = %v", err)
	}

	h, err := oauth.NewHandler(rs.Endpoint(), interactive(store))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := connect(t, rs, h, nil).CallTool(context.Background(), "whoami", nil); err != nil {
		t.Fatalf("call after step-up: %v", err)
	}
	reqs := as.AuthRequests()
	got := strings.Fields(reqs[len(reqs)-1].Get("scope"))
	if !slices.Contains(got, "read") || !slices.Contains(got, "admin") {
		t.Errorf("step-up asked for %v, want read (granted before) and admin", got)
	}
	now, _ := store.Load(rs.Endpoint())
	if !slices.Contains(now.Scopes, "admin") {
		t.Errorf("stored scopes %v lack admin", now.Scopes)
	}
}

func TestWrongIssuerInRedirectIsRefused(t *testing.T) {
	t.Parallel()
	as := oauthtest.NewAuthServer(t)
	as.IssParameter = true
	as.RedirectIss = "https://evil.example.com"
	rs := oauthtest.NewResourceServer(t, as)
	store := oauth.Store{Dir: t.TempDir()}
	h, err := oauth.NewHandler(rs.Endpoint(), interactive(store))
	if err != nil {
		t.Fatal(err)
	}
	_, err = connect(t, rs, h, nil).ListTools(context.Background())
	if err == nil || !strings.Contains(err.Error(), "does not match expected issuer") {
		t.Fatalf("err = %v, want the issuer mismatch", err)
	}
	if countGrants(as, "authorization_code") != 0 {
		t.Error("the code was exchanged despite the wrong issuer")
	}
	if l, _ := store.Load(rs.Endpoint()); l != nil {
		t.Error("a login was stored")
	}
}

func TestSecretsStayOutOfErrorsAndLogs(t *testing.T) {
	t.Parallel()
	as := oauthtest.NewAuthServer(t)
	// A careless token endpoint that echoes what it got.
	as.TokenErrorBody = `{"error":"invalid_client","error_description":"bad client","echo":"` + as.ClientSecret + ` code-1"}`
	rs := oauthtest.NewResourceServer(t, as)
	store := oauth.Store{Dir: t.TempDir()}
	h, err := oauth.NewHandler(rs.Endpoint(), interactive(store, func(c *oauth.LoginConfig) {
		c.ClientID, c.ClientSecret = "pre-client", as.ClientSecret
	}))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	_, err = connect(t, rs, h, &logs).ListTools(context.Background())
	if err == nil {
		t.Fatal("want the token endpoint's refusal")
	}
	if !strings.Contains(err.Error(), "invalid_client") {
		t.Errorf("err = %v, want the OAuth error code", err)
	}
	verifier := ""
	for _, f := range as.TokenRequests() {
		verifier = f.Get("code_verifier")
	}
	for what, secret := range map[string]string{"client secret": as.ClientSecret, "code": "code-1", "verifier": verifier} {
		if secret == "" {
			t.Fatalf("no %s seen by the server", what)
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(logs.String(), secret) {
			t.Errorf("the %s shows in the error or the logs:\n%v\n%s", what, err, logs.String())
		}
	}
}

func TestHostileAuthorizationServerMetadataIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		meta func(m map[string]any)
		want string
	}{
		{"issuer of another server", func(m map[string]any) { m["issuer"] = "https://other.example.com" }, "does not match issuer"},
		{"plain-http endpoint elsewhere", func(m map[string]any) { m["token_endpoint"] = "http://auth.example.com/token" }, "does not use HTTPS"},
		{"huge document", func(m map[string]any) { m["padding"] = strings.Repeat("x", 2<<20) }, "authorization server"},
		{"no PKCE", func(m map[string]any) { delete(m, "code_challenge_methods_supported") }, "PKCE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			as := oauthtest.NewAuthServer(t)
			as.Meta = tc.meta
			rs := oauthtest.NewResourceServer(t, as)
			h, err := oauth.NewHandler(rs.Endpoint(), interactive(oauth.Store{Dir: t.TempDir()}))
			if err != nil {
				t.Fatal(err)
			}
			_, err = connect(t, rs, h, nil).ListTools(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if len(as.AuthRequests()) != 0 {
				t.Error("the flow went on to the authorization endpoint")
			}
		})
	}
}

func TestRevokeRevokesRefreshThenAccessToken(t *testing.T) {
	t.Parallel()
	as := oauthtest.NewAuthServer(t)
	rs := oauthtest.NewResourceServer(t, as)
	l := login(t, rs, oauth.Store{Dir: t.TempDir()})
	endpoint, err := oauth.Revoke(context.Background(), l, nil)
	if err != nil || endpoint != as.URL+"/revoke" {
		t.Fatalf("Revoke = %q, %v", endpoint, err)
	}
	if got := as.Revoked(); !slices.Equal(got, []string{l.Token.RefreshToken, l.Token.AccessToken}) {
		t.Errorf("revoked %v", got)
	}

	as.NoRevocation = true
	if endpoint, err := oauth.Revoke(context.Background(), l, nil); err != nil || endpoint != "" {
		t.Errorf("without a revocation endpoint: %q, %v; want nothing to do", endpoint, err)
	}
}

// An expired token whose refresh is refused: the transport sends no token, and the
// server's 401 leads to the login-required error, not to the refresh's failure.
func TestRefusedRefreshOfExpiredTokenAsksForLogin(t *testing.T) {
	t.Parallel()
	as := oauthtest.NewAuthServer(t)
	as.ExpiresIn = 1
	rs := oauthtest.NewResourceServer(t, as)
	store := oauth.Store{Dir: t.TempDir()}
	l := login(t, rs, store)
	if _, err := oauth.Revoke(context.Background(), l, nil); err != nil {
		t.Fatal(err)
	}
	_, err := connect(t, rs, stored(t, rs, store), nil).ListTools(context.Background())
	var lre *oauth.LoginRequiredError
	if !errors.As(err, &lre) {
		t.Fatalf("err = %v, want a LoginRequiredError", err)
	}
}

func TestLoginFindsMetadataAtTheFallbackLocations(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		oidc    bool
		unnamed bool
	}{
		{"resource metadata at the well-known path", false, true},
		{"OpenID configuration only", true, false},
		{"both", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			as := oauthtest.NewAuthServer(t)
			as.OIDCOnly = tc.oidc
			rs := oauthtest.NewResourceServer(t, as)
			rs.Unnamed = tc.unnamed
			l := login(t, rs, oauth.Store{Dir: t.TempDir()})
			if l.TokenURL != as.URL+"/token" {
				t.Errorf("token URL %q", l.TokenURL)
			}
		})
	}
}

// A token got by refreshing after a 401 that the server refuses as well is not
// refreshed again: the server wants a new authorization.
func TestRefreshAfter401HappensOnlyOnce(t *testing.T) {
	t.Parallel()
	as := oauthtest.NewAuthServer(t)
	rs := oauthtest.NewResourceServer(t, as)
	store := oauth.Store{Dir: t.TempDir()}
	first := login(t, rs, store)
	as.Forget(first.Token.AccessToken)
	h := stored(t, rs, store)
	c := connect(t, rs, h, nil)
	if _, err := c.CallTool(context.Background(), "whoami", nil); err != nil {
		t.Fatal(err)
	}
	as.Forget(h.Login().Token.AccessToken)
	_, err := c.CallTool(context.Background(), "whoami", nil)
	var lre *oauth.LoginRequiredError
	if !errors.As(err, &lre) {
		t.Fatalf("err = %v, want a LoginRequiredError", err)
	}
	if n := countGrants(as, "refresh_token"); n != 1 {
		t.Errorf("refresh grants = %d, want 1", n)
	}
}

func TestLoginGivesUpWhenTheBrowserDoesNotComeBack(t *testing.T) {
	t.Parallel()
	as := oauthtest.NewAuthServer(t)
	rs := oauthtest.NewResourceServer(t, as)
	var out bytes.Buffer
	h, err := oauth.NewHandler(rs.Endpoint(), interactive(oauth.Store{Dir: t.TempDir()}, func(c *oauth.LoginConfig) {
		c.Open = nil // nobody opens the URL
		c.Out = &out
		c.Timeout = 50 * time.Millisecond // the wait under test
	}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = connect(t, rs, h, nil).ListTools(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no answer from the browser within 50ms") {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(out.String(), as.URL+"/authorize?") {
		t.Errorf("the authorization URL was not shown:\n%s", out.String())
	}
}

// A token endpoint that redirects to another host would hand it the code, the
// verifier and the client's secret (a 307 keeps the POST body).
func TestTokenRequestIsNotRedirectedToAnotherHost(t *testing.T) {
	t.Parallel()
	caught := make(chan string, 10)
	catcher := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caught <- r.URL.String()
	}))
	t.Cleanup(catcher.Close)
	as := oauthtest.NewAuthServer(t)
	as.TokenRedirect = catcher.URL + "/steal"
	rs := oauthtest.NewResourceServer(t, as)
	h, err := oauth.NewHandler(rs.Endpoint(), interactive(oauth.Store{Dir: t.TempDir()}, func(c *oauth.LoginConfig) {
		c.ClientID, c.ClientSecret = "pre-client", as.ClientSecret
	}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = connect(t, rs, h, nil).ListTools(context.Background())
	if err == nil || !strings.Contains(err.Error(), "another origin: refused") || strings.Contains(err.Error(), as.ClientSecret) {
		t.Fatalf("err = %v, want the redirect refused without the secret", err)
	}
	select {
	case u := <-caught:
		t.Fatalf("the other host got %s", u)
	default:
	}
}
