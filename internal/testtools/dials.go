package testtools

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// ConcurrentDials sends n requests at once through client, twice, and returns how
// many connections the server accepted in each round. The handler holds every
// request until all n of its round have arrived, so each round needs n
// connections at the same time: a client that keeps them idle between rounds
// dials none in the second.
func ConcurrentDials(t testing.TB, client *http.Client, n int) (first, second int64) {
	t.Helper()
	var conns atomic.Int64
	var mu sync.Mutex
	arrived := 0
	release := make(chan struct{})
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		wait := release
		if arrived++; arrived == n {
			close(release)
		}
		mu.Unlock()
		<-wait
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
