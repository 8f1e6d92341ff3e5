package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/internal/jsondepth"
	"github.com/arvenza/helix/internal/component/mcp/internal/jsonscan"
)

// Method names the trackers look for.
const (
	methodToolsCall       = "tools/call"
	methodCancelledNotify = "notifications/cancelled"
)

// cancelNotifyWait bounds how long a call whose context ended waits for the SDK to
// deliver notifications/cancelled (the SDK gives up on it after 5s itself).
const cancelNotifyWait = 5 * time.Second

// maxRejectionPeek bounds how much of a non-2xx answer to a call is read to find a
// JSON-RPC error in it.
const maxRejectionPeek = 1 << 20

// callTracker follows one request through the transport so that the Conn can
// tell what happened to it when the SDK returns an error: whether it may have reached
// the server (then it must not be sent again: the tool may have run), whether the
// server refused it without processing it (a 4xx such as 404 for an unknown session:
// it may go again on a new session), or whether the server answered it with a
// JSON-RPC error inside a non-2xx body (mcp-go answers an unknown tool with HTTP 400
// and the error: that is the answer, a tool error). It also reports when the
// notifications/cancelled for the request has been written.
//
// The tracker travels in the call's context: the SDK hands that context (or one
// derived from it) to the transport's Write, hence to the HTTP requests
// (trackingTransport) and to the stdio connection (hookedConn.Write).
type callTracker struct {
	// connect marks a tracker for a connect attempt: it records the HTTP status of
	// every answer (for the path fallback and the 404 hint), nothing else.
	connect bool

	mu        sync.Mutex
	wrote     bool                   // the request may have reached the server
	status    int                    // HTTP status of the answer to the request's POST; 0: none
	answer    *jsonrpc.Error         // JSON-RPC error with a non-null id in a non-2xx body
	tooLarge  *ResponseTooLargeError // the answer exceeded maxResponseBytes
	cancelled chan struct{}          // closed once notifications/cancelled was written (or failed); made on first use
	// discoverFailed, for a connect tracker, is a momentary failure of
	// server/discover: the initialize fallback is not sent (versions.go).
	discoverFailed *DiscoverFailedError
	// watchTasks, for a tools/call to a server that offers tasks, keeps the
	// answer (taskAnswer) to find the task it may create (tasks.go).
	watchTasks bool
	taskAnswer *taskCapture
	once       sync.Once

	parent context.Context // the context withTracker made the tracker part of
}

func newCallTracker() *callTracker { return &callTracker{} }

// cancelledChan returns t.cancelled, making it on first use: most calls end
// without anyone waiting for a cancellation.
func (t *callTracker) cancelledChan() chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cancelled == nil {
		t.cancelled = make(chan struct{})
	}
	return t.cancelled
}

type trackerKey struct{}

// withTracker returns ctx carrying t. It is what context.WithValue(ctx,
// trackerKey{}, t) would be, with t itself as the context (one allocation fewer
// per call): every other method and value comes from ctx. A tracker carries one
// context; withTracker is called once per tracker.
func withTracker(ctx context.Context, t *callTracker) context.Context {
	t.parent = ctx
	return (*trackerCtx)(t)
}

// trackerCtx is a callTracker seen as the context carrying it.
type trackerCtx callTracker

func (c *trackerCtx) Deadline() (time.Time, bool) { return c.parent.Deadline() }
func (c *trackerCtx) Done() <-chan struct{}       { return c.parent.Done() }
func (c *trackerCtx) Err() error                  { return c.parent.Err() }

func (c *trackerCtx) Value(key any) any {
	if _, ok := key.(trackerKey); ok {
		return (*callTracker)(c)
	}
	return c.parent.Value(key)
}

func trackerFrom(ctx context.Context) *callTracker {
	t, _ := ctx.Value(trackerKey{}).(*callTracker)
	return t
}

func (t *callTracker) markWrote() {
	t.mu.Lock()
	t.wrote = true
	t.mu.Unlock()
}

func (t *callTracker) setStatus(status int) {
	t.mu.Lock()
	t.status = status
	t.mu.Unlock()
}

func (t *callTracker) setTooLarge(e *ResponseTooLargeError) {
	t.mu.Lock()
	t.tooLarge = e
	t.mu.Unlock()
}

// responseTooLarge is the refusal of the answer to the request, or nil.
func (t *callTracker) responseTooLarge() *ResponseTooLargeError {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.tooLarge
}

func (t *callTracker) cancelWritten() { t.once.Do(func() { close(t.cancelledChan()) }) }

// mayHaveReached reports whether the request may have reached the server.
func (t *callTracker) mayHaveReached() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.wrote
}

// httpStatus is the HTTP status the server answered with (0: none).
func (t *callTracker) httpStatus() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.status
}

// serverAnswer is the JSON-RPC error the server answered the request with in a
// non-2xx body, or nil.
func (t *callTracker) serverAnswer() *jsonrpc.Error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.answer
}

// resendable reports whether sending the request again cannot make it run twice:
// it never left, or the server refused it with a 4xx without answering it (an
// unknown session, a bad request). After a 2xx, a 5xx, a dropped connection or an
// answer it may have run.
func (t *callTracker) resendable() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.wrote {
		return true
	}
	return t.answer == nil && t.status >= 400 && t.status < 500
}

// awaitCancelNotification waits until the SDK has written notifications/cancelled
// for the tracked request, the connection closes, or cancelNotifyWait passes. The
// SDK sends the notification from a goroutine of its own after the call returned;
// a caller that closes the session right away (helix mcp call, a producer being
// stopped) would otherwise close it before the server is told.
func (t *callTracker) awaitCancelNotification(closed <-chan struct{}) {
	timer := time.NewTimer(cancelNotifyWait)
	defer timer.Stop()
	select {
	case <-t.cancelledChan():
	case <-closed:
	case <-timer.C:
	}
}

// trackingTransport is the outermost RoundTripper of the client's HTTP client. For
// requests whose context carries a callTracker it records what the tracker needs:
// whether the call's POST was written (httptrace), the status and JSON-RPC error of
// a non-2xx answer, and the delivery of notifications/cancelled.
type trackingTransport struct {
	base http.RoundTripper
}

func (tt *trackingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t := trackerFrom(req.Context())
	if t == nil {
		return tt.base.RoundTrip(req)
	}
	if t.connect {
		return t.discoverRoundTrip(tt.base, req) // versions.go
	}
	if req.Method != http.MethodPost {
		return tt.base.RoundTrip(req) // a stream resumed with GET: not a new request
	}
	msg, ok := peekRequest(req)
	switch {
	case !ok:
		return tt.base.RoundTrip(req)
	case msg.method == methodCancelledNotify:
		resp, err := tt.base.RoundTrip(req)
		t.cancelWritten()
		return resp, err
	case !msg.call:
		return tt.base.RoundTrip(req)
	}
	// Once the headers are written the server may have the whole request: from then
	// on the call must not be sent again. A failure before (dial refused, TLS, DNS)
	// means it never left.
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		WroteHeaders: t.markWrote,
	}))
	resp, err := tt.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		t.recordRejection(resp)
	} else if msg.method == methodToolsCall && t.watchingTasks() {
		t.captureTaskAnswer(resp) // tasks.go
	}
	return resp, nil
}

// recordRejection notes a non-2xx answer to the call, and the JSON-RPC error in its
// body when that error carries an id (a null id means the server did not process the
// request, as JSON-RPC says). The body is put back for the SDK to read.
func (t *callTracker) recordRejection(resp *http.Response) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxRejectionPeek+1))
	if err != nil || len(data) > maxRejectionPeek {
		resp.Body = peekedBody{io.MultiReader(bytes.NewReader(data), resp.Body), resp.Body}
		t.setStatus(resp.StatusCode)
		return
	}
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(data))
	var answer *jsonrpc.Error
	if m, err := jsonrpc.DecodeMessage(data); err == nil {
		if r, ok := m.(*jsonrpc.Response); ok && r.ID.IsValid() && r.Error != nil {
			if !errors.As(r.Error, &answer) {
				answer = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: r.Error.Error()}
			}
		}
	}
	t.mu.Lock()
	t.status = resp.StatusCode
	t.answer = answer
	t.mu.Unlock()
}

type peekedBody struct {
	io.Reader
	io.Closer
}

// requestHead is what the trackers need of an outgoing JSON-RPC request.
type requestHead struct {
	method string
	call   bool // it has an id: a call, not a notification
}

// wireHead is the part of a JSON-RPC message peekRequest decodes: the fields that
// decide what jsonrpc.DecodeMessage makes of it. params and result are left out
// (any JSON value is valid there); error is kept because a malformed one makes
// the whole message invalid.
type wireHead struct {
	Version string         `json:"jsonrpc"`
	ID      idKind         `json:"id"`
	Method  methodField    `json:"method"`
	Error   *jsonrpc.Error `json:"error"`
}

// idKind classifies a JSON-RPC id as jsonrpc.MakeID does (null or absent: none;
// a number or a string: a call; anything else: invalid) without keeping it.
type idKind struct{ call bool }

func (k *idKind) UnmarshalJSON(b []byte) error {
	switch {
	case string(b) == "null":
		k.call = false
	case b[0] == '"':
		k.call = true
	case b[0] == '-' || b[0] >= '0' && b[0] <= '9':
		// A number too large for a float64 is refused, as go-sdk refuses it.
		if _, err := strconv.ParseFloat(string(b), 64); err != nil {
			return err
		}
		k.call = true
	default:
		return errors.New("id is neither a number nor a string")
	}
	return nil
}

// methodField is the method, and whether the key was there at all: a message with
// "method": null is a request with an empty method, one without is not a request.
type methodField struct {
	present bool
	name    string
}

func (m *methodField) UnmarshalJSON(b []byte) error {
	m.present = true
	switch {
	case string(b) == "null":
		m.name = ""
		return nil
	case len(b) >= 2 && b[0] == '"' && bytes.IndexByte(b, '\\') < 0:
		m.name = string(b[1 : len(b)-1]) // no escapes: the text is the name
		return nil
	}
	m.name = ""
	return json.Unmarshal(b, &m.name)
}

// maxPeekDepth is the nesting depth beyond which go-sdk's decoder rejects a
// message; peekRequest rejects it too.
const maxPeekDepth = jsondepth.SDKMax

// peekBuffers hold request bodies while peekRequest reads them.
var peekBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledPeekBuffer is the largest buffer put back in peekBuffers: a call with a
// large argument must not keep its memory alive.
const maxPooledPeekBuffer = 64 << 10

// peekRequest reads the id and method of the JSON-RPC request a POST carries,
// leaving the body to be sent; ok is false when the body is not one (a batch, a
// response, not JSON). It decides as jsonrpc.DecodeMessage does, without decoding
// params (go-sdk's decoder also allocates large buffers for every message). One
// difference: encoding/json matches keys case-insensitively ("ID"), go-sdk's does
// not; the bodies peeked are go-sdk's own encoding, which writes the exact keys.
func peekRequest(req *http.Request) (head requestHead, ok bool) {
	if req.GetBody == nil {
		return head, false
	}
	body, err := req.GetBody()
	if err != nil {
		return head, false
	}
	defer body.Close()
	buf := peekBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledPeekBuffer {
			buf.Reset()
			peekBuffers.Put(buf)
		}
	}()
	buf.Reset()
	if _, err := buf.ReadFrom(body); err != nil {
		return head, false
	}
	data := buf.Bytes()
	if jsondepth.DeeperThan(data, maxPeekDepth) {
		return head, false
	}
	if head, decided := peekPlain(data); decided {
		return head, true
	}
	var w wireHead
	if err := json.Unmarshal(data, &w); err != nil {
		// go-sdk decodes the first JSON value and ignores what follows it;
		// Unmarshal refuses trailing data, a Decoder does not.
		w = wireHead{}
		if err := json.NewDecoder(bytes.NewReader(data)).Decode(&w); err != nil {
			return head, false
		}
	}
	if w.Version != "2.0" || !w.Method.present {
		return head, false
	}
	return requestHead{method: w.Method.name, call: w.ID.call}, true
}

// peekPlain decides peekRequest's answer, without allocating, for the bodies
// go-sdk writes: one valid JSON object whose keys are, each once, exactly
// "jsonrpc" (the string "2.0"), "id" (a number or a string), "method" (a string
// without escapes), and any number of "params" or "result" (skipped). decided is
// false for anything else (other or duplicate keys, which encoding/json would
// match case-insensitively or overwrite; null ids or methods; escapes; trailing
// data; invalid JSON), which peekRequest then decodes as before.
func peekPlain(data []byte) (head requestHead, decided bool) {
	if !json.Valid(data) {
		return head, false
	}
	var version, method []byte
	var sawID bool
	v := jsonscan.Members(data, func(key, val []byte) jsonscan.Verdict {
		var ok bool
		switch string(key) {
		case "jsonrpc":
			if version != nil {
				return jsonscan.Unsure
			}
			if version, ok = jsonscan.PlainString(val); !ok {
				return jsonscan.Unsure
			}
		case "method":
			if method != nil {
				return jsonscan.Unsure
			}
			if method, ok = jsonscan.PlainString(val); !ok {
				return jsonscan.Unsure
			}
		case "id":
			if sawID {
				return jsonscan.Unsure
			}
			sawID = true
			if c := val[0]; c != '"' && c != '-' && (c < '0' || c > '9') {
				return jsonscan.Unsure // null or another kind: encoding/json decides
			}
			var k idKind
			if k.UnmarshalJSON(val) != nil {
				return jsonscan.Unsure
			}
			head.call = k.call
		case "params", "result":
		default:
			return jsonscan.Unsure
		}
		return jsonscan.On
	})
	if v != jsonscan.On || string(version) != "2.0" || method == nil {
		return head, false
	}
	switch string(method) {
	case methodToolsCall:
		head.method = methodToolsCall
	case methodCancelledNotify:
		head.method = methodCancelledNotify
	default:
		head.method = string(method)
	}
	return head, true
}

// trackWrite records, for a connection without HTTP (stdio), what trackingTransport
// records for HTTP: a call written without error may have reached the server, and
// the write of notifications/cancelled.
func trackWrite(ctx context.Context, msg jsonrpc.Message, write func() error) error {
	t := trackerFrom(ctx)
	req, ok := msg.(*jsonrpc.Request)
	if t == nil || t.connect || !ok {
		return write()
	}
	err := write()
	switch {
	case req.Method == methodCancelledNotify:
		t.cancelWritten()
	case req.IsCall() && err == nil:
		t.markWrote()
	}
	return err
}

// ensure the SDK's Connection interface is what hookedConn implements.
var _ sdk.Connection = (*hookedConn)(nil)
