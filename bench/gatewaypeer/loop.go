package main

// The prototype of a downstream HTTP/1.1 loop of Helix's own (gatewaypeer
// -loop): it serves the same handler as the MCP server (Helix's transport and
// everything under it, captured through the server's HTTPMiddleware), but
// reads each request and writes its answer in the connection's goroutine. Go's
// HTTP server starts a background read for every request whose body was read
// to its end (a goroutine and a read that finds nothing, to notice a client
// going away) and writes through its own buffering layers; this loop reads
// the next request only after the answer went out in one write, and watches
// for a client going away only while an event stream (GET) is open. What it
// gives up, and what bringing it into Helix would have to add: noticing a
// client that goes away during a POST's call, 100-continue, upgrades (it
// refuses both), and the server's connection limits and timeouts beyond the
// idle and header deadlines set here.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

const (
	loopMaxHeader   = 1 << 20
	loopIdleTimeout = 2 * time.Minute
	loopHeadTimeout = 10 * time.Second
	// loopBuffered is how much of an answer is held for one write before it
	// goes out as a chunked stream instead.
	loopBuffered = 64 << 10
	// loopDrain is how much of an unread request body is read away to keep
	// the connection; with more left it is closed.
	loopDrain = 256 << 10
)

// loopServer serves h on connections of its own.
type loopServer struct {
	h http.Handler
}

// serve accepts connections until ln is closed.
func (s *loopServer) serve(ln net.Listener) error {
	for {
		nc, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			return err
		}
		go s.conn(nc)
	}
}

// limitedConn bounds how much a request's head may read from the connection.
type limitedConn struct {
	nc   net.Conn
	left int64 // < 0: no bound
}

var errHeadTooLarge = errors.New("request head too large")

func (l *limitedConn) Read(p []byte) (int, error) {
	if l.left == 0 {
		return 0, errHeadTooLarge
	}
	if l.left > 0 && int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.nc.Read(p)
	if l.left > 0 {
		l.left -= int64(n)
	}
	return n, err
}

func (s *loopServer) conn(nc net.Conn) {
	defer nc.Close()
	lc := &limitedConn{nc: nc, left: -1}
	br := bufio.NewReaderSize(lc, 4096)
	bw := bufio.NewWriterSize(nc, 4096)
	base := context.WithValue(context.Background(), http.LocalAddrContextKey, nc.LocalAddr())
	remote := nc.RemoteAddr().String()
	for {
		if br.Buffered() == 0 {
			_ = nc.SetReadDeadline(time.Now().Add(loopIdleTimeout))
		}
		lc.left = loopMaxHeader + 4096
		req, err := http.ReadRequest(br)
		lc.left = -1
		if err != nil {
			if !errors.Is(err, io.EOF) && !isTimeout(err) {
				code := http.StatusBadRequest
				if errors.Is(err, errHeadTooLarge) {
					code = http.StatusRequestHeaderFieldsTooLarge
				}
				writeError(nc, bw, code, err.Error())
			}
			return
		}
		_ = nc.SetReadDeadline(time.Time{})
		switch {
		case req.Header.Get("Upgrade") != "":
			writeError(nc, bw, http.StatusNotImplemented, "upgrades are not served")
			return
		case req.Header.Get("Expect") != "":
			writeError(nc, bw, http.StatusExpectationFailed, "Expect is not served")
			return
		}
		req.RemoteAddr = remote
		body := req.Body
		if body != http.NoBody {
			// Closing the request body must not read it to its end (a client
			// could send gigabytes): the loop drains a bounded rest itself.
			req.Body = &loopBody{r: body}
		}
		ctx, cancel := context.WithCancel(base)
		req = req.WithContext(ctx)
		w := &loopWriter{nc: nc, bw: bw, req: req, h: make(http.Header, 4)}
		var watch *watcher
		if req.Method == http.MethodGet && req.ContentLength == 0 && len(req.TransferEncoding) == 0 {
			// An event stream waits on the server: notice the client going away.
			watch = startWatch(nc, br, cancel)
		}
		s.h.ServeHTTP(w, req)
		if watch != nil {
			watch.stop(nc)
		}
		cancel()
		keep := w.finish() && !req.Close && !watch.failed()
		if keep && body != http.NoBody {
			n, err := io.CopyN(io.Discard, body, loopDrain+1)
			keep = err == io.EOF || (err == nil && n == 0)
		}
		if !keep {
			return
		}
	}
}

// loopBody is a request body whose Close stops the handler's reads without
// reading on.
type loopBody struct {
	r      io.Reader
	closed bool
}

func (b *loopBody) Read(p []byte) (int, error) {
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	return b.r.Read(p)
}

func (b *loopBody) Close() error { b.closed = true; return nil }

// watcher is a read that waits while a stream is open, to notice the client
// closing its connection.
type watcher struct {
	done chan struct{}
	err  error
}

func startWatch(nc net.Conn, br *bufio.Reader, cancel func()) *watcher {
	w := &watcher{done: make(chan struct{})}
	go func() {
		defer close(w.done)
		if _, err := br.Peek(1); err != nil {
			w.err = err
			if !isTimeout(err) {
				cancel()
			}
		}
	}()
	return w
}

// stop ends the watching read (a deadline in the past) and waits for it.
func (w *watcher) stop(nc net.Conn) {
	_ = nc.SetReadDeadline(time.Unix(1, 0))
	<-w.done
	_ = nc.SetReadDeadline(time.Time{})
}

// failed reports whether the client went away while the stream was open.
func (w *watcher) failed() bool { return w != nil && w.err != nil && !isTimeout(w.err) }

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// writeError answers a request the loop does not serve and ends the
// connection. What the client still sends is read away for a moment before
// the close, as net/http does: closing with unread data resets the connection,
// and the client could lose the answer.
func writeError(nc net.Conn, bw *bufio.Writer, code int, msg string) {
	fmt.Fprintf(bw, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s\n",
		code, http.StatusText(code), len(msg)+1, msg)
	if bw.Flush() != nil {
		return
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	_ = nc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	_, _ = io.CopyN(io.Discard, nc, loopDrain)
}

// loopWriter is the ResponseWriter of the loop: an answer is held and written
// at its end with its length, in one write; a flush (an event stream) or an
// answer larger than loopBuffered goes out chunked from then on.
type loopWriter struct {
	nc  net.Conn
	bw  *bufio.Writer
	req *http.Request
	h   http.Header

	mu          sync.Mutex
	status      int
	wroteHeader bool
	headSent    bool
	chunked     bool
	body        []byte
	err         error
}

func (w *loopWriter) Header() http.Header { return w.h }

func (w *loopWriter) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writeHeaderLocked(code)
}

func (w *loopWriter) writeHeaderLocked(code int) {
	if w.wroteHeader || (code >= 100 && code < 200) {
		return // informational answers are not sent; a second status is ignored as net/http does
	}
	w.wroteHeader, w.status = true, code
}

func (w *loopWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.wroteHeader {
		w.writeHeaderLocked(http.StatusOK)
	}
	if w.err != nil {
		return 0, w.err
	}
	if !w.bodyAllowed() {
		return 0, http.ErrBodyNotAllowed
	}
	if !w.headSent {
		w.body = append(w.body, p...)
		if len(w.body) > loopBuffered {
			w.sendHeadLocked(true)
		}
		return len(p), w.err
	}
	w.writeBodyLocked(p)
	return len(p), w.err
}

func (w *loopWriter) bodyAllowed() bool {
	return w.status != http.StatusNoContent && w.status != http.StatusNotModified && w.req.Method != http.MethodHead
}

func (w *loopWriter) writeBodyLocked(p []byte) {
	if w.err != nil || len(p) == 0 {
		return
	}
	if w.chunked {
		w.bw.WriteString(strconv.FormatInt(int64(len(p)), 16))
		w.bw.WriteString("\r\n")
		w.bw.Write(p)
		_, w.err = w.bw.WriteString("\r\n")
		return
	}
	_, w.err = w.bw.Write(p)
}

// sendHeadLocked writes the status line and headers, then what is held of the
// body: with its length when the answer is complete, chunked when streaming
// (unless the handler set a length).
func (w *loopWriter) sendHeadLocked(streaming bool) {
	w.headSent = true
	bw := w.bw
	bw.WriteString("HTTP/1.1 ")
	bw.WriteString(strconv.Itoa(w.status))
	bw.WriteByte(' ')
	bw.WriteString(http.StatusText(w.status))
	bw.WriteString("\r\n")
	if w.bodyAllowed() && w.h.Get("Content-Length") == "" {
		if streaming {
			w.chunked = true
			bw.WriteString("Transfer-Encoding: chunked\r\n")
		} else {
			bw.WriteString("Content-Length: ")
			bw.WriteString(strconv.Itoa(len(w.body)))
			bw.WriteString("\r\n")
		}
	}
	if w.req.Close {
		bw.WriteString("Connection: close\r\n")
	}
	if err := w.h.Write(bw); err != nil {
		w.err = err
		return
	}
	bw.WriteString("\r\n")
	body := w.body
	w.body = nil
	w.writeBodyLocked(body)
}

func (w *loopWriter) Flush() { _ = w.FlushError() }

// FlushError is what http.ResponseController.Flush calls.
func (w *loopWriter) FlushError() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.wroteHeader {
		w.writeHeaderLocked(http.StatusOK)
	}
	if !w.headSent {
		w.sendHeadLocked(true)
	}
	if w.err == nil {
		w.err = w.bw.Flush()
	}
	return w.err
}

// SetReadDeadline and SetWriteDeadline are what http.ResponseController calls.
func (w *loopWriter) SetReadDeadline(t time.Time) error  { return w.nc.SetReadDeadline(t) }
func (w *loopWriter) SetWriteDeadline(t time.Time) error { return w.nc.SetWriteDeadline(t) }

// finish sends what the handler left and reports whether the connection can
// take the next request.
func (w *loopWriter) finish() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.wroteHeader {
		w.writeHeaderLocked(http.StatusOK)
	}
	if !w.headSent {
		w.sendHeadLocked(false)
	} else if w.chunked && w.err == nil {
		_, w.err = w.bw.WriteString("0\r\n\r\n")
	}
	if w.err == nil {
		w.err = w.bw.Flush()
	}
	return w.err == nil
}
