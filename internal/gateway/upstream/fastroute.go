package upstream

import (
	"net/http"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// FastRoute is how the gateway's fast relay (internal/gateway/fastrelay)
// reaches session s of the pool without the go-sdk client session: the URL of
// the endpoint s was opened at and the pool's HTTP client, which adds the
// upstream's headers and auth, the caller's headers (gateway.UpstreamHeader)
// and, under Call, what Call needs to tell whether a request may be sent again.
// ok is false when the relay cannot reach s as the session does: a transport
// other than Streamable HTTP, an endpoint whose OAuth tokens the go-sdk
// transport adds itself, or a session the pool no longer holds.
func (p *Pool) FastRoute(s *sdk.ClientSession) (url string, hc *http.Client, ok bool) {
	if p.transport != TransportHTTP || s == nil {
		return "", nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.sessions {
		if e.s == s && e.endpoint != nil && !e.dead {
			if e.endpoint.oauth != nil {
				return "", nil, false
			}
			return e.endpoint.url, p.httpc, true
		}
	}
	return "", nil, false
}
