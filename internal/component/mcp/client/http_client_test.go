package client

import (
	"net/http"
	"testing"

	"github.com/arvenza/helix/internal/testtools"
)

func TestHTTPClientReusesConnectionsUnderConcurrency(t *testing.T) {
	t.Parallel()
	const n = 20
	for _, auth := range []*AuthConfig{nil, {Type: AuthBearer, Token: "t"}} {
		client, transport, err := newHTTPClient(http.Header{"X-Test": {"1"}}, auth)
		if err != nil {
			t.Fatal(err)
		}
		first, second := testtools.ConcurrentDials(t, client, n)
		transport.CloseIdleConnections()
		if first != n {
			t.Fatalf("auth %v: first round dialled %d connections, want %d", auth, first, n)
		}
		// A connection goes back to the pool a moment after its body is read, so one
		// or two may not be back when the next round starts; Go's default (2 idle per
		// host) would dial n-2 again.
		if second > n/4 {
			t.Fatalf("auth %v: second round dialled %d new connections of %d: idle connections were not kept", auth, second, n)
		}
		if transport.Proxy == nil || transport.IdleConnTimeout <= 0 {
			t.Fatalf("auth %v: proxy from the environment or idle timeout lost", auth)
		}
	}
}
