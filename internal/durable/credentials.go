package durable

import (
	"net/http"

	"github.com/arvenza/helix/pkg/exchange"
)

// credentialHeaders are the headers that carry a caller's credentials. They
// are never written to the store: a checkpoint outlives the request, is read by
// operators (helix runs show) and sits on disk, where a bearer token or a
// session cookie must not. Steps after the first do not see them — in every
// run, so a run behaves the same whether or not it was resumed.
var credentialHeaders = map[string]bool{
	"Authorization":       true,
	"Proxy-Authorization": true,
	"Cookie":              true,
	"Set-Cookie":          true,
	"X-Api-Key":           true,
}

// checkpointOf is the snapshot of ex the store keeps: ex without the caller's
// credentials.
func checkpointOf(ex *exchange.Exchange) *exchange.Snapshot {
	s := exchange.TakeSnapshot(ex)
	for k := range s.Headers {
		if credentialHeaders[http.CanonicalHeaderKey(k)] {
			delete(s.Headers, k)
		}
	}
	return s
}
