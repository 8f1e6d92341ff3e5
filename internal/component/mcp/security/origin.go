package security

import (
	"fmt"
	"net"
	"net/http"
	"strings"
)

// The Origin rule. The MCP specification has a server validate the Origin
// header of every request and answer 403 to an invalid one: a web page must
// not drive an MCP server it was not meant to (cross-site requests, DNS
// rebinding). Requests without Origin (every non-browser client) are not
// concerned. With an Origin, a request is served only when
//
//   - the Origin is listed in cors_origins ("*" admits any web origin), or,
//     with no cors_origins, the listener is a loopback one and the Origin
//     names a loopback host (a local inspector or development page);
//   - it is not "null", the opaque origin of sandboxed frames, file: pages and
//     some redirects: it identifies nobody, so no list admits it;
//   - it is the only Origin header: a browser sends one.
//
// The rule holds whatever else is configured (API keys, OAuth, trusted
// proxies: a reverse proxy forwards the browser's Origin unchanged). Only the
// OAuth protected-resource metadata, public by design, is exempt.

// originRefused is the fixed head of every refusal's reason: the rejection
// counters are labelled by it, so the Origin itself (the client's text) must
// only come after the colon.
const originRefused = "origin not allowed: "

// originRefusal returns why r's Origin is refused (starting with
// originRefused), or "" when r may go on. allowed is the cors_origins policy;
// nil means none is configured.
func originRefusal(r *http.Request, allowed *corsPolicy) string {
	origins := r.Header.Values("Origin")
	switch {
	case len(origins) == 0:
		return ""
	case len(origins) > 1:
		return originRefused + "more than one Origin header"
	}
	origin := strings.TrimSpace(origins[0])
	shown := origin
	if len(shown) > 100 {
		shown = shown[:100] + "…"
	}
	switch {
	case strings.EqualFold(origin, "null"):
		return originRefused + `Origin "null" (a sandboxed page or a file) is never allowed`
	case allowed != nil:
		if allowed.allows(origin) {
			return ""
		}
		return fmt.Sprintf("%sOrigin %q is not listed in cors_origins", originRefused, shown)
	case loopbackListener(r) && loopbackOrigin(origin):
		return ""
	case loopbackListener(r):
		return fmt.Sprintf("%sOrigin %q is not a loopback origin; list it in cors_origins to allow it", originRefused, shown)
	}
	return fmt.Sprintf("%sOrigin %q: list the web origins that may call this server in cors_origins", originRefused, shown)
}

// loopbackListener reports whether r arrived on a loopback address.
func loopbackListener(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && local != nil && parseAddr(local.String()).IsLoopback()
}

// loopbackOrigin reports whether origin is scheme://host[:port] with a
// loopback host (localhost or a loopback address).
func loopbackOrigin(origin string) bool {
	n, err := normalizeOrigin(origin)
	if err != nil {
		return false
	}
	_, hostport, _ := strings.Cut(n, "://")
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	return parseAddr(host).IsLoopback()
}

// OriginGuard applies the Origin rule (see originRefusal) to a server without
// a security stack (no security key set): 403 with the reason.
func OriginGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reason := originRefusal(r, nil); reason != "" {
			http.Error(w, http.StatusText(http.StatusForbidden)+": "+reason, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}
