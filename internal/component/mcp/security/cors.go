package security

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Headers a browser MCP client sends: credentials, JSON, the session and
// protocol headers of Streamable HTTP, and Last-Event-ID for SSE resumption.
const corsAllowHeaders = "Authorization, Content-Type, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID, X-API-Key"

// Response headers a browser page may read: the session id it must echo, the
// negotiated version, and the auth challenge pointing at the OAuth metadata.
const corsExposeHeaders = "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate"

const corsAllowMethods = "GET, POST, DELETE, OPTIONS"

type corsPolicy struct {
	any     bool
	origins map[string]bool
}

func newCORSPolicy(origins []string) (*corsPolicy, error) {
	c := &corsPolicy{origins: map[string]bool{}}
	for i, o := range origins {
		o = strings.TrimSpace(o)
		if o == "*" {
			c.any = true
			continue
		}
		n, err := normalizeOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("cors_origins[%d]: %w", i, err)
		}
		c.origins[n] = true
	}
	return c, nil
}

// normalizeOrigin reduces an origin to the scheme://host[:port] form browsers
// send, lower-cased; paths are refused because an Origin never has one.
func normalizeOrigin(o string) (string, error) {
	u, err := url.Parse(o)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("%q is not an origin (want scheme://host[:port], e.g. http://localhost:3000, or \"*\")", o)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("%q is not an origin: it must not have a path, query or user (want scheme://host[:port])", o)
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

func (c *corsPolicy) allows(origin string) bool {
	if c.any {
		return true
	}
	n, err := normalizeOrigin(origin)
	return err == nil && c.origins[n]
}

type corsVerdict int

const (
	corsPass     corsVerdict = iota // continue with the next layer
	corsAnswered                    // preflight answered with 204
	corsDenied                      // unlisted origin: the caller answers 403
)

// handle sets CORS response headers and decides the request's fate.
// Requests without an Origin header (non-browser clients) pass untouched.
func (c *corsPolicy) handle(w http.ResponseWriter, r *http.Request) corsVerdict {
	h := w.Header()
	h.Add("Vary", "Origin")
	origin := r.Header.Get("Origin")
	if origin == "" {
		return corsPass
	}
	preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
	if !c.allows(origin) {
		// Actual requests from unlisted origins are refused too, not only
		// preflights: a "simple" cross-site POST skips the preflight, and an
		// open local MCP server must not be drivable by any web page.
		return corsDenied
	}
	h.Set("Access-Control-Allow-Origin", origin)
	if !preflight {
		h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
		return corsPass
	}
	h.Add("Vary", "Access-Control-Request-Method")
	h.Add("Vary", "Access-Control-Request-Headers")
	h.Set("Access-Control-Allow-Methods", corsAllowMethods)
	h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
	h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return corsAnswered
}
