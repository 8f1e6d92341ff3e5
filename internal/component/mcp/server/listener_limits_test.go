package server

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/netguard"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/uri"
)

// limitsRaw sends raw on a fresh connection from local ("" for any loopback
// address) and returns the response or the error reading it.
func limitsRaw(t *testing.T, addr, local, raw string) (*http.Response, error) {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	if local != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(local)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp, err
}

func limitsTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// A POST whose body stalls gets 408 (or a closed connection) within
// read_timeout, on Streamable HTTP and on the SSE message endpoint.
func TestMCPStalledBodyGets408(t *testing.T) {
	t.Parallel()
	hc := newTestContext(t, greetWorkflow())
	comp := startContext(t, hc, Options{ID: "s", Addr: "127.0.0.1:0", Limits: netguard.Limits{ReadTimeout: 200 * time.Millisecond}})
	addr := comp.Addr("s").String()
	for _, path := range []string{"/mcp", "/message?sessionid=x"} {
		resp, err := limitsRaw(t, addr, "", "POST "+path+" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"+
			"Accept: application/json, text/event-stream\r\nContent-Length: 500\r\n\r\n"+initializeBody[:40])
		if err != nil {
			if limitsTimeout(err) {
				t.Fatalf("%s: no answer to a stalled body within read_timeout", path)
			}
			continue // closed: acceptable
		}
		// An unknown SSE session is refused (404) before its body is read: also fine.
		if resp.StatusCode != http.StatusRequestTimeout && !(path != "/mcp" && resp.StatusCode == http.StatusNotFound) {
			t.Fatalf("%s: stalled body answered %d, want 408", path, resp.StatusCode)
		}
	}
}

// max_connections_per_ip: idle connections from one address are counted; the
// next one from that address is closed at once, other addresses are served.
func TestMCPMaxConnectionsPerIP(t *testing.T) {
	t.Parallel()
	hc := newTestContext(t, greetWorkflow())
	comp := startContext(t, hc, Options{ID: "s", Addr: "127.0.0.1:0", Limits: netguard.Limits{MaxConnectionsPerIP: 2}})
	addr := comp.Addr("s").String()
	for range 2 {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
	}
	req := "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
		"Content-Length: " + itoa(len(initializeBody)) + "\r\n\r\n" + initializeBody
	deadline := time.Now().Add(testtools.StartupBound)
	for {
		resp, err := limitsRaw(t, addr, "127.0.0.1", req)
		if err != nil && !limitsTimeout(err) || errors.Is(err, syscall.ECONNRESET) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a third connection from one address was served: %v %v", resp, err)
		}
		time.Sleep(10 * time.Millisecond) // the idle ones may not be accepted yet
	}
	resp, err := limitsRaw(t, addr, "127.0.0.2", strings.Replace(req, "Host: 127.0.0.1", "Host: localhost", 1))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("another client address was not served: %v %v", resp, err)
	}
}

func itoa(n int) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		if n /= 10; n == 0 {
			return string(b)
		}
	}
}

// An SSE session outlives write_timeout: its stream is idle far longer than the
// timeout, and a call answered over it afterwards still arrives.
func TestSSEStreamOutlivesWriteTimeout(t *testing.T) {
	t.Parallel()
	hc := newTestContext(t, greetWorkflow())
	limits := netguard.Limits{WriteTimeout: 100 * time.Millisecond, ReadTimeout: 100 * time.Millisecond, IdleTimeout: 100 * time.Millisecond}
	comp := startContext(t, hc,
		Options{ID: "sse", Transport: "sse", Addr: "127.0.0.1:0", Limits: limits},
		Options{ID: "http", Addr: "127.0.0.1:0", Limits: limits})
	sse := connectHTTP(t, &sdk.SSEClientTransport{Endpoint: serverURL(t, comp, "sse", "/sse")})
	streamable := connectHTTP(t, &sdk.StreamableClientTransport{Endpoint: serverURL(t, comp, "http", "/mcp"), MaxRetries: -1})
	time.Sleep(400 * time.Millisecond) // 4× every timeout
	for name, cs := range map[string]*sdk.ClientSession{"sse": sse, "streamable": streamable} {
		res := callTool(t, cs, "greet", map[string]any{"name": "Ada"})
		if res.IsError || !strings.Contains(resultText(t, res), "Ada") {
			t.Fatalf("%s: call after the stream idled past write_timeout: %+v", name, res)
		}
	}
}

func TestServerOptionsFromURIListenerLimits(t *testing.T) {
	t.Parallel()
	u, err := uri.Parse("mcp-server://127.0.0.1:0?readTimeout=5s&idleTimeout=off&writeTimeout=2500&maxConnections=10&maxConnectionsPerIp=3")
	if err != nil {
		t.Fatal(err)
	}
	opts, err := OptionsFromURI(u)
	if err != nil {
		t.Fatal(err)
	}
	want := netguard.Limits{ReadTimeout: 5 * time.Second, IdleTimeout: -1, WriteTimeout: 2500 * time.Millisecond, MaxConnections: 10, MaxConnectionsPerIP: 3}
	if opts.Limits != want {
		t.Fatalf("limits %+v, want %+v", opts.Limits, want)
	}
	u, _ = uri.Parse("mcp-server://127.0.0.1:0?maxConnections=many")
	if _, err := OptionsFromURI(u); err == nil || !strings.Contains(err.Error(), "maxConnections") {
		t.Fatalf("bad maxConnections: %v", err)
	}
}

func TestServerOptionsFromURIMaxConcurrentCalls(t *testing.T) {
	t.Parallel()
	u, _ := uri.Parse("mcp-server://127.0.0.1:0?maxConcurrentCalls=4")
	opts, err := OptionsFromURI(u)
	if err != nil || opts.MaxConcurrentCalls != 4 {
		t.Fatalf("maxConcurrentCalls: %d %v", opts.MaxConcurrentCalls, err)
	}
	u, _ = uri.Parse("mcp-server://127.0.0.1:0?maxConcurrentCalls=-3")
	if _, err := OptionsFromURI(u); err == nil || !strings.Contains(err.Error(), "maxConcurrentCalls=-3") {
		t.Fatalf("bad maxConcurrentCalls: %v", err)
	}
	if got := (&mcpServer{opts: Options{MaxConcurrentCalls: 4}}).transportOptions().MaxConcurrentCalls; got != 4 {
		t.Fatalf("transport gets %d", got)
	}
}
