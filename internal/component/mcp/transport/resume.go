package transport

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Resumable event streams (MCP 2025-11-25 "Resumability and redelivery", SEP-1699).
//
// A session that negotiated 2025-11-25 (the first revision with SEP-1699, and the
// last before 2026-07-28 removed it) gets resumable POST streams: each POST with
// requests opens a logical stream with an id of its own, and every event written
// on it carries the id <stream>_<index>, like the go-sdk's. The first event, sent as
// soon as the answer turns into an event stream, is the priming event: an id, a
// retry: hint and empty data, so that the client can reconnect even before the
// first message. What the session writes for the stream's requests is kept in the
// session's replay buffer; when the stream ends before its answers (the client's
// connection broke, or the server closed it: RequestExtra.CloseSSEStream), the
// client resumes with GET and Last-Event-ID, gets the events after that id
// replayed, and then the rest as they come, until every request of the stream is
// answered.
//
// The buffer is per session (it goes with the session) and bounded: at most
// replayMaxBytes of event data and replayMaxStreams streams, and all sessions
// together at most their ReplayBudget (replay_budget.go). Over a bound the oldest
// answered streams go first, then the oldest events; an event an attached reader
// has not written yet is never dropped. An event that does not fit even so is not
// kept: an attached reader writes it and then forgets it (with what came before
// it), and without a reader it is forgotten at once. A Last-Event-ID whose events
// are gone, that names a stream of another session, or an index never issued is
// refused with 400 and nothing is replayed; the client sends its request again.
//
// The standalone GET stream carries no event ids: its messages are not kept, so it
// cannot be resumed, and clients are not invited to try.

const (
	// replayMaxBytes bounds the event data a session keeps for resumption.
	replayMaxBytes = 1 << 20
	// replayMaxStreams bounds the streams a session keeps for resumption.
	replayMaxStreams = 32
	// retryHint is the reconnection delay (SSE retry:) sent with priming events.
	retryHint = time.Second
	// resumableProtocol is the first protocol with priming events and polling.
	resumableProtocol = "2025-11-25"
	lastEventIDHeader = "Last-Event-ID"
)

// errRejected has the code of the go-sdk's jsonrpc2.ErrRejected: a Write error
// that matches it fails the one message, not the whole connection.
var errRejected = &jsonrpc.Error{Code: -32005, Message: "rejected by transport"}

// replayEvent is one event of a stream: its index, the message as it travels, and
// what it is. Index 0 of every stream is the priming event (no data).
type replayEvent struct {
	idx  int
	data []byte
	resp bool
	// kept: data counts in the session's bytes and the budget. An event that did
	// not fit is held only until the attached reader has written it.
	kept bool
}

// replayStream is one logical stream of a session. Its fields are guarded by the
// session's replay buffer lock.
type replayStream struct {
	id     string
	events []replayEvent // indices first..next-1, oldest first
	first  int           // index of events[0] (when events is empty: next)
	next   int           // index of the next event
	open   int           // requests of the stream not answered yet

	// reader is the attached HTTP response (the POST, or a GET resuming it): its
	// cursor is the last index it wrote; nil when none is attached.
	reader *streamReader
	// wake is closed (and replaced) whenever an event is added or the stream is
	// asked to close, to wake the attached reader.
	wake chan struct{}
	// hold: the stream keeps the session busy after its POST ended (see detach).
	hold bool
	// seen is the last index any reader wrote to a client.
	seen int
}

// streamReader is the HTTP response that currently delivers a stream.
type streamReader struct {
	cursor  int           // last index written (-1: none)
	closing time.Duration // >= 0 once the server asked to close the stream: the retry hint (0: none)
	closeAt int           // with closing: the stream's next index when it was asked, the first event this reader leaves to the resumed stream
}

// replayBuffer holds a session's resumable streams.
type replayBuffer struct {
	streams []*replayStream // oldest first
	bytes   int             // data of the kept events
	budget  *ReplayBudget   // shared with the other sessions
}

// limit is the event data one session may keep: replayMaxBytes, or less when the
// whole budget is smaller.
func (b *replayBuffer) limit() int {
	return int(min(int64(replayMaxBytes), b.budget.Limit()))
}

// keep makes room for an event of n bytes within the session's limit and the
// budget, evicting what trimLocked would; false when it does not fit.
func (b *replayBuffer) keep(n int) bool {
	if n > b.limit() {
		return false
	}
	for b.bytes+n > b.limit() {
		if !b.evictOne() {
			return false
		}
	}
	for !b.budget.reserve(int64(n)) {
		if !b.evictOne() {
			return false
		}
	}
	b.bytes += n
	return true
}

// uncount gives back what a kept event held.
func (b *replayBuffer) uncount(e replayEvent) {
	if e.kept && len(e.data) > 0 {
		b.bytes -= len(e.data)
		b.budget.release(int64(len(e.data)))
	}
}

// forgetThrough drops the events of s up to index idx: a resume from before
// them is refused.
func (b *replayBuffer) forgetThrough(s *replayStream, idx int) {
	for len(s.events) > 0 && s.events[0].idx <= idx {
		b.dropHead(s)
	}
	if s.first <= idx {
		s.first = idx + 1
	}
}

// dropHead drops the oldest event of s.
func (b *replayBuffer) dropHead(s *replayStream) {
	b.uncount(s.events[0])
	s.events[0] = replayEvent{}
	s.events = s.events[1:]
	s.first++
}

// evictOne drops one answered stream, or else the oldest event no attached reader
// still has to write; false when nothing can go.
func (b *replayBuffer) evictOne() bool {
	if i := b.victim(); i >= 0 {
		b.drop(i)
		return true
	}
	for _, s := range b.streams {
		if len(s.events) > 0 && (s.reader == nil || s.events[0].idx <= s.reader.cursor) {
			b.dropHead(s)
			return true
		}
	}
	return false
}

// clear forgets every stream (the session ended) and gives its bytes back.
func (b *replayBuffer) clear() {
	for _, s := range b.streams {
		for len(s.events) > 0 {
			b.dropHead(s)
		}
		s.first = s.next
	}
	b.streams = nil
}

func (b *replayBuffer) find(id string) *replayStream {
	for _, s := range b.streams {
		if s.id == id {
			return s
		}
	}
	return nil
}

// trimLocked enforces the bounds: first whole answered streams without a reader,
// those whose events were all written to a client before the others, oldest
// first (but never the newest stream: its client may be about to resume it); then
// the oldest events no attached reader still has to write. Streams with requests
// still running are never dropped whole.
func (b *replayBuffer) trimLocked() {
	for len(b.streams) > replayMaxStreams {
		i := b.victim()
		if i < 0 {
			break
		}
		b.drop(i)
	}
	for b.bytes > b.limit() && b.evictOne() {
	}
}

// victim picks the stream trimLocked drops next, -1 for none.
func (b *replayBuffer) victim() int {
	fallback := -1
	for j, s := range b.streams {
		if s.open > 0 || s.reader != nil {
			continue
		}
		if s.seen >= s.next-1 {
			return j
		}
		if fallback < 0 && j != len(b.streams)-1 {
			fallback = j
		}
	}
	return fallback
}

func (b *replayBuffer) drop(i int) {
	s := b.streams[i]
	for len(s.events) > 0 {
		b.dropHead(s)
	}
	b.streams = append(b.streams[:i], b.streams[i+1:]...)
}

func (s *replayStream) wakeLocked() {
	close(s.wake)
	s.wake = make(chan struct{})
}

// shortID is id as error messages quote it: at most 80 bytes, so that a huge
// header is not sent back whole.
func shortID(id string) string {
	const max = 80
	if len(id) <= max {
		return id
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(id[cut]) {
		cut--
	}
	return id[:cut] + "…"
}

// formatEventID and parseEventID are the go-sdk's event id format:
// <stream id>_<index>.
func formatEventID(stream string, idx int) string { return stream + "_" + strconv.Itoa(idx) }

func parseEventID(id string) (stream string, idx int, ok bool) {
	stream, n, ok := strings.Cut(id, "_")
	if !ok || stream == "" || strings.Contains(n, "_") {
		return "", 0, false
	}
	idx, err := strconv.Atoi(n)
	if err != nil || idx < 0 {
		return "", 0, false
	}
	return stream, idx, true
}

// resumable reports whether the session's POST streams are resumable: a stateful
// session that negotiated 2025-11-25 (SEP-1699) and not the stateless protocol,
// which removed it.
func (c *streamConn) resumable() bool {
	if c.id == "" || c.session == nil {
		return false
	}
	ip := c.session.InitializeParams()
	return ip != nil && ResumableProtocol(ip.ProtocolVersion)
}

// ResumableProtocol reports whether sessions of protocol version v get resumable
// POST streams from the Streamable HTTP handler: the stream of a call then
// outlives its POST, and the handler cancels the call itself only when the client
// cannot resume (no event id reached it).
func ResumableProtocol(v string) bool {
	return v >= resumableProtocol && v < statelessProtocol
}

// openStreamLocked starts a resumable stream for a POST with open requests, its
// priming event (index 0) in place, and attaches the POST as its reader.
func (c *streamConn) openStreamLocked(open int) (*replayStream, *streamReader) {
	s := &replayStream{id: newStreamID(), open: open, wake: make(chan struct{}), events: []replayEvent{{idx: 0, kept: true}}, next: 1, seen: -1}
	r := &streamReader{cursor: -1, closing: -1}
	s.reader = r
	c.replay.streams = append(c.replay.streams, s)
	c.replay.trimLocked()
	return s, r
}

// newStreamID returns a stream id: 16 random base32 characters (no "_").
func newStreamID() string { return rand.Text()[:16] }

// appendLocked adds m to s. A response answers one of the stream's requests;
// withheld marks the result of a cancelled request, which is counted but not sent.
// It reports whether the stream has just been fully answered.
func (c *streamConn) appendLocked(s *replayStream, m jsonrpc.Message) (answered bool) {
	resp, isResp := m.(*jsonrpc.Response)
	if isResp {
		s.open--
		answered = s.open == 0
		if _, skip := resp.Extra.(withheld); skip {
			s.wakeLocked()
			return answered
		}
	}
	data, err := json.Marshal(toWire(m))
	if err != nil {
		c.h.logger.Error("mcp: cannot encode a message", "session", c.id, "error", err)
		s.wakeLocked()
		return answered
	}
	ev := replayEvent{idx: s.next, data: data, resp: isResp, kept: c.replay.keep(len(data))}
	s.next++
	if !ev.kept {
		c.replay.budget.dropped.Add(1)
		c.h.logger.Debug("mcp: an event is too large to keep for resumption", "session", c.id, "bytes", len(data),
			"session_limit", c.replay.limit(), "budget_used", c.replay.budget.Used())
	}
	s.events = append(s.events, ev)
	if !ev.kept && s.reader == nil {
		// Nobody will write it: the stream cannot be resumed from before it.
		c.replay.forgetThrough(s, ev.idx)
	}
	c.replay.trimLocked()
	s.wakeLocked()
	return answered
}

// closeStream asks the reader attached to the stream of request id to end its
// response (the server polls: RequestExtra.CloseSSEStream), with retry as the
// client's reconnection delay (0: none). A stream that cannot be resumed, or a
// request answered already, is left alone.
func (c *streamConn) closeStream(id jsonrpc.ID, retry time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps := c.pending[id]
	if ps == nil || ps.rs == nil || ps.rs.reader == nil || ps.rs.reader.closing >= 0 {
		return
	}
	if retry < 0 {
		retry = 0
	}
	ps.rs.reader.closing = retry
	ps.rs.reader.closeAt = ps.rs.next
	ps.rs.wakeLocked()
}

// errStreamGap: the events a reader needs next are no longer kept.
var errStreamGap = errors.New("the events after this id are no longer kept")

// pull returns the events of s after the reader's cursor (up to where the server
// closed the reader's stream), whether s is fully answered and all of it is for
// this reader, whether the server asked to close the reader (and the retry hint), and
// the channel that wakes the reader when any of that changes.
func (c *streamConn) pull(s *replayStream, r *streamReader) (evs []replayEvent, answered bool, closing time.Duration, wake chan struct{}, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.cursor+1 < s.first {
		return nil, false, -1, nil, errStreamGap
	}
	answered = s.open == 0
	for _, e := range s.events {
		if r.closing >= 0 && e.idx >= r.closeAt {
			// Written after the server closed this stream: the client gets it when it
			// resumes, so the close is where the server put it, whatever the timing.
			answered = false
			break
		}
		if e.idx > r.cursor {
			evs = append(evs, e)
		}
	}
	return evs, answered, r.closing, s.wake, nil
}

// advance records that r wrote the events of s up to idx.
func (c *streamConn) advance(s *replayStream, r *streamReader, idx int) {
	c.mu.Lock()
	if idx > r.cursor {
		r.cursor = idx
	}
	if idx > s.seen {
		s.seen = idx
	}
	// An event that was not kept lives only until written: forget it, and what came
	// before it, which nobody can resume from now.
	for i := len(s.events) - 1; i >= 0; i-- {
		if e := s.events[i]; !e.kept && e.idx <= idx {
			c.replay.forgetThrough(s, e.idx)
			break
		}
	}
	c.replay.trimLocked()
	c.mu.Unlock()
}

// detach ends r's hold on s. When requests of s are still running, the stream
// keeps the session busy (its slot is not evicted nor expired) until they are
// answered or the session ends.
func (c *streamConn) detach(s *replayStream, r *streamReader) {
	c.mu.Lock()
	if s.reader == r {
		s.reader = nil
	}
	hold := s.open > 0 && !s.hold && !c.closed
	if hold {
		s.hold = true
		c.active++
	}
	c.mu.Unlock()
	if hold && c.slot != nil && !c.slot.begin() {
		c.mu.Lock()
		s.hold = false
		c.active--
		c.mu.Unlock()
	}
}

// released is called once s is answered: a hold taken by detach ends.
func (c *streamConn) released(s *replayStream) {
	c.mu.Lock()
	hold := s.hold
	s.hold = false
	c.mu.Unlock()
	if hold {
		c.end()
	}
}

// streamEvent writes one event of a resumable stream; the priming event (no data)
// carries the retry hint.
func (e *eventWriter) streamEvent(stream string, ev replayEvent) error {
	var b strings.Builder
	b.Grow(len(ev.data) + 64)
	if ev.data != nil {
		b.WriteString("event: message\n")
	}
	b.WriteString("id: ")
	b.WriteString(formatEventID(stream, ev.idx))
	b.WriteByte('\n')
	if ev.data == nil {
		b.WriteString("retry: ")
		b.WriteString(strconv.FormatInt(retryHint.Milliseconds(), 10))
		b.WriteByte('\n')
	}
	b.WriteString("data: ")
	b.Write(ev.data)
	b.WriteString("\n\n")
	if _, err := e.w.Write([]byte(b.String())); err != nil {
		return err
	}
	e.flush()
	return nil
}

// retryEvent tells the client how long to wait before it reconnects, as the
// server closes the stream.
func (e *eventWriter) retryEvent(retry time.Duration) {
	if retry <= 0 {
		return
	}
	_, _ = fmt.Fprintf(e.w, "retry: %d\n\n", retry.Milliseconds())
	e.flush()
}

// resume serves a GET with Last-Event-ID: the stream it names, of this session,
// from the event after it.
func (h *StreamableHandler) resume(w http.ResponseWriter, r *http.Request, c *streamConn, lastID string) {
	streamID, idx, ok := parseEventID(lastID)
	lastID = shortID(lastID) // as the answers quote it
	if !ok {
		http.Error(w, fmt.Sprintf("Bad Request: malformed %s %q", lastEventIDHeader, lastID), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	s := c.replay.find(streamID)
	var msg string
	status := http.StatusBadRequest
	switch {
	case s == nil || idx >= s.next:
		// Unknown here, another session's, or never issued: the same answer for all,
		// so that an id reveals nothing of other sessions.
		msg = fmt.Sprintf("Bad Request: %s %q names no event of this session's streams", lastEventIDHeader, lastID)
	case idx+1 < s.first:
		msg = fmt.Sprintf("Bad Request: the events after %s %q are no longer kept (a session keeps at most %d bytes of events, "+
			"all sessions together %d); send the request again", lastEventIDHeader, lastID, c.replay.limit(), c.replay.budget.Limit())
	case s.reader != nil:
		status, msg = http.StatusConflict, "Conflict: this stream is being delivered on another connection"
	}
	var rd *streamReader
	if msg == "" {
		rd = &streamReader{cursor: idx, closing: -1}
		s.reader = rd
	}
	c.mu.Unlock()
	if msg != "" {
		http.Error(w, msg, status)
		return
	}
	defer c.detach(s, rd)
	out := newEventWriter(w)
	out.start()
	c.deliver(r, s, rd, out)
}

// deliver writes the events of s to out from the reader's cursor on, until every
// request of s is answered and written, the server closes the stream, the client
// goes away or the session ends.
func (c *streamConn) deliver(r *http.Request, s *replayStream, rd *streamReader, out *eventWriter) {
	for {
		evs, answered, closing, wake, err := c.pull(s, rd)
		if err != nil {
			return // the client reconnects and is told what is gone
		}
		for _, e := range evs {
			if err := out.streamEvent(s.id, e); err != nil {
				return
			}
			c.advance(s, rd, e.idx)
		}
		if answered && len(evs) == 0 {
			return
		}
		if closing >= 0 && len(evs) == 0 {
			out.retryEvent(closing)
			return
		}
		if len(evs) > 0 {
			continue
		}
		select {
		case <-wake:
		case <-r.Context().Done():
			return
		case <-c.done:
			return
		}
	}
}
