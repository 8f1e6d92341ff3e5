// Package ask carries a [Client] through an exchange's context.Context, so that a
// step (elicit, sample) can put a question to whoever called the work: the user
// behind an MCP client (elicitation/create) or the client's language model
// (sampling/createMessage). The component that received the exchange decides
// whether anyone can be asked: the MCP server puts a Client into the context of
// each tool call that may ask (see package report for the same pattern with
// progress and logs). Exchanges from anywhere else carry none, and the steps fail
// with [ErrNoClient].
//
// The package imports nothing but the standard library: no protocol lives here.
package ask

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"
)

// Client asks the caller of one piece of work (typically one MCP tool call).
// Methods block until the answer arrives, ctx ends or the client goes away; they
// are safe for concurrent use. Errors say what the caller lacks in words a user can
// act on ("the MCP client does not support elicitation").
type Client interface {
	// Elicit asks the user to fill in a form and returns their answer.
	Elicit(ctx context.Context, q *Elicitation) (*ElicitAnswer, error)
	// Sample asks the client's language model for a message.
	Sample(ctx context.Context, q *Sampling) (*SampleAnswer, error)
	// Roots asks the client for its roots (roots/list): the directories or
	// other URIs it lets the server work in.
	Roots(ctx context.Context, q *RootsQuestion) ([]Root, error)
}

// ErrInputRequired is the error of a question whose answer the client has not
// given yet, on MCP 2026-07-28 and later, where a server asks by answering the
// call with input requests (SEP-2322) instead of waiting: the client answers them
// and calls again. The work stops where it asked; no error handler, redelivery,
// dead letter, catch or on_decline may swallow it (it implements Interrupt), so
// that the server sees it and answers with every question still pending.
var ErrInputRequired error = interrupt("the MCP client must answer input requests first (the call is answered with them and is retried with the answers)")

// interrupt is an error that stops an exchange as it is (see pkg/engine's
// Interrupt): error handlers and catching steps pass it on.
type interrupt string

func (e interrupt) Error() string   { return string(e) }
func (e interrupt) Interrupt() bool { return true }

// ErrNoClient is the error of a question asked by work that no MCP client called.
var ErrNoClient = errors.New("this exchange did not come from an MCP client's tool call, so there is no client to ask; elicit and sample steps only work in workflows called as MCP tools")

// Elicitation is a form for the user (MCP elicitation/create, form mode).
type Elicitation struct {
	// ID names the question in the input requests of MCP 2026-07-28 (the step's
	// id:, or one derived from the step); the answer comes back under it.
	ID      string
	Message string
	// Schema is the requested schema: a JSON Schema object with flat, primitive
	// properties (string, number, integer, boolean, arrays of enum strings), as
	// decoded JSON (map[string]any).
	Schema map[string]any
}

// The actions a user can answer an elicitation with.
const (
	ActionAccept  = "accept"
	ActionDecline = "decline"
	ActionCancel  = "cancel"
)

// ElicitAnswer is the user's answer: Content is set for ActionAccept only, checked
// against the schema and with its defaults applied.
type ElicitAnswer struct {
	Action  string
	Content map[string]any
}

// Sampling is a request for one message from the client's model
// (sampling/createMessage).
type Sampling struct {
	ID           string // see Elicitation.ID
	Messages     []Message
	SystemPrompt string
	MaxTokens    int64
	Temperature  *float64 // nil: the client's choice
	// IncludeContext is "", "none", "thisServer" or "allServers".
	IncludeContext   string
	StopSequences    []string
	ModelPreferences *ModelPreferences // nil: none
}

// Message is one message of a sampling conversation: text, or an image or audio
// (Data, the raw bytes, with its MIME type).
type Message struct {
	Role     string // user or assistant
	Text     string
	Data     []byte // image or audio bytes; nil for text
	MIMEType string // image/… or audio/… with Data
}

// ModelPreferences are hints for the client's choice of model; priorities are
// between 0 and 1, nil when not given.
type ModelPreferences struct {
	Hints                []string
	CostPriority         *float64
	SpeedPriority        *float64
	IntelligencePriority *float64
}

// RootsQuestion asks for the client's roots (roots/list).
type RootsQuestion struct {
	ID string // see Elicitation.ID
}

// Root is one root of the client: a URI (file:///…) and an optional name.
type Root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}

// SampleAnswer is the model's message.
type SampleAnswer struct {
	Message    Message
	Model      string
	StopReason string
}

type clientKey struct{}

// WithClient returns a context that carries c; a nil c returns ctx unchanged.
func WithClient(ctx context.Context, c Client) context.Context {
	if c == nil {
		return ctx
	}
	return context.WithValue(ctx, clientKey{}, c)
}

// FromContext returns the client ctx carries, or nil.
func FromContext(ctx context.Context) Client {
	if ctx == nil {
		return nil
	}
	c, _ := ctx.Value(clientKey{}).(Client)
	return c
}

// Asker is implemented by processors that ask the client (the elicit and sample
// steps). A server finds them in a workflow's steps (composite steps list their
// children) to know which tool calls need a session that can send requests to the
// client.
type Asker interface {
	AsksClient() bool
}

// StreamReleaser is implemented by the Clients of calls whose answer can travel on
// a later connection: the MCP server ends the call's response stream and the
// client reconnects after a delay to get the rest (MCP 2025-11-25 SSE polling,
// SEP-1699). Work that runs long can so free the client's connection.
type StreamReleaser interface {
	// ReleaseStream asks the transport to end the call's response stream now,
	// telling the client to reconnect after retry (0: the client's own delay).
	// It reports whether the call's transport was asked; it cannot be (and the
	// call goes on, holding its connection) over stdio, on stateless servers and
	// for sessions of protocols without resumable streams.
	ReleaseStream(retry time.Duration) bool
}

// Targets that ask: a component whose target passes questions from elsewhere on
// to the exchange's caller (an mcp:// target that forwards its server's
// elicitation) registers a test of its URIs, so that an MCP server knows the
// tools whose workflows send there may ask, as it knows those with an elicit step.
var targetAskers sync.Map // lower-case scheme → func(rawURI string) bool

// RegisterTargetAsker makes TargetAsks consult asks for URIs of scheme.
func RegisterTargetAsker(scheme string, asks func(rawURI string) bool) {
	targetAskers.Store(strings.ToLower(scheme), asks)
}

// TargetAsks reports whether sending to rawURI may ask the exchange's caller.
func TargetAsks(rawURI string) bool {
	scheme, _, ok := strings.Cut(strings.TrimSpace(rawURI), "://")
	if !ok {
		return false
	}
	f, ok := targetAskers.Load(strings.ToLower(scheme))
	return ok && f.(func(string) bool)(rawURI)
}
