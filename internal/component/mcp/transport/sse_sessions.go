package transport

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// sseHandler serves the 2024-11-05 HTTP+SSE transport (GET opens an event stream,
// POST ?sessionid=… carries the client's messages) with the go-sdk's
// SSEServerTransport, in place of the SDK's SSEHandler, for what that handler
// lacks: sessions belong to the principal that opened them (sessions.go), count
// against the server's session limits, and are closed after the idle timeout
// when no message is posted and no call is in flight.
type sseHandler struct {
	srv       func() *sdk.Server
	table     *SessionTable
	maxBody   int64 // as SSEOptions.MaxRequestBodyBytes: 0 default, < 0 unlimited
	checkHost bool
	// admission bounds the server's requests running at once (admission.go); nil: none.
	admission *Admission

	mu       sync.Mutex
	sessions map[string]*sseSession
}

func NewSSEHandler(srv func() *sdk.Server, table *SessionTable, o *Options) *sseHandler {
	return &sseHandler{srv: srv, table: table, maxBody: o.MaxRequestBodyBytes, checkHost: !o.DisableLocalhostProtection,
		admission: o.Admission, sessions: map[string]*sseSession{}}
}

// sseSession is one event stream and its session.
type sseSession struct {
	id    string
	owner string
	slot  *sessionSlot
	t     *sdk.SSEServerTransport
	done  chan struct{} // closed when the connection closes
	once  sync.Once

	mu      sync.Mutex
	pending map[jsonrpc.ID]int // calls posted and not yet answered
	// admitted are the pending calls holding an admission slot (admission.go),
	// given back when they are answered or the stream ends.
	admitted  map[jsonrpc.ID]int
	admission *Admission
	// newEra holds the running calls that are 2026-07-28 requests: their results
	// keep that version's fields, those of the session's legacy calls lose them.
	newEra map[jsonrpc.ID]bool
}

func (h *sseHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.checkHost {
		if err := checkLoopbackRequest(r); err != nil {
			http.Error(w, "Forbidden: "+err.Error(), http.StatusForbidden)
			return
		}
	}
	switch r.Method {
	case http.MethodPost:
		h.post(w, r)
	case http.MethodGet:
		h.get(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}
}

func (h *sseHandler) get(w http.ResponseWriter, r *http.Request) {
	slot, err := h.table.admit(sessionOwner(r), "sse", true)
	if err != nil {
		refuseSession(w, jsonrpc.ID{}, err)
		return
	}
	defer slot.release()
	id := rand.Text()
	endpoint, err := r.URL.Parse("?sessionid=" + id)
	if err != nil {
		http.Error(w, "internal error: cannot build the message endpoint", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Connection", "keep-alive")
	s := &sseSession{id: id, owner: slot.owner, slot: slot, done: make(chan struct{}), pending: map[jsonrpc.ID]int{}, newEra: map[jsonrpc.ID]bool{},
		admitted: map[jsonrpc.ID]int{}, admission: h.admission,
		t: &sdk.SSEServerTransport{Endpoint: endpoint.RequestURI(), Response: w, MaxRequestBodyBytes: h.maxBody}}
	h.mu.Lock()
	h.sessions[id] = s
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.sessions, id)
		h.mu.Unlock()
	}()
	ss, err := h.srv().Connect(r.Context(), &sseTransport{s: s}, nil)
	if err != nil {
		http.Error(w, "connection failed", http.StatusInternalServerError)
		return
	}
	defer func() { _ = ss.Close() }()
	slot.ready(id, func() { _ = ss.Close() })
	slot.end() // open and idle: the idle timeout runs until a message arrives
	select {
	case <-r.Context().Done():
	case <-s.done:
	}
	s.releaseAdmitted()
}

func (h *sseHandler) post(w http.ResponseWriter, r *http.Request) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		http.Error(w, "Content-Type must be 'application/json'", http.StatusUnsupportedMediaType)
		return
	}
	sid := r.URL.Query().Get("sessionid")
	if sid == "" {
		http.Error(w, "sessionid must be provided", http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	s := h.sessions[sid]
	h.mu.Unlock()
	// Another principal's session is answered like an unknown one: no oracle.
	if s == nil || s.owner != sessionOwner(r) || !s.slot.begin() {
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	defer s.slot.end()
	body := r.Body
	if limit := h.maxBody; limit >= 0 {
		if limit == 0 {
			limit = sdk.DefaultMaxRequestBodyBytes
		}
		body = http.MaxBytesReader(w, r.Body, limit)
	}
	data, err := io.ReadAll(body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", tooBig.Limit), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "failed to read body", http.StatusBadRequest)
		return
	}
	// A call keeps the session busy until it is answered on the stream, so that
	// neither the idle timeout nor an eviction ends it while it runs.
	var call *jsonrpc.ID
	if m, err := jsonrpc.DecodeMessage(data); err == nil {
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			if n, _ := admissionCost([]*jsonrpc.Request{req}); n > 0 && h.admission != nil {
				// Refused on the POST itself, before the session sees it; admitted,
				// it holds its slot until it is answered on the stream.
				if !h.admission.Acquire(r.Context(), 1) {
					refuseBusy(w, req.ID)
					return
				}
				s.mu.Lock()
				s.admitted[req.ID]++
				s.mu.Unlock()
			}
			call = &req.ID
			s.track(req.ID)
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(data))
	rec := &statusWriter{ResponseWriter: w}
	s.t.ServeHTTP(rec, r)
	if call != nil && rec.status != http.StatusAccepted {
		s.answered(*call) // refused: the session never sees it
	}
}

// track counts a call in flight; answered ends it.
func (s *sseSession) track(id jsonrpc.ID) {
	if !s.slot.begin() {
		return
	}
	s.mu.Lock()
	s.pending[id]++
	s.mu.Unlock()
}

func (s *sseSession) answered(id jsonrpc.ID) {
	s.mu.Lock()
	if a := s.admitted[id]; a > 0 {
		if a > 1 {
			s.admitted[id] = a - 1
		} else {
			delete(s.admitted, id)
		}
		defer s.admission.Release(1)
	}
	n := s.pending[id]
	if n > 1 {
		s.pending[id] = n - 1
	} else {
		delete(s.pending, id)
	}
	s.mu.Unlock()
	if n > 0 {
		s.slot.end()
	}
}

// releaseAdmitted gives back the admission slots of calls never answered: the
// stream ended.
func (s *sseSession) releaseAdmitted() {
	s.mu.Lock()
	n := 0
	for _, a := range s.admitted {
		n += a
	}
	clear(s.admitted)
	s.mu.Unlock()
	for range n {
		s.admission.Release(1)
	}
}

// statusWriter remembers the status of an answer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// sseTransport connects the SDK session to the SSEServerTransport through sseConn.
type sseTransport struct{ s *sseSession }

func (t *sseTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.s.t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &sseConn{Connection: c, s: t.s}, nil
}

// SupportsProtocolVersion: every version, 2026-07-28 included. The HTTP+SSE
// transport predates that protocol (which defines no binding for it, so the
// go-sdk's transport does not offer it), but Helix answers a request the same
// on every transport: one carrying 2026-07-28 _meta is served as on stdio.
func (t *sseTransport) SupportsProtocolVersion(v string) bool {
	return slices.Contains(knownProtocolVersions, v)
}

// sseConn checks the versions of what the client sends (versions.go) and sees
// the answers the session writes, to end the calls in flight.
type sseConn struct {
	sdk.Connection
	s *sseSession
}

func (c *sseConn) SessionID() string { return c.s.id }

// Read hands the session the client's messages; a call naming an unsupported
// version is answered here, on the event stream, and the session never sees it.
func (c *sseConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		m, err := c.Connection.Read(ctx)
		if err != nil {
			return m, err
		}
		req, ok := m.(*jsonrpc.Request)
		if !ok || !req.IsCall() {
			return m, nil
		}
		newEra, e := requestEra(req)
		if e != nil {
			if err := c.Write(ctx, &jsonrpc.Response{ID: req.ID, Error: e}); err != nil {
				return nil, err
			}
			continue
		}
		if newEra {
			c.s.mu.Lock()
			c.s.newEra[req.ID] = true
			c.s.mu.Unlock()
		}
		return m, nil
	}
}

func (c *sseConn) Write(ctx context.Context, m jsonrpc.Message) error {
	resp, isResp := m.(*jsonrpc.Response)
	if isResp {
		c.s.mu.Lock()
		newEra := c.s.newEra[resp.ID]
		delete(c.s.newEra, resp.ID)
		c.s.mu.Unlock()
		if !newEra {
			m = stripNewProtocolFields(resp)
		}
	}
	err := c.Connection.Write(ctx, m)
	if isResp {
		c.s.answered(resp.ID)
	}
	return err
}

func (c *sseConn) Close() error {
	err := c.Connection.Close()
	c.s.once.Do(func() { close(c.s.done) })
	return err
}
