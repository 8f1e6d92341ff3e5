package transport

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/security"
)

// Session ownership and limits, shared by the three stateful HTTP transports of a
// server: Helix's Streamable HTTP (streamable.go), the go-sdk's (sdkSessions below)
// and SSE (sse_sessions.go).
//
//   - A session belongs to the principal that opened it: the API key or the OAuth
//     subject the security stack authenticated (security.PrincipalFromContext), or
//     nobody in particular when the request carried no credential. A request naming
//     the session with another principal is answered 404, exactly like an unknown
//     session, so a session id reveals nothing to anybody else.
//   - A server holds at most MaxSessions sessions, a principal at most
//     MaxSessionsPerPrincipal (sessions without an owner count only against
//     MaxSessions). At a cap the session idle longest (no call in flight, least
//     recently used) makes room; a session with a call in flight is never evicted.
//     When every session is busy the new one is refused: HTTP 503 with a JSON-RPC
//     error naming the limit.

// Defaults of Options.MaxSessions and MaxSessionsPerPrincipal.
const (
	DefaultMaxSessions             = 10_000
	DefaultMaxSessionsPerPrincipal = 1_000
)

// codeSessionLimit is the JSON-RPC error code of a refused session (the
// implementation-defined server-error range).
const codeSessionLimit = -32000

// sessionOwner is the principal a request acts as ("" for none).
func sessionOwner(r *http.Request) string {
	return security.PrincipalFromContext(r.Context())
}

// sessionLimitError says which limit refused a new session.
type sessionLimitError struct {
	setting string // max_sessions or max_sessions_per_principal
	limit   int
}

func (e *sessionLimitError) Error() string {
	if e.setting == "max_sessions_per_principal" {
		return fmt.Sprintf("session limit reached: this client already has %d sessions open (max_sessions_per_principal) "+
			"and each has a call in flight; end one or retry later", e.limit)
	}
	return fmt.Sprintf("session limit reached: the server has %d sessions open (max_sessions) "+
		"and each has a call in flight; retry later", e.limit)
}

// refuseSession answers a session the limits refused: 503 with a JSON-RPC error.
func refuseSession(w http.ResponseWriter, id jsonrpc.ID, err error) {
	w.Header().Set("Retry-After", "1")
	writeJSONRPCError(w, http.StatusServiceUnavailable, id, &jsonrpc.Error{Code: codeSessionLimit, Message: err.Error()})
}

// SessionTable counts the sessions of one server and evicts idle ones at the caps.
type SessionTable struct {
	max      int           // <= 0: unlimited
	perOwner int           // <= 0: unlimited
	idle     time.Duration // for slots that expire (newSlot's expire); 0: never
	logger   *slog.Logger

	// mu guards the set of sessions (slots, owners) and the refusal log; a
	// request of a session takes only its slot's lock (begin, end), so that the
	// requests of many sessions do not queue on one table-wide lock. Lock order:
	// mu, then a slot's mu.
	mu     sync.Mutex
	slots  map[*sessionSlot]struct{}
	owners map[string]int
	clock  atomic.Uint64 // orders activity: a higher last means used more recently

	refused  int       // refusals since the last warning
	lastWarn time.Time // refusals are logged at most once per refusalLogEvery
}

// refusalLogEvery samples the warning about refused sessions: a flood of new
// sessions at the cap must not become a flood of log lines.
const refusalLogEvery = 10 * time.Second

func NewSessionTable(o *Options) *SessionTable {
	t := &SessionTable{max: o.MaxSessions, perOwner: o.MaxSessionsPerPrincipal, logger: o.Logger,
		slots: map[*sessionSlot]struct{}{}, owners: map[string]int{}}
	if o.SessionIdleTimeout > 0 {
		t.idle = o.SessionIdleTimeout
	}
	if t.logger == nil {
		t.logger = slog.New(slog.DiscardHandler)
	}
	return t
}

// sessionSlot is one session's place in the table. It starts busy (the request
// opening it is running): the transport sets close, then calls end.
type sessionSlot struct {
	t      *SessionTable
	owner  string
	kind   string
	expire bool // the table closes the session after t.idle without activity
	opened time.Time

	// guarded by t.mu
	id    string
	close func() // ends the session; nil while it is being set up
	// init gives the session's initialize params (Snapshot), when its
	// transport knows them without the go-sdk's session list (streamable.go).
	init func() *sdk.InitializeParams

	// active and last are written under mu and read by the table's eviction
	// without it.
	active atomic.Int32  // requests (or calls) in flight
	last   atomic.Uint64 // t.clock at the last activity

	// guarded by mu
	mu   sync.Mutex
	gone bool // evicted, expired or released: no new request may begin
	// timer is the idle timer: made by the first end that arms it, reset by the
	// later ones (one timer per session, not one per request). A run of it that
	// was already under way when begin stopped it is told apart by gen and
	// deadline: see idleTimeout.
	timer    *time.Timer
	gen      uint64    // counts activity (begin, end)
	armedGen uint64    // gen when the timer was last armed
	deadline time.Time // when the timer was last armed, plus t.idle
}

// admit reserves a slot for a new session of owner, evicting the idle session
// of longest standing when a cap is reached, or fails with a *sessionLimitError.
func (t *SessionTable) admit(owner, kind string, expire bool) (*sessionSlot, error) {
	t.mu.Lock()
	var victim *sessionSlot
	switch {
	case t.perOwner > 0 && owner != "" && t.owners[owner] >= t.perOwner:
		if victim = t.evictLocked(owner); victim == nil {
			return nil, t.refuseLocked(&sessionLimitError{setting: "max_sessions_per_principal", limit: t.perOwner})
		}
	case t.max > 0 && len(t.slots) >= t.max:
		if victim = t.evictLocked(""); victim == nil {
			return nil, t.refuseLocked(&sessionLimitError{setting: "max_sessions", limit: t.max})
		}
	}
	var closeVictim func()
	if victim != nil {
		closeVictim = victim.close
	}
	s := &sessionSlot{t: t, owner: owner, kind: kind, expire: expire, opened: time.Now()}
	s.active.Store(1)
	s.last.Store(t.clock.Add(1))
	t.slots[s] = struct{}{}
	if owner != "" {
		t.owners[owner]++
	}
	t.mu.Unlock()
	if victim != nil {
		t.logger.Debug("mcp: session limit reached, closing the session idle longest", "session", victim.id,
			"transport", victim.kind)
		if closeVictim != nil {
			closeVictim()
		}
	}
	return s, nil
}

// refuseLocked counts a refusal, logs a sampled warning and unlocks t.mu.
func (t *SessionTable) refuseLocked(err *sessionLimitError) error {
	t.refused++
	now := time.Now()
	n := 0
	if now.Sub(t.lastWarn) >= refusalLogEvery {
		n, t.refused, t.lastWarn = t.refused, 0, now
	}
	t.mu.Unlock()
	if n > 0 {
		t.logger.Warn("mcp: new sessions refused: every session in scope has a call in flight",
			"limit", err.setting, "value", err.limit, "refused", n)
	}
	return err
}

// evictLocked takes the least recently used session without a request in
// flight (of owner, unless owner is "") out of the table and returns it, or nil
// when there is none. A session whose request began after it was chosen is
// kept, and the next one is tried.
func (t *SessionTable) evictLocked(owner string) *sessionSlot {
	for {
		victim := t.oldestIdleLocked(owner)
		if victim == nil {
			return nil
		}
		victim.mu.Lock()
		idle := victim.active.Load() == 0
		if idle {
			t.removeLocked(victim)
		}
		victim.mu.Unlock()
		if idle {
			return victim
		}
	}
}

// oldestIdleLocked finds the least recently used session without a request in
// flight (of owner, unless owner is "").
func (t *SessionTable) oldestIdleLocked(owner string) *sessionSlot {
	var best *sessionSlot
	var bestLast uint64
	for s := range t.slots {
		if s.active.Load() > 0 || s.close == nil || (owner != "" && s.owner != owner) {
			continue
		}
		if last := s.last.Load(); best == nil || last < bestLast {
			best, bestLast = s, last
		}
	}
	return best
}

// removeLocked takes s out of the table; t.mu and s.mu are held.
func (t *SessionTable) removeLocked(s *sessionSlot) {
	if s.gone {
		return
	}
	s.gone = true
	delete(t.slots, s)
	if s.owner != "" {
		if t.owners[s.owner]--; t.owners[s.owner] <= 0 {
			delete(t.owners, s.owner)
		}
	}
	if s.timer != nil {
		s.timer.Stop()
	}
}

// len is the number of sessions held.
func (t *SessionTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.slots)
}

// ready names the session and sets how it is closed; an evicted or expired
// session is closed with it.
func (s *sessionSlot) ready(id string, close func()) {
	s.t.mu.Lock()
	s.id, s.close = id, close
	s.t.mu.Unlock()
}

// describedBy sets what Snapshot reads the session's initialize params from.
func (s *sessionSlot) describedBy(init func() *sdk.InitializeParams) {
	s.t.mu.Lock()
	s.init = init
	s.t.mu.Unlock()
}

// begin marks a request of the session in flight; false when the session is gone
// (evicted or closed), which the transport answers like an unknown session.
func (s *sessionSlot) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return false
	}
	s.active.Add(1)
	s.last.Store(s.t.clock.Add(1))
	s.gen++
	if s.timer != nil {
		s.timer.Stop()
	}
	return true
}

// end marks a request finished; an expiring session idle from now on is closed
// after the idle timeout.
func (s *sessionSlot) end() {
	t := s.t
	s.mu.Lock()
	defer s.mu.Unlock()
	active := s.active.Add(-1)
	s.last.Store(t.clock.Add(1))
	s.gen++
	if active > 0 || s.gone || !s.expire || t.idle <= 0 {
		return
	}
	s.armedGen = s.gen
	if s.timer == nil {
		s.timer = time.AfterFunc(t.idle, s.idleTimeout)
	} else {
		s.timer.Reset(t.idle)
	}
	// Taken after arming, so never before the time the timer is set for: the
	// session is closed no sooner than before (idleTimeout re-arms for the rest
	// should its run come a moment before the deadline).
	s.deadline = time.Now().Add(t.idle)
}

// idleTimeout is the idle timer's function. It closes the session only when no
// request began since the end that armed the timer (gen) and t.idle has passed
// since that end (deadline): a run that had already started when begin stopped
// the timer, and got the lock only after a later end re-armed it, finds the new
// deadline ahead and leaves the session alone.
func (s *sessionSlot) idleTimeout() {
	t := s.t
	t.mu.Lock()
	s.mu.Lock()
	if s.gone || s.active.Load() > 0 || s.gen != s.armedGen {
		s.mu.Unlock()
		t.mu.Unlock()
		return
	}
	if wait := time.Until(s.deadline); wait > 0 {
		s.timer.Reset(wait)
		s.mu.Unlock()
		t.mu.Unlock()
		return
	}
	t.removeLocked(s)
	closeFn := s.close
	s.mu.Unlock()
	t.mu.Unlock()
	t.logger.Debug("mcp: closing idle session", "session", s.id, "transport", s.kind)
	if closeFn != nil {
		closeFn()
	}
}

// release takes a session that ended (closed by the client, the transport or the
// server) out of the table.
func (s *sessionSlot) release() {
	s.t.mu.Lock()
	s.mu.Lock()
	s.t.removeLocked(s)
	s.mu.Unlock()
	s.t.mu.Unlock()
}

// sdkSessions wraps the go-sdk's stateful StreamableHTTPHandler with Helix's
// session ownership and limits. The SDK keeps its own session map and idle
// timeout; this wrapper admits new sessions, learns their ids from the
// initialize answer, refuses other principals' requests (404) and counts POSTs
// in flight.
type sdkSessions struct {
	next  http.Handler
	srv   func() *sdk.Server
	table *SessionTable

	mu    sync.Mutex
	slots map[string]*sessionSlot // by Mcp-Session-Id
}

func NewSDKSessions(next http.Handler, srv func() *sdk.Server, table *SessionTable) *sdkSessions {
	return &sdkSessions{next: next, srv: srv, table: table, slots: map[string]*sessionSlot{}}
}

func (h *sdkSessions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get(sessionIDHeader)
	if sid != "" {
		h.mu.Lock()
		slot := h.slots[sid]
		h.mu.Unlock()
		if slot == nil || slot.owner != sessionOwner(r) || !slot.begin() {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		if r.Method != http.MethodPost {
			slot.end() // a standalone stream or a DELETE is no call in flight
			h.next.ServeHTTP(w, r)
			return
		}
		defer slot.end()
		h.next.ServeHTTP(w, r)
		return
	}
	id, method := requestOf(r)
	if r.Method != http.MethodPost || method != "initialize" {
		// Only initialize opens a session the client can use (the SDK closes any
		// other at the end of its request): nothing to admit, nobody to evict for it.
		h.next.ServeHTTP(w, r)
		return
	}
	slot, err := h.table.admit(sessionOwner(r), "streamable-sdk", false)
	if err != nil {
		refuseSession(w, id, err)
		return
	}
	rec := &sessionHeaderWriter{ResponseWriter: w, h: h, slot: slot}
	defer func() {
		if rec.id == "" {
			slot.release() // no session came of it (not an initialize, or it failed)
			return
		}
		slot.end()
		h.watch(rec.id, slot)
	}()
	h.next.ServeHTTP(rec, r)
}

// peekLimit bounds what requestOf reads of a body.
const peekLimit = 64 << 10

// requestOf reads the id and method of the JSON-RPC request in a POST's body,
// restoring the body (the SDK's handler reads it again and applies its limit).
func requestOf(r *http.Request) (jsonrpc.ID, string) {
	if r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody {
		return jsonrpc.ID{}, ""
	}
	// An initialize is small: read at most peekLimit bytes and hand the rest on
	// unread, so that a huge body meets the SDK's own limit, not this read.
	data, err := io.ReadAll(io.LimitReader(r.Body, peekLimit+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(data), r.Body), r.Body}
	if err != nil || len(data) > peekLimit {
		return jsonrpc.ID{}, ""
	}
	if m, err := jsonrpc.DecodeMessage(data); err == nil {
		if req, ok := m.(*jsonrpc.Request); ok {
			return req.ID, req.Method
		}
	}
	return jsonrpc.ID{}, ""
}

// register binds a session id the SDK just issued to its slot, before the answer
// carrying it reaches the client.
func (h *sdkSessions) register(id string, slot *sessionSlot) {
	h.mu.Lock()
	h.slots[id] = slot
	h.mu.Unlock()
	slot.ready(id, func() {
		for ss := range h.srv().Sessions() {
			if ss.ID() == id {
				_ = ss.Close()
			}
		}
	})
}

// watch forgets the session when the SDK closes it (DELETE, its idle timeout,
// eviction, server stop, a failed initialize).
func (h *sdkSessions) watch(id string, slot *sessionSlot) {
	var ss *sdk.ServerSession
	for s := range h.srv().Sessions() {
		if s.ID() == id {
			ss = s
			break
		}
	}
	forget := func() {
		slot.release()
		h.mu.Lock()
		if h.slots[id] == slot {
			delete(h.slots, id)
		}
		h.mu.Unlock()
	}
	if ss == nil {
		forget()
		return
	}
	go func() {
		_ = ss.Wait()
		forget()
	}()
}

// sessionHeaderWriter catches the Mcp-Session-Id of a new SDK session as the
// answer's header is written.
type sessionHeaderWriter struct {
	http.ResponseWriter
	h     *sdkSessions
	slot  *sessionSlot
	id    string
	wrote bool
}

func (w *sessionHeaderWriter) WriteHeader(code int) {
	if !w.wrote {
		w.wrote = true
		if id := w.Header().Get(sessionIDHeader); id != "" {
			w.id = id
			w.h.register(id, w.slot)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *sessionHeaderWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *sessionHeaderWriter) Flush() {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *sessionHeaderWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
