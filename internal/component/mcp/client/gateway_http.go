package client

import "net/http"

// HTTPClientFor returns the HTTP client a connection to an MCP server uses, for
// the gateway's connections to its upstreams (internal/gateway): header and the
// auth's credentials on every request (auth may be nil), redirects kept to the
// same origin, no client-wide timeout. The transport's idle connections are the
// caller's to close (CloseIdleConnections on the client).
func HTTPClientFor(header http.Header, auth *AuthConfig) (*http.Client, error) {
	c, _, err := newHTTPClient(header, auth)
	return c, err
}
