package setup

import (
	"net/http"
	"testing"

	"github.com/arvenza/helix/internal/testtools"
)

func TestDefaultModelClientReusesConnectionsUnderConcurrency(t *testing.T) {
	const n = 20
	client := defaultModelClient()
	t.Cleanup(client.CloseIdleConnections)
	first, second := testtools.ConcurrentDials(t, client, n)
	if first != n {
		t.Fatalf("first round dialled %d connections, want %d", first, n)
	}
	// A connection goes back to the pool a moment after its body is read, so one
	// or two may not be back when the next round starts; Go's default (2 idle per
	// host) would dial n-2 again.
	if second > n/4 {
		t.Fatalf("second round dialled %d new connections of %d: idle connections were not kept", second, n)
	}
}

func TestModelClientKeepsProxyFromEnvironment(t *testing.T) {
	tr, ok := defaultModelClient().Transport.(*http.Transport)
	if !ok {
		t.Fatalf("transport %T, want *http.Transport", defaultModelClient().Transport)
	}
	if tr.Proxy == nil || tr.IdleConnTimeout <= 0 || tr.MaxIdleConnsPerHost < 100 {
		t.Fatalf("proxy set %v, idle timeout %v, idle per host %d", tr.Proxy != nil, tr.IdleConnTimeout, tr.MaxIdleConnsPerHost)
	}
}
