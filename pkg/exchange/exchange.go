// Package exchange defines the unit of work that flows through a Helix workflow:
// an Exchange carries one in-message (body and headers), the variables that steps
// such as enrich set, and the exception that a failing step raises.
//
// An Exchange is owned by one goroutine at a time: a step that hands it to several
// goroutines at once (multicast, wiretap) gives each its own Copy.
package exchange

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync/atomic"
)

// Pattern says whether the sender waits for a reply.
type Pattern int

const (
	// InOnly exchanges are fire-and-forget: the reply, if any, is dropped.
	InOnly Pattern = iota
	// InOut exchanges are request/reply: the in-message body after the pipeline is the reply.
	InOut
)

func (p Pattern) String() string {
	if p == InOut {
		return "InOut"
	}
	return "InOnly"
}

// Well-known header names that more than one part of Helix reads or writes. A
// header only one component uses is declared with that component, in its spec.go
// (timer.HeaderName, file.HeaderFileName, httpserver.HeaderHTTPMethod …).
const (
	HeaderContentType = "Content-Type"
	// HeaderHTTPResponseCode is the status of an HTTP exchange: written by http://,
	// read by http-server:// for its response, and Starlang's response_code.
	HeaderHTTPResponseCode = "HelixHttpResponseCode"

	// The MCP headers are written by mcp-server:// and read (HelixMcpToolName also
	// written) by mcp://; they live here so that neither MCP package imports the other.
	HeaderMcpToolName   = "HelixMcpToolName"
	HeaderMcpRouteID    = "HelixMcpRouteID"
	HeaderMcpServerName = "HelixMcpServerName"
	HeaderMcpIsError    = "HelixMcpIsError"

	// HeaderPrincipal is who the exchange runs for, as the MCP server's security
	// stack authenticated the tools/call: a map with "id", "name", "subject",
	// "issuer", "roles", "scopes" and "claims" (the token's claims; never the
	// token). Placeholders read it as ${principal.subject},
	// ${principal.claims.tenant}. Reserved: no trigger takes it from outside.
	HeaderPrincipal = "HelixPrincipal"

	// The engine's own headers: error handlers, redelivery, aggregation.
	HeaderExceptionMessage = "HelixExceptionMessage"
	HeaderFailedStep       = "HelixFailedStep"
	HeaderFailedWorkflow   = "HelixFailedWorkflow"
	HeaderRedeliveryCount  = "HelixRedeliveryCount"
	HeaderAggregateMissing = "HelixAggregateMissing"
)

// ReservedHeaderPrefix starts the name of every header Helix itself sets or
// reads (HelixFileName, HelixMcpToolName, HelixKafkaTopic …), in any letter case.
const ReservedHeaderPrefix = "Helix"

// IsReservedHeader reports whether name starts with ReservedHeaderPrefix in any
// letter case. Such headers choose files, tools, agent sessions and endpoints, so
// only Helix may set them: whatever arrives from outside under such a name is
// dropped (SetInboundHeader) and never sent out again.
func IsReservedHeader(name string) bool {
	n := len(ReservedHeaderPrefix)
	return len(name) >= n && strings.EqualFold(name[:n], ReservedHeaderPrefix)
}

// Message is a body plus headers.
type Message struct {
	body    any
	headers map[string]any
}

// newMessage returns a message with the given body and no headers.
func newMessage(body any) *Message { return &Message{body: body, headers: map[string]any{}} }

// Body returns the message body: map[string]any, []any, string, []byte, numbers, bool or nil.
func (m *Message) Body() any { return m.body }

// SetBody replaces the body.
func (m *Message) SetBody(b any) { m.body = b }

// Header returns a header value, or nil.
func (m *Message) Header(name string) any { return m.headers[name] }

// HeaderString returns a header formatted as a string, "" when absent.
func (m *Message) HeaderString(name string) string {
	v, ok := m.headers[name]
	if !ok || v == nil {
		return ""
	}
	return Stringify(v)
}

// SetHeader sets a header; a nil value removes it.
func (m *Message) SetHeader(name string, v any) {
	if v == nil {
		delete(m.headers, name)
		return
	}
	m.headers[name] = v
}

// SetInboundHeader sets a header that came from outside Helix — an HTTP request
// header, a Kafka record header — unless its name is reserved
// (IsReservedHeader), and reports whether it did. Every trigger copies foreign
// headers through it, so that no sender can forge one of Helix's own headers
// whatever the letter case.
func (m *Message) SetInboundHeader(name string, v any) bool {
	if IsReservedHeader(name) {
		return false
	}
	m.SetHeader(name, v)
	return true
}

// RemoveHeader deletes a header.
func (m *Message) RemoveHeader(name string) { delete(m.headers, name) }

// Headers returns the live header map (mutations are visible on the message).
func (m *Message) Headers() map[string]any { return m.headers }

// Exchange is one message travelling through a workflow.
type Exchange struct {
	id      string
	pattern Pattern
	in      *Message
	// variables is made on first use: most exchanges never set one.
	variables map[string]any
	exception error
	// FromWorkflow is the ID of the workflow whose trigger created this exchange, if any.
	fromWorkflow string
	// msg is where New's in-message lives: one allocation for both.
	msg Message
}

// New creates an exchange with a fresh ID and an empty in-message.
func New(p Pattern) *Exchange {
	return NewWithBody(p, nil)
}

// NewWithBody creates an exchange carrying body.
func NewWithBody(p Pattern, body any) *Exchange {
	ex := &Exchange{id: newID(), pattern: p}
	ex.msg = Message{body: body, headers: map[string]any{}}
	ex.in = &ex.msg
	return ex
}

func (e *Exchange) ID() string                { return e.id }
func (e *Exchange) Pattern() Pattern          { return e.pattern }
func (e *Exchange) SetPattern(p Pattern)      { e.pattern = p }
func (e *Exchange) In() *Message              { return e.in }
func (e *Exchange) Exception() error          { return e.exception }
func (e *Exchange) FromWorkflow() string      { return e.fromWorkflow }
func (e *Exchange) SetFromWorkflow(id string) { e.fromWorkflow = id }

// SetException marks the exchange as failed; the pipeline stops after the current
// step and the workflow's error handler runs. SetException(nil) clears it.
func (e *Exchange) SetException(err error) { e.exception = err }

// Variable returns an exchange variable (set by enrich), or nil.
func (e *Exchange) Variable(name string) any { return e.variables[name] }

// SetVariable sets an exchange variable, visible to every later step.
func (e *Exchange) SetVariable(name string, v any) { e.Variables()[name] = v }

// Variables returns the live variable map, making it on first use: like
// SetVariable, it is a write as far as concurrent use of the exchange goes.
func (e *Exchange) Variables() map[string]any {
	if e.variables == nil {
		e.variables = map[string]any{}
	}
	return e.variables
}

// Copy returns a deep copy with a new ID: body, headers and variables are cloned so
// that the copy can be mutated on another goroutine without touching the original.
func (e *Exchange) Copy() *Exchange {
	return &Exchange{
		id:           newID(),
		pattern:      e.pattern,
		in:           &Message{body: DeepCopy(e.in.body), headers: copyMap(e.in.headers)},
		variables:    copyMap(e.variables),
		exception:    e.exception,
		fromWorkflow: e.fromWorkflow,
	}
}

// CopyWithBody is [Exchange.Copy] with body (deep-copied) as the copy's body instead
// of e's. A splitter makes one copy per element of the body: copying the whole body
// each time would make splitting a list of n elements cost n².
func (e *Exchange) CopyWithBody(body any) *Exchange {
	return &Exchange{
		id:           newID(),
		pattern:      e.pattern,
		in:           &Message{body: DeepCopy(body), headers: copyMap(e.in.headers)},
		variables:    copyMap(e.variables),
		exception:    e.exception,
		fromWorkflow: e.fromWorkflow,
	}
}

// DeepCopy clones the JSON-like values Helix bodies are made of (maps, slices, []byte);
// other values are returned as is (they are treated as immutable).
func DeepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return copyMap(t)
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = DeepCopy(x)
		}
		return out
	case []byte:
		return append([]byte(nil), t...)
	case []string:
		return append([]string(nil), t...)
	case json.RawMessage:
		return append(json.RawMessage(nil), t...)
	default:
		return v
	}
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = DeepCopy(v)
	}
	return out
}

var idCounter atomic.Uint64
var idPrefix = func() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}()

// newID is cheap and unique per process: a random prefix plus a counter.
func newID() string {
	n := idCounter.Add(1)
	var buf [16]byte
	i := len(buf)
	for {
		i--
		buf[i] = "0123456789abcdef"[n&15]
		n >>= 4
		if n == 0 {
			break
		}
	}
	return idPrefix + "-" + string(buf[i:])
}
