package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// grantJWTBearer is the JWT bearer authorization grant (RFC 7523): the assertion
// is the ID-JAG the enterprise IdP issued.
const grantJWTBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"

// Enterprise is enterprise-managed authorization: the person (or workload) is
// known to an enterprise identity provider by an ID token; the IdP exchanges that
// token (RFC 8693 token exchange) for an identity assertion authorization grant
// (ID-JAG) naming the MCP server's authorization server and resource, and the
// client trades the ID-JAG for an access token there (the JWT bearer grant).
// The authorization server and resource are found by discovery, as for the client
// credentials grant.
type Enterprise struct {
	// IdPTokenURL is the IdP's token endpoint, where the exchange happens.
	IdPTokenURL string
	// IdPClientID and IdPClientSecret are the client's registration at the IdP;
	// the secret is empty for a public client.
	IdPClientID     string
	IdPClientSecret string
	// IDToken is the ID token the IdP issued to the client for the person.
	IDToken string
}

// Validate reports missing values.
func (e *Enterprise) Validate() error {
	var errs []error
	for _, f := range []struct{ v, key string }{
		{e.IdPTokenURL, "idp_token_url"}, {e.IdPClientID, "idp_client_id"}, {e.IDToken, "id_token"},
	} {
		if f.v == "" {
			errs = append(errs, fmt.Errorf("enterprise needs %s", f.key))
		}
	}
	return errors.Join(errs...)
}

// exchange asks the IdP for an ID-JAG whose audience is the authorization server
// (by its issuer) and whose resource is the MCP server. The go-sdk's
// oauthex.ExchangeToken makes the request and checks the answer names the token
// type it issued.
func (e *Enterprise) exchange(ctx context.Context, client *http.Client, ep endpoint) (string, error) {
	creds := &oauthex.ClientCredentials{ClientID: e.IdPClientID}
	if e.IdPClientSecret != "" {
		creds.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: e.IdPClientSecret}
	}
	tok, err := oauthex.ExchangeToken(ctx, e.IdPTokenURL, &oauthex.TokenExchangeRequest{
		RequestedTokenType: oauthex.TokenTypeIDJAG,
		Audience:           ep.issuer,
		Resource:           ep.resource,
		Scope:              ep.scopes,
		SubjectToken:       e.IDToken,
		SubjectTokenType:   oauthex.TokenTypeIDToken,
	}, creds, client)
	if err != nil {
		return "", fmt.Errorf("oauth2 enterprise: token exchange at %s: %w", e.IdPTokenURL, cleanTokenError(err))
	}
	if typ, _ := tok.Extra("issued_token_type").(string); typ != oauthex.TokenTypeIDJAG {
		return "", fmt.Errorf("oauth2 enterprise: the IdP at %s issued a %q, not an ID-JAG (%s)", e.IdPTokenURL, typ, oauthex.TokenTypeIDJAG)
	}
	if tok.AccessToken == "" {
		return "", fmt.Errorf("oauth2 enterprise: the IdP at %s answered the token exchange without a token", e.IdPTokenURL)
	}
	return tok.AccessToken, nil
}
