package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	proxyproto "github.com/pires/go-proxyproto"
)

// Listener handoff: a reload (helix run, SIGHUP) starts a new application beside
// the running one, and the new one must serve on the same addresses without a
// moment in which connections are refused. Closing the old socket and binding a
// new one leaves such a moment, and connections waiting in the kernel's backlog
// are reset; so the new application gets the SAME socket instead.
//
// Every listener Helix opens comes from [Listen]; a process-wide registry keeps
// the socket and hands out one [net.Listener] handle per application (per
// [Generation]). One goroutine accepts on the socket and gives each connection to
// the handle that is current: the old application's until the new one is
// [Generation.Activate]d (until then the new one may still be starting, with
// routes missing), the new one's after. A handle that is no longer current
// accepts nothing: its server's Accept blocks until the server closes it, and
// closing a handle never closes the socket while another handle holds it. The
// socket closes with its last handle, so that an address only the old
// configuration had is released when the old application stops.
//
// [Generation.Drain] then retires the old application's connections without
// failing a request: each answers its next request with "Connection: close", and
// one that stays idle for a grace period is closed (an HTTP/1.1 client may be
// writing a request onto any idle connection; closing it at once could lose a
// request that the client must not retry, such as a POST).
//
// The registry is the one piece of process-wide state here, by necessity: a
// socket belongs to the process, not to an application.

// Generation is the set of listeners one application opens. Put it into the
// context given to the code that calls [Listen] ([WithGeneration]); a generation
// with a predecessor takes over the predecessor's sockets for the same
// addresses. Safe for concurrent use.
type Generation struct {
	prev *Generation

	mu      sync.Mutex
	handles []*handle
	active  bool
}

// NewGeneration returns the generation of an application that replaces the one
// of prev; prev is nil for the first application of a process (it binds every
// address itself).
func NewGeneration(prev *Generation) *Generation {
	return &Generation{prev: prev, active: prev == nil}
}

type generationKey struct{}

// WithGeneration returns ctx carrying g, for [Listen].
func WithGeneration(ctx context.Context, g *Generation) context.Context {
	return context.WithValue(ctx, generationKey{}, g)
}

func generationFrom(ctx context.Context) *Generation {
	g, _ := ctx.Value(generationKey{}).(*Generation)
	return g
}

// Listen opens a TCP listener on addr for the server called name (its
// NewListener name: "management", "mcp server api", "http-server :8080"). When
// ctx carries a [Generation] whose predecessor holds a socket for addr, the
// listener shares that socket (it accepts once the generation is activated);
// otherwise it binds addr. For a random port (":0", "127.0.0.1:0") the socket is
// the one the predecessor's server of the same name bound, so that a reload
// keeps the port it was given. Close releases the handle; the socket closes with
// its last handle.
func Listen(ctx context.Context, addr, name string) (net.Listener, error) {
	g := generationFrom(ctx)
	if g != nil && g.prev != nil {
		if h := sockets.takeOver(g, addr, name); h != nil {
			return h, nil
		}
	}
	var lc net.ListenConfig
	raw, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return sockets.add(g, raw, addr, name), nil
}

// Activate makes g's listeners the ones that accept on the sockets they share
// with the predecessor: call it once the application has started completely.
// From then on the predecessor's servers accept nothing more.
func (g *Generation) Activate() {
	g.mu.Lock()
	g.active = true
	hs := append([]*handle(nil), g.handles...)
	g.mu.Unlock()
	for _, h := range hs {
		h.s.setCurrent(h)
	}
}

// Drain retires the connections g's listeners accepted on the sockets an active
// successor generation took over: from now on each answers its next request with
// "Connection: close", and a connection that carries no request for grace
// (counted from the drain's start at the earliest) is closed. Drain returns when every connection is closed, except those streaming
// an event stream (they end when their session is closed), or when ctx is done.
// It needs the servers to be set up with [Configure], which tracks request
// state per connection.
func (g *Generation) Drain(ctx context.Context, grace time.Duration) error {
	tick := min(max(grace/4, 10*time.Millisecond), 250*time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	// Only the handles a successor took over drain: on an address the successor
	// does not serve, a client sent away by "Connection: close" would only come
	// back to this generation. Those connections end with the server's Stop.
	g.mu.Lock()
	var hs []*handle
	for _, h := range g.handles {
		if !h.s.isCurrent(h) {
			hs = append(hs, h)
		}
	}
	g.mu.Unlock()
	for _, h := range hs {
		h.draining.Store(true)
	}
	began := time.Now()
	for {
		open := 0
		now := time.Now()
		// The grace runs from the drain's start as well: a connection idle for
		// long already is the one a client is as likely to pick up now as any.
		graceOver := now.Sub(began) >= grace
		for _, h := range hs {
			for _, c := range h.liveConns() {
				c.draining.Store(true)
				switch {
				case graceOver && c.idleSince(now) >= grace:
					_ = c.Conn.Close()
				case c.state.Load() == int32(http.StateActive) && c.streaming.Load():
					continue // an event stream: its session's end closes it
				}
				open++
			}
		}
		if open == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d connections still open: %w", open, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// registry is the process's shared sockets.
type registry struct {
	mu   sync.Mutex
	list []*socket
}

var sockets registry

// takeOver returns a handle of g on a socket whose current handle belongs to
// g's predecessor and was opened for addr (and, for a random port, by name), or
// nil. A socket is shared with g once: two servers of g on one address conflict
// as they would without a reload.
func (r *registry) takeOver(g *Generation, addr, name string) *handle {
	random := isRandomPort(addr)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.list {
		s.mu.Lock()
		ok := s.current != nil && s.current.g == g.prev && !s.heldBy(g) &&
			(s.addr == addr && (!random || s.name == name) || !random && s.ln.Addr().String() == addr)
		s.mu.Unlock()
		if ok {
			return s.attach(g, name)
		}
	}
	return nil
}

func (r *registry) add(g *Generation, raw net.Listener, addr, name string) *handle {
	s := &socket{ln: raw, addr: addr, name: name, accepted: make(chan accepted), turn: make(chan struct{}),
		closed: make(chan struct{})}
	r.mu.Lock()
	r.list = append(r.list, s)
	r.mu.Unlock()
	go s.acceptLoop()
	h := s.attach(g, name)
	s.setCurrent(h) // nobody else serves a fresh socket
	return h
}

func (r *registry) remove(s *socket) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, x := range r.list {
		if x == s {
			r.list = append(r.list[:i:i], r.list[i+1:]...)
			return
		}
	}
}

func isRandomPort(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	return err == nil && (port == "0" || port == "")
}

// socket is one bound address and the handles of the generations sharing it.
type socket struct {
	ln       net.Listener
	addr     string // as requested
	name     string // of the server that bound it
	accepted chan accepted
	closed   chan struct{}

	mu      sync.Mutex
	handles []*handle
	current *handle
	turn    chan struct{} // closed (and replaced) when current changes
}

type accepted struct {
	c   net.Conn
	err error
}

// acceptLoop owns the socket's Accept: a connection waits here until the current
// handle's server takes it, so none is lost while the handles change.
func (s *socket) acceptLoop() {
	for {
		c, err := s.ln.Accept()
		if err != nil && errors.Is(err, net.ErrClosed) {
			return
		}
		select {
		case s.accepted <- accepted{c, err}:
		case <-s.closed:
			if c != nil {
				_ = c.Close()
			}
			return
		}
	}
}

func (s *socket) heldBy(g *Generation) bool {
	for _, h := range s.handles {
		if h.g == g {
			return true
		}
	}
	return false
}

func (s *socket) attach(g *Generation, name string) *handle {
	h := &handle{s: s, g: g, name: name, done: make(chan struct{}), conns: map[*sharedConn]struct{}{}}
	s.mu.Lock()
	s.handles = append(s.handles, h)
	s.mu.Unlock()
	if g != nil {
		g.mu.Lock()
		g.handles = append(g.handles, h)
		g.mu.Unlock()
	}
	return h
}

func (s *socket) isCurrent(h *handle) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current == h
}

func (s *socket) setCurrent(h *handle) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current == h {
		return
	}
	s.current = h
	close(s.turn)
	s.turn = make(chan struct{})
}

// detach removes h; the last handle closes the socket. When the current handle
// goes (a successor that failed to start is rolled back, or the server stopped),
// the newest remaining one accepts.
func (s *socket) detach(h *handle) {
	s.mu.Lock()
	for i, x := range s.handles {
		if x == h {
			s.handles = append(s.handles[:i:i], s.handles[i+1:]...)
			break
		}
	}
	last := len(s.handles) == 0
	if s.current == h {
		s.current = nil
		if !last {
			s.current = s.handles[len(s.handles)-1]
		}
		close(s.turn)
		s.turn = make(chan struct{})
	}
	s.mu.Unlock()
	if h.g != nil {
		h.g.mu.Lock()
		for i, x := range h.g.handles {
			if x == h {
				h.g.handles = append(h.g.handles[:i:i], h.g.handles[i+1:]...)
				break
			}
		}
		h.g.mu.Unlock()
	}
	if last {
		sockets.remove(s)
		close(s.closed)
		_ = s.ln.Close()
	}
}

// handle is one generation's listener on a shared socket.
type handle struct {
	s    *socket
	g    *Generation
	name string
	done chan struct{}
	once sync.Once

	draining atomic.Bool // connections accepted from now on drain at once
	mu       sync.Mutex
	conns    map[*sharedConn]struct{}
}

var _ net.Listener = (*handle)(nil)

// Accept returns the socket's next connection while h is current, and blocks
// while it is not; after Close it returns net.ErrClosed.
func (h *handle) Accept() (net.Conn, error) {
	for {
		h.s.mu.Lock()
		current, turn := h.s.current == h, h.s.turn
		h.s.mu.Unlock()
		var accepted <-chan accepted
		if current {
			accepted = h.s.accepted
		}
		select {
		case <-h.done:
			return nil, net.ErrClosed
		case <-turn:
		case a := <-accepted:
			if a.err != nil {
				return nil, a.err
			}
			return h.track(a.c), nil
		}
	}
}

func (h *handle) track(c net.Conn) *sharedConn {
	sc := &sharedConn{Conn: c, h: h}
	sc.lastRead.Store(time.Now().UnixNano())
	sc.draining.Store(h.draining.Load())
	h.mu.Lock()
	h.conns[sc] = struct{}{}
	h.mu.Unlock()
	return sc
}

func (h *handle) untrack(sc *sharedConn) {
	h.mu.Lock()
	delete(h.conns, sc)
	h.mu.Unlock()
}

func (h *handle) liveConns() []*sharedConn {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*sharedConn, 0, len(h.conns))
	for c := range h.conns {
		out = append(out, c)
	}
	return out
}

// Close detaches h from the socket; the socket itself closes only with its last
// handle. Connections already accepted stay open.
func (h *handle) Close() error {
	h.once.Do(func() {
		close(h.done)
		h.s.detach(h)
	})
	return nil
}

func (h *handle) Addr() net.Addr { return h.s.ln.Addr() }

// sharedConn is a connection accepted through a handle: it records what the HTTP
// server does with it (Configure's ConnState hook) so that Drain can tell an idle
// connection from a busy one.
type sharedConn struct {
	net.Conn
	h *handle

	state     atomic.Int32 // http.ConnState
	lastRead  atomic.Int64 // unix nanos: the last read, or state change
	draining  atomic.Bool
	streaming atomic.Bool // the response in progress is an event stream
	closed    atomic.Bool
	// stackReserved: the serving goroutine's stack was grown for the handler
	// (stack.go); read and written only by that goroutine (HTTP/1).
	stackReserved bool
}

func (c *sharedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.lastRead.Store(time.Now().UnixNano())
	}
	return n, err
}

func (c *sharedConn) Close() error {
	err := c.Conn.Close()
	if c.closed.CompareAndSwap(false, true) {
		c.h.untrack(c)
	}
	return err
}

func (c *sharedConn) setState(st http.ConnState) {
	c.state.Store(int32(st))
	c.lastRead.Store(time.Now().UnixNano())
	switch st {
	case http.StateClosed, http.StateHijacked:
		// A hijacked connection is no longer HTTP's to drain.
		if c.closed.CompareAndSwap(false, true) {
			c.h.untrack(c)
		}
	}
}

// idleSince is how long c has carried no request: 0 while a request is read or
// served. A connection the client has just written to is not idle, even before
// the server has parsed the request (bytes read count as activity).
func (c *sharedConn) idleSince(now time.Time) time.Duration {
	switch http.ConnState(c.state.Load()) {
	case http.StateNew, http.StateIdle:
		return now.Sub(time.Unix(0, c.lastRead.Load()))
	}
	return 0
}

// sharedConnOf finds the sharedConn under the wrappers of this package.
func sharedConnOf(c net.Conn) *sharedConn {
	for {
		switch t := c.(type) {
		case *sharedConn:
			return t
		case *conn:
			c = t.Conn
		case *proxyproto.Conn:
			c = t.Raw()
		default:
			return nil
		}
	}
}

type sharedConnKey struct{}

// trackConnections installs the hooks Drain relies on into srv: the state of
// each connection, and the connection in each request's context (the guard adds
// "Connection: close" to answers on a draining connection). Existing hooks are
// kept.
func trackConnections(srv *http.Server) {
	prevState, prevContext := srv.ConnState, srv.ConnContext
	srv.ConnState = func(c net.Conn, st http.ConnState) {
		if sc := sharedConnOf(c); sc != nil {
			sc.setState(st)
		}
		if prevState != nil {
			prevState(c, st)
		}
	}
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if prevContext != nil {
			ctx = prevContext(ctx, c)
		}
		if sc := sharedConnOf(c); sc != nil {
			ctx = context.WithValue(ctx, sharedConnKey{}, sc)
		}
		return ctx
	}
}

func sharedConnFrom(ctx context.Context) *sharedConn {
	sc, _ := ctx.Value(sharedConnKey{}).(*sharedConn)
	return sc
}
