package httpserver_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/component/httpserver"
	"github.com/arvenza/helix/pkg/uri"
)

// TestLoopbackListenerRefusesForeignHost: a web page whose name was rebound
// to 127.0.0.1 (DNS rebinding) reaches a loopback listener with its own name
// in Host; it is refused with 403 unless allowedHosts names it.
func TestLoopbackListenerRefusesForeignHost(t *testing.T) {
	comp := httpserver.New(nil)
	base := serve(t, comp, "http-server://127.0.0.1:0/in", echo)
	for host, want := range map[string]int{
		"localhost": 200, "LOCALHOST:8080": 200, "127.0.0.1": 200, "127.0.0.1:1234": 200, "[::1]:80": 200,
		"evil.example": 403, "evil.example:8080": 403, "127.0.0.1.evil.example": 403, "10.0.0.1": 403,
	} {
		resp, err := rawRequest(t, base, "", "GET /in HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
		if err != nil {
			t.Fatalf("Host %q: %v", host, err)
		}
		if resp.StatusCode != want {
			t.Errorf("Host %q: status %d, want %d", host, resp.StatusCode, want)
		}
		if want == 403 {
			body, _ := io.ReadAll(resp.Body)
			if !strings.Contains(string(body), "allowedHosts") {
				t.Errorf("Host %q: the 403 does not say how to allow the host: %s", host, body)
			}
		}
	}

	// allowedHosts admits the names a reverse proxy on this host forwards.
	proxied := httpserver.New(nil)
	base = serve(t, proxied, "http-server://127.0.0.1:0/in?allowedHosts=api.example.com,Other.Example:8443", echo)
	for host, want := range map[string]int{"api.example.com": 200, "API.example.com:443": 200,
		"other.example:8443": 200, "other.example:9999": 403, "localhost": 200, "evil.example": 403} {
		resp, err := rawRequest(t, base, "", "GET /in HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
		if err != nil {
			t.Fatalf("Host %q: %v", host, err)
		}
		if resp.StatusCode != want {
			t.Errorf("allowedHosts, Host %q: status %d, want %d", host, resp.StatusCode, want)
		}
	}

	// "*" switches the check off.
	open := httpserver.New(nil)
	base = serve(t, open, "http-server://127.0.0.1:0/in?allowedHosts=*", echo)
	if resp, err := rawRequest(t, base, "", "GET /in HTTP/1.1\r\nHost: anything.example\r\n\r\n"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("allowedHosts=*: %v %v", resp, err)
	}
}

func TestAllowedHostsOptionErrors(t *testing.T) {
	for _, raw := range []string{
		"http-server://127.0.0.1:0/in?allowedHosts=http://api.example.com",
		"http-server://127.0.0.1:0/in?allowedHosts=api.example.com/path",
		"http-server://127.0.0.1:0/in?allowedHosts=a%20b",
	} {
		u, err := uri.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		_, err = httpserver.New(nil).CreateEndpoint(u)
		if err == nil || !strings.Contains(err.Error(), "allowedHosts") {
			t.Errorf("%s: error %v, want one about allowedHosts", raw, err)
		}
	}
}

// TestTrustedProxiesOption: connections from a trustedProxies address are not
// capped by maxConnectionsPerIp (a balancer carries every client); others are.
func TestTrustedProxiesOption(t *testing.T) {
	comp := httpserver.New(nil)
	base := serve(t, comp, "http-server://127.0.0.1:0/in?maxConnectionsPerIp=1&trustedProxies=127.0.0.1", echo)
	for i := range 3 { // rawRequest keeps each connection open until the test ends
		resp, err := rawRequest(t, base, "127.0.0.1", "GET /in HTTP/1.1\r\nHost: localhost\r\n\r\n")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("connection %d from the trusted proxy: %v %v", i, resp, err)
		}
	}
	if _, err := rawRequest(t, base, "127.0.0.2", "GET /in HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		t.Fatalf("first connection from 127.0.0.2: %v", err)
	}
	if resp, err := rawRequest(t, base, "127.0.0.2", "GET /in HTTP/1.1\r\nHost: localhost\r\n\r\n"); err == nil {
		t.Fatalf("a second connection from 127.0.0.2 was served (%d) under maxConnectionsPerIp=1", resp.StatusCode)
	}
}

func TestProxyOptionErrors(t *testing.T) {
	for raw, want := range map[string]string{
		"http-server://127.0.0.1:0/in?trustedProxies=10.0.0.0/33":                    "trustedProxies",
		"http-server://127.0.0.1:0/in?trustedProxies=example.com":                    "trustedProxies",
		"http-server://127.0.0.1:0/in?proxyProtocol=true":                            "needs trustedProxies",
		"http-server://127.0.0.1:0/in?proxyProtocol=perhaps&trustedProxies=10.0.0.1": "proxyProtocol",
	} {
		u, err := uri.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		_, err = httpserver.New(nil).CreateEndpoint(u)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one about %s", raw, err, want)
		}
	}
}
