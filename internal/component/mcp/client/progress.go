package client

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/report"
)

// Progress of mcp:// calls, passed on to the exchange's caller.
//
// When the exchange making a call has a reporter that wants progress
// (report.ProgressWanted: an MCP client called the workflow with a progress token),
// callTool gives the call a progress token of its own and registers the exchange's
// context under it. The server's notifications/progress for that token are then
// reported to the exchange's reporter, so a tool that relays to another MCP server
// shows that server's progress to its own caller.
//
// They are taken from the wire as it is read, not from the go-sdk client's
// notification handler: the SDK runs notification handlers on a queue of their own
// and hands a call its result as soon as the result is read, so progress sent
// before the result would often reach the handler after the call returned, when
// nobody can pass it on any more. Over HTTP (Streamable HTTP and SSE) the event
// streams are read through progressBody; over stdio the connection's messages
// through progressConn. Both see a call's messages in the order the server sent
// them, before the SDK sees the result. (The go-sdk's Streamable HTTP connection
// cannot be wrapped: the session hands it its state through an unexported
// method.)

// forwardProgress reports the progress in params to the exchange whose call it
// belongs to. The numbers are the server's: a workflow that reports progress of its
// own as well should keep to one scale, since its caller receives only increasing
// values. Progress for calls that have returned is dropped.
func (c *Conn) forwardProgress(params json.RawMessage) {
	var p sdk.ProgressNotificationParams
	if json.Unmarshal(params, &p) != nil {
		return
	}
	token, ok := p.ProgressToken.(string)
	if !ok {
		return
	}
	if v, ok := c.progress.Load(token); ok {
		report.Progress(v.(context.Context), p.Progress, p.Total, p.Message)
	}
}

// forwardMessage forwards msg (one JSON-RPC message) when it is a progress
// notification and a call is waiting for progress, or a log message and OnLog is set.
func (c *Conn) forwardMessage(msg []byte) {
	progress := c.waiting.Load() > 0 && bytes.Contains(msg, []byte(`"notifications/progress"`))
	logs := c.cfg.OnLog != nil && bytes.Contains(msg, []byte(`"notifications/message"`))
	if !progress && !logs {
		return
	}
	var m struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(msg, &m) != nil {
		return
	}
	switch {
	case progress && m.Method == "notifications/progress":
		c.forwardProgress(m.Params)
	case logs && m.Method == "notifications/message":
		c.forwardLogParams(m.Params) // logging.go
	}
}

// progressRoundTripper reads the event streams of a Conn's HTTP client through
// progressBody.
type progressRoundTripper struct {
	next http.RoundTripper
	c    *Conn
}

func (p *progressRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := p.next.RoundTrip(r)
	if err != nil || resp == nil || resp.Body == nil {
		return resp, err
	}
	// Limit first, so that progressBody never scans beyond the limit (limit.go).
	resp.Body = limitBody(resp.Body, r.Method == http.MethodPost, p.c.cfg.MaxResponseBytes, p.c.cfg.target(), trackerFrom(r.Context()), &p.c.streamLimit)
	if isEventStream(resp.Header.Get("Content-Type")) {
		resp.Body = &progressBody{ReadCloser: resp.Body, c: p.c}
	}
	return resp, nil
}

// isEventStream reports whether the media type of contentType is
// text/event-stream, as mime.ParseMediaType decides it. The two types MCP servers
// answer with, written plainly, are decided without parsing (ParseMediaType makes
// a map for the parameters of every answer).
func isEventStream(contentType string) bool {
	switch contentType {
	case "text/event-stream":
		return true
	case "application/json":
		return false
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	return mt == "text/event-stream"
}

// maxScannedEvent bounds what progressBody keeps of one event; a bigger event
// (a large result) is passed through unscanned.
const maxScannedEvent = 64 << 10

// progressBody passes an event stream through unchanged and, as each event's data
// goes by, forwards the progress notifications among them. The bytes reach the
// reader only after the events they complete have been forwarded.
type progressBody struct {
	io.ReadCloser
	c        *Conn
	line     []byte // the current line, without its end
	data     []byte // the current event's data lines
	tooLarge bool   // the current line or event exceeded maxScannedEvent
}

func (b *progressBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	for _, ch := range p[:n] {
		if ch != '\n' {
			if len(b.line) < maxScannedEvent {
				b.line = append(b.line, ch)
			} else {
				b.tooLarge = true
			}
			continue
		}
		b.endLine()
	}
	return n, err
}

// endLine handles one complete line of the stream (SSE: "data: …" lines make up an
// event, an empty line ends it).
func (b *progressBody) endLine() {
	line := bytes.TrimSuffix(b.line, []byte("\r"))
	b.line = b.line[:0]
	switch {
	case len(line) == 0:
		if !b.tooLarge && len(b.data) > 0 {
			b.c.forwardMessage(b.data)
		}
		b.data, b.tooLarge = b.data[:0], false
	case bytes.HasPrefix(line, []byte("data:")):
		d := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
		if len(b.data)+len(d) > maxScannedEvent {
			b.tooLarge = true
			return
		}
		b.data = append(append(b.data, d...), '\n')
	}
}

// progressTransport wraps the connections of a stdio transport (progressConn).
type progressTransport struct {
	sdk.Transport
	c *Conn
}

func (t *progressTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &progressConn{Connection: conn, c: t.c}, nil
}

// progressConn forwards the progress notifications it reads.
type progressConn struct {
	sdk.Connection
	c *Conn
}

func (pc *progressConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := pc.Connection.Read(ctx)
	if req, ok := m.(*jsonrpc.Request); ok && err == nil && !req.IsCall() {
		switch {
		case req.Method == "notifications/progress" && pc.c.waiting.Load() > 0:
			pc.c.forwardProgress(req.Params)
		case req.Method == "notifications/message" && pc.c.cfg.OnLog != nil:
			pc.c.forwardLogParams(req.Params) // logging.go
		}
	}
	return m, err
}
