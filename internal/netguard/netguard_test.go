package netguard

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// serve runs h on a guarded loopback listener and returns its address.
func serve(t *testing.T, l Limits, h http.Handler) (*Listener, string) {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := NewListener(raw, l, "test", slog.New(slog.DiscardHandler))
	srv := &http.Server{Handler: h, ErrorLog: nil}
	Configure(srv, l)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return ln, raw.Addr().String()
}

func ok(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }

// get is a well-behaved client: one request on a fresh connection.
func get(addr string) (int, string, error) {
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func dial(t *testing.T, addr, from string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s from %q: %v", addr, from, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// refusedFrom reports whether the server closes a new connection from address
// from (any loopback address when "") without answering it.
func refusedFrom(t *testing.T, addr, from string) bool {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		// Reset during the handshake: the server closed it at once.
		return errors.Is(err, syscall.ECONNRESET)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	b := make([]byte, 1)
	_, err = c.Read(b)
	return err != nil && !isTimeout(err)
}

func waitOpen(t *testing.T, ln *Listener, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for ln.Open() != want {
		if time.Now().After(deadline) {
			t.Fatalf("open connections = %d, want %d", ln.Open(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestMaxConnectionsRefusesBeyondAndRecovers(t *testing.T) {
	ln, addr := serve(t, Limits{MaxConnections: 3, MaxConnectionsPerIP: -1}, http.HandlerFunc(ok))
	var idle []net.Conn
	for range 3 {
		idle = append(idle, dial(t, addr, ""))
	}
	waitOpen(t, ln, 3)
	if !refusedFrom(t, addr, "") {
		t.Fatal("a connection beyond max_connections was served")
	}
	if ln.Refused() == 0 {
		t.Fatal("Refused() = 0 after a refusal")
	}
	_ = idle[0].Close()
	waitOpen(t, ln, 2)
	code, body, err := get(addr)
	if err != nil || code != 200 || body != "ok" {
		t.Fatalf("well-behaved client after an idle connection closed: %d %q %v", code, body, err)
	}
}

// Idle connections that never send a request are closed by the server after
// read_timeout, which makes room for real clients without anyone's help.
func TestSilentConnectionsAreClosedAfterReadTimeout(t *testing.T) {
	ln, addr := serve(t, Limits{MaxConnections: 2, ReadTimeout: 150 * time.Millisecond}, http.HandlerFunc(ok))
	a, b := dial(t, addr, ""), dial(t, addr, "")
	waitOpen(t, ln, 2)
	for _, c := range []net.Conn{a, b} {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Fatalf("silent connection not closed by the server: %v", err)
		}
	}
	waitOpen(t, ln, 0)
	if code, _, err := get(addr); err != nil || code != 200 {
		t.Fatalf("client after the silent ones were dropped: %d %v", code, err)
	}
}

func TestMaxConnectionsPerIP(t *testing.T) {
	ln, addr := serve(t, Limits{MaxConnectionsPerIP: 2}, http.HandlerFunc(ok))
	dial(t, addr, "127.0.0.1")
	dial(t, addr, "127.0.0.1")
	waitOpen(t, ln, 2)
	if !refusedFrom(t, addr, "127.0.0.1") {
		t.Fatal("a third connection from one address was served")
	}
	other := dial(t, addr, "127.0.0.2")
	_ = other.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(other, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(other), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("another address was not served: %v %v", resp, err)
	}
	resp.Body.Close()
}

func TestClientKeyGroupsIPv6By64(t *testing.T) {
	k1 := clientKey(&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2::1"), Port: 1})
	k2 := clientKey(&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:ffff::9"), Port: 2})
	k3 := clientKey(&net.TCPAddr{IP: net.ParseIP("2001:db8:1:3::1"), Port: 3})
	if k1 != k2 || k1 == k3 {
		t.Fatalf("keys %v %v %v: want one per /64", k1, k2, k3)
	}
	if k := clientKey(&net.TCPAddr{IP: net.ParseIP("::ffff:10.0.0.1")}); k.String() != "10.0.0.1" {
		t.Fatalf("mapped IPv4 key = %v", k)
	}
}

// A handler that answers 400 to a body it could not read, as most do.
func readAll(w http.ResponseWriter, r *http.Request) {
	if _, err := io.ReadAll(r.Body); err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	_, _ = io.WriteString(w, "ok")
}

func TestStalledBodyGets408(t *testing.T) {
	_, addr := serve(t, Limits{ReadTimeout: 200 * time.Millisecond}, http.HandlerFunc(readAll))
	c := dial(t, addr, "")
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	// Ten bytes of a promised hundred, then nothing.
	_, _ = io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		if isTimeout(err) {
			t.Fatal("no answer to a stalled body")
		}
		return // closed: acceptable
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || string(b) != StalledBodyMessage {
		t.Fatalf("stalled body answered %d %q, want 408", resp.StatusCode, b)
	}
}

// A complete body is not affected by the read deadline, and a handler that
// works longer than read_timeout keeps its request context.
func TestSlowHandlerKeepsContextPastReadTimeout(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		select {
		case <-time.After(400 * time.Millisecond):
		case <-r.Context().Done():
			http.Error(w, "context ended: "+context.Cause(r.Context()).Error(), 500)
			return
		}
		_, _ = io.WriteString(w, "done")
	})
	_, addr := serve(t, Limits{ReadTimeout: 100 * time.Millisecond, WriteTimeout: 100 * time.Millisecond}, h)
	for _, body := range []string{"", `{"a":1}`} {
		tr := &http.Transport{}
		c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
		resp, err := c.Post("http://"+addr+"/", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("body %q: %v", body, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		tr.CloseIdleConnections()
		if resp.StatusCode != 200 || string(b) != "done" {
			t.Fatalf("body %q: %d %q: a handler slower than read/write timeouts was cut off", body, resp.StatusCode, b)
		}
	}
}

func TestIdleKeepAliveClosedAfterIdleTimeout(t *testing.T) {
	_, addr := serve(t, Limits{IdleTimeout: 150 * time.Millisecond}, http.HandlerFunc(ok))
	c := dial(t, addr, "")
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if _, err := br.ReadByte(); err == nil || isTimeout(err) {
		t.Fatalf("idle keep-alive connection not closed: %v", err)
	}
}

func TestEventStreamOutlivesWriteTimeout(t *testing.T) {
	const events = 8
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		for i := range events {
			if _, err := fmt.Fprintf(w, "data: %d\n\n", i); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-time.After(60 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
	})
	_, addr := serve(t, Limits{WriteTimeout: 100 * time.Millisecond, ReadTimeout: 100 * time.Millisecond}, h)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("stream cut after %q: %v", b, err)
	}
	if n := strings.Count(string(b), "data: "); n != events {
		t.Fatalf("got %d events, want %d (stream lasted longer than write_timeout): %q", n, events, b)
	}
}

// A client that stops reading a response cannot hold the handler forever.
func TestWriteTimeoutStopsAStalledReader(t *testing.T) {
	errc := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 64<<10)
		for range 4096 { // 256 MiB: far more than socket buffers hold
			if _, err := w.Write(chunk); err != nil {
				errc <- err
				return
			}
		}
		errc <- errors.New("the whole response was written to a client that reads nothing")
	})
	_, addr := serve(t, Limits{WriteTimeout: 200 * time.Millisecond}, h)
	c := dial(t, addr, "")
	_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	select {
	case err := <-errc:
		if !isTimeout(err) && !strings.Contains(err.Error(), "timeout") {
			t.Fatalf("handler write ended with %v, want a timeout", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("handler still writing to a client that stopped reading")
	}
}

func TestResolvedDefaultsAndOff(t *testing.T) {
	r := Limits{}.Resolved()
	if r.ReadTimeout != DefaultReadTimeout || r.IdleTimeout != DefaultIdleTimeout || r.WriteTimeout != DefaultWriteTimeout ||
		r.MaxConnections != DefaultMaxConnections || r.MaxConnectionsPerIP != DefaultMaxConnectionsPerIP {
		t.Fatalf("defaults: %+v", r)
	}
	off := Limits{ReadTimeout: -1, IdleTimeout: -1, WriteTimeout: -1, MaxConnections: -1, MaxConnectionsPerIP: -1}.Resolved()
	if off != (Limits{}) {
		t.Fatalf("off: %+v", off)
	}
}
