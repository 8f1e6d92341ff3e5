package http

import (
	"mime"
	nethttp "net/http"
	"strings"

	"github.com/arvenza/helix/pkg/exchange"
)

// IsJSON reports whether a Content-Type value names JSON: application/json or any
// application/*+json type, parameters ignored. Used by http:// for responses and by
// http-server:// for requests.
func IsJSON(contentType string) bool {
	if contentType == "" {
		return false
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt = strings.ToLower(strings.TrimSpace(strings.Split(contentType, ";")[0]))
	}
	return mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")
}

// IsHelixHeader reports whether name is one of Helix's own exchange headers
// (HelixHttpMethod …; exchange.IsReservedHeader): those never travel over HTTP, and
// inbound HTTP headers with the prefix are dropped so that a client cannot forge them.
func IsHelixHeader(name string) bool { return exchange.IsReservedHeader(name) }

// connectionHeaders belong to one connection or one message's framing; they are never
// copied from an exchange onto a new HTTP message (RFC 9110 §7.6.1), nor are Date and
// Server, which the sending side sets itself.
var connectionHeaders = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Proxy-Authenticate": true,
	"Proxy-Authorization": true, "Te": true, "Trailer": true, "Transfer-Encoding": true,
	"Upgrade": true, "Content-Length": true, "Host": true, "Content-Encoding": true,
	"Date": true, "Server": true,
}

// OutboundHeader reports whether an exchange header may be written onto an HTTP
// message that Helix sends: it must be a valid field name, not a Helix header, and not
// a connection or framing header.
func OutboundHeader(name string) bool {
	if !validFieldName(name) || IsHelixHeader(name) {
		return false
	}
	return !connectionHeaders[nethttp.CanonicalHeaderKey(name)]
}

// validFieldName checks the RFC 9110 token grammar.
func validFieldName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// HeaderValue renders an exchange header value for HTTP (see exchange.Stringify);
// ok is false for values HTTP cannot carry (line breaks and other control characters
// except tab), which are skipped rather than sent mangled.
func HeaderValue(v any) (s string, ok bool) {
	s = exchange.Stringify(v)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return "", false
		}
	}
	return s, true
}
