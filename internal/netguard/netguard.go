// Package netguard keeps Helix's HTTP listeners answering under idle or hostile
// clients: the MCP servers (Streamable HTTP and SSE), http-server:// listeners and
// the management server all use it, with the same settings and defaults.
//
//   - [Listener] counts open connections per listener and per client address
//     (IPv4 address, IPv6 /64) and closes a connection beyond max_connections or
//     max_connections_per_ip as soon as it is accepted, before a byte is read, so
//     that idle keep-alive connections cannot exhaust file descriptors.
//   - [Configure] applies read_timeout, idle_timeout and write_timeout to an
//     http.Server and wraps its handler: a request body that stalls beyond
//     read_timeout is answered 408 and the connection closed; write_timeout bounds
//     the sending of a response from its first byte (a tool that thinks for minutes
//     is not cut off, a client that stops reading is). Server-sent event streams
//     (Content-Type text/event-stream: SSE sessions, Streamable HTTP GET streams and
//     streamed POST answers) are long-lived by design: their write deadline is
//     re-armed for every event instead of bounding the whole stream.
//
// Zero values mean the defaults below; negative values switch a limit off.
package netguard

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults, chosen to serve real clients: an MCP client keeps one or two
// connections per session, a browser six per host, a gateway tens to hundreds.
const (
	// DefaultReadTimeout bounds the reading of a request: headers and body.
	DefaultReadTimeout = 30 * time.Second
	// DefaultIdleTimeout closes keep-alive connections that carry no request.
	DefaultIdleTimeout = 120 * time.Second
	// DefaultWriteTimeout bounds the sending of a response (per event for streams).
	DefaultWriteTimeout = 60 * time.Second
	// DefaultMaxConnections is the open connections one listener accepts.
	DefaultMaxConnections = 4096
	// DefaultMaxConnectionsPerIP is the open connections one client address (an
	// IPv4 address or an IPv6 /64) may hold on one listener. A gateway that
	// forwards many users from one address may need more: raise it, or list the
	// gateway in trusted_proxies and give it its own listener.
	DefaultMaxConnectionsPerIP = 256
)

// headerTimeout caps the time allowed for a request's headers: a client that
// needs more than this to send a few hundred bytes is not one to wait for.
const headerTimeout = 10 * time.Second

// Limits are the connection settings of one listener. Zero means the default,
// negative switches the limit off.
type Limits struct {
	ReadTimeout         time.Duration
	IdleTimeout         time.Duration
	WriteTimeout        time.Duration
	MaxConnections      int
	MaxConnectionsPerIP int
}

// Resolved returns l with defaults applied; limits that are switched off are 0.
func (l Limits) Resolved() Limits {
	return Limits{
		ReadTimeout:         pick(l.ReadTimeout, DefaultReadTimeout),
		IdleTimeout:         pick(l.IdleTimeout, DefaultIdleTimeout),
		WriteTimeout:        pick(l.WriteTimeout, DefaultWriteTimeout),
		MaxConnections:      pick(l.MaxConnections, DefaultMaxConnections),
		MaxConnectionsPerIP: pick(l.MaxConnectionsPerIP, DefaultMaxConnectionsPerIP),
	}
}

func pick[T time.Duration | int](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// Listener wraps a net.Listener with the connection limits of l. Accept never
// returns a connection beyond a limit: it closes it and waits for the next one.
type Listener struct {
	net.Listener
	max, perIP int
	// budget is the process budget this listener's connections count against
	// (fdlimit.go); 0 for the management listener, which lives on the reserve.
	budget int
	name   string
	log    *slog.Logger

	mu    sync.Mutex
	open  int
	byKey map[netip.Addr]int

	refused   atomic.Uint64
	lastLog   atomic.Int64 // unix nanos of the last "refused" warning
	loggedCnt atomic.Uint64

	proxyState // trusted proxies and the PROXY protocol (proxy.go)
	closeOnce  sync.Once
}

// NewListener guards ln with the connection limits of l (defaults applied; the
// default max_connections is bounded by the file-descriptor budget, see
// fdlimit.go). Its connections also count against the process budget.
func NewListener(ln net.Listener, l Limits, name string, log *slog.Logger) *Listener {
	b := Budget()
	return newListener(ln, l, b.PerListen, b.Listeners, name, log)
}

// NewManagementListener is [NewListener] for the management server: its
// connections come out of the file-descriptor reserve instead of the process
// budget, so that /healthz and /metrics answer while the other listeners are
// full; its default max_connections is a quarter of the reserve.
func NewManagementListener(ln net.Listener, l Limits, name string, log *slog.Logger) *Listener {
	return newListener(ln, l, Budget().Management, 0, name, log)
}

func newListener(ln net.Listener, l Limits, defaultMax, budget int, name string, log *slog.Logger) *Listener {
	if l.MaxConnections == 0 {
		l.MaxConnections = defaultMax
	}
	r := l.Resolved()
	if log == nil {
		log = slog.Default()
	}
	return &Listener{Listener: ln, max: r.MaxConnections, perIP: r.MaxConnectionsPerIP, budget: budget,
		name: name, log: log, byKey: map[netip.Addr]int{}}
}

// Accept returns the next connection within the limits.
func (l *Listener) Accept() (net.Conn, error) {
	if l.proxies.Protocol {
		return l.acceptProxied()
	}
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key := clientKey(c.RemoteAddr())
		if len(l.proxies.Trusted) > 0 && l.trusted(peerAddr(c.RemoteAddr())) {
			key = netip.Addr{} // a balancer carries many clients: not capped per address
		}
		if reason := l.admit(key); reason != "" {
			l.reject(c, key, reason)
			continue
		}
		return &conn{Conn: c, l: l, key: key}, nil
	}
}

// Close closes the listener; connections already accepted stay open.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		l.loopOnce.Do(func() {}) // no accept loop starts after Close
		if l.closed != nil {
			close(l.closed)
		}
	})
	return l.Listener.Close()
}

// Open is the number of connections currently open through l.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Refused is the number of connections closed at accept for a limit.
func (l *Listener) Refused() uint64 { return l.refused.Load() }

func (l *Listener) admit(key netip.Addr) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.max > 0 && l.open >= l.max {
		return fmt.Sprintf("max_connections (%d) reached", l.max)
	}
	if l.perIP > 0 && key.IsValid() && l.byKey[key] >= l.perIP {
		return fmt.Sprintf("max_connections_per_ip (%d) reached", l.perIP)
	}
	if l.budget > 0 && !takeProcessSlot(l.budget) {
		return fmt.Sprintf("the process's connection budget (%d of RLIMIT_NOFILE %d) reached", l.budget, fileLimit())
	}
	l.open++
	if key.IsValid() {
		l.byKey[key]++
	}
	return ""
}

func (l *Listener) release(key netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.budget > 0 {
		releaseProcessSlot()
	}
	if key.IsValid() {
		if n := l.byKey[key] - 1; n > 0 {
			l.byKey[key] = n
		} else {
			delete(l.byKey, key)
		}
	}
}

// refusedLogEvery bounds the warnings about refused connections: a flood of
// connections must not become a flood of log lines.
const refusedLogEvery = 10 * time.Second

func (l *Listener) reject(c net.Conn, key netip.Addr, reason string) {
	raw := c
	if sc, ok := c.(*sharedConn); ok { // from Listen (handoff.go)
		raw = sc.Conn
	}
	if tc, ok := raw.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // reset: no TIME_WAIT left behind for a refused connection
	}
	// Counted before the close: whoever sees the connection closed sees it counted.
	total := l.refused.Add(1)
	_ = c.Close()
	now := time.Now().UnixNano()
	last := l.lastLog.Load()
	if now-last < int64(refusedLogEvery) || !l.lastLog.CompareAndSwap(last, now) {
		return
	}
	since := total - l.loggedCnt.Swap(total)
	l.log.Warn("connection refused", "listener", l.name, "client", key.String(), "reason", reason,
		"refused_since_last_warning", since,
		"hint", "raise max_connections / max_connections_per_ip (and the hard RLIMIT_NOFILE, see docs/scaling.md) if these are legitimate clients")
}

// clientKey is the address a connection counts against: the IPv4 address, or
// the /64 of an IPv6 address (one host usually owns a whole /64).
func clientKey(a net.Addr) netip.Addr {
	var ap netip.AddrPort
	switch t := a.(type) {
	case *net.TCPAddr:
		ap = t.AddrPort()
	default:
		var err error
		if ap, err = netip.ParseAddrPort(a.String()); err != nil {
			return netip.Addr{}
		}
	}
	ip := ap.Addr().Unmap()
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			return p.Addr()
		}
	}
	return ip
}

type conn struct {
	net.Conn
	l      *Listener
	key    netip.Addr
	closed atomic.Bool
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	if c.closed.CompareAndSwap(false, true) {
		c.l.release(c.key)
	}
	return err
}

// Configure applies the timeouts of l (defaults applied) to srv and wraps
// srv.Handler so that stalled bodies get 408 and write_timeout covers the
// sending of each response (see the package documentation). Call it before
// Serve.
func Configure(srv *http.Server, l Limits) {
	r := l.Resolved()
	srv.ReadTimeout = r.ReadTimeout
	srv.ReadHeaderTimeout = headerTimeout
	if r.ReadTimeout > 0 && r.ReadTimeout < headerTimeout {
		srv.ReadHeaderTimeout = r.ReadTimeout
	}
	srv.IdleTimeout = r.IdleTimeout
	// net/http's WriteTimeout runs from the end of the request headers: it would
	// cut off a tool that computes for longer than it and every event stream.
	// The handler arms the deadline when the response starts instead.
	srv.WriteTimeout = 0
	h := srv.Handler
	if h == nil {
		h = http.DefaultServeMux
	}
	srv.Handler = &guard{next: h, read: r.ReadTimeout, write: r.WriteTimeout}
	trackConnections(srv) // handoff.go: a reload drains the connections
}

// guard enforces the body and write rules of Configure on each request.
type guard struct {
	next  http.Handler
	read  time.Duration
	write time.Duration
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// One allocation per request: the writer holds its response controller and
	// the body wrapper.
	gw := &guardWriter{ResponseWriter: w, rc: *http.NewResponseController(w), write: g.write,
		shared: sharedConnFrom(r.Context())}
	if g.read > 0 {
		if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
			// The server's read deadline (read_timeout from the request's start)
			// bounds the body; it is lifted once the body is in, so that it does
			// not end the request while the handler works.
			gw.body = guardBody{ReadCloser: r.Body, gw: gw}
			r.Body = &gw.body
		} else {
			gw.liftReadDeadline()
		}
	}
	if sc := gw.shared; sc != nil && r.ProtoMajor == 1 && !sc.stackReserved {
		// HTTP/1 serves a connection's requests one after another on one
		// goroutine, so this flag needs no lock (stack.go says why).
		sc.stackReserved = true
		reserveHandlerStack()
	}
	defer gw.finish()
	g.next.ServeHTTP(gw, r)
}

// guardBody notices the end of a request body (lift the read deadline) and a
// body that stalled past it (answer 408).
type guardBody struct {
	io.ReadCloser
	gw   *guardWriter
	done bool
}

func (b *guardBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !b.done {
		b.done = true
		if errors.Is(err, io.EOF) {
			b.gw.liftReadDeadline()
		} else if isTimeout(err) {
			b.gw.bodyTimedOut.Store(true)
		}
	}
	return n, err
}

func isTimeout(err error) bool {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// StalledBodyMessage is the text of the 408 answer to a stalled request body.
const StalledBodyMessage = "request timeout: the request body did not arrive within read_timeout\n"

// guardWriter arms the write deadline when a response starts (and for every
// write of an event stream), and turns the answer to a stalled body into 408.
type guardWriter struct {
	http.ResponseWriter
	rc    http.ResponseController // of ResponseWriter (held here, not allocated apart)
	body  guardBody               // the request's Body while read_timeout applies
	write time.Duration
	// shared is the connection when it came from a shared socket ([Listen]); nil
	// otherwise. While it drains, every answer closes it.
	shared *sharedConn

	bodyTimedOut atomic.Bool
	mu           sync.Mutex
	wroteHeader  bool
	stream       bool
	discard      bool // the 408 went out; the handler's own answer is dropped
	readLifted   bool
}

func (w *guardWriter) liftReadDeadline() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.readLifted {
		w.readLifted = true
		_ = w.rc.SetReadDeadline(time.Time{})
	}
}

func (w *guardWriter) arm() {
	if w.write > 0 {
		_ = w.rc.SetWriteDeadline(time.Now().Add(w.write))
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *guardWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *guardWriter) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writeHeaderLocked(code)
}

func (w *guardWriter) writeHeaderLocked(code int) {
	if w.wroteHeader {
		if !w.discard {
			w.ResponseWriter.WriteHeader(code) // let net/http log the superfluous call
		}
		return
	}
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		w.ResponseWriter.WriteHeader(code) // informational: the real answer follows
		return
	}
	w.wroteHeader = true
	if w.bodyTimedOut.Load() {
		w.discard = true
		h := w.ResponseWriter.Header()
		clear(h)
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Connection", "close")
		w.arm()
		w.ResponseWriter.WriteHeader(http.StatusRequestTimeout)
		_, _ = io.WriteString(w.ResponseWriter, StalledBodyMessage)
		return
	}
	ct := w.ResponseWriter.Header().Get("Content-Type")
	w.stream = strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "text/event-stream")
	if sc := w.shared; sc != nil {
		if sc.draining.Load() {
			// The server is handing over (a reload): the client's next request
			// goes on a new connection, to the new server, and none is lost to a
			// connection closed under it.
			w.ResponseWriter.Header().Set("Connection", "close")
		}
		sc.streaming.Store(w.stream)
	}
	if w.stream && !w.readLifted {
		// A stream outlives any read deadline (a streamed POST answer may start
		// before its body was read to EOF by the handler).
		w.readLifted = true
		_ = w.rc.SetReadDeadline(time.Time{})
	}
	w.arm()
	w.ResponseWriter.WriteHeader(code)
}

func (w *guardWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	if !w.wroteHeader {
		w.writeHeaderLocked(http.StatusOK)
	}
	discard, stream := w.discard, w.stream
	w.mu.Unlock()
	if discard {
		return len(p), nil
	}
	if stream {
		w.arm()
	}
	return w.ResponseWriter.Write(p)
}

// Flush implements http.Flusher (the SSE transports look for it).
func (w *guardWriter) Flush() { _ = w.FlushError() }

// FlushError is what http.ResponseController.Flush calls.
func (w *guardWriter) FlushError() error {
	w.mu.Lock()
	if !w.wroteHeader {
		w.writeHeaderLocked(http.StatusOK)
	}
	discard, stream := w.discard, w.stream
	w.mu.Unlock()
	if discard {
		return nil
	}
	if stream {
		w.arm()
	}
	return w.rc.Flush()
}

// finish runs when the handler returns: the 408 for a stalled body the handler
// did not answer, and a fresh write deadline for what net/http still sends (the
// buffered rest, the final chunk of a stream, an implicit empty 200).
func (w *guardWriter) finish() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.shared != nil {
		w.shared.streaming.Store(false)
	}
	if !w.wroteHeader && w.bodyTimedOut.Load() {
		w.writeHeaderLocked(http.StatusRequestTimeout)
		return
	}
	if !w.wroteHeader || w.stream {
		// A plain response was armed when it started; these were not (or long ago).
		w.arm()
	}
}

// URIOptions are the limits as endpoint URI options (http-server://, mcp-server://),
// in the camelCase of the other options: [SpecOptions] declares them and the
// components' options structs embed URIOptions ([component.Bind]). The values are
// kept as written ("off" is not a duration) and "" when absent: the spec's defaults
// document what [URIOptions.Limits] applies.
type URIOptions struct {
	ReadTimeout         string `option:"readTimeout,nodefault"`
	IdleTimeout         string `option:"idleTimeout,nodefault"`
	WriteTimeout        string `option:"writeTimeout,nodefault"`
	MaxConnections      string `option:"maxConnections,nodefault"`
	MaxConnectionsPerIP string `option:"maxConnectionsPerIp,nodefault"`
}

// Limits reads the limits from the URI options. Durations are Go durations or
// milliseconds, counts whole numbers; 0 (or absent) means the default, off or -1
// switches a limit off. set reports whether any option was given.
func (o URIOptions) Limits() (l Limits, set bool, err error) {
	durations := []struct {
		name, value string
		dst         *time.Duration
	}{
		{"readTimeout", o.ReadTimeout, &l.ReadTimeout},
		{"idleTimeout", o.IdleTimeout, &l.IdleTimeout},
		{"writeTimeout", o.WriteTimeout, &l.WriteTimeout},
	}
	counts := []struct {
		name, value string
		dst         *int
	}{
		{"maxConnections", o.MaxConnections, &l.MaxConnections},
		{"maxConnectionsPerIp", o.MaxConnectionsPerIP, &l.MaxConnectionsPerIP},
	}
	for _, d := range durations {
		v := strings.TrimSpace(d.value)
		if v == "" {
			continue
		}
		set = true
		if *d.dst, err = limitDuration(v); err != nil {
			return Limits{}, true, fmt.Errorf("option %s=%q is not a duration (use 30s, 500ms, or off)", d.name, v)
		}
	}
	for _, c := range counts {
		v := strings.TrimSpace(c.value)
		if v == "" {
			continue
		}
		set = true
		if *c.dst, err = limitCount(v); err != nil {
			return Limits{}, true, fmt.Errorf("option %s=%q is not a number of connections (use a whole number, or off)", c.name, v)
		}
	}
	return l, set, nil
}

// limitDuration reads a duration limit: a Go duration, a number of milliseconds,
// or off (-1, no limit).
func limitDuration(v string) (time.Duration, error) {
	if isOff(v) {
		return -1, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		ms, aerr := strconv.ParseInt(v, 10, 64)
		if aerr != nil || ms < 0 {
			return 0, err
		}
		d = time.Duration(ms) * time.Millisecond
	}
	if d < 0 {
		return 0, errors.New("negative duration")
	}
	return d, nil
}

// limitCount reads a count limit: a whole number, or off (-1, no limit).
func limitCount(v string) (int, error) {
	if isOff(v) {
		return -1, nil
	}
	n, err := strconv.Atoi(v)
	if err == nil && n < 0 {
		err = errors.New("negative count")
	}
	return n, err
}

func isOff(v string) bool { return strings.EqualFold(v, "off") || v == "-1" }
