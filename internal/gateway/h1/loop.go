// Package h1 is an HTTP/1.1 client loop for the gateway's fast relay: the
// request is written and its answer read in the caller's goroutine, on
// keep-alive connections the loop owns. net/http's Transport hands every
// request to a writer goroutine, reads every answer in a reader goroutine and
// keeps a background read on each idle connection; on the fast relay's hot
// path those hand-offs and wake-ups cost more than the relay's own work.
//
// A Loop is registered on an *http.Transport for the "http" scheme
// (Transport.RegisterProtocol): every RoundTripper wrapped around that
// Transport (the upstream's headers: and auth:, OAuth tokens and their
// refresh, the caller's credentials, the pool's record of whether a call may
// be sent again) works as before, since the Loop sits where the Transport's own
// connection handling would. The Loop takes only requests whose context was
// marked with Use and that it can send as the Transport would; for every
// other request it answers http.ErrSkipAltProtocol and the Transport sends it
// itself: unmarked requests, requests through a proxy, bodies of unknown
// length, trailers, a Transport with DisableKeepAlives or MaxConnsPerHost.
// https is never registered: TLS upstreams (and HTTP/2) keep the Transport.
package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxHeaderBytes bounds the status line and headers of an answer when
// the Transport sets no MaxResponseHeaderBytes.
const DefaultMaxHeaderBytes = 1 << 20

// maxBody is the largest request body the Loop sends (it holds the body in
// memory, to send it again on another connection when a kept one turns out
// closed); a larger one goes through the Transport.
const maxBody = 32 << 20

// max1xx bounds the informational answers read before the final one.
const max1xx = 5

type useKey struct{}

// Use marks ctx's requests as ones the Loop may send.
func Use(ctx context.Context) context.Context { return context.WithValue(ctx, useKey{}, true) }

func used(ctx context.Context) bool { return ctx.Value(useKey{}) != nil }

// Loop is an http.RoundTripper for the requests of one Transport. Safe for
// concurrent use.
type Loop struct {
	t    *http.Transport
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	mu     sync.Mutex
	idle   map[string][]*conn // per host:port, the most recently used last
	sweep  *time.Timer        // closes connections idle past the Transport's IdleConnTimeout
	closed bool

	sent atomic.Int64 // requests the Loop sent itself
}

// Register makes a Loop send t's marked requests to http URLs and returns it.
// t's CloseIdleConnections does not reach the Loop: call the Loop's too.
func Register(t *http.Transport) *Loop {
	l := newLoop(t)
	t.RegisterProtocol("http", l)
	return l
}

func newLoop(t *http.Transport) *Loop {
	l := &Loop{t: t, idle: map[string][]*conn{}}
	switch {
	case t.DialContext != nil:
		l.dial = t.DialContext
	default:
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
		l.dial = d.DialContext
	}
	return l
}

// Sent is how many requests the Loop has sent itself (not handed back to the
// Transport).
func (l *Loop) Sent() int64 { return l.sent.Load() }

// Idle is how many connections the Loop keeps for the next requests.
func (l *Loop) Idle() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, cs := range l.idle {
		n += len(cs)
	}
	return n
}

// conn is one keep-alive connection of the Loop.
type conn struct {
	nc       net.Conn
	br       *bufio.Reader
	lr       limitReader // br's source: bounds the header's bytes
	wbuf     []byte
	key      string
	idleFrom time.Time
	reused   bool
}

// limitReader is a connection read with an optional bound (the answer's
// header), as the Transport's persistConn reads.
type limitReader struct {
	nc   net.Conn
	left int64 // < 0: no bound
}

var errHeaderTooLarge = errors.New("the upstream's answer headers are too large")

func (r *limitReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, errHeaderTooLarge
	}
	if r.left > 0 && int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n, err := r.nc.Read(p)
	if r.left > 0 {
		r.left -= int64(n)
	}
	return n, err
}

// RoundTrip sends req on a connection of the Loop, or answers
// http.ErrSkipAltProtocol for a request it does not take.
func (l *Loop) RoundTrip(req *http.Request) (*http.Response, error) {
	if !l.takes(req) {
		return nil, http.ErrSkipAltProtocol
	}
	ctx := req.Context()
	// The body is read before anything is sent: a failure here sent nothing.
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		body = make([]byte, req.ContentLength)
		_, err := io.ReadFull(req.Body, body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("reading the request body: %w", err)
		}
	}
	key := hostPort(req.URL.Host)
	for {
		c, err := l.get(ctx, key)
		if err != nil {
			return nil, err
		}
		resp, retry, err := l.exchange(ctx, c, req, body)
		if retry {
			continue // a kept connection the upstream had closed: nothing was written
		}
		return resp, err
	}
}

// takes reports whether the Loop can send req as the Transport would.
func (l *Loop) takes(req *http.Request) bool {
	if !used(req.Context()) || req.URL.Scheme != "http" || req.URL.Host == "" {
		return false
	}
	t := l.t
	if t.DisableKeepAlives || t.MaxConnsPerHost > 0 || len(req.Trailer) > 0 || len(req.TransferEncoding) > 0 {
		return false
	}
	if req.Body != nil && req.Body != http.NoBody && (req.ContentLength <= 0 || req.ContentLength > maxBody) {
		return false // a body of unknown length (the Transport sends it chunked) or one not to hold in memory
	}
	if t.Proxy != nil {
		if u, err := t.Proxy(req); err != nil || u != nil {
			return false
		}
	}
	return true
}

// hostPort is host with the default port of http when it has none.
func hostPort(host string) string {
	if _, port, err := net.SplitHostPort(host); err == nil && port != "" {
		return host
	}
	if len(host) > 0 && host[0] == '[' && host[len(host)-1] == ']' {
		return host + ":80"
	}
	return net.JoinHostPort(host, "80")
}

// get returns a kept connection to key that is still open, or a new one.
func (l *Loop) get(ctx context.Context, key string) (*conn, error) {
	for {
		c := l.pop(key)
		if c == nil {
			break
		}
		if c.alive() {
			return c, nil
		}
		c.nc.Close()
	}
	nc, err := l.dial(ctx, "tcp", key)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err // a *net.OpError "dial": the request never left
	}
	c := &conn{nc: nc, key: key}
	c.lr = limitReader{nc: nc, left: -1}
	c.br = bufio.NewReaderSize(&c.lr, 4096)
	return c, nil
}

func (l *Loop) pop(key string) *conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	cs := l.idle[key]
	if len(cs) == 0 {
		return nil
	}
	c := cs[len(cs)-1]
	cs[len(cs)-1] = nil
	l.idle[key] = cs[:len(cs)-1]
	return c
}

// put keeps c for the next request, or closes it when the Loop keeps enough.
func (l *Loop) put(c *conn) {
	c.idleFrom = time.Now()
	c.reused = true
	l.mu.Lock()
	cs := l.idle[c.key]
	if l.closed || len(cs) >= l.maxIdle() {
		l.mu.Unlock()
		c.nc.Close()
		return
	}
	l.idle[c.key] = append(cs, c)
	if l.sweep == nil && l.t.IdleConnTimeout > 0 {
		l.sweep = time.AfterFunc(l.t.IdleConnTimeout, l.closeExpired)
	}
	l.mu.Unlock()
}

func (l *Loop) maxIdle() int {
	if n := l.t.MaxIdleConnsPerHost; n > 0 {
		return n
	}
	return http.DefaultMaxIdleConnsPerHost
}

// closeExpired closes the connections idle for longer than IdleConnTimeout,
// and comes back while any are kept: an idle connection is not read in the
// background, so nothing else would notice it go stale.
func (l *Loop) closeExpired() {
	cutoff := time.Now().Add(-l.t.IdleConnTimeout)
	var stale []*conn
	l.mu.Lock()
	left := 0
	for key, cs := range l.idle {
		kept := cs[:0]
		for _, c := range cs {
			if c.idleFrom.Before(cutoff) {
				stale = append(stale, c)
			} else {
				kept = append(kept, c)
			}
		}
		clear(cs[len(kept):])
		if len(kept) == 0 {
			delete(l.idle, key)
		} else {
			l.idle[key] = kept
		}
		left += len(kept)
	}
	if left > 0 && !l.closed {
		l.sweep.Reset(l.t.IdleConnTimeout)
	} else {
		l.sweep = nil
	}
	l.mu.Unlock()
	for _, c := range stale {
		c.nc.Close()
	}
}

// CloseIdleConnections closes the kept connections; connections in use are
// closed when their answer has been read.
func (l *Loop) CloseIdleConnections() {
	l.mu.Lock()
	idle := l.idle
	l.idle = map[string][]*conn{}
	l.mu.Unlock()
	for _, cs := range idle {
		for _, c := range cs {
			c.nc.Close()
		}
	}
}

// Close closes the kept connections and keeps none from now on.
func (l *Loop) Close() {
	l.mu.Lock()
	l.closed = true
	if l.sweep != nil {
		l.sweep.Stop()
		l.sweep = nil
	}
	l.mu.Unlock()
	l.CloseIdleConnections()
}

// exchange writes req on c and reads the answer's header. retry is true when
// c turned out closed before a byte of the request was written: the request
// may go on another connection.
func (l *Loop) exchange(ctx context.Context, c *conn, req *http.Request, body []byte) (_ *http.Response, retry bool, _ error) {
	var aborted atomic.Bool
	stop := func() bool { return true }
	if ctx.Done() != nil {
		// Closing the connection ends a write or read blocked on it; the
		// context's deadline is the connection's too.
		stop = context.AfterFunc(ctx, func() { aborted.Store(true); c.nc.Close() })
		if d, ok := ctx.Deadline(); ok {
			_ = c.nc.SetDeadline(d)
		}
	}
	var headerDeadline time.Time
	fail := func(err error) (*http.Response, bool, error) {
		stop()
		c.nc.Close()
		if cerr := ended(ctx, &aborted); cerr != nil {
			return nil, false, cerr
		}
		if !headerDeadline.IsZero() && !time.Now().Before(headerDeadline) {
			// A deadline that passed mid-line reads as a malformed header.
			return nil, false, errHeaderTimeout
		}
		return nil, false, err
	}
	c.wbuf = appendRequest(c.wbuf[:0], req, body)
	n, err := c.nc.Write(c.wbuf)
	trace := httptrace.ContextClientTrace(ctx)
	if n > 0 && trace != nil {
		// From here the upstream may have the request (the pool's record of
		// whether a call may be sent again reads this).
		if trace.WroteHeaders != nil {
			trace.WroteHeaders()
		}
		if trace.WroteRequest != nil {
			trace.WroteRequest(httptrace.WroteRequestInfo{Err: err})
		}
	}
	if err != nil {
		if n == 0 && c.reused && !aborted.Load() && ctx.Err() == nil {
			stop()
			c.nc.Close()
			return nil, true, nil
		}
		return fail(fmt.Errorf("writing the request: %w", err))
	}
	l.sent.Add(1)
	if cap(c.wbuf) > 64<<10 {
		c.wbuf = nil // a large request does not keep its buffer
	}
	if rt := l.t.ResponseHeaderTimeout; rt > 0 {
		headerDeadline = time.Now().Add(rt)
		_ = c.nc.SetReadDeadline(earliest(ctx, headerDeadline))
	}
	maxHeader := l.t.MaxResponseHeaderBytes
	if maxHeader <= 0 {
		maxHeader = DefaultMaxHeaderBytes
	}
	var resp *http.Response
	for i := 0; ; i++ {
		c.lr.left = maxHeader - int64(c.br.Buffered())
		if c.lr.left <= 0 {
			c.lr.left = 1
		}
		resp, err = http.ReadResponse(c.br, req)
		c.lr.left = -1
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF // the connection closed before the answer
			}
			return fail(fmt.Errorf("reading the answer: %w", err))
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		if i == max1xx {
			return fail(fmt.Errorf("the upstream answered more than %d informational answers", max1xx))
		}
		if trace != nil && trace.Got1xxResponse != nil {
			if err := trace.Got1xxResponse(resp.StatusCode, map[string][]string(resp.Header)); err != nil {
				return fail(err)
			}
		}
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return fail(errors.New("the upstream switched protocols on a request that did not ask to"))
	}
	if l.t.ResponseHeaderTimeout > 0 {
		d, _ := ctx.Deadline()
		_ = c.nc.SetReadDeadline(d)
	}
	if trace != nil && trace.GotFirstResponseByte != nil {
		trace.GotFirstResponseByte()
	}
	keep := !resp.Close && !req.Close && (resp.ContentLength >= 0 || chunked(resp))
	resp.Body = &answerBody{l: l, c: c, rc: resp.Body, stop: stop, aborted: &aborted, ctx: ctx, keep: keep,
		empty: resp.Body == http.NoBody}
	return resp, false, nil
}

func chunked(resp *http.Response) bool {
	return len(resp.TransferEncoding) > 0 && resp.TransferEncoding[0] == "chunked"
}

// ended is ctx's error once the request's connection was closed for it or
// its deadline passed (the connection's deadline may fire a moment before the
// context's own timer); nil otherwise.
func ended(ctx context.Context, aborted *atomic.Bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	if aborted.Load() {
		return context.Canceled
	}
	return nil
}

// errHeaderTimeout is the Transport's ResponseHeaderTimeout passed.
var errHeaderTimeout error = timeoutError{"timeout awaiting the upstream's answer headers"}

type timeoutError struct{ msg string }

func (e timeoutError) Error() string   { return e.msg }
func (e timeoutError) Timeout() bool   { return true }
func (e timeoutError) Temporary() bool { return true }

// earliest is t or ctx's deadline, whichever comes first.
func earliest(ctx context.Context, t time.Time) time.Time {
	if d, ok := ctx.Deadline(); ok && d.Before(t) {
		return d
	}
	return t
}

// answerBody reads an answer's body from its connection, and gives the
// connection back to the Loop once the body was read to its end (or closes
// it, when the body was not, or the answer ends the connection).
type answerBody struct {
	l       *Loop
	c       *conn
	rc      io.ReadCloser
	stop    func() bool
	aborted *atomic.Bool
	ctx     context.Context
	keep    bool
	empty   bool        // the answer has no body (Content-Length: 0, 204, 304)
	done    atomic.Bool // the connection was given back or closed
	eof     atomic.Bool // the body was read to its end
	// detached: the request's context no longer closes the connection
	// (Detach); stop was called then.
	detached bool
}

// Detach ends the request context's hold on the body: from now on the
// context ending (or its deadline) no longer closes the connection, and the
// caller bounds the rest of the read itself, by closing the body. It reports
// false when the context has already ended it. The relay detaches a call's
// answer once it has the call's response, to read the rest of the stream
// after its caller was answered. Not safe to call while a Read or Close runs.
func (b *answerBody) Detach() bool {
	if b.detached {
		return true
	}
	if b.done.Load() || !b.stop() {
		return false
	}
	b.detached = true
	if _, ok := b.ctx.Deadline(); ok {
		_ = b.c.nc.SetDeadline(time.Time{})
	}
	b.ctx = context.WithoutCancel(b.ctx)
	return true
}

// Buffered is how many bytes of the answer's connection were read and not yet
// taken: when they hold the rest of the body, reading it does not wait.
func (b *answerBody) Buffered() int {
	if b.done.Load() {
		return 0
	}
	return b.c.br.Buffered()
}

func (b *answerBody) Read(p []byte) (int, error) {
	if b.done.Load() {
		if b.eof.Load() {
			return 0, io.EOF
		}
		return 0, errors.New("read of a closed answer body")
	}
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.eof.Store(true)
		b.finish(true)
	} else if err != nil {
		b.finish(false)
		if cerr := ended(b.ctx, b.aborted); cerr != nil {
			return n, cerr
		}
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
	}
	return n, err
}

// Close ends the body; a body not read to its end loses its connection (the
// relay reads what it needs and drains the little that is left itself). It
// may run while a Read is blocked in another goroutine: closing the
// connection ends that Read.
func (b *answerBody) Close() error {
	// An empty body has nothing left to read: its connection stays usable.
	b.finish(b.empty)
	return nil
}

func (b *answerBody) finish(atEOF bool) {
	if !b.done.CompareAndSwap(false, true) {
		return
	}
	c := b.c
	// stop reports false when the context's watch already closed c.
	if (b.detached || b.stop()) && atEOF && b.keep && c.br.Buffered() == 0 {
		if b.ctx.Done() != nil {
			_ = c.nc.SetDeadline(time.Time{})
		}
		b.l.put(c)
		return
	}
	c.nc.Close()
}

// appendRequest appends req's HTTP/1.1 form with body to dst, as the
// Transport writes it: its own Host, User-Agent and Content-Length, then the
// request's headers (validated by the Transport before it hands the request
// to the Loop).
func appendRequest(dst []byte, req *http.Request, body []byte) []byte {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	dst = append(dst, method...)
	dst = append(dst, ' ')
	dst = append(dst, req.URL.RequestURI()...)
	dst = append(dst, " HTTP/1.1\r\nHost: "...)
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	dst = append(dst, host...)
	dst = append(dst, "\r\n"...)
	if _, ok := req.Header["User-Agent"]; !ok {
		dst = append(dst, "User-Agent: Go-http-client/1.1\r\n"...)
	}
	if len(body) > 0 || method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
		dst = append(dst, "Content-Length: "...)
		dst = strconv.AppendInt(dst, int64(len(body)), 10)
		dst = append(dst, "\r\n"...)
	}
	if req.Close {
		dst = append(dst, "Connection: close\r\n"...)
	}
	for k, vs := range req.Header {
		switch k {
		case "Host", "Content-Length", "Transfer-Encoding", "Trailer":
			continue // the Transport does not write these from the headers either
		}
		for _, v := range vs {
			dst = append(dst, k...)
			dst = append(dst, ": "...)
			dst = append(dst, v...)
			dst = append(dst, "\r\n"...)
		}
	}
	dst = append(dst, "\r\n"...)
	return append(dst, body...)
}
