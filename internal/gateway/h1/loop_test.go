package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rawServer is an upstream that answers each request with bytes of the
// test's choosing, to show what the Loop does with answers a well-behaved
// server would never send.
type rawServer struct {
	ln       net.Listener
	accepted atomic.Int64
	requests atomic.Int64
	// answer writes the answer to request n (from 1) on the connection; false
	// closes the connection.
	answer func(n int64, req *http.Request, body []byte, w *bufio.Writer, nc net.Conn) bool
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
}

func newRawServer(t testing.TB, answer func(n int64, req *http.Request, body []byte, w *bufio.Writer, nc net.Conn) bool) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln, answer: answer}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			s.mu.Lock()
			s.conns = append(s.conns, nc)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer nc.Close()
				br, bw := bufio.NewReader(nc), bufio.NewWriter(nc)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					body, err := io.ReadAll(req.Body)
					if err != nil {
						return
					}
					n := s.requests.Add(1)
					if !s.answer(n, req, body, bw, nc) {
						_ = bw.Flush()
						return
					}
					if bw.Flush() != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *rawServer) url() string { return "http://" + s.ln.Addr().String() + "/mcp?x=1" }

// echoJSON answers each request with its body as JSON, Content-Length.
func echoJSON(_ int64, _ *http.Request, body []byte, w *bufio.Writer, _ net.Conn) bool {
	fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	return true
}

func newClient(t testing.TB, tune func(*http.Transport)) (*http.Client, *Loop) {
	tr := &http.Transport{MaxIdleConnsPerHost: 8, IdleConnTimeout: time.Minute}
	if tune != nil {
		tune(tr)
	}
	l := Register(tr)
	t.Cleanup(l.Close)
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}, l
}

func post(ctx context.Context, hc *http.Client, u, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Caller", "alice")
	return hc.Transport.RoundTrip(req)
}

// call posts body in a marked context and reads the whole answer.
func call(t testing.TB, hc *http.Client, u, body string) (int, string, error) {
	t.Helper()
	resp, err := post(Use(context.Background()), hc, u, body)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(got), err
}

func TestLoopKeepsOneConnectionAndSendsTheRequestAsTheTransport(t *testing.T) {
	var seen sync.Map
	s := newRawServer(t, func(n int64, req *http.Request, body []byte, w *bufio.Writer, nc net.Conn) bool {
		seen.Store(n, fmt.Sprintf("%s %s host=%s cl=%d ua=%q ct=%q caller=%q", req.Method, req.RequestURI, req.Host,
			req.ContentLength, req.UserAgent(), req.Header.Get("Content-Type"), req.Header.Get("X-Caller")))
		return echoJSON(n, req, body, w, nc)
	})
	hc, l := newClient(t, nil)
	for i := range 20 {
		body := fmt.Sprintf(`{"n":%d}`, i)
		status, got, err := call(t, hc, s.url(), body)
		if err != nil || status != 200 || got != body {
			t.Fatalf("call %d: %d %q %v", i, status, got, err)
		}
	}
	if n := s.accepted.Load(); n != 1 {
		t.Errorf("connections: %d, want 1 kept for all 20 calls", n)
	}
	if n := l.Sent(); n != 20 {
		t.Errorf("the loop sent %d, want 20", n)
	}
	v, _ := seen.Load(int64(1))
	want := fmt.Sprintf(`POST /mcp?x=1 host=%s cl=7 ua="Go-http-client/1.1" ct="application/json" caller="alice"`, s.ln.Addr())
	if v != want {
		t.Errorf("request as the upstream read it:\n got %v\nwant %s", v, want)
	}
}

func TestLoopReadsAChunkedEventStream(t *testing.T) {
	s := newRawServer(t, func(_ int64, _ *http.Request, body []byte, w *bufio.Writer, _ net.Conn) bool {
		ev := "event: message\ndata: " + string(body) + "\n\n"
		fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
		fmt.Fprintf(w, "%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n", 5, ev[:5], len(ev)-5, ev[5:])
		return true
	})
	hc, _ := newClient(t, nil)
	for range 3 {
		_, got, err := call(t, hc, s.url(), `{"a":1}`)
		if err != nil || got != "event: message\ndata: {\"a\":1}\n\n" {
			t.Fatalf("%q %v", got, err)
		}
	}
	if n := s.accepted.Load(); n != 1 {
		t.Errorf("connections: %d, want 1", n)
	}
}

func TestLoopLeavesToTheTransportWhatItDoesNotTake(t *testing.T) {
	s := newRawServer(t, echoJSON)
	hc, l := newClient(t, nil)
	ctx := Use(context.Background())
	cases := map[string]func() *http.Request{
		"unmarked": func() *http.Request {
			r, _ := http.NewRequest(http.MethodPost, s.url(), strings.NewReader("{}"))
			return r
		},
		"unknown length": func() *http.Request {
			r, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url(), io.MultiReader(strings.NewReader("{}")))
			return r
		},
		"trailer": func() *http.Request {
			r, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url(), strings.NewReader("{}"))
			r.Trailer = http.Header{"X-T": nil}
			return r
		},
	}
	for name, mk := range cases {
		resp, err := hc.Do(mk())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != "{}" {
			t.Errorf("%s: %q", name, got)
		}
	}
	if n := l.Sent(); n != 0 {
		t.Errorf("the loop sent %d of requests it should have left to the transport", n)
	}
	// Through a proxy, the Transport's own way.
	proxied := newRawServer(t, func(_ int64, req *http.Request, _ []byte, w *bufio.Writer, _ net.Conn) bool {
		fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(req.RequestURI), req.RequestURI)
		return true
	})
	pc, pl := newClient(t, func(tr *http.Transport) {
		tr.Proxy = func(*http.Request) (*url.URL, error) { return url.Parse("http://" + proxied.ln.Addr().String()) }
	})
	if _, got, err := call(t, pc, s.url(), "{}"); err != nil || got != s.url() {
		t.Errorf("through the proxy: %q %v (the proxy sees the absolute URL)", got, err)
	}
	if pl.Sent() != 0 {
		t.Error("the loop sent a request that goes through a proxy")
	}
}

// TestLoopHostileAnswers: every broken answer is an error (at the answer's
// header or its body), never a hang or a panic, and its connection is not
// used again: the next call on the same loop opens a new one and works.
func TestLoopHostileAnswers(t *testing.T) {
	cases := []struct {
		name      string
		answer    string // the raw answer to the first request; then the connection closes
		keepOpen  bool   // the connection stays open after the answer
		headerErr string // RoundTrip fails with this
		bodyErr   string // reading the body fails with this
		status    int    // or the answer is delivered with this status
		body      string
		reused    bool // the connection serves the next call
	}{
		{name: "truncated mid-body", answer: "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\":", bodyErr: "unexpected EOF"},
		{name: "closed after the headers", answer: "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n", bodyErr: "unexpected EOF"},
		{name: "bad chunk size", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n", bodyErr: "invalid byte in chunk length"},
		{name: "chunk longer than sent", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffff\r\nabc", bodyErr: "unexpected EOF"},
		{name: "header flood", answer: "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-Flood: "+strings.Repeat("a", 1000)+"\r\n", 1200) + "\r\n", headerErr: "too large"},
		{name: "no answer", answer: "", headerErr: "unexpected EOF"},
		{name: "not HTTP", answer: "SSH-2.0-OpenSSH\r\n\r\n", headerErr: "malformed HTTP"},
		{name: "bad status", answer: "HTTP/1.1 2x0 OK\r\n\r\n", headerErr: "malformed HTTP status"},
		{name: "switching protocols", answer: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n", keepOpen: true, headerErr: "switched protocols"},
		{name: "endless 1xx", answer: strings.Repeat("HTTP/1.1 103 Early Hints\r\n\r\n", 7), keepOpen: true, headerErr: "informational"},
		{name: "Connection: close", answer: "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}", keepOpen: true, status: 200, body: "{}"},
		{name: "1xx then the answer", answer: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", status: 200, body: "{}", keepOpen: true, reused: true},
		{name: "redirect", answer: "HTTP/1.1 307 Temporary Redirect\r\nLocation: /other\r\nContent-Length: 0\r\n\r\n", status: 307, keepOpen: true, reused: true},
		{name: "404", answer: "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found", status: 404, body: "not found", keepOpen: true, reused: true},
		{name: "503", answer: "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy", status: 503, body: "busy", keepOpen: true, reused: true},
		{name: "body to the end of the connection", answer: "HTTP/1.1 200 OK\r\n\r\n{\"a\":1}", status: 200, body: `{"a":1}`},
		{name: "bytes after the body", answer: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}HTTP/1.1 200 OK\r\n\r\n", keepOpen: true, status: 200, body: "{}"},
		{name: "HTTP/1.0 without keep-alive", answer: "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}", keepOpen: true, status: 200, body: "{}"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newRawServer(t, func(n int64, req *http.Request, body []byte, w *bufio.Writer, nc net.Conn) bool {
				if n > 1 {
					return echoJSON(n, req, body, w, nc)
				}
				w.WriteString(tc.answer)
				return tc.keepOpen
			})
			hc, _ := newClient(t, nil)
			ctx, cancel := context.WithTimeout(Use(context.Background()), 10*time.Second)
			defer cancel()
			resp, err := post(ctx, hc, s.url(), "{}")
			switch {
			case tc.headerErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.headerErr) {
					t.Fatalf("error %v, want one with %q", err, tc.headerErr)
				}
			case err != nil:
				t.Fatalf("unexpected error: %v", err)
			default:
				got, rerr := io.ReadAll(resp.Body)
				resp.Body.Close()
				if tc.bodyErr != "" {
					if rerr == nil || !strings.Contains(rerr.Error(), tc.bodyErr) {
						t.Fatalf("body read error %v, want one with %q", rerr, tc.bodyErr)
					}
				} else if rerr != nil || resp.StatusCode != tc.status || string(got) != tc.body {
					t.Fatalf("got %d %q %v, want %d %q", resp.StatusCode, got, rerr, tc.status, tc.body)
				}
			}
			if _, got, err := call(t, hc, s.url(), `{"next":1}`); err != nil || got != `{"next":1}` {
				t.Fatalf("the next call: %q %v", got, err)
			}
			want := int64(2)
			if tc.reused {
				want = 1
			}
			if n := s.accepted.Load(); n != want {
				t.Errorf("connections %d, want %d", n, want)
			}
		})
	}
}

func TestLoopReusesAfterAnAnswerReadToItsEnd(t *testing.T) {
	for _, status := range []int{200, 202, 400, 404, 500} {
		s := newRawServer(t, func(n int64, _ *http.Request, _ []byte, w *bufio.Writer, _ net.Conn) bool {
			if n == 1 {
				fmt.Fprintf(w, "HTTP/1.1 %d X\r\nContent-Length: 3\r\n\r\nabc", status)
			} else {
				w.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}
			return true
		})
		hc, _ := newClient(t, nil)
		if st, got, err := call(t, hc, s.url(), "{}"); err != nil || st != status || got != "abc" {
			t.Fatalf("%d: %d %q %v", status, st, got, err)
		}
		if _, got, err := call(t, hc, s.url(), "{}"); err != nil || got != "ok" {
			t.Fatalf("%d: next %q %v", status, got, err)
		}
		// A read after the end is the end again, as net/http's bodies answer.
		resp, err := post(Use(context.Background()), hc, s.url(), "{}")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.ReadAll(resp.Body)
		if n, err := resp.Body.Read(make([]byte, 1)); n != 0 || err != io.EOF {
			t.Errorf("a read after the end: %d %v", n, err)
		}
		resp.Body.Close()
		if s.accepted.Load() != 1 {
			t.Errorf("HTTP %d: the connection was not kept", status)
		}
	}
}

func TestLoopSlowAnswerEndsWithTheContext(t *testing.T) {
	s := newRawServer(t, func(_ int64, _ *http.Request, _ []byte, w *bufio.Writer, nc net.Conn) bool {
		w.WriteString("HTTP/1.1 200 OK\r\n")
		w.Flush()
		for i := 0; i < 200; i++ { // a header, a byte at a time
			if _, err := nc.Write([]byte("X")); err != nil {
				return false
			}
			time.Sleep(20 * time.Millisecond)
		}
		return false
	})
	hc, _ := newClient(t, nil)
	ctx, cancel := context.WithTimeout(Use(context.Background()), 150*time.Millisecond)
	defer cancel()
	_, err := post(ctx, hc, s.url(), "{}")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want the context's deadline", err)
	}
	// The same with a Transport's ResponseHeaderTimeout and no deadline.
	hc2, _ := newClient(t, func(tr *http.Transport) { tr.ResponseHeaderTimeout = 150 * time.Millisecond })
	_, err = post(Use(context.Background()), hc2, s.url(), "{}")
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("error %v, want a timeout", err)
	}
}

func TestLoopCancelWhileTheBodyIsRead(t *testing.T) {
	release := make(chan struct{})
	s := newRawServer(t, func(_ int64, _ *http.Request, _ []byte, w *bufio.Writer, _ net.Conn) bool {
		w.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{")
		w.Flush()
		<-release
		return false
	})
	defer close(release)
	hc, _ := newClient(t, nil)
	ctx, cancel := context.WithCancel(Use(context.Background()))
	resp, err := post(ctx, hc, s.url(), "{}")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(resp.Body)
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("body read: %v, want context.Canceled", err)
	}
	resp.Body.Close() // after the watch closed it: no second close, no hang
}

// TestLoopCloseFromAnotherGoroutine: the relay closes an answer's body from
// its context's watch while its own goroutine reads it.
func TestLoopCloseFromAnotherGoroutine(t *testing.T) {
	release := make(chan struct{})
	s := newRawServer(t, func(_ int64, _ *http.Request, _ []byte, w *bufio.Writer, _ net.Conn) bool {
		w.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{")
		w.Flush()
		<-release
		return false
	})
	defer close(release)
	hc, _ := newClient(t, nil)
	resp, err := post(Use(context.Background()), hc, s.url(), "{}")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(resp.Body)
		done <- err
	}()
	resp.Body.Close()
	if err := <-done; err == nil {
		t.Error("a read of a body closed underneath it ended without an error")
	}
}

// TestLoopStaleConnection: a kept connection the upstream closed while idle is
// noticed before the request is written, and the request goes on a new one,
// once. A connection the upstream closes after reading the request is an
// error: the call may have run, it is not sent again.
func TestLoopStaleConnection(t *testing.T) {
	closed := make(chan struct{}, 1)
	s := newRawServer(t, func(n int64, req *http.Request, body []byte, w *bufio.Writer, nc net.Conn) bool {
		echoJSON(n, req, body, w, nc)
		if n == 1 {
			w.Flush()
			nc.Close() // idle close, without Connection: close
			closed <- struct{}{}
			return false
		}
		return true
	})
	hc, _ := newClient(t, nil)
	if _, _, err := call(t, hc, s.url(), "{}"); err != nil {
		t.Fatal(err)
	}
	<-closed
	var wrote atomic.Int64
	ctx := httptrace.WithClientTrace(Use(context.Background()), &httptrace.ClientTrace{WroteHeaders: func() { wrote.Add(1) }})
	resp, err := post(ctx, hc, s.url(), `{"b":2}`)
	if err != nil {
		t.Fatalf("after an idle close: %v", err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != `{"b":2}` || s.requests.Load() != 2 || s.accepted.Load() != 2 || wrote.Load() != 1 {
		t.Errorf("got %q; requests %d, connections %d, written %d times; want 2, 2, 1",
			got, s.requests.Load(), s.accepted.Load(), wrote.Load())
	}

	// Read, then closed without an answer, on a kept connection.
	s2 := newRawServer(t, func(n int64, req *http.Request, body []byte, w *bufio.Writer, nc net.Conn) bool {
		if n == 2 {
			return false
		}
		return echoJSON(n, req, body, w, nc)
	})
	if _, _, err := call(t, hc, s2.url(), "{}"); err != nil {
		t.Fatal(err)
	}
	wrote.Store(0)
	if _, err := post(ctx, hc, s2.url(), "{}"); err == nil {
		t.Fatal("a request read and left unanswered succeeded")
	}
	if n := s2.requests.Load(); n != 2 || wrote.Load() != 1 {
		t.Errorf("the upstream read %d requests, the trace saw %d writes: want 2 and 1 (never sent twice)", n, wrote.Load())
	}
}

func TestLoopDialFailureSentNothing(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	hc, _ := newClient(t, nil)
	var wrote atomic.Bool
	ctx := httptrace.WithClientTrace(Use(context.Background()), &httptrace.ClientTrace{WroteHeaders: func() { wrote.Store(true) }})
	_, err := post(ctx, hc, "http://"+addr+"/mcp", "{}")
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" || wrote.Load() {
		t.Errorf("error %v (wrote %v), want a dial error and nothing written", err, wrote.Load())
	}
}

func TestLoopIdleConnectionsAreClosed(t *testing.T) {
	s := newRawServer(t, echoJSON)
	hc, l := newClient(t, func(tr *http.Transport) { tr.IdleConnTimeout = 30 * time.Millisecond })
	if _, _, err := call(t, hc, s.url(), "{}"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		l.mu.Lock()
		n := len(l.idle)
		l.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("an idle connection was kept past IdleConnTimeout")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// CloseIdleConnections closes what is kept.
	hc2, l2 := newClient(t, nil)
	if _, _, err := call(t, hc2, s.url(), "{}"); err != nil {
		t.Fatal(err)
	}
	l2.CloseIdleConnections()
	l2.mu.Lock()
	defer l2.mu.Unlock()
	if len(l2.idle) != 0 {
		t.Error("CloseIdleConnections kept a connection")
	}
}

func TestLoopConcurrentCalls(t *testing.T) {
	s := newRawServer(t, echoJSON)
	hc, l := newClient(t, func(tr *http.Transport) { tr.MaxIdleConnsPerHost = 4 })
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				body := fmt.Sprintf(`{"g":%d,"i":%d}`, g, i)
				if _, got, err := call(t, hc, s.url(), body); err != nil || got != body {
					errs <- fmt.Errorf("%q %v", got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	l.mu.Lock()
	idle := 0
	for _, cs := range l.idle {
		idle += len(cs)
	}
	l.mu.Unlock()
	if idle > 4 || l.Sent() != 800 {
		t.Errorf("idle %d (at most 4), sent %d (800)", idle, l.Sent())
	}
}

func TestAppendRequestHostOverride(t *testing.T) {
	req, _ := http.NewRequest(http.MethodPost, "http://10.0.0.1:8080/a/b?c=d", bytes.NewReader([]byte("xy")))
	req.Host = "upstream.example"
	req.Header.Set("User-Agent", "helix")
	req.Header.Set("Host", "ignored")
	req.Close = true
	got := string(appendRequest(nil, req, []byte("xy")))
	want := "POST /a/b?c=d HTTP/1.1\r\nHost: upstream.example\r\nContent-Length: 2\r\nConnection: close\r\nUser-Agent: helix\r\n\r\nxy"
	if got != want {
		t.Errorf("\n got %q\nwant %q", got, want)
	}
}

// TestLoopEmptyAnswerClosedUnread: an answer without a body (a notification's
// 202) keeps its connection though the caller closes it without reading.
func TestLoopEmptyAnswerClosedUnread(t *testing.T) {
	s := newRawServer(t, func(_ int64, _ *http.Request, _ []byte, w *bufio.Writer, _ net.Conn) bool {
		w.WriteString("HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
		return true
	})
	hc, _ := newClient(t, nil)
	for range 3 {
		resp, err := post(Use(context.Background()), hc, s.url(), "{}")
		if err != nil || resp.StatusCode != 202 {
			t.Fatal(resp, err)
		}
		resp.Body.Close()
	}
	if n := s.accepted.Load(); n != 1 {
		t.Errorf("connections %d, want 1", n)
	}
}

func TestLoopLeavesLargeBodiesToTheTransport(t *testing.T) {
	s := newRawServer(t, func(_ int64, _ *http.Request, body []byte, w *bufio.Writer, _ net.Conn) bool {
		fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", len(fmt.Sprint(len(body))))
		fmt.Fprint(w, len(body))
		return true
	})
	hc, l := newClient(t, nil)
	big := strings.Repeat("x", maxBody+1)
	if _, got, err := call(t, hc, s.url(), big); err != nil || got != fmt.Sprint(len(big)) || l.Sent() != 0 {
		t.Errorf("got %q %v, loop sent %d; want the Transport to send it", got, err, l.Sent())
	}
}

// TestLoopDetachedBodyOutlivesItsContext: once detached, an answer's body is
// read to its end after its request's context ended (with a deadline or
// cancelled), and its connection serves the next request; before, the
// context's end still closes it. Buffered tells what is read and not taken.
func TestLoopDetachedBodyOutlivesItsContext(t *testing.T) {
	release := make(chan struct{}, 2)
	s := newRawServer(t, func(_ int64, _ *http.Request, _ []byte, w *bufio.Writer, _ net.Conn) bool {
		w.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n")
		w.Flush()
		<-release
		w.WriteString("4\r\nlast\r\n0\r\n\r\n")
		return true
	})
	hc, l := newClient(t, nil)
	for _, deadline := range []bool{false, true} {
		ctx, cancel := context.WithCancel(Use(context.Background()))
		if deadline {
			ctx, cancel = context.WithTimeout(Use(context.Background()), time.Hour)
		}
		resp, err := post(ctx, hc, s.url(), "{}")
		if err != nil {
			t.Fatal(err)
		}
		first := make([]byte, 5)
		if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "first" {
			t.Fatalf("%q %v", first, err)
		}
		d := resp.Body.(interface {
			Detach() bool
			Buffered() int
		})
		if n := d.Buffered(); n != 0 {
			t.Errorf("buffered %d before the rest was sent", n)
		}
		if !d.Detach() {
			t.Fatal("Detach refused a live body")
		}
		if !d.Detach() {
			t.Fatal("a second Detach refused the body")
		}
		cancel()
		release <- struct{}{}
		rest, err := io.ReadAll(resp.Body)
		if err != nil || string(rest) != "last" {
			t.Fatalf("after the context ended: %q %v", rest, err)
		}
		resp.Body.Close()
		if l.Idle() != 1 {
			t.Fatalf("idle connections %d, want 1", l.Idle())
		}
	}
	if n := s.accepted.Load(); n != 1 {
		t.Errorf("connections %d, want 1", n)
	}

	// A context that ended before Detach closed the body: Detach refuses it.
	ctx, cancel := context.WithCancel(Use(context.Background()))
	resp, err := post(ctx, hc, s.url(), "{}")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, context.Canceled) {
		t.Fatalf("read after cancel: %v", err)
	}
	if resp.Body.(interface{ Detach() bool }).Detach() {
		t.Error("Detach accepted a body its context had closed")
	}
	release <- struct{}{}
	resp.Body.Close()
}
