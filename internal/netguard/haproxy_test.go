package netguard_test

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/netguard"
	"github.com/arvenza/helix/internal/testtools"
)

// TestPROXYProtocolThroughHAProxy: behind HAProxy with send-proxy, a request
// carries the real client's address, not the balancer's.
func TestPROXYProtocolThroughHAProxy(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	trusted, err := netguard.ParseTrustedProxies("trusted_proxies", []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	ln := netguard.NewListener(raw, netguard.Limits{}, "behind haproxy", nil)
	ln.TrustProxies(netguard.ProxyOptions{Trusted: trusted, Protocol: true})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.RemoteAddr)
	})}
	netguard.Configure(srv, netguard.Limits{})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	h := testtools.StartHAProxy(t, testtools.HAProxyOptions{CheckPath: "/healthz",
		Servers: []testtools.HAProxyServer{{Name: "helix", Addr: raw.Addr().String(), SendProxy: true}}})
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 9)}}).DialContext}}
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := client.Get("http://" + h.Addr + "/who")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				if !strings.HasPrefix(string(body), "127.0.0.9:") {
					t.Fatalf("the request's RemoteAddr is %q, want the client's 127.0.0.9", body)
				}
				return
			}
		}
		if time.Now().After(deadline) { // the backend is not up: its check failed
			t.Fatalf("no answer through haproxy within 15s (last: %v)\n%s", err, h.Logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
