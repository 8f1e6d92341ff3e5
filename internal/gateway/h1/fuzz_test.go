package h1

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// FuzzAnswer feeds the Loop arbitrary upstream answers: whatever the bytes,
// a call ends (an answer or an error, never a panic or a hang), a body reads
// to an end, and a connection is kept only after an answer that ended
// cleanly where its framing said.
func FuzzAnswer(f *testing.F) {
	for _, seed := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n1a\r\nevent: message\ndata: {}\n\n\r\n0\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n{}",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n{}",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nabc",
		"HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n",
		"HTTP/1.1 200 OK\r\n X: folded\r\n\r\n",
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, answer string) {
		tr := &http.Transport{MaxIdleConnsPerHost: 2, MaxResponseHeaderBytes: 4096}
		l := newLoop(tr)
		defer l.Close()
		l.dial = func(context.Context, string, string) (net.Conn, error) {
			client, server := net.Pipe()
			go func() {
				defer server.Close()
				req, err := http.ReadRequest(bufio.NewReader(server))
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, req.Body)
				_, _ = io.WriteString(server, answer)
			}()
			return client, nil
		}
		ctx, cancel := context.WithTimeout(Use(context.Background()), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://upstream/mcp", strings.NewReader("{}"))
		resp, err := l.RoundTrip(req)
		if err != nil {
			if resp != nil {
				t.Fatal("an error and an answer")
			}
			return
		}
		_, rerr := io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		l.mu.Lock()
		kept := len(l.idle["upstream:80"])
		l.mu.Unlock()
		if kept > 0 && (rerr != nil || resp.Close || (resp.ContentLength < 0 && !chunked(resp))) {
			t.Fatalf("kept a connection after %v (close %v, length %d)", rerr, resp.Close, resp.ContentLength)
		}
	})
}
