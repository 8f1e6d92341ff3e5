package transport

import (
	"context"
	"encoding/json"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Parking idle sessions. Most of what an idle stateful session holds is the
// go-sdk's: its ServerSession, the jsonrpc2 connection, the goroutine
// Server.Connect starts (parked in Read for as long as the session lives) and
// what that keeps of the last request. A session nobody has used for a while
// is parked: its ServerSession is closed while the Helix session (id, owner,
// slot in the session table, replay buffer, standalone queue) stays, keeping
// only a parkRecord of what the SDK session knew. Its next request connects a
// new ServerSession with that state (sdk.ServerSessionOptions.State, as a
// stateless POST does) before it is served, so the client sees no difference.
//
// A session is parked only when nothing is under way or attached to its
// ServerSession: no request running (nor a resumable stream still waiting for
// answers), no GET stream open, no request of the server's waiting for the
// client's answer, no resource subscription (the SDK keeps those per
// ServerSession), and the handshake done. The server's list-changed
// notifications go to the ServerSessions it has, so a parked session misses
// them: a watcher session of the handler counts them (listWatch), and an
// unparked session gets one of each kind that changed while it was parked,
// queued for its standalone stream as if it had been connected.

// DefaultParkAfter is the default of Options.ParkIdleAfter: a session is parked
// once idle between this and twice this long. Long enough that a client
// calling tools every second or two never pays for the reconnect, short enough
// that a server holding many idle sessions keeps little for each.
const DefaultParkAfter = 5 * time.Second

// listChanged are the list-changed notifications the watcher counts, in the
// order of listGen's counters.
var listChanged = [...]string{"notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed"}

// listGen counts the list-changed notifications of each kind the server sent.
type listGen [len(listChanged)]uint64

// parkRecord is what a parked session keeps of its ServerSession's state.
type parkRecord struct {
	ip *sdk.InitializeParams
	//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still served
	level sdk.LoggingLevel
	// gen: the list changes counted before the session could have missed one
	// (the sweep before the one that parked it): those after it are delivered
	// on unpark.
	gen listGen
}

// sessionGen is the sdk.Connection of one ServerSession of a stateful session:
// each unpark connects a new one on the same streamConn. Closing it for a park
// ends only its reader (quit); any other close ends the session.
type sessionGen struct {
	*streamConn
	quit    chan struct{}
	once    sync.Once
	parking bool // guarded by the streamConn's mu
}

func newSessionGen(c *streamConn) *sessionGen {
	return &sessionGen{streamConn: c, quit: make(chan struct{})}
}

func (g *sessionGen) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-g.in:
		if _, ok := m.(*jsonrpc.Response); ok {
			// The client's answer to a request of the server's (parkable counts them).
			g.mu.Lock()
			if g.outgoing > 0 {
				g.outgoing--
			}
			g.mu.Unlock()
		}
		return m, nil
	case <-g.quit:
		return nil, io.EOF
	case <-g.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (g *sessionGen) Close() error {
	g.mu.Lock()
	parking := g.parking
	g.mu.Unlock()
	g.once.Do(func() { close(g.quit) })
	if parking {
		return nil
	}
	return g.streamConn.Close()
}

// parkEnabled reports whether h parks idle sessions.
func (h *StreamableHandler) parkEnabled() bool { return h.parkAfter > 0 }

// parker is the handler's parking machinery: the sweep goroutine and the
// watcher session, both running while the handler has sessions.
type parker struct {
	mu      sync.Mutex
	running bool
	stop    chan struct{}
	watcher *sdk.ServerSession
	wconn   *listWatch
	gen     [len(listChanged)]atomic.Uint64
}

func (p *parker) gens() listGen {
	var g listGen
	for i := range p.gen {
		g[i] = p.gen[i].Load()
	}
	return g
}

// startParking starts the sweep and the watcher unless they run. newSession
// calls it after adding its session, so that a sweep stopping for want of
// sessions cannot miss it.
func (h *StreamableHandler) startParking() {
	p := &h.park
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running {
		return
	}
	w := &listWatch{p: p, h: h, quit: make(chan struct{}), answers: make(chan jsonrpc.Message, 4)}
	ss, err := h.srv.Connect(context.Background(), &streamTransport{c: w}, nil)
	if err != nil {
		h.logger.Warn("mcp: idle sessions will not be parked: cannot connect the list-change watcher", "error", err)
		return
	}
	p.running, p.stop, p.watcher, p.wconn = true, make(chan struct{}), ss, w
	go h.sweep(p.stop)
}

// sweep parks the sessions that stayed idle since the previous sweep, every
// parkAfter, until the handler has no session left (or its server stops).
func (h *StreamableHandler) sweep(stop chan struct{}) {
	t := time.NewTicker(h.parkAfter)
	defer t.Stop()
	prev := h.park.gens()
	var batch []*streamConn
	for {
		select {
		case <-t.C:
		case <-stop:
			return
		}
		// A notification counted before the previous sweep has had a whole
		// period to reach the sessions the server had then; one counted since
		// may still be on its way, so a session parked now gets it on unpark
		// (at worst twice: list changes are idempotent for the client).
		since := prev
		prev = h.park.gens()
		h.mu.RLock()
		for _, c := range h.sessions {
			batch = append(batch, c)
		}
		h.mu.RUnlock()
		if len(batch) == 0 && h.stopParkingIfEmpty(stop) {
			return
		}
		for _, c := range batch {
			c.tryPark(since)
		}
		clear(batch)
		batch = batch[:0]
	}
}

// stopParkingIfEmpty ends the sweep and the watcher when h has no session.
func (h *StreamableHandler) stopParkingIfEmpty(stop chan struct{}) bool {
	p := &h.park
	p.mu.Lock()
	h.mu.RLock()
	empty := len(h.sessions) == 0
	h.mu.RUnlock()
	if !empty || p.stop != stop {
		p.mu.Unlock()
		return false
	}
	p.running, p.stop = false, nil
	ss, w := p.watcher, p.wconn
	p.watcher, p.wconn = nil, nil
	w.self.Store(true)
	p.mu.Unlock()
	_ = ss.Close()
	return true
}

// parkableLocked reports whether nothing is under way in the session or
// attached to its ServerSession (see the top of this file).
func (c *streamConn) parkableLocked() bool {
	if c.closed || c.session == nil || c.parked != nil || c.slot == nil || c.id == "" ||
		c.active > 0 || c.getOpen || c.outgoing > 0 || len(c.fast) > 0 || c.subscribed || !c.initialized {
		return false
	}
	for _, s := range c.replay.streams {
		if s.reader != nil || s.open > 0 || s.hold {
			return false
		}
	}
	return true
}

// tryPark parks c when it is parkable and was not used since the previous
// sweep; since is what the record keeps of the list changes.
func (c *streamConn) tryPark(since listGen) {
	c.parkMu.Lock()
	defer c.parkMu.Unlock()
	c.mu.Lock()
	used := c.uses != c.sweptUses
	c.sweptUses = c.uses
	if used || !c.parkableLocked() {
		c.mu.Unlock()
		return
	}
	ss, g := c.session, c.gen
	ip := ss.InitializeParams()
	if ip == nil {
		c.mu.Unlock()
		return
	}
	c.parked = &parkRecord{ip: ip, level: c.level, gen: since}
	c.session, c.gen = nil, nil
	g.parking = true
	c.mu.Unlock()
	_ = ss.Close() // ends only g's reader: sessionGen.Close
}

// unpark connects a new ServerSession for a parked session, with the state it
// had, and queues the list changes it missed; false when the session has
// closed. Concurrent callers wait for the first; a session not parked returns
// at once.
func (c *streamConn) unpark(ctx context.Context) bool {
	c.parkMu.Lock()
	defer c.parkMu.Unlock()
	c.mu.Lock()
	rec, closed := c.parked, c.closed
	c.mu.Unlock()
	if closed {
		return false
	}
	if rec == nil {
		return true
	}
	state := &sdk.ServerSessionState{InitializeParams: rec.ip, InitializedParams: &sdk.InitializedParams{}, LogLevel: rec.level}
	g := newSessionGen(c)
	ss, err := c.h.srv.Connect(context.WithoutCancel(ctx), &streamTransport{c: g}, &sdk.ServerSessionOptions{State: state})
	if err != nil {
		c.h.logger.Error("mcp: cannot resume a parked session; closing it", "session", c.id, "error", err)
		_ = c.Close()
		return false
	}
	c.mu.Lock()
	c.session, c.gen, c.parked = ss, g, nil
	c.mu.Unlock()
	now := c.h.park.gens()
	for i, m := range listChanged {
		if now[i] > rec.gen[i] {
			_ = c.Write(context.Background(), &jsonrpc.Request{Method: m, Params: json.RawMessage(`{}`)})
		}
	}
	return true
}

// closeSession ends the session: through its ServerSession, or at once when
// it is parked (DELETE, eviction, idle expiry).
func (c *streamConn) closeSession() {
	c.parkMu.Lock()
	c.mu.Lock()
	ss := c.session
	c.mu.Unlock()
	c.parkMu.Unlock()
	if ss == nil {
		_ = c.Close()
		return
	}
	_ = ss.Close()
}

// initParams are the session's initialize params, parked or not (nil before
// initialize).
func (c *streamConn) initParams() *sdk.InitializeParams {
	c.mu.Lock()
	ss, rec := c.session, c.parked
	c.mu.Unlock()
	switch {
	case ss != nil:
		return ss.InitializeParams()
	case rec != nil:
		return rec.ip
	}
	return nil
}

// noteSession records what parking must know of the messages a POST hands the
// session: the handshake done, a resource subscription (kept by the
// ServerSession, so the session is never parked again), a log level asked for
// (kept once the session accepts it: Write).
func (c *streamConn) noteSession(msgs []jsonrpc.Message) {
	for _, m := range msgs {
		req, ok := m.(*jsonrpc.Request)
		if !ok {
			continue
		}
		switch req.Method {
		case "notifications/initialized":
			c.mu.Lock()
			c.initialized = true
			c.mu.Unlock()
		case "resources/subscribe":
			c.mu.Lock()
			c.subscribed = true
			c.mu.Unlock()
		case "logging/setLevel":
			var p struct {
				//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still served
				Level sdk.LoggingLevel `json:"level"`
			}
			if req.IsCall() && json.Unmarshal(req.Params, &p) == nil {
				c.mu.Lock()
				c.levelID, c.levelAsked = req.ID, p.Level
				c.mu.Unlock()
			}
		}
	}
}

// noteLevelLocked keeps the log level a logging/setLevel asked for once the
// session answers it without error.
func (c *streamConn) noteLevelLocked(resp *jsonrpc.Response) {
	if c.levelAsked == "" || resp.ID != c.levelID {
		return
	}
	if resp.Error == nil {
		c.level = c.levelAsked
	}
	c.levelAsked = ""
}

// closeParked ends every parked session of h: its server stopped (the watcher,
// one of the server's sessions, was closed with the others).
func (h *StreamableHandler) closeParked() {
	h.mu.RLock()
	var parked []*streamConn
	for _, c := range h.sessions {
		c.mu.Lock()
		if c.parked != nil {
			parked = append(parked, c)
		}
		c.mu.Unlock()
	}
	h.mu.RUnlock()
	for _, c := range parked {
		c.closeSession()
	}
}

// listWatch is the connection of the handler's watcher session: it counts the
// list-changed notifications the server sends (parker.gen) and answers the
// server's requests (a keep-alive ping) at once; it never sends anything else.
type listWatch struct {
	p       *parker
	h       *StreamableHandler
	quit    chan struct{}
	once    sync.Once
	answers chan jsonrpc.Message
	self    atomic.Bool // closed by stopParkingIfEmpty, not by the server's stop
}

func (w *listWatch) SessionID() string { return "" }

func (w *listWatch) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-w.answers:
		return m, nil
	case <-w.quit:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (w *listWatch) Write(_ context.Context, m jsonrpc.Message) error {
	req, ok := m.(*jsonrpc.Request)
	if !ok {
		return nil
	}
	if req.IsCall() {
		select {
		case w.answers <- &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{}`)}:
		default:
		}
		return nil
	}
	for i, name := range listChanged {
		if req.Method == name {
			w.p.gen[i].Add(1)
		}
	}
	return nil
}

func (w *listWatch) Close() error {
	w.once.Do(func() {
		close(w.quit)
		if !w.self.Load() {
			// The server closed its sessions (it stops): the parked ones end too,
			// and nothing parks any more.
			w.h.park.mu.Lock()
			if w.p.wconn == w {
				w.p.running = false
				if w.p.stop != nil {
					close(w.p.stop)
					w.p.stop = nil
				}
				w.p.watcher, w.p.wconn = nil, nil
			}
			w.h.park.mu.Unlock()
			w.h.closeParked()
		}
	})
	return nil
}
