package setup

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// concurrentDials sends n requests at once through client, twice, and returns how
// many connections the server accepted in each round. The handler holds every
// request until all n have arrived, so each round needs n connections at the same
// time: a client that keeps them idle between rounds dials none in the second.
func concurrentDials(t *testing.T, client *http.Client, n int) (first, second int64) {
	t.Helper()
	var conns atomic.Int64
	var mu sync.Mutex
	arrived := 0
	release := make(chan struct{})
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		if arrived++; arrived == n {
			close(release)
		}
		mu.Unlock()
		<-release
		_, _ = io.WriteString(w, "ok")
	}))
	ts.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	round := func() int64 {
		before := conns.Load()
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				resp, err := client.Get(ts.URL)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			})
		}
		wg.Wait()
		return conns.Load() - before
	}
	first = round()
	mu.Lock()
	arrived, release = 0, make(chan struct{})
	mu.Unlock()
	second = round()
	return first, second
}

func TestDefaultModelClientReusesConnectionsUnderConcurrency(t *testing.T) {
	const n = 20
	client := defaultModelClient()
	t.Cleanup(client.CloseIdleConnections)
	first, second := concurrentDials(t, client, n)
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
