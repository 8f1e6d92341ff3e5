package oauth

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// ClientCredentials is an auth.OAuthHandler for workflows: on the server's first
// 401 it finds the authorization server by discovery (protected resource metadata,
// then the authorization server's metadata, with the same fallbacks as logins) and
// gets tokens with the client credentials grant, for the server as resource. The
// token is fetched again when it expires and when the server refuses it.
//
// It is the go-sdk's extauth.ClientCredentialsHandler made safe for the concurrent
// calls of a shared connection, with configured scopes and the resource indicator.
// The same discovery serves the other grants of a client that works without a
// person at hand: Enterprise and Workload replace the grant, PrivateKey the client
// secret. (The go-sdk's extauth.EnterpriseHandler is not used: it needs the
// authorization server and resource configured instead of discovered, sends the
// client secret only in the form, and discovers the IdP with metadata checks meant
// for authorization code servers.)
type ClientCredentials struct {
	ClientID     string
	ClientSecret string
	// PrivateKey, when set, authenticates the client with a JWT it signs
	// (private_key_jwt) instead of ClientSecret.
	PrivateKey *PrivateKey
	// Enterprise, when set, replaces the client credentials grant with
	// enterprise-managed authorization: an ID-JAG from the enterprise IdP, traded
	// for the token with the JWT bearer grant. The client still authenticates
	// at the authorization server with ClientSecret or PrivateKey (or not at all
	// when both are empty).
	Enterprise *Enterprise
	// Workload, when set, replaces the client credentials grant with the JWT
	// bearer grant whose assertion is the workload's identity token (workload
	// identity federation). Client authentication is optional, as for Enterprise.
	Workload *WorkloadToken
	// Scopes, when set, are requested instead of those the server asks for.
	Scopes []string
	// HTTPClient makes the discovery and token requests; nil means
	// NewHTTPClient(nil).
	HTTPClient *http.Client

	flow sync.Mutex
	mu   sync.Mutex
	ts   oauth2.TokenSource
	last string // the access token last handed out
}

var _ auth.OAuthHandler = (*ClientCredentials)(nil)

// TokenSource returns the token source found by the last Authorize (nil before).
func (c *ClientCredentials) TokenSource(context.Context) (oauth2.TokenSource, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ts, nil
}

// Authorize discovers the token endpoint and gets a token.
func (c *ClientCredentials) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if resp.StatusCode == http.StatusForbidden && challengeParam(challenges, "error") != "insufficient_scope" {
		return nil
	}
	c.flow.Lock()
	defer c.flow.Unlock()
	c.mu.Lock()
	renewed := c.ts != nil && req.Header.Get("Authorization") != "Bearer "+c.last
	c.mu.Unlock()
	if renewed {
		return nil // another call got a new token while this one was refused
	}

	client := c.HTTPClient
	if client == nil {
		client = NewHTTPClient(nil)
	}
	prm, found, err := findResource(ctx, challenges, req.URL.String(), client)
	if err != nil {
		return err
	}
	metaClient := client
	if !found {
		metaClient = legacyClient(ctx, nil, req.URL.String(), client, false)
	}
	asm, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], metaClient)
	if err != nil {
		return fmt.Errorf("oauth2 discovery: authorization server %s: %w", prm.AuthorizationServers[0], err)
	}
	ep := endpoint{
		issuer:   strings.TrimRight(prm.AuthorizationServers[0], "/"),
		tokenURL: strings.TrimRight(prm.AuthorizationServers[0], "/") + "/token",
		resource: prm.Resource,
	}
	grant := "client_credentials"
	if c.Enterprise != nil || c.Workload != nil {
		grant = grantJWTBearer
	}
	if asm != nil {
		ep.issuer, ep.tokenURL, ep.methods = asm.Issuer, asm.TokenEndpoint, asm.TokenEndpointAuthMethodsSupported
		if len(asm.GrantTypesSupported) > 0 && !slices.Contains(asm.GrantTypesSupported, grant) {
			return fmt.Errorf("oauth2 discovery: authorization server %s does not offer the %s grant (it offers %s)",
				asm.Issuer, grant, strings.Join(asm.GrantTypesSupported, ", "))
		}
		if c.PrivateKey != nil {
			if err := checkPrivateKeyJWT(asm.Issuer, ep.methods, asm.TokenEndpointAuthSigningAlgValuesSupported, c.PrivateKey); err != nil {
				return err
			}
		}
	}
	ep.scopes = c.Scopes
	if len(ep.scopes) == 0 {
		if s := challengeParam(challenges, "scope"); s != "" {
			ep.scopes = strings.Fields(s)
		} else {
			ep.scopes = prm.ScopesSupported
		}
	}
	// The token source keeps its context for every later fetch, so it must not be
	// this request's (a cancelled call would break the next renewal); each fetch is
	// bounded by the client's timeout instead.
	ts := &grantSource{c: c, client: client, ep: ep}
	tok, err := ts.Token()
	if err != nil {
		return err
	}
	hideToken(tok)
	c.mu.Lock()
	c.ts = &watchedSource{inner: oauth2.ReuseTokenSource(tok, ts), c: c}
	c.last = tok.AccessToken
	c.mu.Unlock()
	return nil
}

// watchedSource remembers the token last handed out (Authorize tells a stale
// refusal from a fresh one by it) and hides each new token from logs.
type watchedSource struct {
	inner oauth2.TokenSource
	c     *ClientCredentials
}

func (w *watchedSource) Token() (*oauth2.Token, error) {
	tok, err := w.inner.Token()
	if err != nil {
		return nil, cleanTokenError(err)
	}
	w.c.mu.Lock()
	if w.c.last != tok.AccessToken {
		w.c.last = tok.AccessToken
		hideToken(tok)
	}
	w.c.mu.Unlock()
	return tok, nil
}

func hideToken(tok *oauth2.Token) { (&Login{Token: tok}).hideSecrets() }

// tokenAuthStyle picks how the client authenticates at the token endpoint from what
// the server supports: client_secret_post, else client_secret_basic, else
// oauth2's detection.
func tokenAuthStyle(supported []string) oauth2.AuthStyle {
	switch {
	case slices.Contains(supported, "client_secret_post"):
		return oauth2.AuthStyleInParams
	case slices.Contains(supported, "client_secret_basic"):
		return oauth2.AuthStyleInHeader
	}
	return oauth2.AuthStyleAutoDetect
}

// discoverResource fetches the protected resource metadata of the MCP server at
// serverURL: at the URL its challenge names, else at the path-based and then the
// root well-known location. A server without any is its own authorization server
// (the 2025-03-26 convention).
func discoverResource(ctx context.Context, challenges []oauthex.Challenge, serverURL string, client *http.Client) (*oauthex.ProtectedResourceMetadata, error) {
	prm, _, err := findResource(ctx, challenges, serverURL, client)
	return prm, err
}

// findResource is discoverResource that also tells whether the metadata was found
// (false: the server is its own authorization server).
func findResource(ctx context.Context, challenges []oauthex.Challenge, serverURL string, client *http.Client) (*oauthex.ProtectedResourceMetadata, bool, error) {
	su, err := url.Parse(serverURL)
	if err != nil {
		return nil, false, fmt.Errorf("oauth2 discovery: %w", err)
	}
	type candidate struct{ metadata, resource string }
	var cands []candidate
	named := challengeParam(challenges, "resource_metadata")
	if named != "" {
		cands = append(cands, candidate{named, serverURL})
	}
	mu := *su
	mu.RawQuery, mu.Fragment = "", ""
	mu.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(su.Path, "/")
	cands = append(cands, candidate{mu.String(), serverURL})
	mu.Path = "/.well-known/oauth-protected-resource"
	root := *su
	root.Path, root.RawQuery, root.Fragment = "", "", ""
	cands = append(cands, candidate{mu.String(), root.String()})

	for _, cand := range cands {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, cand.metadata, cand.resource, client)
		if err != nil && cand.metadata == named {
			// The server itself pointed here: metadata that cannot be had or
			// fails its checks (another resource, plain-http servers) is refused,
			// not replaced by a guess.
			return nil, false, fmt.Errorf("oauth2 discovery: protected resource metadata that %s names: %w", serverURL, err)
		}
		if err != nil {
			continue // not at this well-known location
		}
		if prm == nil {
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, false, fmt.Errorf("oauth2 discovery: protected resource metadata at %s names no authorization server", cand.metadata)
		}
		return prm, true, nil
	}
	if ctx.Err() != nil {
		return nil, false, ctx.Err()
	}
	return &oauthex.ProtectedResourceMetadata{
		AuthorizationServers: []string{root.String()},
		Resource:             serverURL,
	}, false, nil
}

// endpoint is what discovery found: the authorization server (its issuer and token
// endpoint, and how clients authenticate there), the resource the token is for,
// and the scopes to ask for.
type endpoint struct {
	issuer, tokenURL, resource string
	methods, scopes            []string
}

// grantSource fetches a new token from the endpoint each time it is asked (behind
// an oauth2.ReuseTokenSource): a fresh client assertion and a fresh ID-JAG for
// every request, since both are single-use, short-lived credentials.
type grantSource struct {
	c      *ClientCredentials
	client *http.Client
	ep     endpoint
}

func (g *grantSource) Token() (*oauth2.Token, error) {
	c, ep := g.c, g.ep
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, g.client)
	params := url.Values{"resource": {ep.resource}}
	cc := &clientcredentials.Config{
		ClientID:       c.ClientID,
		ClientSecret:   c.ClientSecret,
		TokenURL:       ep.tokenURL,
		Scopes:         ep.scopes,
		AuthStyle:      tokenAuthStyle(ep.methods),
		EndpointParams: params,
	}
	if cc.ClientSecret == "" {
		// A public client (or one with a key) sends its client_id in the form and
		// no Authorization header.
		cc.AuthStyle = oauth2.AuthStyleInParams
	}
	what := "client credentials"
	if c.Workload != nil {
		what = "JWT bearer grant"
		tok, err := c.Workload.read()
		if err != nil {
			return nil, err
		}
		params.Set("grant_type", grantJWTBearer)
		params.Set("assertion", tok)
	}
	if c.Enterprise != nil {
		what = "JWT bearer grant"
		jag, err := c.Enterprise.exchange(ctx, g.client, ep)
		if err != nil {
			return nil, err
		}
		// clientcredentials lets grant_type be replaced; its other parameters
		// are those of any token request.
		params.Set("grant_type", grantJWTBearer)
		params.Set("assertion", jag)
	}
	if c.PrivateKey != nil {
		assertion, err := c.PrivateKey.Assertion(c.ClientID, []string{ep.issuer, ep.tokenURL}, time.Now())
		if err != nil {
			return nil, fmt.Errorf("oauth2 %s at %s: %w", what, ep.tokenURL, err)
		}
		params.Set("client_assertion_type", clientAssertionType)
		params.Set("client_assertion", assertion)
		cc.ClientSecret, cc.AuthStyle = "", oauth2.AuthStyleInParams // client_id goes in the form
	}
	tok, err := cc.Token(ctx)
	if err != nil {
		return nil, fmt.Errorf("oauth2 %s at %s: %w", what, ep.tokenURL, cleanTokenError(err))
	}
	return tok, nil
}
