package app_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/app"
)

const netfdYAML = fourWorkflows + `
mcps:
  - id: plain
    addr: 127.0.0.1:0
  - id: balanced
    addr: 127.0.0.1:0
    trusted_proxies: [127.0.0.1]
    proxy_protocol: true
    api_keys: [k]
    max_connections_per_ip: 1
`

// TestMCPOriginAndProxyProtocol: a server without any security key refuses a
// null or foreign Origin; a server with proxy_protocol counts the client its
// balancer names, not the balancer.
func TestMCPOriginAndProxyProtocol(t *testing.T) {
	t.Parallel()
	a := startSecure(t, netfdYAML, nil)
	rc := newRawClient(t)
	plain := serverURL(t, a, "plain") + "/mcp"
	for origin, want := range map[string]int{"null": 403, "http://evil.example": 403, "http://localhost:6274": 200, "": 200} {
		var kv []string
		if origin != "" {
			kv = []string{"Origin", origin}
		}
		if resp, body := rc.post(plain, initBody, kv...); resp.StatusCode != want {
			t.Errorf("no security keys, Origin %q: %d %.200q, want %d", origin, resp.StatusCode, body, want)
		}
	}

	balanced := a.MCPServers().Addr("balanced").String()
	// Two idle connections of two clients through the balancer at 127.0.0.1:
	// max_connections_per_ip=1 holds for each client, not for the balancer.
	open := func(client string) (net.Conn, *bufio.Reader) {
		c, err := net.DialTimeout("tcp", balanced, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_, _ = io.WriteString(c, "PROXY TCP4 "+client+" 127.0.0.1 40000 80\r\n")
		return c, bufio.NewReader(c)
	}
	get := func(c net.Conn, r *bufio.Reader) (int, error) {
		if _, err := io.WriteString(c, "GET /mcp HTTP/1.1\r\nHost: localhost\r\nX-API-Key: k\r\nAccept: text/event-stream\r\n\r\n"); err != nil {
			return 0, err
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}
	c1, r1 := open("203.0.113.1")
	if _, err := get(c1, r1); err != nil {
		t.Fatalf("first client through the balancer: %v", err)
	}
	c2, r2 := open("203.0.113.2")
	if _, err := get(c2, r2); err != nil {
		t.Fatalf("second client through the same balancer refused: %v", err)
	}
	c3, r3 := open("203.0.113.1")
	if status, err := get(c3, r3); err == nil {
		t.Fatalf("a second connection of client 203.0.113.1 was served (%d) under max_connections_per_ip=1", status)
	}
}

func TestProxyProtocolNeedsTrustedProxies(t *testing.T) {
	t.Parallel()
	cfg, err := config.LoadBytes("helix.yaml", []byte("mcps:\n  - id: s\n    addr: 127.0.0.1:0\n    proxy_protocol: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = app.Build(cfg, app.Options{})
	if err == nil || !strings.Contains(err.Error(), "proxy_protocol needs trusted_proxies") {
		t.Fatalf("error %v, want one saying proxy_protocol needs trusted_proxies", err)
	}
}
