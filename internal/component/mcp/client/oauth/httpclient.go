package oauth

import (
	"errors"
	"fmt"
	"net/http"
)

// maxRedirects bounds the redirects of one authorization request.
const maxRedirects = 5

// NewHTTPClient returns the client for requests to authorization servers
// (metadata, registration, token, revocation) over base (nil: Go's default): each
// request is bounded in time, and redirects are followed only within the same
// origin. A token endpoint that redirected elsewhere would have the client's
// secret, the code and its verifier, or a refresh token sent to a host nobody
// vetted (a 307 keeps the POST body); a metadata document that moved to another
// host is refused the same way, with an error naming both.
func NewHTTPClient(base http.RoundTripper) *http.Client {
	return &http.Client{Transport: base, Timeout: requestTimeout, CheckRedirect: SameOriginRedirects(maxRedirects, "")}
}

// SameOriginRedirects returns a CheckRedirect that follows at most limit
// redirects, each within the origin (scheme, host and port) of the request before
// it: a redirected request carries what the first one did (a body, credentials a
// transport adds), which must not reach a host nobody configured. hint ends the
// refusal's message.
func SameOriginRedirects(limit int, hint string) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) >= limit {
			return fmt.Errorf("more than %d redirects from %s", limit, via[0].URL.Redacted())
		}
		from := via[len(via)-1].URL
		if req.URL.Scheme != from.Scheme || req.URL.Host != from.Host {
			return errors.New(from.Scheme + "://" + from.Host + from.Path + " redirected to " +
				req.URL.Scheme + "://" + req.URL.Host + ", another origin: refused" + hint)
		}
		return nil
	}
}
