package app_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// stalledPost sends headers promising a body that never fully arrives and
// returns the status, or 0 when the server closed the connection.
func stalledPost(t *testing.T, addr, path string) int {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.WriteString(c, "POST "+path+" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: 400\r\n\r\n{\"jsonrpc\":")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("%s%s: no answer to a stalled body", addr, path)
		}
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// stalledHeaders sends half a request and reports whether the server closed the
// connection (rather than waiting on).
func stalledHeaders(t *testing.T, addr string) bool {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
	_, err = io.ReadAll(c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// The YAML settings reach the listeners: read_timeout on an MCP server entry
// makes a stalled body end with 408, on helix.management it closes a connection
// whose headers stall.
func TestListenerLimitsFromYAML(t *testing.T) {
	t.Parallel()
	a, err := buildYAML(t, `
helix:
  management:
    read_timeout: 200ms
  mcp:
    servers:
      - enabled: true
        name: guarded
        addr: 127.0.0.1:0
        read_timeout: 200ms
        max_connections: 100
workflows:
  - id: hello
    trigger: direct://hello
    steps:
      - set-body: hi
`)
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)
	mcpAddr := strings.TrimPrefix(serverURL(t, a, "guarded"), "http://")
	if code := stalledPost(t, mcpAddr, "/mcp"); code != 0 && code != http.StatusRequestTimeout {
		t.Errorf("mcp server: stalled body answered %d, want 408 or a closed connection", code)
	}
	if !stalledHeaders(t, a.ManagementAddr()) {
		t.Error("management: a connection with stalled headers was kept open past read_timeout")
	}
}

// Listener keys on a stdio server (which has no listener) draw a warning naming
// them, like the HTTP-only security keys do.
func TestListenerLimitsOnStdioWarn(t *testing.T) {
	t.Parallel()
	a, err := buildYAML(t, `
mcps:
  - id: local
    transport: stdio
    read_timeout: 5s
    max_connections_per_ip: 4
workflows:
  - id: hello
    trigger: direct://hello
    steps:
      - set-body: hi
`)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, w := range a.Config().Warnings {
		if strings.Contains(w.Error(), "mcps[0]: read_timeout, max_connections_per_ip: not applied to a stdio server") {
			found = true
		}
	}
	if !found {
		t.Errorf("no warning about listener keys on a stdio server: %v", a.Config().Warnings)
	}
}
