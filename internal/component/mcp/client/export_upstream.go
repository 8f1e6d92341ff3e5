package client

import (
	"context"
	"net/http"
	"os/exec"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// This file lends the mcp:// client's connection machinery to the gateway's
// upstream pool (internal/gateway/upstream), which opens many sessions of its
// own to one server: the same auth: handling, the same HTTP transport and the
// same care with stdio subprocesses, without a second copy of either.

// NewAuthHTTPClient returns the HTTP client a connection uses: header and the
// auth's credentials on every request (auth may be nil), redirects kept to the
// same origin, no client-wide timeout (a stream lives as long as its session).
// The returned transport's idle connections are the owner's to close.
func NewAuthHTTPClient(header http.Header, auth *AuthConfig) (*http.Client, *http.Transport, error) {
	return newHTTPClient(header, auth)
}

// NewStdioTransport returns a transport that starts cmd and speaks MCP over its
// stdin and stdout, as the client's stdio connections do: one answer is bounded
// by maxResponseBytes (0: DefaultMaxResponseBytes), and closing the connection
// (or a failed start) kills cmd's whole process group, so that a server started
// through a wrapper (npx, a shell script) leaves nothing behind. name names the
// server in errors. kill kills the process group at once; it is safe to call
// before the start and more than once. cmd's Stderr is the caller's to set.
func NewStdioTransport(cmd *exec.Cmd, maxResponseBytes int64, name string) (t sdk.Transport, kill func()) {
	if maxResponseBytes <= 0 {
		maxResponseBytes = DefaultMaxResponseBytes
	}
	kill = ownProcessGroup(cmd)
	return &stdioTransport{cmd: cmd, killGroup: kill, limit: maxResponseBytes, server: name, stream: &streamLimit{}}, kill
}

// NewSessionScopedTransport connects inner with a context that lives as long
// as the connection (or until parent ends) rather than the connect call, as
// the client's own SSE connections do (sessionScopedTransport): the SDK's SSE
// transport ties its event stream to the context given to Connect.
func NewSessionScopedTransport(inner sdk.Transport, parent context.Context) sdk.Transport {
	return &sessionScopedTransport{inner: inner, parent: parent}
}
