package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// The 2025-03-26 authorization convention: a server without protected resource
// metadata is its own authorization server, whose metadata lives at the root of
// the server's origin. Servers of that era often run the authorization server
// under a path of the same origin (issuer https://host/oauth) while serving its
// metadata at the root, which RFC 8414's rule (the issuer is the URL the metadata
// was fetched for) refuses.
//
// On that path only, a metadata document at the root of the server's origin whose
// issuer is at the same origin is taken as the origin's own: nothing is trusted
// that the origin did not serve itself. Everywhere else (protected resource
// metadata found, or an issuer on another origin) the rule stands, so metadata
// poisoned with another server's issuer is still refused.

// maxMetadataBody bounds a metadata document read for the legacy rule (the go-sdk
// reads at most as much).
const maxMetadataBody = 1 << 20

// legacyClient returns client unchanged unless the server at serverURL has no
// protected resource metadata (the go-sdk will then look for the authorization
// server at the root of its origin); then a copy whose answers to that root
// metadata lookup follow the 2025-03-26 rule above. look says whether to look for
// the metadata first (false: the caller found there is none).
func legacyClient(ctx context.Context, challenges []oauthex.Challenge, serverURL string, client *http.Client, look bool) *http.Client {
	if look {
		if _, found, err := findResource(ctx, challenges, serverURL, client); err != nil || found {
			return client
		}
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return client
	}
	c := *client
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = &legacyIssuer{base: base, origin: u.Scheme + "://" + u.Host}
	return &c
}

// legacyIssuer rewrites the issuer of the root metadata documents of origin to
// the origin when it names a path of that same origin.
type legacyIssuer struct {
	base   http.RoundTripper
	origin string
}

func (t *legacyIssuer) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	switch req.URL.String() {
	case t.origin + "/.well-known/oauth-authorization-server", t.origin + "/.well-known/openid-configuration":
	default:
		return resp, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBody+1))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if len(body) > maxMetadataBody {
		return resp, nil // the go-sdk refuses it as too large
	}
	var doc map[string]json.RawMessage
	var issuer string
	if json.Unmarshal(body, &doc) != nil || json.Unmarshal(doc["issuer"], &issuer) != nil || !sameOriginPath(issuer, t.origin) {
		return resp, nil // the go-sdk reports what is wrong with it
	}
	doc["issuer"], _ = json.Marshal(t.origin)
	out, err := json.Marshal(doc)
	if err != nil {
		return resp, nil
	}
	resp.Body = io.NopCloser(bytes.NewReader(out))
	resp.ContentLength = int64(len(out))
	resp.Header.Set("Content-Length", strconv.Itoa(len(out)))
	return resp, nil
}

// sameOriginPath reports whether issuer is origin with a path (no query or
// fragment, as issuers have none).
func sameOriginPath(issuer, origin string) bool {
	u, err := url.Parse(issuer)
	if err != nil || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Path == "" || u.Path == "/" {
		return false
	}
	return u.Scheme+"://"+u.Host == origin
}
