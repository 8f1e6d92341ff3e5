package netguard

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// serveAnswer serves answer on every request through ln, configured as Helix's
// servers are; it returns the server for Shutdown.
func serveAnswer(t *testing.T, ln net.Listener, answer string) *http.Server {
	t.Helper()
	return serveLimited(t, ln, Limits{}, answer)
}

func serveLimited(t *testing.T, ln net.Listener, l Limits, answer string) *http.Server {
	t.Helper()
	return serveHandler(t, ln, l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, answer)
	}))
}

func serveHandler(t *testing.T, ln net.Listener, l Limits, h http.Handler) *http.Server {
	t.Helper()
	srv := &http.Server{Handler: h}
	Configure(srv, l)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(NewListener(ln, l, "test", nil))
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return srv
}

func listenGen(t *testing.T, g *Generation, addr string) net.Listener {
	t.Helper()
	ln, err := Listen(WithGeneration(context.Background(), g), addr, "test server")
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	return ln
}

func post(c *http.Client, url string) (string, error) {
	resp, err := c.Post(url, "text/plain", strings.NewReader("x"))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestHandoffUnderLoadFailsNoRequest(t *testing.T) {
	g1 := NewGeneration(nil)
	ln1 := listenGen(t, g1, "127.0.0.1:0")
	old := serveAnswer(t, ln1, "v1")
	url := "http://" + ln1.Addr().String() + "/"

	var failed, v2 atomic.Int64
	var firstMu sync.Mutex
	var firstErr error
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Half the clients keep connections alive, half dial each time.
			c := &http.Client{Transport: &http.Transport{DisableKeepAlives: i%2 == 1}, Timeout: 10 * time.Second}
			defer c.CloseIdleConnections()
			for {
				select {
				case <-stop:
					return
				default:
				}
				body, err := post(c, url)
				switch {
				case err != nil:
					failed.Add(1)
					firstMu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					firstMu.Unlock()
				case body == "v2":
					v2.Add(1)
				}
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)

	g2 := NewGeneration(g1)
	ln2 := listenGen(t, g2, "127.0.0.1:0") // the same name and random port: the same socket
	if ln2.Addr().String() != ln1.Addr().String() {
		t.Fatalf("successor bound %s, want the predecessor's %s", ln2.Addr(), ln1.Addr())
	}
	serveAnswer(t, ln2, "v2")
	g2.Activate()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := g1.Drain(ctx, 200*time.Millisecond); err != nil {
		t.Fatalf("drain: %v", err)
	}
	if err := old.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown of the predecessor: %v", err)
	}
	// The old server closed its listener: the socket must stay open for ln2.
	deadline := time.Now().Add(10 * time.Second)
	for v2.Load() < 20 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d requests failed during the handoff, first: %v", n, firstErr)
	}
	if v2.Load() < 20 {
		t.Fatalf("only %d answers from the successor", v2.Load())
	}
}

func TestClosingTheLastHandleClosesTheSocket(t *testing.T) {
	g1 := NewGeneration(nil)
	ln1 := listenGen(t, g1, "127.0.0.1:0")
	addr := ln1.Addr().String()
	g2 := NewGeneration(g1)
	ln2 := listenGen(t, g2, addr) // the bound address: shared as well
	g2.Activate()
	if err := ln1.Close(); err != nil {
		t.Fatal(err)
	}
	// Detaching the predecessor leaves the socket open: a dial is accepted by ln2.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial after the predecessor detached: %v", err)
	}
	got, err := ln2.Accept()
	if err != nil {
		t.Fatalf("successor accept: %v", err)
	}
	_ = got.Close()
	_ = c.Close()
	_ = ln2.Close()
	if _, err := ln2.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("accept on a closed handle: %v, want net.ErrClosed", err)
	}
	// The last handle closed the socket: the address is free to bind again.
	raw, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("address not released by the last handle: %v", err)
	}
	_ = raw.Close()
}

func TestConnectionsWaitingForAcceptGoToTheSuccessor(t *testing.T) {
	g1 := NewGeneration(nil)
	ln1 := listenGen(t, g1, "127.0.0.1:0") // nobody accepts on ln1
	defer ln1.Close()
	addr := ln1.Addr().String()
	c, err := net.Dial("tcp", addr) // in the backlog (or the accept loop)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	g2 := NewGeneration(g1)
	ln2 := listenGen(t, g2, "127.0.0.1:0")
	defer ln2.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if got, err := ln2.Accept(); err == nil {
			accepted <- got
		}
	}()
	select {
	case got := <-accepted:
		t.Fatalf("a successor that is not active accepted %v", got.RemoteAddr())
	case <-time.After(100 * time.Millisecond):
	}
	g2.Activate()
	select {
	case got := <-accepted:
		if got.RemoteAddr().String() != c.LocalAddr().String() {
			t.Fatalf("successor accepted %v, want the waiting %v", got.RemoteAddr(), c.LocalAddr())
		}
		_ = got.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting connection never reached the successor")
	}
}

func TestSuccessorThatFailsLeavesThePredecessorServing(t *testing.T) {
	g1 := NewGeneration(nil)
	ln1 := listenGen(t, g1, "127.0.0.1:0")
	serveAnswer(t, ln1, "v1")
	url := "http://" + ln1.Addr().String() + "/"
	c := &http.Client{Timeout: 10 * time.Second}

	// Rolled back before it was activated …
	g2 := NewGeneration(g1)
	_ = listenGen(t, g2, "127.0.0.1:0").Close()
	// … and after (the newest remaining handle accepts again).
	g3 := NewGeneration(g1)
	ln3 := listenGen(t, g3, "127.0.0.1:0")
	g3.Activate()
	_ = ln3.Close()
	c.CloseIdleConnections()
	if body, err := post(c, url); err != nil || body != "v1" {
		t.Fatalf("after the rollbacks: %q, %v; want v1 from the predecessor", body, err)
	}
}

func TestListenWithoutSuccessionStillConflicts(t *testing.T) {
	g1 := NewGeneration(nil)
	ln1 := listenGen(t, g1, "127.0.0.1:0")
	defer ln1.Close()
	addr := ln1.Addr().String()
	// Another application of the process, not a successor: the address is taken.
	if ln, err := Listen(WithGeneration(context.Background(), NewGeneration(nil)), addr, "other"); err == nil {
		_ = ln.Close()
		t.Fatalf("a second listener on %s without handover", addr)
	}
	// A successor takes each socket once: its second server on the address conflicts.
	g2 := NewGeneration(g1)
	ln2 := listenGen(t, g2, addr)
	defer ln2.Close()
	if ln, err := Listen(WithGeneration(context.Background(), g2), addr, "test server"); err == nil {
		_ = ln.Close()
		t.Fatalf("two listeners of one generation on %s", addr)
	}
}

// rawRequest writes a keep-alive request on c and reads the answer's status
// line and headers.
func rawRequest(t *testing.T, c net.Conn, r *bufio.Reader) *http.Response {
	t.Helper()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatalf("write request: %v", err)
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp
}

func TestDrainClosesBusyConnectionsAtTheirNextAnswerAndIdleOnesAfterGrace(t *testing.T) {
	g1 := NewGeneration(nil)
	ln1 := listenGen(t, g1, "127.0.0.1:0")
	release, inFlight := make(chan struct{}), make(chan struct{})
	serveHandler(t, ln1, Limits{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("slow") {
			close(inFlight)
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	}))
	addr := ln1.Addr().String()
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		_ = c.SetDeadline(time.Now().Add(30 * time.Second)) // a failure fails, not hangs
		return c, bufio.NewReader(c)
	}
	idle, idleR := dial()
	if resp := rawRequest(t, idle, idleR); resp.Close {
		t.Fatal("an answer before the drain closed the connection")
	}
	busy, busyR := dial()
	rawRequest(t, busy, busyR)
	slow, slowR := dial()
	if _, err := io.WriteString(slow, "GET /?slow HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	<-inFlight

	g2 := NewGeneration(g1)
	ln2 := listenGen(t, g2, "127.0.0.1:0")
	defer ln2.Close()
	g2.Activate()
	const grace = 3 * time.Second
	drained := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		drained <- g1.Drain(ctx, grace)
	}()

	// Drain marks the connections in its first round.
	waitUntil(t, "the connections drain", func() bool {
		for _, c := range g1.handles[0].liveConns() {
			if !c.draining.Load() {
				return false
			}
		}
		return true
	})
	// A connection in use is answered, and told to close, well within the grace.
	if resp := rawRequest(t, busy, busyR); !resp.Close {
		t.Fatal("an answer on a draining connection did not say Connection: close")
	}
	// A request in flight finishes; its answer closes the connection.
	close(release)
	resp, err := http.ReadResponse(slowR, nil)
	if err != nil {
		t.Fatalf("the request in flight failed: %v", err)
	}
	_ = resp.Body.Close()
	if !resp.Close {
		t.Fatal("the answer to the request in flight did not close its connection")
	}
	// The idle connection is still open before its grace ran out (it is closed
	// after grace, so one byte cannot arrive; a read times out).
	_ = idle.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := idleR.ReadByte(); !isTimeout(err) {
		t.Fatalf("the idle connection was closed before its grace: %v", err)
	}
	select {
	case err := <-drained:
		if err != nil {
			t.Fatalf("drain: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("drain did not end")
	}
	_ = idle.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := idleR.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("the idle connection after the drain: %v, want EOF", err)
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// An address the successor does not serve is not drained: sent away, its clients
// would come back to the same server. Its connections end with the server's stop.
func TestDrainLeavesAddressesTheSuccessorDropped(t *testing.T) {
	g1 := NewGeneration(nil)
	kept := listenGen(t, g1, "127.0.0.1:0")
	dropped, err := Listen(WithGeneration(context.Background(), g1), "127.0.0.1:0", "dropped server")
	if err != nil {
		t.Fatal(err)
	}
	serveAnswer(t, kept, "kept")
	serveAnswer(t, dropped, "dropped")
	c := &http.Client{Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	// A keep-alive connection stays idle on the dropped address.
	if body, err := post(c, "http://"+dropped.Addr().String()+"/"); err != nil || body != "dropped" {
		t.Fatalf("dropped address: %q, %v", body, err)
	}
	g2 := NewGeneration(g1)
	ln2 := listenGen(t, g2, "127.0.0.1:0") // takes over kept only
	defer ln2.Close()
	g2.Activate()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// With a grace longer than the deadline, waiting for the idle connection on
	// the dropped address would time out.
	if err := g1.Drain(ctx, time.Minute); err != nil {
		t.Fatalf("drain: %v", err)
	}
	if body, err := post(c, "http://"+dropped.Addr().String()+"/"); err != nil || body != "dropped" {
		t.Fatalf("the dropped address after the drain: %q, %v; want it served until its stop", body, err)
	}
}

// A connection refused for a limit never reaches the HTTP server: it must not be
// left for Drain to wait on.
func TestDrainIsNotHeldByRefusedConnections(t *testing.T) {
	g1 := NewGeneration(nil)
	ln1 := listenGen(t, g1, "127.0.0.1:0")
	serveLimited(t, ln1, Limits{MaxConnections: 1, MaxConnectionsPerIP: -1}, "v1")
	addr := ln1.Addr().String()
	held, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	waitUntil(t, "the first connection is accepted", func() bool { return len(g1.handles[0].liveConns()) == 1 })
	if !refusedFrom(t, addr, "") {
		t.Fatal("a connection beyond max_connections was served")
	}
	g2 := NewGeneration(g1)
	ln2 := listenGen(t, g2, "127.0.0.1:0")
	defer ln2.Close()
	g2.Activate()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g1.Drain(ctx, 100*time.Millisecond); err != nil {
		t.Fatalf("drain: %v", err)
	}
}
