// Package fastrelay relays a plain tools/call to an HTTP upstream as raw
// JSON-RPC: the call is written as one POST on the upstream's session (the
// session id and protocol version the gateway's go-sdk client session
// negotiated, with the caller's credential headers), and the upstream's answer,
// plain JSON or an event stream, is read back as bytes. The result is never
// decoded into the go-sdk's types nor encoded again: the gateway's transport
// writes it back under the downstream's JSON-RPC id (transport.AnswerRaw).
//
// What the upstream puts on the call's event stream besides the answer is
// handled as the go-sdk client session would for a call without a progress
// token: notifications go to Options.Notify (dropped when nil), and requests to
// the client (elicitation, sampling, roots) are answered through Options.Ask,
// or refused with method-not-found when Ask is nil, so that the upstream never
// waits for an answer that does not come.
package fastrelay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/gateway/h1"
	"github.com/arvenza/helix/internal/plainjson"
)

// Header names of the MCP Streamable HTTP transport.
const (
	headerSession  = "Mcp-Session-Id"
	headerProtocol = "Mcp-Protocol-Version" // MCP-Protocol-Version, as http.Header keys are written
)

// DefaultMaxMessageBytes bounds one message the upstream sends on a call's
// answer, so that a broken or hostile upstream cannot make the gateway buffer
// without end.
const DefaultMaxMessageBytes = 32 << 20

// Upstream is the upstream session a call is relayed on.
type Upstream struct {
	// URL is the upstream's Streamable HTTP endpoint.
	URL string
	// SessionID is the session's Mcp-Session-Id; "" for a sessionless upstream.
	SessionID string
	// ProtocolVersion is the version the session negotiated.
	ProtocolVersion string
	// Header holds the headers every request to the upstream carries: the
	// upstream's configured headers and the caller's credentials
	// (gateway.Credentials). Never logged, never part of an error.
	Header http.Header
	// Client sends the requests of this upstream (the upstream pool's, with its
	// auth); nil means the relay's.
	Client *http.Client
	// Meta is the params._meta the call carries upstream (the caller's trace
	// context), JSON; empty for none.
	Meta json.RawMessage
	// Ask, when set, answers this call's requests to the client instead of
	// Options.Ask: AskSession of the caller's downstream session.
	Ask func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// Options configure a Relay.
type Options struct {
	// Client sends the requests; nil means a pooled keep-alive client of the
	// relay's own (NewClient).
	Client *http.Client
	// MaxMessageBytes bounds each message of an answer; 0 means
	// DefaultMaxMessageBytes.
	MaxMessageBytes int
	// Notify gets the notifications the upstream sends on a call's stream
	// (logging, list_changed, resources/updated …); nil drops them.
	Notify func(ctx context.Context, method string, params json.RawMessage)
	// Ask answers a request the upstream sends to the client on a call's stream
	// (elicitation, sampling, roots); nil refuses each with method-not-found.
	Ask func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// Relay sends calls to HTTP upstreams. Safe for concurrent use.
type Relay struct {
	endWait time.Duration // streamEndWait; tests make it longer
	hc      *http.Client
	maxMsg  int
	notify  func(context.Context, string, json.RawMessage)
	ask     func(context.Context, string, json.RawMessage) (json.RawMessage, error)
	next    atomic.Uint64
	readers sync.Pool // *bufio.Reader
}

// New returns a Relay.
func New(o Options) *Relay {
	r := &Relay{endWait: streamEndWait, hc: o.Client, maxMsg: o.MaxMessageBytes, notify: o.Notify, ask: o.Ask}
	if r.hc == nil {
		r.hc = NewClient()
	}
	if r.maxMsg <= 0 {
		r.maxMsg = DefaultMaxMessageBytes
	}
	return r
}

// NewClient returns an HTTP client for upstream calls: keep-alive connections,
// pooled per host deep enough that concurrent calls do not dial for each, and
// the relay's http requests sent by Helix's own HTTP/1.1 loop (h1).
func NewClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 1024
	tr.MaxIdleConnsPerHost = 256
	tr.IdleConnTimeout = 90 * time.Second
	h1.Register(tr)
	return &http.Client{Transport: tr}
}

// Reply is the upstream's answer to a call: Result, the JSON of the result
// object (compact and HTML-escaped as encoding/json writes it), or Error, the
// JSON-RPC error the upstream answered.
type Reply struct {
	Result json.RawMessage
	Error  *jsonrpc.Error
}

// ErrNotRun marks an error after which the call cannot have run on the
// upstream (no connection, or a session the upstream no longer knows): the
// caller may send it again, for instance through a new session.
var ErrNotRun = errors.New("the call did not reach the upstream")

// CallTool relays tools/call of the upstream's tool name with args (a JSON
// object, or empty for none) and returns the upstream's answer. When ctx ends
// first, the upstream is told (notifications/cancelled) and ctx's error is
// returned.
func (r *Relay) CallTool(ctx context.Context, up *Upstream, name string, args json.RawMessage) (Reply, error) {
	id := r.next.Add(1)
	body := make([]byte, 0, len(name)+len(args)+len(up.Meta)+96)
	// A string id never meets the integer ids of the go-sdk client session that
	// shares the upstream session.
	body = append(body, `{"jsonrpc":"2.0","id":"hx-`...)
	body = strconv.AppendUint(body, id, 10)
	body = append(body, `","method":"tools/call","params":{"name":`...)
	body = plainjson.AppendString(body, name)
	if len(up.Meta) > 0 {
		body = append(body, `,"_meta":`...)
		body = append(body, up.Meta...)
	}
	if len(bytes.TrimSpace(args)) > 0 {
		body = append(body, `,"arguments":`...)
		body = append(body, args...)
	}
	body = append(body, "}}"...)
	ourID := body[len(`{"jsonrpc":"2.0","id":`):]
	ourID = ourID[:bytes.IndexByte(ourID[1:], '"')+2]

	resp, err := r.post(ctx, up, body)
	if err != nil {
		if ctx.Err() != nil {
			go r.cancel(up, ourID) // the call may have been sent
		}
		return Reply{}, err
	}
	if err := answerStatus(resp); err != nil {
		resp.Body.Close()
		return Reply{}, err
	}
	// The body's read does not watch ctx once the answer started: close it
	// when ctx ends, and tell the upstream. AfterFunc's stop tells a call
	// that ended first from one that was cancelled, which a select on two
	// ready channels would not.
	stop := context.AfterFunc(ctx, func() {
		resp.Body.Close()
		r.cancel(up, ourID)
	})
	br := r.reader(resp.Body)
	handedOff := false
	defer func() {
		if !handedOff {
			r.putReader(br)
			stop()
			resp.Body.Close()
		}
	}()
	var reply Reply
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		reply, err = r.readStream(ctx, up, br, ourID)
		if err == nil {
			if handedOff = r.finishLater(br, resp.Body, stop); !handedOff {
				finishStream(br, resp.Body, r.endWait)
			}
		}
	} else {
		reply, err = r.readJSON(br, ourID)
	}
	if err != nil && ctx.Err() != nil {
		return Reply{}, ctx.Err()
	}
	return reply, err
}

// The request headers every message to an upstream carries. The slices are
// shared by every request: nothing on the way changes a request's headers in
// place (a RoundTripper that adds some works on a copy of the request).
var (
	contentTypeJSON = []string{"application/json"}
	acceptBoth      = []string{"application/json, text/event-stream"}
)

// post sends one message to the upstream session.
func (r *Relay) post(ctx context.Context, up *Upstream, body []byte) (*http.Response, error) {
	// h1.Use: where the client's transport has Helix's own HTTP/1.1 loop
	// (h1.Register), it sends this request in this goroutine.
	req, err := http.NewRequestWithContext(h1.Use(ctx), http.MethodPost, up.URL, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("upstream request: %w", err)
	}
	// The header map is made once with every member, not grown by Set.
	h := make(http.Header, len(up.Header)+4)
	for k, v := range up.Header {
		h[k] = v
	}
	h["Content-Type"] = contentTypeJSON
	h["Accept"] = acceptBoth
	if up.SessionID != "" {
		h[headerSession] = []string{up.SessionID}
	}
	if up.ProtocolVersion != "" {
		h[headerProtocol] = []string{up.ProtocolVersion}
	}
	req.Header = h
	hc := up.Client
	if hc == nil {
		hc = r.hc
	}
	resp, err := send(hc, req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return nil, fmt.Errorf("%w: %s", ErrNotRun, op.Err)
		}
		// The request may have been written: the call may have run.
		return nil, fmt.Errorf("upstream request failed: %w", unwrapURL(err))
	}
	return resp, nil
}

// send is hc.Do(req) without the client's own work for each request (a copy
// of the headers for redirects, the redirect loop) when the client adds
// nothing else to a request: no timeout and no cookie jar. Its transport,
// with the upstream's credentials and limits, is what sends the request
// either way. A redirect, which the upstream answers without running the
// call, is followed by hc.Do with the request again, under the client's
// redirect rules.
func send(hc *http.Client, req *http.Request) (*http.Response, error) {
	if hc.Timeout > 0 || hc.Jar != nil {
		return hc.Do(req)
	}
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		if resp.Header.Get("Location") == "" {
			return resp, nil // hc.Do too answers such a redirect as it is
		}
		drain(resp.Body)
		resp.Body.Close()
		again := req.Clone(req.Context())
		if again.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
		return hc.Do(again)
	}
	return resp, nil
}

// unwrapURL drops the *url.Error around err, whose text repeats the URL (which
// may carry credentials in its query).
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		return ue.Err
	}
	return err
}

// answerStatus checks the HTTP status of the answer to a call.
func answerStatus(resp *http.Response) error {
	switch resp.StatusCode {
	case http.StatusOK:
		return nil
	case http.StatusNotFound:
		// The upstream does not know the session: it refused the call unread.
		drain(resp.Body)
		// sdk.ErrSessionMissing too: the upstream pool opens a new session on it.
		return fmt.Errorf("%w: the upstream no longer knows the session (HTTP 404): %w", ErrNotRun, sdk.ErrSessionMissing)
	}
	var snippet [200]byte
	n, _ := io.ReadFull(resp.Body, snippet[:])
	drain(resp.Body)
	msg := strings.ToValidUTF8(strings.TrimSpace(string(snippet[:n])), "?")
	if resp.StatusCode >= 400 && resp.StatusCode < 500 {
		// A request the upstream refused before reading it as a call.
		return fmt.Errorf("%w: the upstream answered HTTP %d: %q", ErrNotRun, resp.StatusCode, msg)
	}
	return fmt.Errorf("the upstream answered HTTP %d: %q", resp.StatusCode, msg)
}

// drain reads what is left of a body (a little), so that its connection can
// be reused.
func drain(body io.Reader) { _, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10)) }

func (r *Relay) reader(body io.Reader) *bufio.Reader {
	if br, ok := r.readers.Get().(*bufio.Reader); ok {
		br.Reset(body)
		return br
	}
	return bufio.NewReaderSize(body, 4096)
}

func (r *Relay) putReader(br *bufio.Reader) {
	br.Reset(nil)
	r.readers.Put(br)
}

// readJSON reads an application/json answer: one response.
func (r *Relay) readJSON(br *bufio.Reader, ourID []byte) (Reply, error) {
	data, err := io.ReadAll(io.LimitReader(br, int64(r.maxMsg)+1))
	if err != nil {
		return Reply{}, fmt.Errorf("reading the upstream's answer: %w", err)
	}
	if len(data) > r.maxMsg {
		return Reply{}, fmt.Errorf("the upstream's answer exceeds %d bytes", r.maxMsg)
	}
	m, err := parseMessage(data)
	if err != nil {
		return Reply{}, fmt.Errorf("the upstream's answer is not JSON-RPC: %v", err)
	}
	if !m.isResponse() || !bytes.Equal(m.ID, ourID) {
		return Reply{}, errors.New("the upstream answered with another message than the call's response")
	}
	return m.reply()
}

// readStream reads an event stream up to the call's response, handling the
// messages before it.
func (r *Relay) readStream(ctx context.Context, up *Upstream, br *bufio.Reader, ourID []byte) (Reply, error) {
	var data []byte
	for {
		line, err := readLine(br, r.maxMsg)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return Reply{}, errors.New("the upstream's event stream ended before the call's response")
			}
			return Reply{}, fmt.Errorf("reading the upstream's event stream: %w", err)
		}
		if len(line) > 0 {
			if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				v = bytes.TrimPrefix(v, []byte(" "))
				if len(data) > 0 {
					data = append(data, '\n')
				}
				if len(data)+len(v) > r.maxMsg {
					return Reply{}, fmt.Errorf("a message of the upstream's event stream exceeds %d bytes", r.maxMsg)
				}
				data = append(data, v...)
			}
			continue // event:, id:, retry: and comments carry nothing for a call
		}
		if len(data) == 0 {
			continue
		}
		m, err := parseMessage(data)
		if err != nil {
			return Reply{}, fmt.Errorf("a message of the upstream's event stream is not JSON-RPC: %v", err)
		}
		switch {
		case m.isResponse() && bytes.Equal(m.ID, ourID):
			return m.reply() // data is not used again: the result may share it
		case m.isResponse():
			// Another call's response does not belong on this stream: ignore it,
			// as the go-sdk client ignores a response it did not wait for.
		case len(m.ID) > 0:
			m.ID, m.Params = bytes.Clone(m.ID), bytes.Clone(m.Params) // data is used again
			r.answer(ctx, up, &m)
		default:
			if r.notify != nil {
				r.notify(ctx, m.Method, bytes.Clone(m.Params))
			}
		}
		data = data[:0]
	}
}

// streamEndWait is how long the relay waits, after the call's response, for
// the upstream to end the stream, as the protocol asks it to: only a stream
// read to its end lets the connection serve the next call. An upstream that
// keeps the stream open longer loses the connection instead.
const streamEndWait = time.Second

// detachable is an answer body that the call's context can be let go of
// (Helix's HTTP/1.1 loop, h1), and that tells what of it is already read.
type detachable interface {
	Detach() bool
	Buffered() int
}

// finishLater hands the rest of a stream whose response was read to a
// goroutine of its own, and reports whether it did: the caller is answered
// without waiting for the upstream's last write, the stream's end, which
// usually comes in a write of its own after the response's (and, on a busy
// machine, after the upstream was scheduled again). The stream is still read
// to its end within streamEndWait, so that its connection goes back to the
// pool. It does not when the end is already read (nothing would wait), when
// the body is not h1's (net/http's cannot outlive the call's context), or when
// the context has ended (its watch is closing the body). stopWatch stops
// that watch.
func (r *Relay) finishLater(br *bufio.Reader, body io.ReadCloser, stopWatch func() bool) bool {
	d, ok := body.(detachable)
	if !ok || br.Buffered() > 0 || d.Buffered() >= len(chunkedEnd) {
		return false
	}
	if !stopWatch() || !d.Detach() {
		return false
	}
	go func() {
		finishStream(br, body, r.endWait)
		r.putReader(br)
		body.Close()
	}()
	return true
}

// chunkedEnd is the least an event stream's end takes on the wire: the last
// chunk of a chunked answer.
const chunkedEnd = "0\r\n\r\n"

// finishStream reads the rest of a stream whose response was read, so that
// its connection goes back to the pool.
func finishStream(br *bufio.Reader, body io.ReadCloser, wait time.Duration) {
	stop := time.AfterFunc(wait, func() { body.Close() })
	defer stop.Stop()
	for left := 64 << 10; left > 0; {
		if _, err := br.Peek(1); err != nil {
			return
		}
		n, _ := br.Discard(min(br.Buffered(), left))
		left -= n
	}
}

// readLine returns one line of br without its line ending, at most max bytes.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		long := append([]byte(nil), line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(long) > max {
				return nil, fmt.Errorf("a line exceeds %d bytes", max)
			}
			line, err = br.ReadSlice('\n')
			long = append(long, line...)
		}
		line = long
	}
	if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), nil
}

// answer answers a request the upstream sent to the client while the call
// runs.
func (r *Relay) answer(ctx context.Context, up *Upstream, m *message) {
	body := append([]byte(`{"jsonrpc":"2.0","id":`), m.ID...)
	var res json.RawMessage
	err := error(&jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "the gateway does not relay " + m.Method + " on this call"})
	if ask := up.Ask; ask != nil {
		res, err = ask(ctx, m.Method, m.Params)
	} else if r.ask != nil {
		res, err = r.ask(ctx, m.Method, m.Params)
	}
	if err != nil {
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) {
			rpcErr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		e, _ := json.Marshal(rpcErr)
		body = append(append(body, `,"error":`...), e...)
	} else {
		body = append(append(body, `,"result":`...), res...)
	}
	body = append(body, '}')
	r.send(ctx, up, body)
}

// cancel tells the upstream that the call with id ourID is withdrawn.
func (r *Relay) cancel(up *Upstream, ourID []byte) {
	body := append([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`), ourID...)
	body = append(body, `,"reason":"the client cancelled the call"}}`...)
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	r.send(ctx, up, body)
}

// send posts a message that has no answer (a response or a notification);
// failures are not the call's: the upstream times out what it missed.
func (r *Relay) send(ctx context.Context, up *Upstream, body []byte) {
	resp, err := r.post(context.WithoutCancel(ctx), up, body)
	if err != nil {
		return
	}
	drain(resp.Body)
	resp.Body.Close()
}

// message is a JSON-RPC message as the relay reads it: the result is kept as
// its bytes.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *jsonrpc.Error  `json:"error"`
}

func (m *message) isResponse() bool {
	return len(m.ID) > 0 && m.Method == "" && (m.Result != nil || m.Error != nil)
}

func (m *message) reply() (Reply, error) {
	if m.Error != nil {
		return Reply{Error: m.Error}, nil
	}
	if len(m.Result) == 0 || m.Result[0] != '{' {
		return Reply{}, errors.New("the upstream answered tools/call with a result that is not an object")
	}
	return Reply{Result: Canonical(m.Result)}, nil
}
