package transport

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/internal/jsondepth"

	"github.com/arvenza/helix/internal/lazyctx"
)

// Helix's own Streamable HTTP server transport (MCP 2025-11-25 and 2026-07-28,
// "Streamable HTTP"). The go-sdk's session layer (initialize, tools, schemas,
// logging) is used unchanged through its public Transport/Connection interfaces;
// what Helix does itself is the HTTP side: sessions by Mcp-Session-Id, decoding each
// POST straight from its bytes (jsonrpc_decode.go; the SDK's transport wraps every
// unmarshal in a streaming decoder with a 32 KiB buffer, several times per request,
// which dominated the CPU profile; see docs/performance.md), and writing answers as
// application/json, or as an event stream when the client accepts only that or when
// notifications must travel while a request runs.
// A plain tools/call of an established session is answered without the SDK session
// at all (fastcall.go).

const (
	sessionIDHeader       = "Mcp-Session-Id"
	protocolVersionHeader = "Mcp-Protocol-Version"
	mcpMethodHeader       = "Mcp-Method"
	mcpNameHeader         = "Mcp-Name"
	// defaultMaxBodyBytes matches the go-sdk's default, so that switching the
	// transport does not change which bodies are accepted.
	defaultMaxBodyBytes = 4 << 20
	// statelessProtocol is the first protocol version without the initialize
	// handshake (SEP-2575); on HTTP it is served by stateless servers only.
	statelessProtocol = "2026-07-28"
	// defaultProtocol is assumed when a request names no version: the spec tells
	// servers to assume 2025-03-26 then.
	defaultProtocol = "2025-03-26"
	// standaloneQueue bounds server-initiated messages waiting for a GET stream.
	standaloneQueue = 64
	// DefaultMaxConcurrentCalls is the default of Options.MaxConcurrentCalls
	// (max_concurrent_calls): enough for a client that runs its calls in parallel,
	// while one batch of thousands of calls cannot start thousands of workflows.
	DefaultMaxConcurrentCalls = 64
)

// knownProtocolVersions are the revisions the go-sdk v1.8.0 session layer speaks,
// all of them served on every transport. A version naming any other value is
// refused with -32022 listing these (versions.go).
var knownProtocolVersions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", statelessProtocol}

// StreamableHandler serves Streamable HTTP for one sdk.Server.
type StreamableHandler struct {
	srv       *sdk.Server
	stateless bool
	idle      time.Duration // 0: sessions never expire
	maxBody   int64         // <= 0: unlimited
	checkHost bool          // DNS-rebinding protection on loopback listeners
	logger    *slog.Logger
	fast      *FastToolCalls // nil: every request goes through the SDK session (fastcall.go)
	table     *SessionTable  // session limits and idle expiry (sessions.go)
	budget    *ReplayBudget  // bounds what resumable streams keep (resume.go)
	maxCalls  int            // requests of one session running at once (<= 0: no bound)
	// paramHeaders gives a tool's x-mcp-header bindings (nil: none are checked).
	paramHeaders func(tool string) []ParamHeader
	// charge takes rate-limit tokens for a batch's calls beyond the first (nil: none).
	charge func(r *http.Request, n int) (bool, time.Duration, error)
	// tasks serves the tasks surface (tasks.go); nil: the server has none.
	tasks Tasks
	// admission bounds the server's requests running at once (admission.go); nil: none.
	admission *Admission
	// parkAfter: idle sessions are parked after this long (park.go); 0: never.
	parkAfter time.Duration
	park      parker

	// mu guards sessions; every request of a session reads it (lookup), so
	// readers share it: many clients must not queue on one exclusive lock.
	mu       sync.RWMutex
	sessions map[string]*streamConn
}

// NewStreamableHandler returns Helix's Streamable HTTP handler serving srv with o
// (o.Sessions and o.Fast included). It starts nothing; sessions start with the
// requests that open them.
func NewStreamableHandler(srv *sdk.Server, o *Options) *StreamableHandler {
	h := &StreamableHandler{srv: srv, stateless: o.Stateless, checkHost: !o.DisableLocalhostProtection,
		logger: o.Logger, sessions: map[string]*streamConn{}, table: o.Sessions, fast: o.Fast}
	if h.table == nil {
		h.table = NewSessionTable(o)
	}
	if h.budget = o.ReplayBudget; h.budget == nil {
		h.budget = ProcessReplayBudget()
	}
	h.charge = o.ChargeCalls
	h.paramHeaders = o.ParamHeaders
	h.tasks = o.Tasks
	h.admission = o.Admission
	if h.maxCalls = o.MaxConcurrentCalls; h.maxCalls == 0 {
		h.maxCalls = DefaultMaxConcurrentCalls
	}
	if o.SessionIdleTimeout > 0 {
		h.idle = o.SessionIdleTimeout
	}
	switch {
	case o.ParkIdleAfter == 0:
		h.parkAfter = DefaultParkAfter
	case o.ParkIdleAfter > 0:
		h.parkAfter = o.ParkIdleAfter
	}
	switch {
	case o.MaxRequestBodyBytes == 0:
		h.maxBody = defaultMaxBodyBytes
	case o.MaxRequestBodyBytes > 0:
		h.maxBody = o.MaxRequestBodyBytes
	}
	if h.logger == nil {
		h.logger = slog.New(slog.DiscardHandler)
	}
	return h
}

func (h *StreamableHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.checkHost {
		if err := checkLoopbackRequest(r); err != nil {
			http.Error(w, "Forbidden: "+err.Error(), http.StatusForbidden)
			return
		}
	}
	versions := r.Header.Values(protocolVersionHeader)
	if e := checkVersionHeader(versions); e != nil {
		writeJSONRPCError(w, http.StatusBadRequest, h.peekRequestID(w, r), e)
		return
	}
	version := ""
	if len(versions) > 0 {
		version = versions[0]
	}
	allow := "GET, POST, DELETE"
	if h.stateless {
		allow = "POST"
	}
	switch {
	case r.Method == http.MethodPost:
		var fp fastPost
		if h.post(w, r, version, &fp) {
			h.runFastPost(w, r, &fp)
		}
	case r.Method == http.MethodGet && !h.stateless:
		h.get(w, r)
	case r.Method == http.MethodDelete && !h.stateless:
		h.delete(w, r)
	default:
		w.Header().Set("Allow", allow)
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}
}

// checkLoopbackRequest refuses browser requests that reached a loopback listener
// under a foreign name (DNS rebinding): the Host, and the Origin when there is one,
// must then be loopback names too.
func checkLoopbackRequest(r *http.Request) error {
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if local == nil || !isLoopbackAddr(local) {
		return nil
	}
	if !isLoopbackHost(r.Host) {
		return fmt.Errorf("invalid Host header %q for a loopback server", r.Host)
	}
	if origin := r.Header.Get("Origin"); origin != "" && origin != "null" {
		_, host, ok := strings.Cut(origin, "://")
		if !ok || !isLoopbackHost(host) {
			return fmt.Errorf("invalid Origin header %q for a loopback server", origin)
		}
	}
	return nil
}

// isLoopbackAddr is isLoopbackHost(a.String()) without building the string for
// the usual *net.TCPAddr (this runs on every request): its String is
// "ip:port", "[ip]:port", or with a zone "ip%zone:port" / "[ip%zone]:port",
// which ParseIP never accepts; a nil IP gives ":port" and a nil *TCPAddr
// "<nil>", neither of them loopback.
func isLoopbackAddr(a net.Addr) bool {
	if t, ok := a.(*net.TCPAddr); ok {
		return t != nil && t.Zone == "" && t.IP.IsLoopback()
	}
	return isLoopbackHost(a.String())
}

// isLoopbackHost reports whether host (with or without a port) names this machine.
func isLoopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// accepts reads the Accept header: may the answer be JSON, may it be an event
// stream. A request without Accept takes either.
func accepts(values []string) (jsonOK, streamOK bool) {
	if len(values) == 0 {
		return true, true
	}
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			base, _, _ := strings.Cut(part, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK, streamOK
}

func (h *StreamableHandler) post(w http.ResponseWriter, r *http.Request, version string, fp *fastPost) (fast bool) {
	// The usual header spares ParseMediaType's parameter map.
	if ct := r.Header.Get("Content-Type"); ct != "application/json" && !isJSONMediaType(ct) {
		http.Error(w, "Content-Type must be application/json", http.StatusUnsupportedMediaType)
		return
	}
	jsonOK, streamOK := accepts(r.Header.Values("Accept"))
	if !jsonOK && !streamOK {
		http.Error(w, "Accept must allow application/json or text/event-stream", http.StatusNotAcceptable)
		return
	}
	body, limit := r.Body, h.maxBody
	if h.maxBody > 0 && !declaredWithin(r.ContentLength, h.maxBody) {
		// A body of unknown or large length is cut off at the limit as it is read
		// (and its connection then closed); a small one of a declared length
		// within it is checked by readBody, without a reader per request.
		body, limit = http.MaxBytesReader(w, r.Body, h.maxBody), 0
	}
	data, err := readBody(body, r.ContentLength, limit)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", tooBig.Limit), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if id, ok := h.admission.atDoor(data); ok {
		refuseAtDoor(w, id) // refused unparsed (admission_door.go)
		return
	}
	dec, err := decodeBody(data)
	if err != nil {
		// Not JSON (-32700), or JSON that is no JSON-RPC message (-32600).
		writeJSONRPCError(w, http.StatusBadRequest, jsonrpc.ID{}, parseErrorResponse(err))
		return
	}
	if dec.batch {
		// Each element of a batch stands alone: an invalid one is answered in place.
		dec.refuseInvalid()
	} else if e := dec.check(); e != nil {
		// "id": null, or a request without id: the session would take it for a
		// notification and never answer.
		writeJSONRPCError(w, http.StatusBadRequest, jsonrpc.ID{}, e)
		return
	}
	msgs, batch := dec.msgs, dec.batch
	effective := version
	if effective == "" {
		effective = defaultProtocol
	}
	if batch && effective >= protocolNoBatches {
		refuseBatch(w, effective)
		return
	}
	order := answerOrder(dec)

	var calls []*jsonrpc.Request
	// fields are what the checks read of the last call's params; match takes a
	// lone tools/call from them.
	var fields callFields
	hasInit := false
	// newEra: the POST holds a 2026-07-28 request (by its header or its _meta),
	// or is a 2026-07-28 notification (by its header), served without a session
	// whatever the server's mode.
	newEra := version >= statelessProtocol
	for _, m := range msgs {
		req, ok := m.(*jsonrpc.Request)
		if !ok || !req.IsCall() {
			continue
		}
		calls = append(calls, req)
		if req.Method == "initialize" {
			hasInit = true
		}
		isNew, e := h.checkCall(r.Header, req, version, &fields)
		if e != nil {
			writeJSONRPCError(w, http.StatusBadRequest, req.ID, e)
			return
		}
		newEra = newEra || isNew
	}

	if batch && len(calls) > 1 && !h.chargeBatch(w, r, len(calls)-1) {
		return
	}
	if h.admission != nil {
		// Admission control (admission.go): refused before any work, or run to the end.
		if n, id := admissionCost(calls); n > 0 {
			if !h.admission.Acquire(r.Context(), n) {
				refuseBusy(w, id)
				return
			}
			fp.admitted, fp.since = n, time.Now()
			// Released when post returns, or by runFastPost after the call it
			// hands back.
			defer func() {
				if !fast {
					h.admission.ReleaseTimed(n, fp.since)
				}
			}()
		}
	}

	fc := h.fast.match(msgs, batch, effective, &fields)
	sid := r.Header.Get(sessionIDHeader)
	if newEra && sid != "" && !h.stateless {
		refuseSessionOnNewEra(w, calls)
		return
	}
	if h.stateless || newEra {
		if h.serveTask(w, r, msgs, batch, &fields, effective, nil, jsonOK) {
			return
		}
		if fc != nil {
			fp.fc, fp.jsonOK = fc, jsonOK
			return true // runFastPost serves it
		}
		attachExtra(msgs, r, nil)
		h.postStateless(w, r, msgs, calls, order, hasInit, effective, jsonOK, streamOK)
		return
	}
	var c *streamConn
	if sid == "" {
		if !hasInit {
			http.Error(w, "Bad Request: missing "+sessionIDHeader+" header (only initialize may come without one)", http.StatusBadRequest)
			return
		}
		if v := requestedVersion(calls); batch && v >= protocolNoBatches {
			// The session would negotiate a version without batches.
			refuseBatch(w, v)
			return
		}
		if c, err = h.newSession(r); err != nil {
			if limit := (*sessionLimitError)(nil); errors.As(err, &limit) {
				refuseSession(w, initializeID(calls), err)
				return
			}
			h.logger.Error("mcp: cannot start a session", "error", err)
			http.Error(w, "cannot start a session", http.StatusInternalServerError)
			return
		}
		w.Header().Set(sessionIDHeader, c.id)
		defer func() {
			// A failed initialize leaves a session nobody can use.
			if c.session.InitializeParams() == nil {
				_ = c.session.Close()
			}
			c.slot.end() // the hold newSession took; the session may now idle
		}()
	} else if c = h.lookup(w, r, sid); c == nil {
		return
	} else if ip := c.initParams(); batch && ip != nil && ip.ProtocolVersion >= protocolNoBatches {
		// The session's negotiated version decides, not what the POST's header claims.
		refuseBatch(w, ip.ProtocolVersion)
		return
	}
	ok, parked := c.enter()
	if !ok {
		http.Error(w, "session closed", http.StatusNotFound)
		return
	}
	defer func() {
		if !fast {
			c.end()
		}
	}()
	// A call the fast path serves (fastcall.go) needs nothing of the go-sdk
	// session: a parked session stays parked (park.go), and the call does not
	// count as a use that keeps the session awake. A tool the tasks extension
	// serves goes to serveTask first, with the session awake.
	if fastSession(c, fc, sid) && !h.taskTool(&fields) {
		fp.c, fp.fc, fp.jsonOK = c, fc, jsonOK
		return true // runFastPost serves it, and ends c's use
	}
	c.noteUse()
	if parked && !c.unpark(r.Context()) { // park.go
		http.Error(w, "session closed", http.StatusNotFound)
		return
	}
	if ip := c.session.InitializeParams(); ip != nil && h.serveTask(w, r, msgs, batch, &fields, ip.ProtocolVersion, c.session, jsonOK) {
		return
	}
	if fastSession(c, fc, sid) {
		fp.c, fp.fc, fp.jsonOK = c, fc, jsonOK
		return true
	}
	attachExtra(msgs, r, c)
	c.noteCancels(msgs)
	c.noteLogging(calls)
	c.noteSession(msgs)
	c.serve(w, r, msgs, calls, order, jsonOK, streamOK)
	return false
}

// fastSession reports whether the session c serves the call fc through the fast
// path: only sessions the SDK would serve a tools/call in (initialized, with a
// protocol before 2026-07-28: the SDK marks later results with a resultType),
// and none that asked for log messages, which only the SDK path sends.
func fastSession(c *streamConn, fc *fastCall, sid string) bool {
	if fc == nil || sid == "" || c.wantsLogs() {
		return false
	}
	ip := c.initParams()
	return ip != nil && ip.ProtocolVersion < statelessProtocol
}

// fastPost is a tool call for the fast path (fastcall.go) that post hands back
// to ServeHTTP instead of serving it itself: the call then runs below
// ServeHTTP's frame rather than below post's, the largest of the handler's
// frames. A connection's goroutine keeps its stack at the size its deepest
// request took it to, so the depth of this path is memory per connection
// (internal/netguard/stack.go).
type fastPost struct {
	fc     *fastCall
	c      *streamConn // the session, begun; nil: stateless
	jsonOK bool
	// admitted is the admission cost the call holds (0: none), since when.
	admitted int
	since    time.Time
}

// runFastPost serves the call post handed back, then ends the session's use and
// releases the admission that post took for it.
func (h *StreamableHandler) runFastPost(w http.ResponseWriter, r *http.Request, fp *fastPost) {
	if fp.admitted > 0 {
		defer h.admission.ReleaseTimed(fp.admitted, fp.since)
	}
	if fp.c == nil {
		h.serveFastStateless(w, r, fp.fc, fp.jsonOK)
		return
	}
	defer fp.c.end()
	fp.c.serveFast(w, r, fp.fc, fp.jsonOK)
}

// chargeBatch takes the rate-limit tokens of a batch's calls beyond the first
// (the POST took one): a batch of N calls costs N. When they are not allowed it
// answers 429 (503 when the limit's store cannot decide), and no call runs.
func (h *StreamableHandler) chargeBatch(w http.ResponseWriter, r *http.Request, extra int) bool {
	if h.charge == nil {
		return true
	}
	ok, wait, err := h.charge(r, extra)
	switch {
	case err != nil:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "Service Unavailable: the rate limit cannot be checked now; retry later", http.StatusServiceUnavailable)
		return false
	case !ok:
		secs := max(int64((wait+time.Second-1)/time.Second), 1)
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		http.Error(w, fmt.Sprintf("Too Many Requests: rate limit exceeded: the batch has %d calls and each takes a token; retry later or send fewer",
			extra+1), http.StatusTooManyRequests)
		return false
	}
	return true
}

// refuseBatch answers a batch of a protocol version without batches.
func refuseBatch(w http.ResponseWriter, version string) {
	http.Error(w, fmt.Sprintf("Bad Request: JSON-RPC batches are not allowed from protocol %s on (this request: %s); send one message per POST",
		protocolNoBatches, version), http.StatusBadRequest)
}

// requestedVersion is the protocolVersion the initialize request among calls asks
// for ("" when none does or it is not a string).
func requestedVersion(calls []*jsonrpc.Request) string {
	for _, req := range calls {
		if req.Method == "initialize" {
			var p struct {
				V json.RawMessage `json:"protocolVersion"`
			}
			var v string
			if json.Unmarshal(req.Params, &p) == nil && json.Unmarshal(p.V, &v) == nil {
				return v
			}
		}
	}
	return ""
}

// answerSlot is one answer of a batch, in the batch's order: a call's (by its id)
// or the error of an invalid element.
type answerSlot struct {
	id  jsonrpc.ID
	err *jsonrpc.Error
}

// answerOrder lists the answers a batch is due, in its order; nil for a single
// message.
func answerOrder(dec decodedBody) []answerSlot {
	if !dec.batch {
		return nil
	}
	order := make([]answerSlot, 0, dec.size)
	refusedAt := make(map[int]*jsonrpc.Error, len(dec.refused))
	for _, r := range dec.refused {
		refusedAt[r.at] = r.err
	}
	i := 0
	for at := range dec.size {
		if e, ok := refusedAt[at]; ok {
			order = append(order, answerSlot{err: e})
			continue
		}
		if req, ok := dec.msgs[i].(*jsonrpc.Request); ok && req.IsCall() {
			order = append(order, answerSlot{id: req.ID})
		}
		i++
	}
	return order
}

// refusedAnswers are the error answers of a batch's invalid elements.
func refusedAnswers(order []answerSlot) []*jsonrpc.Response {
	var out []*jsonrpc.Response
	for _, s := range order {
		if s.err != nil {
			out = append(out, &jsonrpc.Response{Error: s.err})
		}
	}
	return out
}

// smallBody reports whether readBody reads a body of this declared length into
// one buffer of that size.
func smallBody(length int64) bool { return length >= 0 && length < 64<<10 }

// declaredWithin reports whether a body of this declared length is one readBody
// holds to limit itself: small, and within it.
func declaredWithin(length, limit int64) bool { return smallBody(length) && length <= limit }

// readBody is io.ReadAll(body) with a buffer sized for the declared length
// (-1 when unknown), up to 64 KiB, rather than io.ReadAll's 512 bytes: one
// right-sized allocation for the usual small request. A small body that reads
// to more than limit (> 0) is refused with the *http.MaxBytesError a
// MaxBytesReader would give.
func readBody(body io.Reader, length, limit int64) ([]byte, error) {
	if !smallBody(length) {
		return io.ReadAll(body)
	}
	b := make([]byte, 0, length+1) // room to see EOF without growing
	for {
		n, err := body.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if limit > 0 && int64(len(b)) > limit {
			// More than declared (net/http never reads past Content-Length, a
			// handler in front might), and more than allowed.
			return nil, &http.MaxBytesError{Limit: limit}
		}
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // more than declared: grow
		}
	}
}

// isJSONMediaType tells whether a Content-Type names application/json.
func isJSONMediaType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// attachExtra gives each request of msgs the RequestExtra the session hands its
// handler: the caller's token and headers and, for the calls of session c (nil
// when stateless), CloseSSEStream. Only the SDK path reads it, so the fast path
// skips it (it builds its own for middleware).
func attachExtra(msgs []jsonrpc.Message, r *http.Request, c *streamConn) {
	tokenInfo := auth.TokenInfoFromContext(r.Context())
	for _, m := range msgs {
		req, ok := m.(*jsonrpc.Request)
		if !ok {
			continue
		}
		extra := &sdk.RequestExtra{TokenInfo: tokenInfo, Header: r.Header}
		if c != nil && req.IsCall() {
			// As the go-sdk's transport: a handler may end the POST's event
			// stream early (SEP-1699 polling); the client resumes it with
			// Last-Event-ID.
			id := req.ID
			extra.CloseSSEStream = func(args sdk.CloseSSEStreamArgs) { c.closeStream(id, args.RetryAfter) }
		}
		req.Extra = extra
	}
}

type relatedKey struct{}

// RelatedTo returns a context that relates what a session sends with it to the
// request that extra came with ([sdk.RequestExtra] of a handler's request): the
// progress and log notifications of a tool call then travel on the response to
// that call's POST, as the MCP spec has it, rather than on the standalone GET
// stream. The go-sdk's own transports relate them by the handler's context; the
// SDK keeps that key private, so Helix's transport needs its own.
func RelatedTo(ctx context.Context, extra *sdk.RequestExtra) context.Context {
	if extra == nil {
		return ctx
	}
	return context.WithValue(ctx, relatedKey{}, extra)
}

// noteLogging remembers that the client asked for log messages (logging/setLevel,
// whatever the level: the session decides what passes).
func (c *streamConn) noteLogging(calls []*jsonrpc.Request) {
	for _, req := range calls {
		if req.Method == "logging/setLevel" {
			c.mu.Lock()
			c.logging = true
			c.mu.Unlock()
			return
		}
	}
}

func (c *streamConn) wantsLogs() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.logging
}

// refuseSessionOnNewEra answers a 2026-07-28 request that names a session: that
// protocol has none, and the session speaks the version its initialize
// negotiated, so serving the request in it or without it would each ignore half
// of what the client sent.
func refuseSessionOnNewEra(w http.ResponseWriter, calls []*jsonrpc.Request) {
	var id jsonrpc.ID // none for notifications
	if len(calls) > 0 {
		id = calls[0].ID
	}
	writeJSONRPCError(w, http.StatusBadRequest, id, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
		Message: fmt.Sprintf("Bad Request: a %s request carries no %s header (that protocol has no sessions); "+
			"send it without the header, or send the session's requests with the version its initialize negotiated",
			statelessProtocol, sessionIDHeader)})
}

// checkCall checks the protocol versions of one call of a POST whose
// Mcp-Protocol-Version header is version, and tells whether it is a 2026-07-28
// request. When the header names 2026-07-28, the body must agree with it first
// (HeaderMismatch, -32020, SEP-2575); otherwise a version the body names must be
// one the server speaks (-32022, versions.go) before the 2026-07-28 header rules
// apply.
func (h *StreamableHandler) checkCall(hdr http.Header, req *jsonrpc.Request, version string, fields *callFields) (isNew bool, e *jsonrpc.Error) {
	*fields = readCallFields(req)
	f := fields
	meta := f.metaVersionText()
	// A _meta naming an earlier version makes no 2026-07-28 request (as the
	// go-sdk reads it, and as stdio and SSE do): it is served as a legacy one.
	isNew = meta >= statelessProtocol || version >= statelessProtocol
	if isNew && version != "" {
		e = h.checkStatelessHeaders(hdr, req, f, version, meta)
	}
	if e == nil {
		e = f.checkVersions(req, isNew)
	}
	if e == nil && isNew && version == "" {
		e = h.checkStatelessHeaders(hdr, req, f, version, meta)
	}
	return isNew, e
}

// checkStatelessHeaders applies the 2026-07-28 rules that tie HTTP headers to the
// body: Mcp-Protocol-Version must match _meta's version, Mcp-Method the method,
// Mcp-Name the tool, resource or prompt named, and a tool's Mcp-Param-* headers
// its arguments (param_headers.go).
func (h *StreamableHandler) checkStatelessHeaders(hdr http.Header, req *jsonrpc.Request, f *callFields, version, metaVersion string) *jsonrpc.Error {
	switch {
	case version == "":
		return &jsonrpc.Error{Code: sdk.CodeHeaderMismatch, Message: protocolVersionHeader + " header is required for requests carrying " + sdk.MetaKeyProtocolVersion}
	case metaVersion == "":
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing or invalid _meta field " + sdk.MetaKeyProtocolVersion}
	case metaVersion != version:
		return &jsonrpc.Error{Code: sdk.CodeHeaderMismatch, Message: fmt.Sprintf("%s header %q does not match _meta %s %q", protocolVersionHeader, version, sdk.MetaKeyProtocolVersion, metaVersion)}
	}
	method := hdr.Get(mcpMethodHeader)
	if method == "" {
		return &jsonrpc.Error{Code: sdk.CodeHeaderMismatch, Message: "missing required " + mcpMethodHeader + " header"}
	}
	if method != req.Method {
		return &jsonrpc.Error{Code: sdk.CodeHeaderMismatch, Message: fmt.Sprintf("%s header %q does not match method %q", mcpMethodHeader, method, req.Method)}
	}
	var field string
	var raw json.RawMessage
	switch req.Method {
	case "tools/call", "prompts/get":
		field, raw = "name", f.name
	case "resources/read":
		field, raw = "uri", f.uri
	case "tasks/get", "tasks/update", "tasks/cancel":
		// The tasks extension names the task in Mcp-Name (tasks.go).
		field, raw = "taskId", taskIDField(req.Params)
	default:
		return nil
	}
	// The header is compared with the field as sent, which is copied only for an
	// error: when they are equal the header's value is the name.
	name := hdr.Get(mcpNameHeader)
	ok, equal := stringFieldIs(raw, name)
	if !f.object || !ok {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("params of %s need a string %q", req.Method, field)}
	}
	if !equal {
		want, _ := stringField(raw)
		return &jsonrpc.Error{Code: sdk.CodeHeaderMismatch, Message: fmt.Sprintf("%s header %q does not match %q", mcpNameHeader, cut(name, 256), cut(want, 256))}
	}
	if req.Method == "tools/call" && h.paramHeaders != nil {
		return checkParamHeaders(hdr, req.Params, h.paramHeaders(name))
	}
	return nil
}

// postStateless serves one POST of a stateless server with a session of its own,
// closed when the answer is out. Requests of earlier protocols come without
// initialize, so the session starts as if the handshake had happened.
func (h *StreamableHandler) postStateless(w http.ResponseWriter, r *http.Request, msgs []jsonrpc.Message,
	calls []*jsonrpc.Request, order []answerSlot, hasInit bool, version string, jsonOK, streamOK bool) {
	if len(calls) == 0 {
		if refused := refusedAnswers(order); len(refused) > 0 {
			writeBatchAnswers(w, order, refused)
			return
		}
		// Notifications and responses have no session state to change here.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	state := &sdk.ServerSessionState{}
	if version < statelessProtocol {
		if !hasInit {
			state.InitializeParams = &sdk.InitializeParams{ProtocolVersion: version}
		}
		state.InitializedParams = &sdk.InitializedParams{}
		// No LogLevel: the go-sdk's stateless handler assumes "info", but a
		// logging/setLevel sent to a stateless server has no session to stay in,
		// and the fast path (which answers these calls) sends no log messages. So
		// a stateless call of an earlier protocol sends none, whichever path
		// answers it; a 2026-07-28 request states its level in _meta.
	}
	c := newStreamConn(h, "")
	c.oldProtocol = version < statelessProtocol
	ss, err := h.srv.Connect(context.WithoutCancel(r.Context()), &streamTransport{c: c}, &sdk.ServerSessionOptions{State: state})
	if err != nil {
		h.logger.Error("mcp: cannot start a stateless session", "error", err)
		http.Error(w, "cannot start a session", http.StatusInternalServerError)
		return
	}
	c.session = ss
	defer func() { _ = ss.Close() }()
	c.begin()
	defer c.end()
	c.serve(w, r, msgs, calls, order, jsonOK, streamOK)
}

// newSession opens a session for the initialize request r, within the session
// limits (a *sessionLimitError when they refuse it). The session belongs to r's
// principal; its slot stays busy until the caller ends it.
func (h *StreamableHandler) newSession(r *http.Request) (*streamConn, error) {
	slot, err := h.table.admit(sessionOwner(r), "streamable", true)
	if err != nil {
		return nil, err
	}
	c := newStreamConn(h, rand.Text())
	c.slot, c.owner = slot, slot.owner
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		c.userID = ti.UserID
	}
	g := newSessionGen(c)
	ss, err := h.srv.Connect(context.WithoutCancel(r.Context()), &streamTransport{c: g}, nil)
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	c.session, c.gen = ss, g
	slot.ready(c.id, c.closeSession)
	slot.describedBy(c.initParams) // a parked session has no go-sdk session (park.go)
	h.mu.Lock()
	h.sessions[c.id] = c
	h.mu.Unlock()
	if h.parkEnabled() {
		h.startParking() // after the session is in h.sessions (park.go)
	}
	return c, nil
}

// lookup finds the session a request names, or answers 404: unknown or closed
// (the client must initialize again), or another principal's (an API key or
// token other than the one that opened it), which must not learn that it exists.
func (h *StreamableHandler) lookup(w http.ResponseWriter, r *http.Request, sid string) *streamConn {
	h.mu.RLock()
	c := h.sessions[sid]
	h.mu.RUnlock()
	if c != nil && c.owner != sessionOwner(r) {
		c = nil
	}
	if c != nil && c.userID != "" {
		if ti := auth.TokenInfoFromContext(r.Context()); ti == nil || ti.UserID != c.userID {
			c = nil
		}
	}
	if c == nil {
		http.Error(w, "session not found", http.StatusNotFound)
		return nil
	}
	return c
}

// initializeID is the id of the initialize request among calls.
func initializeID(calls []*jsonrpc.Request) jsonrpc.ID {
	for _, req := range calls {
		if req.Method == "initialize" {
			return req.ID
		}
	}
	return jsonrpc.ID{}
}

func (h *StreamableHandler) delete(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get(sessionIDHeader)
	if sid == "" {
		http.Error(w, "Bad Request: DELETE needs an "+sessionIDHeader+" header", http.StatusBadRequest)
		return
	}
	c := h.lookup(w, r, sid)
	if c == nil {
		return
	}
	c.closeSession()
	w.WriteHeader(http.StatusNoContent)
}

// get opens the session's standalone event stream, which carries the messages
// the server sends on its own (list changes, log messages, requests to the
// client). One per session: a second is refused with 409.
func (h *StreamableHandler) get(w http.ResponseWriter, r *http.Request) {
	if _, streamOK := accepts(r.Header.Values("Accept")); !streamOK {
		http.Error(w, "Accept must allow text/event-stream for GET", http.StatusNotAcceptable)
		return
	}
	sid := r.Header.Get(sessionIDHeader)
	if sid == "" {
		http.Error(w, "Bad Request: GET needs an "+sessionIDHeader+" header", http.StatusBadRequest)
		return
	}
	c := h.lookup(w, r, sid)
	if c == nil {
		return
	}
	if ids := r.Header.Values(lastEventIDHeader); len(ids) > 0 {
		h.resume(w, r, c, ids[0]) // resume.go
		return
	}
	c.mu.Lock()
	busy := c.getOpen
	c.getOpen = true
	standalone := c.standaloneLocked()
	parked := c.parked != nil
	c.uses++
	c.mu.Unlock()
	if busy {
		http.Error(w, "this session already has a standalone stream", http.StatusConflict)
		return
	}
	defer func() {
		c.mu.Lock()
		c.getOpen = false
		c.mu.Unlock()
	}()
	// A parked session (park.go) is connected again while the stream is open,
	// so that what the server sends reaches it; the list changes it missed are
	// queued first.
	if parked && !c.unpark(r.Context()) {
		http.Error(w, "session closed", http.StatusNotFound)
		return
	}
	out := newEventWriter(w)
	out.start()
	for {
		select {
		case m := <-standalone:
			if err := out.event(m); err != nil {
				return
			}
		case <-c.done:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// streamTransport hands a prepared connection to sdk.Server.Connect: a
// streamConn (stateless) or one sessionGen of a stateful session (park.go).
type streamTransport struct{ c sdk.Connection }

func (t *streamTransport) Connect(context.Context) (sdk.Connection, error) { return t.c, nil }

// SupportsProtocolVersion tells the session layer (server/discover) that every
// version is served on this endpoint: 2026-07-28 requests without a session,
// earlier ones in sessions (or sessionless on a stateless server).
func (t *streamTransport) SupportsProtocolVersion(v string) bool {
	return slices.Contains(knownProtocolVersions, v)
}

// streamConn is one session's sdk.Connection. POST handlers feed the decoded
// messages to Read; Write routes what the session sends: responses to the POST
// that carries the request, progress notifications to the POST whose request set
// the progress token, everything else to the standalone GET stream (in stateless
// mode the one POST gets everything).
type streamConn struct {
	h      *StreamableHandler
	id     string
	owner  string       // the principal that opened the session (sessions.go)
	userID string       // the go-sdk token's user, when a middleware set one
	slot   *sessionSlot // nil for the one-POST sessions of a stateless server
	// session is the go-sdk session serving it; nil while the session is parked
	// (park.go), when parked holds what it knew. Both change only under parkMu
	// and mu, while no request is running (park) or before the request that
	// unparks it runs: a request reads session after enter.
	session *sdk.ServerSession
	gen     *sessionGen // session's connection
	parkMu  sync.Mutex  // serializes park, unpark and closeSession
	parked  *parkRecord

	in   chan jsonrpc.Message
	done chan struct{}
	// standalone queues what the GET stream carries (standaloneLocked makes it:
	// most sessions never open one, and its buffer is the largest thing a
	// session would otherwise hold). Guarded by mu; set once, never cleared.
	standalone chan jsonrpc.Message
	closeOnce  sync.Once

	// The maps below are made on first use (put) and dropped again when empty
	// once the session is idle (trimLocked): an idle session holds none of them.
	// Reading or deleting from a nil map is fine, so only the inserts know.
	mu       sync.Mutex
	closed   bool
	pending  map[jsonrpc.ID]*postStream
	fast     map[jsonrpc.ID]*lazyctx.Context // tool calls of the fast path (fastcall.go)
	progress map[string]*postStream          // progress token (raw JSON) → POST
	only     *postStream                     // stateless: the one POST
	getOpen  bool                            // a GET stream is open (standalone is made)
	active   int                             // requests being served

	// related maps each running request of the SDK path to its POST, so that the
	// notifications a handler sends for it (RelatedTo) travel on that POST.
	related map[*sdk.RequestExtra]*postStream
	// logging: the client has sent logging/setLevel, so tool calls may send log
	// messages; they take the SDK path, whose answers can carry them (serveFast
	// answers with the result only).
	logging bool

	// cancelled holds the running requests (SDK path and fast path) the client
	// cancelled with notifications/cancelled: their results are not sent.
	cancelled map[jsonrpc.ID]bool
	// oldProtocol: the session speaks a protocol before 2026-07-28, so results lose
	// that version's fields (stripNewProtocolFields).
	oldProtocol bool
	// replay holds the session's resumable streams (resume.go).
	replay replayBuffer

	// What parking (park.go) must know, guarded by mu: uses counts the requests
	// begun that need the go-sdk session (noteUse; sweptUses is its value at the
	// last sweep); outgoing the server's
	// requests to the client not answered yet; subscribed, a resource
	// subscription; initialized, the handshake done; level, the log level the
	// session accepted (levelAsked for the logging/setLevel levelID running).
	uses, sweptUses         uint32
	outgoing                int32
	subscribed, initialized bool
	//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still served
	level, levelAsked sdk.LoggingLevel
	levelID           jsonrpc.ID

	// callSlots bounds the session's requests running at once (nil: no bound):
	// each running request holds one, from before the session gets it until its
	// answer is written; holding lists the ids of the SDK path's that do.
	callSlots chan struct{}
	holding   map[jsonrpc.ID]bool
}

// acquireCall waits for a free call slot of the session; false when ctx ended or
// the session closed first.
func (c *streamConn) acquireCall(ctx context.Context) bool {
	if c.callSlots == nil {
		return true
	}
	// A free slot first, without asking ctx.Done: that would make the POST
	// context's channel (and at its end close it) for every call.
	select {
	case c.callSlots <- struct{}{}:
		return true
	default:
	}
	select {
	case c.callSlots <- struct{}{}:
		return true
	case <-ctx.Done():
	case <-c.done:
	}
	return false
}

func (c *streamConn) releaseCall() {
	if c.callSlots != nil {
		<-c.callSlots
	}
}

// releaseHeldLocked frees the slot the request id holds, if it holds one.
func (c *streamConn) releaseHeldLocked(id jsonrpc.ID) {
	if c.holding[id] {
		delete(c.holding, id)
		c.releaseCall()
	}
}

var _ sdk.Connection = (*streamConn)(nil)

func newStreamConn(h *StreamableHandler, id string) *streamConn {
	c := &streamConn{h: h, id: id, in: make(chan jsonrpc.Message), done: make(chan struct{}), replay: replayBuffer{budget: h.budget},
		// A session opened by initialize speaks an earlier version (2026-07-28
		// requests never reach one: post); postStateless decides for its
		// one-POST sessions.
		oldProtocol: id != ""}
	if h.maxCalls > 0 {
		c.callSlots = make(chan struct{}, h.maxCalls)
	}
	return c
}

// put sets m[k] = v, making the map first if it is nil (streamConn's maps are
// made on first use).
func put[K comparable, V any](m *map[K]V, k K, v V) {
	if *m == nil {
		*m = make(map[K]V)
	}
	(*m)[k] = v
}

// trimLocked drops the session's empty maps: a map keeps the memory of what it
// once held, and an idle session should hold nothing for requests it no longer
// serves. The next request makes what it needs again. The fast path's map is
// kept: a client calling tools one after another would otherwise make it anew
// on every call, and a session that never made a fast call has none.
func (c *streamConn) trimLocked() {
	dropEmpty(&c.pending)
	dropEmpty(&c.progress)
	dropEmpty(&c.related)
	dropEmpty(&c.cancelled)
	dropEmpty(&c.holding)
}

// dropEmpty sets *m to nil when it holds nothing (see trimLocked).
func dropEmpty[K comparable, V any](m *map[K]V) {
	if len(*m) == 0 {
		*m = nil
	}
}

// standaloneLocked is the standalone stream's queue, made on first use.
func (c *streamConn) standaloneLocked() chan jsonrpc.Message {
	if c.standalone == nil {
		c.standalone = make(chan jsonrpc.Message, standaloneQueue)
	}
	return c.standalone
}

func (c *streamConn) SessionID() string { return c.id }

func (c *streamConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close ends the connection; the go-sdk calls it when the session closes (DELETE,
// idle eviction, server stop), which also forgets the session id.
func (c *streamConn) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.replay.clear() // its share of the replay budget goes back
		if c.slot != nil {
			c.slot.release()
		}
		// Calls of a closed session are cancelled, as the SDK cancels its own.
		for _, call := range c.fast {
			call.Cancel()
		}
		c.mu.Unlock()
		close(c.done)
		if c.id != "" {
			c.h.mu.Lock()
			if c.h.sessions[c.id] == c {
				delete(c.h.sessions, c.id)
			}
			c.h.mu.Unlock()
		}
	})
	return nil
}

// begin and end bracket every request of a session. The session's slot in the
// session table (sessions.go) closes it once idle (no request running, none
// arriving for the idle timeout), and never evicts it while a request runs.
func (c *streamConn) begin() bool {
	ok, _ := c.enter()
	if ok {
		c.noteUse()
	}
	return ok
}

// enter is begin that also tells whether the session is parked: the request
// must then unpark it (park.go) before it uses the session.
func (c *streamConn) enter() (ok, parked bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || (c.slot != nil && !c.slot.begin()) {
		return false, false
	}
	c.active++
	return true, c.parked != nil
}

// noteUse counts a request that needs the session's go-sdk ServerSession: a
// session none used since the previous sweep may be parked (park.go). Tool
// calls the fast path serves do not count.
func (c *streamConn) noteUse() {
	c.mu.Lock()
	c.uses++
	c.mu.Unlock()
}

func (c *streamConn) end() {
	c.mu.Lock()
	if c.active--; c.active == 0 {
		c.trimLocked()
	}
	c.mu.Unlock()
	if c.slot != nil {
		c.slot.end()
	}
}

// postStream collects what the session writes for one POST.
type postStream struct {
	out  chan jsonrpc.Message
	gone chan struct{} // closed when the POST handler returns
	// streamOK: the client accepts an event stream, so requests to the client can
	// travel on this POST's answer.
	streamOK bool
	// rs is the POST's resumable stream (resume.go), nil when the session's
	// protocol has none: then out carries the messages instead.
	rs *replayStream
	// tokens and extras are the progress tokens and requests the POST registered
	// (progress, related); a resumable stream drops them once answered.
	tokens []string
	extras []*sdk.RequestExtra
}

func (c *streamConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if resp, ok := m.(*jsonrpc.Response); ok && c.oldProtocol {
		m = stripNewProtocolFields(resp)
	}
	c.mu.Lock()
	var ps *postStream
	switch mm := m.(type) {
	case *jsonrpc.Response:
		ps = c.pending[mm.ID]
		delete(c.pending, mm.ID)
		c.releaseHeldLocked(mm.ID)
		c.noteLevelLocked(mm) // park.go
		if c.cancelled[mm.ID] {
			// Cancelled by the client: the POST ends without this result.
			delete(c.cancelled, mm.ID)
			m = &jsonrpc.Response{ID: mm.ID, Extra: withheld{}}
		}
	case *jsonrpc.Request:
		if mm.IsCall() {
			c.outgoing++ // answered through Read (park.go)
		}
		if c.only != nil {
			ps = c.only
		} else if extra, ok := ctx.Value(relatedKey{}).(*sdk.RequestExtra); ok && c.related[extra] != nil {
			ps = c.related[extra]
		} else if mm.Method == "notifications/progress" {
			ps = c.progress[progressToken(mm.Params)]
		}
	}
	if ps != nil && !ps.streamOK {
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			// A request to the client cannot travel in an application/json answer:
			// it takes the standalone stream when one is open, else it fails now
			// rather than wait for an answer that cannot come.
			getOpen := c.getOpen
			standalone := c.standalone // made by the GET that set getOpen
			c.mu.Unlock()
			if !getOpen {
				return fmt.Errorf("%w: the MCP client's POST accepts only application/json, so the server cannot send it the request %s; "+
					"the client must accept text/event-stream (or keep the session's GET stream open)", errRejected, req.Method)
			}
			select {
			case standalone <- m:
				return nil
			case <-c.done:
				return io.EOF
			default:
				return fmt.Errorf("%w: the session's standalone stream is not being read, so the server cannot send it the request %s", errRejected, req.Method)
			}
		}
	}
	if ps != nil && ps.rs != nil && ps.rs.reader == nil && c.getOpen && isCancellation(m) {
		// The server withdraws a request it sent on a stream nobody reads now (the
		// call was cancelled and its POST has gone): the client would only see it
		// on resuming a stream it has given up, so it takes the standalone stream.
		standalone := c.standalone // made by the GET that set getOpen
		c.mu.Unlock()
		select {
		case standalone <- m:
		case <-c.done:
			return io.EOF
		default: // the standalone stream is not being read either
		}
		return nil
	}
	if ps != nil && ps.rs != nil {
		answered := c.appendLocked(ps.rs, m)
		if answered {
			c.forgetLocked(ps)
		}
		c.mu.Unlock()
		if answered {
			c.released(ps.rs)
		}
		return nil
	}
	c.mu.Unlock()
	if ps != nil {
		select {
		case ps.out <- m:
		case <-ps.gone:
		case <-c.done:
			return io.EOF
		}
		return nil
	}
	if _, isResp := m.(*jsonrpc.Response); isResp {
		return nil // its POST has gone: nobody can receive it
	}
	c.mu.Lock()
	standalone := c.standaloneLocked()
	c.mu.Unlock()
	select {
	case standalone <- m:
	case <-c.done:
		return io.EOF
	default:
		c.h.logger.Warn("mcp: dropping a server message: no client reads the standalone stream", "session", c.id)
	}
	return nil
}

// progressToken returns the raw JSON of _meta.progressToken (requests) or
// progressToken (progress notifications) in params, "" when absent.
func progressToken(params json.RawMessage) string {
	if !bytes.Contains(params, []byte(`"progressToken"`)) {
		return ""
	}
	var p struct {
		Token json.RawMessage `json:"progressToken"`
		Meta  struct {
			Token json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	if len(p.Meta.Token) > 0 {
		return string(p.Meta.Token)
	}
	return string(p.Token)
}

// serve hands one POST's messages to the session and writes what comes back;
// order is the batch's answers in its order (nil: a single message).
func (c *streamConn) serve(w http.ResponseWriter, r *http.Request, msgs []jsonrpc.Message, calls []*jsonrpc.Request,
	order []answerSlot, jsonOK, streamOK bool) {
	batch := order != nil
	refused := refusedAnswers(order)
	ps := &postStream{out: make(chan jsonrpc.Message, len(calls)+1), gone: make(chan struct{}), streamOK: streamOK}
	defer close(ps.gone)
	resumable := len(calls) > 0 && c.resumable()
	c.mu.Lock()
	for _, req := range calls {
		_, fast := c.fast[req.ID]
		if _, dup := c.pending[req.ID]; dup || fast {
			c.mu.Unlock()
			writeJSONRPCError(w, http.StatusBadRequest, req.ID, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
				Message: fmt.Sprintf("request id %v is already in use in this session", req.ID.Raw())})
			return
		}
	}
	for _, req := range calls {
		put(&c.pending, req.ID, ps)
		if extra, ok := req.Extra.(*sdk.RequestExtra); ok {
			put(&c.related, extra, ps)
			ps.extras = append(ps.extras, extra)
		}
		if tok := progressToken(req.Params); tok != "" {
			put(&c.progress, tok, ps)
			ps.tokens = append(ps.tokens, tok)
		}
	}
	if c.id == "" {
		c.only = ps
	}
	var reader *streamReader
	if resumable {
		ps.rs, reader = c.openStreamLocked(len(calls))
	}
	c.mu.Unlock()
	unanswered := map[jsonrpc.ID]bool{}
	for _, req := range calls {
		unanswered[req.ID] = true
	}
	if ps.rs != nil {
		// The stream outlives the POST: its requests stay routed to it until they
		// are answered (Write, forgetLocked).
		defer c.detach(ps.rs, reader)
	} else {
		defer func() {
			c.mu.Lock()
			for id := range unanswered {
				if c.pending[id] == ps {
					delete(c.pending, id)
				}
			}
			c.forgetLocked(ps)
			c.mu.Unlock()
		}()
	}

	for _, m := range msgs {
		// A call waits for a free slot of the session (max_concurrent_calls), so
		// that a batch or parallel POSTs cannot run more at once.
		call, isCall := m.(*jsonrpc.Request)
		if isCall = isCall && call.IsCall(); isCall {
			if !c.acquireCall(r.Context()) {
				c.endServe(w, r, ps, unanswered)
				return
			}
			c.mu.Lock()
			put(&c.holding, call.ID, true)
			c.mu.Unlock()
		}
		select {
		case c.in <- m:
		case <-c.done:
			http.Error(w, "session closed", http.StatusNotFound)
			return
		case <-r.Context().Done():
			if isCall {
				c.mu.Lock()
				c.releaseHeldLocked(call.ID) // the session never got it
				c.mu.Unlock()
			}
			c.endServe(w, r, ps, unanswered)
			return
		}
	}
	if len(calls) == 0 {
		if len(refused) > 0 {
			writeBatchAnswers(w, order, refused)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if ps.rs != nil {
		c.serveStream(w, r, ps, reader, calls, batch, jsonOK, streamOK)
		return
	}

	var stream *eventWriter
	if !jsonOK {
		stream = newEventWriter(w)
		stream.start()
		for _, a := range refused {
			_ = stream.event(a)
		}
	}
	var answers []*jsonrpc.Response
	for len(unanswered) > 0 {
		select {
		case m := <-ps.out:
			if resp, ok := m.(*jsonrpc.Response); ok {
				delete(unanswered, resp.ID)
				if _, skip := resp.Extra.(withheld); skip {
					continue
				}
				if stream == nil {
					answers = append(answers, resp)
					continue
				}
			} else if stream == nil {
				if !streamOK {
					continue // a JSON-only client cannot receive notifications here
				}
				// A notification while the request runs: answer as an event stream
				// from now on, starting with what was already answered (batches).
				stream = newEventWriter(w)
				stream.start()
				for _, a := range append(refused, answers...) {
					_ = stream.event(a)
				}
				answers = nil
			}
			if err := stream.event(m); err != nil {
				c.cancel(unanswered)
				return
			}
		case <-r.Context().Done():
			// The client hung up: nobody will read the answers, so stop the work.
			c.cancel(unanswered)
			return
		case <-c.done:
			if stream == nil && len(answers) == 0 {
				http.Error(w, "session closed", http.StatusNotFound)
			}
			return
		}
	}
	if stream != nil {
		return
	}
	if batch {
		writeBatchAnswers(w, order, answers)
		return
	}
	if len(answers) == 0 {
		// Every request of the POST was cancelled by the client: no result is due.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	out, err := json.Marshal(toWire(answers[0]))
	if err != nil {
		http.Error(w, "encoding the answer: "+err.Error(), http.StatusInternalServerError)
		return
	}
	if c.id == "" && !c.oldProtocol {
		if status := statelessErrorStatus(answers[0]); status != 0 {
			w.WriteHeader(status)
		}
	}
	_, _ = w.Write(out)
}

// writeBatchAnswers writes a batch's answers as one JSON array in the batch's
// order: each call's answer where the call stood (none for a cancelled call), each
// invalid element's error where it stood; 202 when nothing is due.
func writeBatchAnswers(w http.ResponseWriter, order []answerSlot, answers []*jsonrpc.Response) {
	byID := make(map[jsonrpc.ID]*jsonrpc.Response, len(answers))
	for _, a := range answers {
		if a.Error == nil || a.ID.IsValid() {
			byID[a.ID] = a
		}
	}
	wires := make([]wireMessage, 0, len(order))
	for _, s := range order {
		switch a := byID[s.id]; {
		case s.err != nil:
			wires = append(wires, toWire(&jsonrpc.Response{Error: s.err}))
		case a != nil:
			wires = append(wires, toWire(a))
		}
	}
	if len(wires) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	out, err := json.Marshal(wires)
	if err != nil {
		http.Error(w, "encoding the answer: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// endServe ends a POST whose messages were not all handed to the session: the
// session closed (404), or the client went away (what it got is cancelled).
func (c *streamConn) endServe(w http.ResponseWriter, r *http.Request, ps *postStream, unanswered map[jsonrpc.ID]bool) {
	select {
	case <-c.done:
		http.Error(w, "session closed", http.StatusNotFound)
		return
	default:
	}
	if r.Context().Err() != nil {
		c.cancel(unanswered) // ids not handed over yet are ignored by the session
		c.abandon(ps)
	}
}

// peekRequestID reads the id of the single JSON-RPC request in a POST's body (up
// to the body limit), for an error answered before the request is served; the
// zero ID for other methods, batches, notifications and bodies it cannot read.
func (h *StreamableHandler) peekRequestID(w http.ResponseWriter, r *http.Request) jsonrpc.ID {
	if r.Method != http.MethodPost {
		return jsonrpc.ID{}
	}
	body := r.Body
	if h.maxBody > 0 {
		body = http.MaxBytesReader(w, r.Body, h.maxBody)
	}
	data, err := io.ReadAll(body)
	if err != nil || jsondepth.DeeperThan(data, sdkMaxJSONDepth) {
		return jsonrpc.ID{}
	}
	var msg struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(data, &msg) != nil {
		return jsonrpc.ID{}
	}
	id, err := jsonrpc.MakeID(msg.ID)
	if err != nil {
		return jsonrpc.ID{}
	}
	return id
}

// isCancellation reports whether m is a notifications/cancelled.
func isCancellation(m jsonrpc.Message) bool {
	req, ok := m.(*jsonrpc.Request)
	return ok && !req.IsCall() && req.Method == "notifications/cancelled"
}

// statelessErrorStatus is the HTTP status the 2026-07-28 protocol (SEP-2575) gives
// an error answer, 0 for 200: 404 for a method the server does not implement
// (initialize, ping and the other methods that protocol removed among them), 400
// for a request without the _meta fields it requires.
func statelessErrorStatus(m jsonrpc.Message) int {
	resp, ok := m.(*jsonrpc.Response)
	if !ok || resp.Error == nil {
		return 0
	}
	var je *jsonrpc.Error
	if !errors.As(resp.Error, &je) {
		return 0
	}
	switch {
	case je.Code == jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case je.Code == jsonrpc.CodeInvalidParams && strings.HasPrefix(je.Message, "missing or invalid _meta field"):
		return http.StatusBadRequest
	case je.Code == sdk.CodeMissingRequiredClientCapabilities: // SEP-2575: 400 on HTTP
		return http.StatusBadRequest
	}
	return 0
}

// forgetLocked drops the progress tokens and requests ps registered.
func (c *streamConn) forgetLocked(ps *postStream) {
	for _, tok := range ps.tokens {
		if c.progress[tok] == ps {
			delete(c.progress, tok)
		}
	}
	for _, extra := range ps.extras {
		if c.related[extra] == ps {
			delete(c.related, extra)
		}
	}
}

// serveStream writes the answer to a POST whose requests have a resumable stream
// (resume.go): application/json when the client accepts it and nothing but the
// answers comes, else an event stream that starts with the priming event. The
// stream outlives the POST: when the server closes it early (CloseSSEStream) or
// the client's connection breaks after the priming event, the requests keep
// running and the client resumes with GET and Last-Event-ID.
func (c *streamConn) serveStream(w http.ResponseWriter, r *http.Request, ps *postStream, rd *streamReader,
	calls []*jsonrpc.Request, batch, jsonOK, streamOK bool) {
	rs := ps.rs
	var out *eventWriter
	if !jsonOK {
		out = newEventWriter(w)
		out.start()
	}
	for {
		evs, answered, closing, wake, err := c.pull(rs, rd)
		if err != nil {
			return
		}
		if out == nil {
			// application/json so far: switch to an event stream when a message
			// other than an answer must travel, or when the server closes the
			// stream (it can only close an event stream).
			switchNow := false
			for _, e := range evs {
				if !e.resp && e.data != nil {
					switchNow = true
				}
			}
			if streamOK && (switchNow || closing >= 0) {
				out = newEventWriter(w)
				out.start()
				continue
			}
			if answered {
				c.writeJSONAnswers(w, evs, batch)
				if len(evs) > 0 {
					c.advance(rs, rd, evs[len(evs)-1].idx)
				}
				return
			}
		} else {
			for _, e := range evs {
				if err := out.streamEvent(rs.id, e); err != nil {
					return // the client resumes from the last id it got
				}
				c.advance(rs, rd, e.idx)
			}
			if len(evs) > 0 {
				continue
			}
			if answered {
				return
			}
			if closing >= 0 {
				out.retryEvent(closing)
				return
			}
		}
		select {
		case <-wake:
		case <-r.Context().Done():
			if out == nil {
				// No event id reached the client: it cannot resume, so the work stops.
				c.cancelOpen(ps, calls)
				c.abandon(ps)
			}
			return
		case <-c.done:
			if out == nil {
				http.Error(w, "session closed", http.StatusNotFound)
			}
			return
		}
	}
}

// writeJSONAnswers writes the responses among evs as the POST's application/json
// answer (an array for a batch); 202 when every request was cancelled.
func (c *streamConn) writeJSONAnswers(w http.ResponseWriter, evs []replayEvent, batch bool) {
	var answers [][]byte
	for _, e := range evs {
		if e.resp {
			answers = append(answers, e.data)
		}
	}
	if len(answers) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if !batch {
		_, _ = w.Write(answers[0])
		return
	}
	_, _ = w.Write(append(append([]byte{'['}, bytes.Join(answers, []byte{','})...), ']'))
}

// abandon forgets the resumable stream of a POST that ended before the client got
// any of its event ids: nobody can resume it, so it neither keeps its events nor
// holds the session.
func (c *streamConn) abandon(ps *postStream) {
	if ps.rs == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, p := range c.pending {
		if p == ps {
			delete(c.pending, id)
		}
	}
	c.forgetLocked(ps)
	ps.rs.open = 0
	for i, s := range c.replay.streams {
		if s == ps.rs {
			c.replay.drop(i)
			break
		}
	}
}

// cancelOpen cancels the requests of ps not answered yet.
func (c *streamConn) cancelOpen(ps *postStream, calls []*jsonrpc.Request) {
	open := map[jsonrpc.ID]bool{}
	c.mu.Lock()
	for _, req := range calls {
		if c.pending[req.ID] == ps {
			open[req.ID] = true
		}
	}
	c.mu.Unlock()
	c.cancel(open)
}

// cancel tells the session that requests whose POST has gone are cancelled.
func (c *streamConn) cancel(ids map[jsonrpc.ID]bool) {
	for id := range ids {
		params, err := json.Marshal(map[string]any{"requestId": id.Raw(), "reason": "the HTTP request carrying it ended"})
		if err != nil {
			continue
		}
		select {
		case c.in <- &jsonrpc.Request{Method: "notifications/cancelled", Params: params}:
		case <-c.done:
			return
		}
	}
}

// withheld marks, in Response.Extra, the result of a request the client cancelled:
// serve counts it as answered and sends nothing.
type withheld struct{}

// eventWriter writes JSON-RPC messages as server-sent events.
type eventWriter struct {
	w     http.ResponseWriter
	flush func()
}

func newEventWriter(w http.ResponseWriter) *eventWriter {
	ew := &eventWriter{w: w, flush: func() {}}
	if f, ok := w.(http.Flusher); ok {
		ew.flush = f.Flush
	}
	return ew
}

func (e *eventWriter) start() {
	e.w.Header().Set("Content-Type", "text/event-stream")
	e.w.Header().Set("Cache-Control", "no-cache")
	e.w.WriteHeader(http.StatusOK)
	e.flush()
}

func (e *eventWriter) event(m jsonrpc.Message) error {
	data, err := json.Marshal(toWire(m))
	if err != nil {
		return err
	}
	// No event ids: these streams cannot be resumed, so clients must not be
	// invited to reconnect with Last-Event-ID.
	var b bytes.Buffer
	b.Grow(len(data) + 24)
	b.WriteString("event: message\ndata: ")
	b.Write(data)
	b.WriteString("\n\n")
	if _, err := e.w.Write(b.Bytes()); err != nil {
		return err
	}
	e.flush()
	return nil
}

// wireMessage is a JSON-RPC 2.0 message as it travels.
type wireMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *jsonrpc.Error  `json:"error,omitempty"`
}

// toWire converts an outgoing message. A response carries exactly one of result
// and error; errors that are not JSON-RPC errors become internal errors.
func toWire(m jsonrpc.Message) wireMessage {
	w := wireMessage{JSONRPC: "2.0"}
	switch m := m.(type) {
	case *jsonrpc.Request:
		w.Method, w.Params = m.Method, m.Params
		if m.IsCall() {
			w.ID = encodeID(m.ID)
		}
	case *jsonrpc.Response:
		w.ID = encodeID(m.ID)
		if m.Error != nil {
			var we *jsonrpc.Error
			if !errors.As(m.Error, &we) {
				we = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: m.Error.Error()}
			}
			w.Error = plainError(we)
		} else {
			w.Result = m.Result
			if len(w.Result) == 0 {
				w.Result = json.RawMessage("null")
			}
		}
	}
	return w
}

func encodeID(id jsonrpc.ID) json.RawMessage {
	switch v := id.Raw().(type) {
	case int64:
		return strconv.AppendInt(nil, v, 10)
	case string:
		b, _ := json.Marshal(v)
		return b
	}
	return json.RawMessage("null")
}

func writeJSONRPCError(w http.ResponseWriter, status int, id jsonrpc.ID, e *jsonrpc.Error) {
	out, err := json.Marshal(toWire(&jsonrpc.Response{ID: id, Error: e}))
	if err != nil {
		http.Error(w, e.Message, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(out)
}
