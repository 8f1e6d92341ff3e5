package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// DefaultLoginTimeout is how long a login waits for the browser to come back.
const DefaultLoginTimeout = 5 * time.Minute

// requestTimeout bounds one request to an authorization server (metadata,
// registration, token).
const requestTimeout = 30 * time.Second

// ClientName is the name Helix registers under (dynamic client registration).
const ClientName = "Helix"

// LoginConfig says how a [Handler] authorizes calls to one MCP server.
type LoginConfig struct {
	// Store holds the logins; the handler starts from the one stored for the
	// server and stores every token it gets.
	Store Store

	// Fresh starts without the stored login (a new login replaces it).
	Fresh bool

	// Interactive allows running the authorization code flow when there is no
	// usable token (none stored, refresh refused, more scopes needed). Without it
	// those cases fail with a *LoginRequiredError.
	Interactive bool

	// ClientID and ClientSecret are a pre-registered client (the secret is empty
	// for a public client).
	ClientID     string
	ClientSecret string
	// ClientMetadataURL is a client ID metadata document URL (an https URL with a
	// path), used when the authorization server supports such documents.
	ClientMetadataURL string
	// Scopes are requested on top of those the server asks for.
	Scopes []string

	// Out receives the authorization URL (stderr); nil discards it.
	Out io.Writer
	// Open takes the person to the authorization URL (runs $BROWSER, say); nil
	// only prints it.
	Open func(ctx context.Context, authURL string) error
	// Timeout bounds the wait for the browser; 0 means DefaultLoginTimeout.
	Timeout time.Duration

	// HTTPClient makes the requests to authorization servers; nil means
	// NewHTTPClient(nil).
	HTTPClient *http.Client
}

// LoginRequiredError is a server that refused the stored login (or found none)
// when the flow may not run: the person has to log in.
type LoginRequiredError struct {
	Server string
	Reason string
}

func (e *LoginRequiredError) Error() string {
	return fmt.Sprintf("%s needs authorization (%s): run `helix mcp login %s`", e.Server, e.Reason, e.Server)
}

// Handler is an auth.OAuthHandler for people: it sends the token stored by a login,
// refreshes it before it expires and once when the server refuses it, and (when
// Interactive) runs the authorization code flow of the go-sdk's
// auth.AuthorizationCodeHandler with a loopback redirect when there is none, when
// the refresh is refused, or when the server asks for more scopes. Every new token is
// stored.
type Handler struct {
	cfg    LoginConfig
	server string // for messages: the URL the handler was made for
	client *http.Client

	// flow serialises authorizations: concurrent calls refused at once wait for the
	// first one's token instead of each opening a browser.
	flow sync.Mutex

	mu          sync.Mutex
	login       *Login
	ts          oauth2.TokenSource
	forced      string // an access token a 401 must not refresh (again)
	authorizeds int    // flows that ran (for callers that report it)
}

var _ auth.OAuthHandler = (*Handler)(nil)

// NewHandler returns a handler for the MCP server at serverURL, starting from the
// login stored for it (if any). candidates are other URLs the same login may be
// stored under (the /mcp endpoint of a host:port, say), tried in order after
// serverURL.
func NewHandler(serverURL string, cfg LoginConfig, candidates ...string) (*Handler, error) {
	if _, err := CanonicalResource(serverURL); err != nil {
		return nil, err
	}
	h := &Handler{cfg: cfg, server: serverURL, client: cfg.HTTPClient}
	if h.client == nil {
		h.client = NewHTTPClient(nil)
	}
	for _, u := range append([]string{serverURL}, candidates...) {
		if cfg.Fresh {
			break
		}
		l, err := cfg.Store.Load(u)
		if err != nil {
			return nil, err
		}
		if l != nil {
			h.setLogin(l)
			break
		}
	}
	return h, nil
}

// Login returns the current login (nil before one exists). Callers must not
// change it.
func (h *Handler) Login() *Login {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.login
}

// Authorizations returns how many authorization code flows the handler ran.
func (h *Handler) Authorizations() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.authorizeds
}

// TokenSource returns the stored login's token source (nil without a login).
func (h *Handler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ts, nil
}

// setLogin makes l the current login, with a token source that refreshes it and
// stores each refreshed token.
func (h *Handler) setLogin(l *Login) {
	refreshCtx := context.WithValue(context.Background(), oauth2.HTTPClient, h.client)
	inner := l.config().TokenSource(refreshCtx, l.Token)
	h.mu.Lock()
	h.login = l
	h.ts = &storingSource{h: h, inner: inner, last: l.Token.AccessToken}
	h.mu.Unlock()
}

// storingSource stores each new token of inner (a refresh) in the login.
type storingSource struct {
	h     *Handler
	inner oauth2.TokenSource
	mu    sync.Mutex
	last  string
}

func (s *storingSource) Token() (*oauth2.Token, error) {
	tok, err := s.inner.Token()
	if err != nil {
		return nil, cleanTokenError(err)
	}
	s.mu.Lock()
	changed := tok.AccessToken != s.last
	s.last = tok.AccessToken
	s.mu.Unlock()
	if changed {
		s.h.storeToken(tok)
	}
	return tok, nil
}

// storeToken records a refreshed token in the current login and its file. A
// failure to write is not the call's failure: the token works, only the next
// process will refresh again.
func (h *Handler) storeToken(tok *oauth2.Token) {
	h.mu.Lock()
	if h.login == nil {
		h.mu.Unlock()
		return
	}
	l := *h.login
	l.Token = tok
	h.login = &l
	h.mu.Unlock()
	_ = h.cfg.Store.Save(&l)
}

// Authorize answers a 401 or 403 of the server: a refresh of the token the server
// refused (once per token), else the authorization code flow, else a
// *LoginRequiredError.
func (h *Handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	stepUp := resp.StatusCode == http.StatusForbidden
	if stepUp && challengeParam(challenges, "error") != "insufficient_scope" {
		// Only insufficient_scope asks for authorization; another 403 is the
		// server's answer and goes back to the caller as it is.
		return nil
	}

	h.flow.Lock()
	defer h.flow.Unlock()
	sent := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")

	h.mu.Lock()
	l := h.login
	h.mu.Unlock()
	if l != nil && sent != "" && sent != l.Token.AccessToken {
		// Another call renewed the token while this one was refused: retry with it.
		return nil
	}
	if !stepUp && l != nil && l.Token.RefreshToken != "" && h.forced != l.Token.AccessToken {
		if tok, err := h.refresh(ctx, l); err == nil {
			// The server refusing this one too means refreshing does not help
			// (another authorization server, revoked grant): no second refresh.
			h.forced = tok.AccessToken
			return nil
		}
		// A refused refresh (revoked, expired) leaves the flow as the only way.
		h.forced = l.Token.AccessToken
	}

	if !h.cfg.Interactive {
		reason := "no login stored"
		switch {
		case len(challenges) == 0 && l == nil:
			reason = "it answered 401 without a WWW-Authenticate challenge; if it takes another kind of credential, send that instead"
		case stepUp:
			reason = "it asks for more scopes: " + challengeParam(challenges, "scope")
		case l != nil:
			reason = "it refused the stored token and refreshing it did not help"
		}
		return &LoginRequiredError{Server: requestServer(req, h.server), Reason: reason}
	}
	return h.authorize(ctx, req, resp, challenges)
}

// refresh gets a new access token for l with its refresh token, whatever the
// expiry says (the server refused the current one), and stores it.
func (h *Handler) refresh(ctx context.Context, l *Login) (*oauth2.Token, error) {
	ctx = context.WithValue(ctx, oauth2.HTTPClient, h.client)
	tok, err := l.config().TokenSource(ctx, &oauth2.Token{RefreshToken: l.Token.RefreshToken}).Token()
	if err != nil {
		return nil, cleanTokenError(err)
	}
	if tok.RefreshToken == "" {
		tok.RefreshToken = l.Token.RefreshToken
	}
	nl := *l
	nl.Token = tok
	nl.hideSecrets()
	h.setLogin(&nl)
	_ = h.cfg.Store.Save(&nl)
	return tok, nil
}

// authorize runs the authorization code flow with a loopback redirect and stores
// its result.
func (h *Handler) authorize(ctx context.Context, req *http.Request, resp *http.Response, challenges []oauthex.Challenge) error {
	cb, err := listenCallback()
	if err != nil {
		return err
	}
	defer cb.close()

	var got struct {
		cfg *oauth2.Config
		tok *oauth2.Token
		iss string
	}
	h.mu.Lock()
	var granted []string
	if h.login != nil {
		granted = h.login.Scopes
	}
	h.mu.Unlock()

	acfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: cb.redirectURL,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			res, err := h.askBrowser(ctx, cb, args.URL)
			if err != nil {
				return nil, err
			}
			got.iss = res.Iss
			return res, nil
		},
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{
				RedirectURIs:  []string{cb.redirectURL},
				ClientName:    ClientName,
				GrantTypes:    []string{"authorization_code", "refresh_token"},
				ResponseTypes: []string{"code"},
			},
		},
		// Scopes granted before stay requested, so that a step-up does not lose
		// them; configured ones are added to what the server asks for.
		ScopeFilter: func(discovered []string) []string {
			return union(granted, discovered, h.cfg.Scopes)
		},
		RequestRefreshToken: true,
		// Only on the 2025-03-26 path (no protected resource metadata) does the
		// client differ: see legacyClient.
		Client: legacyClient(ctx, challenges, req.URL.String(), h.client, true),
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			got.cfg, got.tok = c, tok
			return c.TokenSource(ctx, tok), nil
		},
	}
	if h.cfg.ClientMetadataURL != "" {
		acfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: h.cfg.ClientMetadataURL}
	}
	if h.cfg.ClientID != "" {
		pre := &oauthex.ClientCredentials{ClientID: h.cfg.ClientID}
		if h.cfg.ClientSecret != "" {
			pre.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: h.cfg.ClientSecret}
		}
		acfg.PreregisteredClient = pre
	}
	inner, err := auth.NewAuthorizationCodeHandler(acfg)
	if err != nil {
		return fmt.Errorf("oauth login: %w", err)
	}
	if err := inner.Authorize(ctx, req, resp); err != nil {
		return fmt.Errorf("oauth login to %s: %w", h.server, cleanTokenError(err))
	}
	if got.tok == nil {
		return fmt.Errorf("oauth login to %s: the authorization server gave no token", h.server)
	}
	scopes := got.cfg.Scopes
	if s, ok := got.tok.Extra("scope").(string); ok && s != "" {
		scopes = strings.Fields(s)
	}
	issuer := got.iss
	if issuer == "" {
		if u, err := url.Parse(got.cfg.Endpoint.TokenURL); err == nil {
			issuer = u.Scheme + "://" + u.Host
		}
	}
	l := &Login{
		Resource:         req.URL.String(),
		ResourceMetadata: challengeParam(challenges, "resource_metadata"),
		Issuer:           issuer,
		TokenURL:         got.cfg.Endpoint.TokenURL,
		AuthStyle:        got.cfg.Endpoint.AuthStyle,
		ClientID:         got.cfg.ClientID,
		ClientSecret:     got.cfg.ClientSecret,
		Scopes:           scopes,
		Token:            got.tok,
	}
	if err := h.cfg.Store.Save(l); err != nil {
		return err
	}
	h.setLogin(l)
	h.mu.Lock()
	h.authorizeds++
	h.forced = ""
	h.mu.Unlock()
	return nil
}

// askBrowser shows the authorization URL, opens it when it can and waits for the
// redirect to the loopback listener.
func (h *Handler) askBrowser(ctx context.Context, cb *callbackServer, authURL string) (*auth.AuthorizationResult, error) {
	if h.cfg.Out != nil {
		fmt.Fprintf(h.cfg.Out, "To authorize Helix for %s, open this URL in a browser:\n  %s\n", h.server, authURL)
	}
	if h.cfg.Open != nil {
		if err := h.cfg.Open(ctx, authURL); err != nil && h.cfg.Out != nil {
			fmt.Fprintf(h.cfg.Out, "could not open a browser (%v); open the URL above by hand\n", err)
		}
	}
	timeout := h.cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultLoginTimeout
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-cb.results:
		if r.err != nil {
			return nil, r.err
		}
		return &auth.AuthorizationResult{Code: r.code, State: r.state, Iss: r.iss}, nil
	case <-timer.C:
		return nil, fmt.Errorf("no answer from the browser within %s; run the login again (--timeout waits longer)", timeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// requestServer names the server a refused request went to (the endpoint a
// host:port resolved to, say), without its query; fallback when there is none.
func requestServer(req *http.Request, fallback string) string {
	if req == nil || req.URL == nil || req.URL.Host == "" {
		return fallback
	}
	u := *req.URL
	u.RawQuery, u.Fragment = "", ""
	return u.String()
}

// challengeParam returns a parameter of the first Bearer challenge that has it.
func challengeParam(cs []oauthex.Challenge, name string) string {
	for _, c := range cs {
		if v := c.Params[name]; v != "" && (c.Scheme == "bearer" || name == "resource_metadata") {
			return v
		}
	}
	return ""
}

// union returns the scopes of the lists in order, each once.
func union(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		for _, s := range l {
			if s != "" && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// cleanTokenError keeps an error of a token endpoint to its status, OAuth error code
// and description: a *oauth2.RetrieveError also carries the whole response body,
// which a hostile or careless server may fill with anything, tokens included. The
// result is still a *oauth2.RetrieveError, so that the go-sdk's transport still
// tells a refused refresh (invalid_grant: send no token, let the server's 401 start
// a new authorization) from other failures.
func cleanTokenError(err error) error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		return err
	}
	clean := &oauth2.RetrieveError{ErrorCode: re.ErrorCode, ErrorDescription: re.ErrorDescription, ErrorURI: re.ErrorURI}
	if len(clean.ErrorDescription) > 200 {
		clean.ErrorDescription = clean.ErrorDescription[:200] + "…"
	}
	// Error() reads Response.Status when there is no error code.
	clean.Response = &http.Response{Status: "(no response)", Header: http.Header{}}
	if re.Response != nil {
		clean.Response.Status, clean.Response.StatusCode = re.Response.Status, re.Response.StatusCode
	}
	return clean
}
