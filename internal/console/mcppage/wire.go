package mcppage

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/arvenza/helix/internal/console"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
)

// The try-it call speaks plain HTTP and JSON to the server's own listener, so
// that what the page shows is the wire itself and everything in front of the
// tool (auth, rate limits, filters, the gateway) applies.

const (
	// callTimeout bounds a whole try-it call (initialize to the result).
	callTimeout = 60 * time.Second
	// maxWireBytes bounds what the call reads from the server, all responses
	// together; the rest is cut and said so.
	maxWireBytes = 1 << 20
	// maxShownBytes bounds one message as the page shows it.
	maxShownBytes = 64 << 10
	// maxEvents bounds the messages one call shows (progress can be chatty).
	maxEvents = 500
	// protocolVersion is what the form asks for in initialize.
	protocolVersion = "2025-11-25"
)

// Event is one step of a try-it call, in the order it happened.
type Event struct {
	// Kind: request, notification (sent), response, progress, log, message
	// (another server message), http (a non-JSON-RPC HTTP answer), error.
	Kind string
	// Dir is "→" for what the form sent, "←" for what the server sent.
	Dir string
	// Status is the HTTP status of the POST that carried it (responses).
	Status int
	// At is the time since the call began.
	At time.Duration
	// Text is the message, indented JSON when it is JSON, truncated.
	Text string
	// Headers are the request's headers as sent, the credential masked.
	Headers string
}

// Outcome sums a call up.
type Outcome struct {
	// Status: "ok", "tool error" (isError), "JSON-RPC error", "HTTP 401" …
	Status  string
	OK      bool
	Elapsed time.Duration
	// Result is the tools/call result's text content, when there is one.
	Result string
}

// caller runs one try-it call and hands each event to emit as it happens.
type caller struct {
	hc         *http.Client
	url        string
	credential string
	emit       func(Event)
	start      time.Time
	session    string
	protocol   string
	read       int64
	events     int
	nextID     int
}

// Call runs initialize → notifications/initialized → tools/call against url
// (the server's Streamable HTTP endpoint) with credential as a bearer token
// when not empty. emit gets every event; the outcome sums the call up.
func Call(ctx context.Context, hc *http.Client, url, credential, tool string, args map[string]any, emit func(Event)) Outcome {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	c := &caller{hc: hc, url: url, credential: credential, emit: emit, start: time.Now()}
	out := c.run(ctx, tool, args)
	out.Elapsed = time.Since(c.start)
	if c.session != "" {
		// End the session the form opened (best effort; the server's idle
		// timeout ends it otherwise).
		req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodDelete, url, nil)
		if err == nil {
			c.headers(req)
			dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
			if resp, err := c.hc.Do(req.WithContext(dctx)); err == nil {
				_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
				_ = resp.Body.Close()
			}
			dcancel()
		}
	}
	return out
}

func (c *caller) run(ctx context.Context, tool string, args map[string]any) Outcome {
	initID := c.id()
	init := map[string]any{"jsonrpc": "2.0", "id": initID, "method": "initialize", "params": map[string]any{
		"protocolVersion": protocolVersion, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "helix-console", "version": "1"}}}
	res, out := c.post(ctx, init, initID)
	if res == nil {
		return out
	}
	var ir struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Logging json.RawMessage `json:"logging"`
		} `json:"capabilities"`
	}
	_ = json.Unmarshal(res, &ir)
	c.protocol = ir.ProtocolVersion
	if _, out := c.post(ctx, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}, nil); out.Status != "" {
		return out
	}
	if ir.Capabilities.Logging != nil {
		// Servers send log messages only to a client that asked for them.
		lvID := c.id()
		if res, out := c.post(ctx, map[string]any{"jsonrpc": "2.0", "id": lvID, "method": "logging/setLevel",
			"params": map[string]any{"level": "debug"}}, lvID); res == nil && strings.HasPrefix(out.Status, "HTTP ") {
			return out
		}
	}
	callID := c.id()
	call := map[string]any{"jsonrpc": "2.0", "id": callID, "method": "tools/call", "params": map[string]any{
		"name": tool, "arguments": args, "_meta": map[string]any{"progressToken": "console-" + fmt.Sprint(callID)}}}
	res, out = c.post(ctx, call, callID)
	if res == nil {
		return out
	}
	var cr struct {
		IsError bool `json:"isError"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	_ = json.Unmarshal(res, &cr)
	var text []string
	for _, ct := range cr.Content {
		if ct.Type == "text" {
			text = append(text, ct.Text)
		}
	}
	o := Outcome{Status: "ok", OK: true, Result: truncate(strings.Join(text, "\n"), maxShownBytes)}
	if cr.IsError {
		o.Status, o.OK = "tool error (isError)", false
	}
	return o
}

func (c *caller) id() int { c.nextID++; return c.nextID }

// post sends one message. For a request (id non-nil) it reads the answer, a
// JSON body or an event stream, emitting every message, and returns the
// result of the response with that id; nil and a failed outcome otherwise.
// For a notification it returns a non-empty outcome only on failure.
func (c *caller) post(ctx context.Context, msg map[string]any, id any) (json.RawMessage, Outcome) {
	body, _ := json.Marshal(msg)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, c.fail("error", "building the request: "+err.Error())
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	c.headers(req)
	kind := "request"
	if id == nil {
		kind = "notification"
	}
	c.add(Event{Kind: kind, Dir: "→", Text: pretty(body), Headers: c.shownHeaders(req)})
	resp, err := c.hc.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, c.fail("error", fmt.Sprintf("no answer within %s", callTimeout))
		}
		return nil, c.fail("error", "the server could not be reached: "+err.Error())
	}
	defer resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		c.session = sid
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode >= 300 {
		b := c.readBody(resp.Body)
		c.add(Event{Kind: "http", Dir: "←", Status: resp.StatusCode, Text: resp.Status + "\n" + headerLines(resp.Header, "Www-Authenticate", "Retry-After") + pretty(b)})
		return nil, Outcome{Status: "HTTP " + resp.Status}
	}
	if id == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, Outcome{}
	}
	var result json.RawMessage
	var out Outcome
	found := false
	handle := func(data []byte) bool {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(data, &m); err != nil {
			c.add(Event{Kind: "message", Dir: "←", Status: resp.StatusCode, Text: truncate(string(data), maxShownBytes)})
			return false
		}
		switch {
		case m.Method == "notifications/progress":
			c.add(Event{Kind: "progress", Dir: "←", Status: resp.StatusCode, Text: pretty(data)})
		case m.Method == "notifications/message":
			c.add(Event{Kind: "log", Dir: "←", Status: resp.StatusCode, Text: pretty(data)})
		case m.Method != "":
			c.add(Event{Kind: "message", Dir: "←", Status: resp.StatusCode, Text: pretty(data)})
		case string(m.ID) == fmt.Sprint(id):
			c.add(Event{Kind: "response", Dir: "←", Status: resp.StatusCode, Text: pretty(data)})
			found = true
			if m.Error != nil {
				out = Outcome{Status: fmt.Sprintf("JSON-RPC error %d: %s", m.Error.Code, truncate(m.Error.Message, 500))}
				return true
			}
			result = m.Result
			return true
		default:
			c.add(Event{Kind: "message", Dir: "←", Status: resp.StatusCode, Text: pretty(data)})
		}
		return false
	}
	switch ct {
	case "text/event-stream":
		c.readStream(resp.Body, handle)
	default:
		b := c.readBody(resp.Body)
		if len(b) > 0 {
			handle(b)
		}
	}
	if !found {
		if out.Status == "" {
			out = c.fail("error", "the server's answer ended without the response to request "+fmt.Sprint(id))
		}
		return nil, out
	}
	if out.Status != "" {
		return nil, out
	}
	return result, Outcome{}
}

// readStream reads server-sent events until handle says the answer came, the
// stream ends or the byte budget is spent.
func (c *caller) readStream(r io.Reader, handle func([]byte) bool) {
	lr := &io.LimitedReader{R: r, N: maxWireBytes - c.read}
	sc := bufio.NewScanner(lr)
	sc.Buffer(make([]byte, 0, 64<<10), maxWireBytes)
	var data bytes.Buffer
	defer func() { c.read += (maxWireBytes - c.read) - lr.N }()
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if data.Len() > 0 {
				if handle(bytes.Clone(data.Bytes())) {
					return
				}
				data.Reset()
			}
		case bytes.HasPrefix(line, []byte("data:")):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" ")))
		}
	}
	if lr.N <= 0 {
		c.add(Event{Kind: "error", Dir: "←", Text: fmt.Sprintf("the answer was cut after %d bytes", maxWireBytes)})
	}
}

func (c *caller) readBody(r io.Reader) []byte {
	b, _ := io.ReadAll(io.LimitReader(r, maxWireBytes-c.read))
	c.read += int64(len(b))
	return b
}

func (c *caller) headers(req *http.Request) {
	if c.credential != "" {
		req.Header.Set("Authorization", "Bearer "+c.credential)
	}
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	if c.protocol != "" {
		req.Header.Set("Mcp-Protocol-Version", c.protocol)
	}
}

// shownHeaders lists the request's headers as the page shows them: the
// credential is never echoed back, only that one was sent.
func (c *caller) shownHeaders(req *http.Request) string {
	var b strings.Builder
	b.WriteString("POST " + req.URL.RequestURI() + "\n")
	for _, k := range []string{"Content-Type", "Accept", "Mcp-Session-Id", "Mcp-Protocol-Version"} {
		if v := req.Header.Get(k); v != "" {
			b.WriteString(k + ": " + v + "\n")
		}
	}
	if req.Header.Get("Authorization") != "" {
		b.WriteString("Authorization: Bearer (the credential you entered, not shown)\n")
	}
	return b.String()
}

func (c *caller) add(e Event) {
	if c.events == maxEvents {
		c.events++
		c.emit(Event{Kind: "error", Dir: "←", At: time.Since(c.start), Text: fmt.Sprintf("more than %d messages: the rest are not shown", maxEvents)})
	}
	if c.events > maxEvents {
		return
	}
	c.events++
	e.At = time.Since(c.start)
	c.emit(e)
}

func (c *caller) fail(kind, msg string) Outcome {
	c.add(Event{Kind: kind, Dir: "←", Text: msg})
	return Outcome{Status: msg}
}

func headerLines(h http.Header, names ...string) string {
	var b strings.Builder
	for _, n := range names {
		if v := h.Get(n); v != "" {
			b.WriteString(n + ": " + truncate(v, 500) + "\n")
		}
	}
	return b.String()
}

// pretty indents JSON (and truncates anything).
func pretty(b []byte) string {
	var out bytes.Buffer
	if len(b) <= maxShownBytes && json.Indent(&out, b, "", "  ") == nil {
		return out.String()
	}
	return truncate(string(b), maxShownBytes)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := console.Cut(s, n)
	return cut + fmt.Sprintf("\n… (%d more bytes not shown)", len(s)-len(cut))
}
