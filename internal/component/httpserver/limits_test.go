package httpserver_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/component/httpserver"
	"github.com/arvenza/helix/internal/netguard"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

func echo(_ context.Context, ex *exchange.Exchange) error { return nil }

// rawRequest sends raw on a fresh connection from local (any loopback address
// when "") and returns the response, or the error reading it.
func rawRequest(t *testing.T, base, local, raw string) (*http.Response, error) {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	if local != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(local)}
	}
	c, err := d.Dial("tcp", strings.TrimPrefix(base, "http://"))
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
		b, _ := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(strings.NewReader(string(b)))
	}
	return resp, err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// A stalled request body is answered 408 within readTimeout instead of holding
// the connection (and a file descriptor) forever.
func TestStalledBodyIsAnswered408(t *testing.T) {
	comp := httpserver.New(nil)
	base := serve(t, comp, "http-server://127.0.0.1:0/in?readTimeout=200ms", echo)
	resp, err := rawRequest(t, base, "", "POST /in HTTP/1.1\r\nHost: localhost\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\nonly ten b")
	if err != nil {
		if isTimeout(err) {
			t.Fatal("no answer to a stalled body within readTimeout")
		}
		return // closed: acceptable
	}
	if resp.StatusCode != http.StatusRequestTimeout {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("stalled body answered %d %s, want 408", resp.StatusCode, b)
	}
}

// maxConnectionsPerIp: idle connections from one address do not lock out others.
func TestMaxConnectionsPerIPOption(t *testing.T) {
	comp := httpserver.New(nil)
	base := serve(t, comp, "http-server://127.0.0.1:0/in?maxConnectionsPerIp=2", echo)
	addr := strings.TrimPrefix(base, "http://")
	for range 2 {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := rawRequest(t, base, "127.0.0.1", "GET /in HTTP/1.1\r\nHost: localhost\r\n\r\n")
		if err != nil && !isTimeout(err) || errors.Is(err, syscall.ECONNRESET) {
			break // refused: the two idle connections hold this address's quota
		}
		if time.Now().After(deadline) {
			t.Fatalf("a third connection from one address was served: %v %v", resp, err)
		}
		time.Sleep(10 * time.Millisecond) // the idle ones may not be accepted yet
	}
	resp, err := rawRequest(t, base, "127.0.0.2", "GET /in HTTP/1.1\r\nHost: localhost\r\n\r\n")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("another address was not served: %v %v", resp, err)
	}
}

func TestListenerOptionErrors(t *testing.T) {
	comp := httpserver.New(nil)
	for raw, want := range map[string]string{
		"http-server://127.0.0.1:0/a?readTimeout=soon":        "readTimeout",
		"http-server://127.0.0.1:0/a?maxConnections=-5":       "maxConnections",
		"http-server://127.0.0.1:0/a?maxConnectionsPerIp=all": "maxConnectionsPerIp",
	} {
		u, err := uri.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := comp.CreateEndpoint(u); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one naming %s", raw, err, want)
		}
	}
	for _, raw := range []string{"http-server://127.0.0.1:0/a?readTimeout=off&maxConnections=off&idleTimeout=1500"} {
		u, _ := uri.Parse(raw)
		if _, err := comp.CreateEndpoint(u); err != nil {
			t.Errorf("%s: %v", raw, err)
		}
	}
}

// Listener options belong to the host:port that workflows share: two routes on
// one listener cannot ask for different limits.
func TestConflictingListenerOptions(t *testing.T) {
	comp := httpserver.New(nil)
	base := serve(t, comp, "http-server://127.0.0.1:0/a?maxConnections=100", echo)
	_ = base
	start := func(raw string) error {
		u, _ := uri.Parse(raw)
		ep, err := comp.CreateEndpoint(u)
		if err != nil {
			return err
		}
		c, err := ep.CreateConsumer(component.ProcessorFunc(echo))
		if err != nil {
			return err
		}
		if err := c.Start(context.Background()); err != nil {
			return err
		}
		t.Cleanup(func() { _ = c.Stop(context.Background()) })
		return nil
	}
	if err := start("http-server://127.0.0.1:0/b?maxConnections=200"); err == nil || !strings.Contains(err.Error(), "maxConnections") {
		t.Fatalf("conflicting options on one listener: %v", err)
	}
	if err := start("http-server://127.0.0.1:0/c"); err != nil {
		t.Fatalf("a route without listener options joins the listener: %v", err)
	}
	if err := start("http-server://127.0.0.1:0/d?maxConnections=100"); err != nil {
		t.Fatalf("the same options again: %v", err)
	}
	_ = netguard.DefaultMaxConnections
}
