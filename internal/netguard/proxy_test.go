package netguard

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"
)

func proxyListener(t *testing.T, perIP int, o ProxyOptions) *guardedForTest {
	t.Helper()
	return listenGuarded(t, 0, func(l *Listener) {
		l.perIP = perIP
		l.TrustProxies(o)
	})
}

func loopbackProxies(t *testing.T) []netip.Prefix {
	p, err := ParseTrustedProxies("trusted_proxies", []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// dialFrom connects from the loopback address src and sends first (a PROXY
// header, say); it returns the accepted server side or nil when refused.
func (g *guardedForTest) dialFrom(t *testing.T, src, first string) net.Conn {
	t.Helper()
	refused := g.Refused()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	client, err := d.Dial("tcp", g.Addr().String())
	if errors.Is(err, syscall.ECONNRESET) {
		return nil // refused before connect returned
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	if first != "" {
		_, _ = io.WriteString(client, first) // a refused connection may be reset under it
	}
	deadline := time.After(5 * time.Second)
	for {
		select {
		case c := <-g.accepted:
			return c
		case <-deadline:
			t.Fatal("the connection was neither accepted nor refused within 5s")
		case <-time.After(time.Millisecond):
			if g.Refused() > refused {
				return nil
			}
		}
	}
}

// TestTrustedProxyNotCappedPerAddress: a balancer forwards every client from
// one address; max_connections_per_ip must not cap it (others stay capped).
func TestTrustedProxyNotCappedPerAddress(t *testing.T) {
	g := proxyListener(t, 2, ProxyOptions{Trusted: loopbackProxies(t)})
	for i := range 4 {
		if g.dialFrom(t, "127.0.0.1", "") == nil {
			t.Fatalf("connection %d from the trusted proxy refused", i)
		}
	}
	g.dialFrom(t, "127.0.0.2", "")
	g.dialFrom(t, "127.0.0.2", "")
	if g.dialFrom(t, "127.0.0.2", "") != nil {
		t.Fatal("a third connection from an untrusted address was accepted under max_connections_per_ip=2")
	}
}

// TestProxyProtocolCountsTheRealClient: with the PROXY protocol the per-address
// cap applies to the client the balancer names, which becomes RemoteAddr.
func TestProxyProtocolCountsTheRealClient(t *testing.T) {
	g := proxyListener(t, 2, ProxyOptions{Trusted: loopbackProxies(t), Protocol: true})
	header := func(client string) string {
		return "PROXY TCP4 " + client + " 127.0.0.1 40000 80\r\nGET / HTTP/1.1\r\n"
	}
	for i := range 2 {
		c := g.dialFrom(t, "127.0.0.1", header("203.0.113.7"))
		if c == nil {
			t.Fatalf("connection %d of client 203.0.113.7 refused", i)
		}
		if got := c.RemoteAddr().String(); got != "203.0.113.7:40000" {
			t.Fatalf("RemoteAddr %s, want the client's 203.0.113.7:40000", got)
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || line != "GET / HTTP/1.1\r\n" {
			t.Fatalf("after the header the connection reads %q, %v", line, err)
		}
	}
	if g.dialFrom(t, "127.0.0.1", header("203.0.113.7")) != nil {
		t.Fatal("a third connection of client 203.0.113.7 was accepted under max_connections_per_ip=2")
	}
	if g.dialFrom(t, "127.0.0.1", "PROXY TCP6 2001:db8::1 ::1 40000 80\r\n") == nil {
		t.Fatal("another client behind the same balancer was refused")
	}
	// The balancer's own health check, without a header, is served as the balancer's.
	if c := g.dialFrom(t, "127.0.0.1", "GET /healthz HTTP/1.1\r\n"); c == nil || !strings.HasPrefix(c.RemoteAddr().String(), "127.0.0.1:") {
		t.Fatalf("a trusted connection without a header: %v", c)
	}
}

// TestProxyHeaderFromUntrustedPeerIgnored: anyone else's PROXY header is not
// believed: the address stays the peer's and the header is plain data.
func TestProxyHeaderFromUntrustedPeerIgnored(t *testing.T) {
	g := proxyListener(t, 2, ProxyOptions{Trusted: loopbackProxies(t), Protocol: true})
	c := g.dialFrom(t, "127.0.0.3", "PROXY TCP4 203.0.113.9 127.0.0.1 40000 80\r\n")
	if c == nil {
		t.Fatal("refused")
	}
	if got := c.RemoteAddr().String(); !strings.HasPrefix(got, "127.0.0.3:") {
		t.Fatalf("RemoteAddr %s taken from an untrusted peer's PROXY header", got)
	}
	line, _ := bufio.NewReader(c).ReadString('\n')
	if !strings.HasPrefix(line, "PROXY ") {
		t.Fatalf("the untrusted header was consumed: read %q", line)
	}
}

// TestStalledProxyHeaderDoesNotBlockAccept: a trusted peer that never sends
// its header holds one slot, not the listener.
func TestStalledProxyHeaderDoesNotBlockAccept(t *testing.T) {
	g := proxyListener(t, 0, ProxyOptions{Trusted: loopbackProxies(t), Protocol: true})
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}}
	stalled, err := d.Dial("tcp", g.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	if _, err := io.WriteString(stalled, "PROX"); err != nil {
		t.Fatal(err)
	}
	if g.dialFrom(t, "127.0.0.4", "GET / HTTP/1.1\r\n") == nil {
		t.Fatal("refused")
	}
}

func TestParseTrustedProxiesErrors(t *testing.T) {
	for _, e := range []string{"10.0.0.0/33", "not-an-ip", "10.0.0.1:80"} {
		if _, err := ParseTrustedProxies("trustedProxies", []string{e}); err == nil || !strings.Contains(err.Error(), "trustedProxies[0]") {
			t.Errorf("%q: error %v", e, err)
		}
	}
}

// TestProxyHeaderWithoutClient: "PROXY UNKNOWN" (v1) names no client: the
// connection is the balancer's, not counted against any address.
func TestProxyHeaderWithoutClient(t *testing.T) {
	g := proxyListener(t, 1, ProxyOptions{Trusted: loopbackProxies(t), Protocol: true})
	for i := range 3 {
		c := g.dialFrom(t, "127.0.0.1", "PROXY UNKNOWN\r\nGET / HTTP/1.1\r\n")
		if c == nil {
			t.Fatalf("health check %d refused", i)
		}
		if !strings.HasPrefix(c.RemoteAddr().String(), "127.0.0.1:") {
			t.Fatalf("RemoteAddr %s", c.RemoteAddr())
		}
	}
}
