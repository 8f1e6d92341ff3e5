package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	sdkjson "github.com/segmentio/encoding/json"
)

// Helix's stdio transport: newline-delimited JSON-RPC on stdin/stdout, served to the
// go-sdk session through its public Transport/Connection interfaces, like
// streamable.go does for HTTP.
//
// The go-sdk's own stdio transport (sdk.IOTransport) ends the session — and with it
// a subprocess server — at the first line it cannot decode (`this is not json`,
// `42`, `[]`, a trailing comma) and at a batch in a session of protocol 2025-06-18
// or later; and it reads integer ids through float64. This one answers such a line
// itself and keeps serving:
//
//   - not JSON: -32700 Parse error, id null;
//   - JSON that is not a JSON-RPC message (`42`, `[]`, `{}`), or a request with
//     "id": null or without id (a tools/call that would otherwise be taken for a
//     notification and never answered): -32600 Invalid Request, id null;
//   - a batch in a session that negotiated 2025-06-18 or later: -32600 for every
//     request of the batch (by its id), none of them runs;
//   - a line longer than stdioMaxLine: -32700, and the line is skipped.
//
// Batches of earlier sessions are answered as one array, as the go-sdk does.
// Integer ids are echoed exactly (jsonrpc_decode.go). After notifications/cancelled
// for a running request no result is written for it. Results of sessions that
// negotiated a protocol before 2026-07-28 carry none of that version's fields
// (stripNewProtocolFields).

// stdioMaxLine bounds one input line, as the go-sdk's DefaultMaxLineLength does.
const stdioMaxLine = sdk.DefaultMaxLineLength

// protocolNoBatches is the first protocol version without JSON-RPC batches.
const protocolNoBatches = "2025-06-18"

type StdioTransport struct{ c *stdioConn }

func (t StdioTransport) Connect(context.Context) (sdk.Connection, error) {
	t.c.start()
	return t.c, nil
}

// stdioItem is what the read loop hands to Read: a message, or the error that
// ended the input.
type stdioItem struct {
	msg jsonrpc.Message
	err error
}

type stdioConn struct {
	in     io.Reader
	closer io.Closer // the input, when it can be closed (to interrupt a pipe at stop)
	out    io.Writer
	drain  *StdioDrain // nil in tests that use plain readers
	logger *slog.Logger

	startOnce sync.Once
	incoming  chan stdioItem
	closed    chan struct{}
	closeOnce sync.Once

	writeMu sync.Mutex

	mu        sync.Mutex
	version   string // negotiated protocol version, from the answer to initialize
	initID    *jsonrpc.ID
	initDone  chan struct{}            // closed when the answer to initialize is written
	inflight  map[jsonrpc.ID]bool      // requests handed to the session, not yet answered
	cancelled map[jsonrpc.ID]bool      // inflight requests the client cancelled
	batches   map[jsonrpc.ID]batchSlot // requests of batches still being answered
	// newEra: inflight requests of the 2026-07-28 protocol, whose results keep
	// that version's fields even after a legacy initialize on the same pipe.
	newEra map[jsonrpc.ID]bool
}

// stdioBatch collects the answers of one batch; it is written as one array when
// every request of the batch has its answer.
type stdioBatch struct {
	answers []*jsonrpc.Response // in batch order; nil until answered
	skip    []bool              // cancelled requests: no answer
	left    int
}

// batchSlot is where a request's answer goes.
type batchSlot struct {
	b *stdioBatch
	i int
}

var _ sdk.Connection = (*stdioConn)(nil)

// NewStdioTransport serves the go-sdk session over in and out. orig is the input as
// configured: when it can be closed, closing the connection closes it.
func NewStdioTransport(drain *StdioDrain, in io.Reader, orig io.Reader, out io.Writer, logger *slog.Logger) StdioTransport {
	c := &stdioConn{in: in, out: out, drain: drain, logger: logger, incoming: make(chan stdioItem),
		closed: make(chan struct{}), inflight: map[jsonrpc.ID]bool{}, cancelled: map[jsonrpc.ID]bool{},
		batches: map[jsonrpc.ID]batchSlot{}, newEra: map[jsonrpc.ID]bool{}}
	if cl, ok := orig.(io.Closer); ok {
		c.closer = cl
	}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	return StdioTransport{c: c}
}

func (c *stdioConn) SessionID() string { return "" }

func (c *stdioConn) start() { c.startOnce.Do(func() { go c.readLoop() }) }

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case it := <-c.incoming:
		return it.msg, it.err
	case <-c.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *stdioConn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		close(c.closed)
		if c.closer != nil {
			err = c.closer.Close()
		}
	})
	return err
}

// deliver hands a message (or the final error) to Read; false once closed.
func (c *stdioConn) deliver(it stdioItem) bool {
	select {
	case c.incoming <- it:
		return true
	case <-c.closed:
		return false
	}
}

func (c *stdioConn) readLoop() {
	r := bufio.NewReaderSize(c.in, 64<<10)
	for {
		line, tooLong, err := readLine(r, stdioMaxLine)
		if tooLong {
			c.logger.Warn("mcp stdio: input line too long, skipped", "limit", stdioMaxLine)
			c.writeError(&jsonrpc.Error{Code: jsonrpc.CodeParseError,
				Message: fmt.Sprintf("Parse error: message exceeds %d bytes", stdioMaxLine)})
		} else if len(bytes.TrimSpace(line)) > 0 && !c.handleLine(line) {
			return
		}
		if err != nil {
			c.deliver(stdioItem{err: err})
			return
		}
	}
}

// readLine returns the next line without its newline (a fresh slice), or tooLong
// when it exceeds max (the line is consumed).
func readLine(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > max+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			return nil, true, err
		}
		return bytes.TrimSuffix(line, []byte("\n")), false, err
	}
}

// handleLine decodes one line and hands its messages to the session, or answers it
// with an error. false when the connection closed meanwhile.
func (c *stdioConn) handleLine(line []byte) bool {
	line = bytes.TrimSpace(line)
	dec, err := decodeBody(line)
	if err == nil && !jsonValid(line) {
		// The go-sdk's decoder ignores what follows the first value; a line must hold
		// exactly one message (or batch).
		err = fmt.Errorf("%w: data after the JSON-RPC message", errParse)
	}
	if err != nil {
		c.refuseLine(line, parseErrorResponse(err))
		return true
	}
	if dec.batch {
		return c.handleBatch(line, dec)
	}
	m := dec.msgs[0]
	if e := invalidRequest(m, len(dec.nullID) > 0); e != nil {
		c.refuseLine(line, e)
		return true
	}
	if e := versionError(m); e != nil {
		c.logger.Debug("mcp stdio: request refused", "error", e.Error)
		_ = c.writeLine(e)
		c.forgetLine(line)
		return true
	}
	c.noteIncoming(m)
	return c.deliver(stdioItem{msg: m})
}

func (c *stdioConn) handleBatch(line []byte, dec decodedBody) bool {
	// Whether batches are allowed depends on the version initialize negotiates: a
	// batch that follows initialize at once waits for its answer.
	c.mu.Lock()
	initDone := c.initDone
	c.mu.Unlock()
	if initDone != nil {
		select {
		case <-initDone:
		case <-c.closed:
			return false
		}
	}
	c.mu.Lock()
	version := c.version
	c.mu.Unlock()
	var calls []*jsonrpc.Request
	seen := map[jsonrpc.ID]bool{}
	dup := false
	for _, m := range dec.msgs {
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			calls = append(calls, req)
			dup = dup || seen[req.ID]
			seen[req.ID] = true
		}
	}
	var refusal *jsonrpc.Error
	switch {
	case version >= protocolNoBatches:
		refusal = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: fmt.Sprintf("Invalid Request: JSON-RPC batches are not supported from protocol %s on (this session: %s)", protocolNoBatches, version)}
	case dup:
		refusal = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request: the batch uses a request id twice"}
	default:
		c.mu.Lock()
		for _, req := range calls {
			if c.inflight[req.ID] {
				refusal = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
					Message: fmt.Sprintf("Invalid Request: request id %v is already in use", req.ID.Raw())}
			}
		}
		c.mu.Unlock()
	}
	if refusal != nil {
		// Every request of the batch gets the refusal under its own id, so that a
		// client waiting for them does not wait forever.
		answers := make([]*jsonrpc.Response, 0, len(calls))
		for _, req := range calls {
			answers = append(answers, &jsonrpc.Response{ID: req.ID, Error: refusal})
		}
		if len(answers) == 0 {
			answers = append(answers, &jsonrpc.Response{Error: refusal})
		}
		_ = c.writeBatch(answers)
		c.forgetLine(line)
		return true
	}

	b := &stdioBatch{}
	var pass []jsonrpc.Message
	refusedAt := make(map[int]*jsonrpc.Error, len(dec.refused))
	for _, r := range dec.refused {
		refusedAt[r.at] = r.err
	}
	c.mu.Lock()
	i := 0
	for at := range dec.size {
		if e, ok := refusedAt[at]; ok {
			// Not a JSON-RPC message: its error where it stood.
			b.answers = append(b.answers, &jsonrpc.Response{Error: e})
			continue
		}
		m := dec.msgs[i]
		i++
		if e := invalidRequest(m, containsInt(dec.nullID, i-1)); e != nil {
			b.answers = append(b.answers, &jsonrpc.Response{Error: e})
			continue
		}
		if e := versionError(m); e != nil {
			b.answers = append(b.answers, e)
			continue
		}
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			c.batches[req.ID] = batchSlot{b: b, i: len(b.answers)}
			b.answers = append(b.answers, nil)
			b.left++
		}
		pass = append(pass, m)
	}
	b.skip = make([]bool, len(b.answers))
	c.mu.Unlock()
	if b.left == 0 && len(b.answers) > 0 {
		_ = c.writeBatch(b.answers) // only refusals (the notifications need no answer)
	}
	for _, m := range pass {
		c.noteIncoming(m)
		if !c.deliver(stdioItem{msg: m}) {
			return false
		}
	}
	return true
}

// noteIncoming records calls in flight (for cancellation), the initialize request
// (its answer names the negotiated version) and cancellations.
func (c *stdioConn) noteIncoming(m jsonrpc.Message) {
	req, ok := m.(*jsonrpc.Request)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if req.IsCall() {
		c.inflight[req.ID] = true
		if isNewEra(req) {
			c.newEra[req.ID] = true
		}
		if req.Method == "initialize" && c.initID == nil {
			id := req.ID
			c.initID = &id
			c.initDone = make(chan struct{})
		}
		return
	}
	if req.Method == "notifications/cancelled" {
		if id, ok := cancelledID(req.Params); ok && c.inflight[id] {
			c.cancelled[id] = true
		}
	}
}

// cancelledID reads the requestId of notifications/cancelled params, exactly.
func cancelledID(params json.RawMessage) (jsonrpc.ID, bool) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return jsonrpc.ID{}, false
	}
	id, err := decodeID(p.RequestID)
	return id, err == nil && id.IsValid()
}

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case <-c.closed:
		return io.EOF
	default:
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return c.writeLine(msg)
	}
	c.mu.Lock()
	delete(c.inflight, resp.ID)
	newEra := c.newEra[resp.ID]
	delete(c.newEra, resp.ID)
	if c.initID != nil && *c.initID == resp.ID {
		c.initID = nil
		c.version = negotiatedVersion(resp.Result)
		defer close(c.initDone) // after the answer is written (deferred calls run last in, first out)
	}
	version := c.version
	if c.cancelled[resp.ID] {
		// The client cancelled it: it expects no answer (MCP cancellation).
		delete(c.cancelled, resp.ID)
		c.mu.Unlock()
		if answers := c.takeBatchSlot(resp.ID, nil); len(answers) > 0 {
			_ = c.writeBatch(answers)
		}
		if c.drain != nil {
			c.drain.forgetID(encodeID(resp.ID))
		}
		return nil
	}
	c.mu.Unlock()
	if version != "" && version < statelessProtocol && !newEra {
		resp = stripNewProtocolFields(resp)
	}
	if c.inBatch(resp.ID) {
		if answers := c.takeBatchSlot(resp.ID, resp); len(answers) > 0 {
			return c.writeBatch(answers)
		}
		return nil
	}
	return c.writeLine(resp)
}

func (c *stdioConn) inBatch(id jsonrpc.ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.batches[id]
	return ok
}

// takeBatchSlot puts resp (nil: no answer, the request was cancelled) in its
// batch's slot; when that completes the batch it returns the answers to write.
func (c *stdioConn) takeBatchSlot(id jsonrpc.ID, resp *jsonrpc.Response) []*jsonrpc.Response {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.batches[id]
	if !ok {
		return nil
	}
	delete(c.batches, id)
	if resp == nil {
		s.b.skip[s.i] = true
	} else {
		s.b.answers[s.i] = resp
	}
	s.b.left--
	if s.b.left > 0 {
		return nil
	}
	var out []*jsonrpc.Response
	for i, a := range s.b.answers {
		if !s.b.skip[i] {
			out = append(out, a)
		}
	}
	return out
}

// negotiatedVersion reads protocolVersion from an initialize result.
func negotiatedVersion(result json.RawMessage) string {
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(result, &r)
	return r.ProtocolVersion
}

// versionError is the answer to a request naming an unsupported protocol
// version (versions.go), nil for other messages.
func versionError(m jsonrpc.Message) *jsonrpc.Response {
	if req, ok := m.(*jsonrpc.Request); ok {
		if _, e := requestEra(req); e != nil {
			return &jsonrpc.Response{ID: req.ID, Error: e}
		}
	}
	return nil
}

// refuseLine answers a line that is not served with e (id null) and tells the
// drain that the line's requests are answered.
func (c *stdioConn) refuseLine(line []byte, e *jsonrpc.Error) {
	c.logger.Debug("mcp stdio: input line refused", "code", e.Code, "error", e.Message)
	c.writeError(e)
	c.forgetLine(line)
}

func (c *stdioConn) forgetLine(line []byte) {
	if c.drain != nil {
		c.drain.forgetLine(line)
	}
}

func (c *stdioConn) writeError(e *jsonrpc.Error) {
	_ = c.writeLine(&jsonrpc.Response{Error: e})
}

func (c *stdioConn) writeLine(m jsonrpc.Message) error {
	data, err := json.Marshal(toWire(m))
	if err != nil {
		return err
	}
	return c.writeRaw(data)
}

func (c *stdioConn) writeBatch(answers []*jsonrpc.Response) error {
	wires := make([]wireMessage, len(answers))
	for i, a := range answers {
		wires[i] = toWire(a)
	}
	data, err := json.Marshal(wires)
	if err != nil {
		return err
	}
	return c.writeRaw(data)
}

// writeRaw writes one line in one Write, so that lines never interleave.
func (c *stdioConn) writeRaw(data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.out.Write(append(data, '\n'))
	return err
}

// jsonValid reports whether data is exactly one JSON value (by the go-sdk's
// parser).
func jsonValid(data []byte) bool { return sdkjson.Valid(data) }
