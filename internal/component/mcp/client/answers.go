package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/ask"
	"github.com/arvenza/helix/pkg/uri"
)

// Answers to server requests: while a server serves a call it may ask the client
// something — elicitation/create (a form for the user) or sampling/createMessage
// (a message from the client's model). On sessions of 2025-11-25 and earlier the
// question arrives as a request of its own; on 2026-07-28 the server answers the
// call with input requests and the go-sdk calls the same handlers before it sends
// the call again with the answers. Either way the Conn's Answers decide:
//
//   - refuse (the default): no capability is declared, and a server that asks
//     anyway gets a JSON-RPC error saying how to change that;
//   - defaults (elicitation): accept with the requested schema's defaults; a
//     required field without one declines the form;
//   - forward: ask whoever called the exchange that makes the call (package ask:
//     Helix's own MCP caller, when the workflow serves a tool call);
//   - agent:<id> (sampling): a configured agent's model writes the message;
//   - an Elicitor of the caller's own (helix mcp call asks the person at the
//     terminal).

// The policies of onElicit and onSample.
const (
	AnswerRefuse   = "refuse"
	AnswerDefaults = "defaults"
	AnswerForward  = "forward"
	// AnswerAgentPrefix starts onSample: agent:<id>.
	AnswerAgentPrefix = "agent:"
)

// ElicitPolicies and SamplePolicies are the values onElicit and onSample accept,
// for error messages and docs (SamplePolicies' last one is a pattern).
var (
	ElicitPolicies = []string{AnswerRefuse, AnswerDefaults, AnswerForward}
	SamplePolicies = []string{AnswerRefuse, AnswerForward, AnswerAgentPrefix + "<id>"}
)

// Bounds on what a server may ask: a question beyond them is refused before
// anyone (a person, a model, Helix's own caller) sees it.
const (
	maxElicitMessageBytes = 64 << 10
	maxElicitFields       = 100
	maxElicitSchemaBytes  = 256 << 10
	maxSamplingBytes      = 4 << 20
	maxSamplingMessages   = 1000
)

// Elicitor answers a server's elicitation: helix mcp call's prompt at the terminal.
type Elicitor interface {
	Elicit(ctx context.Context, q *ask.Elicitation) (*ask.ElicitAnswer, error)
}

// Sampler writes the message a server's sampling request asks for: an agent's model.
type Sampler interface {
	Sample(ctx context.Context, q *ask.Sampling) (*ask.SampleAnswer, error)
}

// Answers says how a connection answers the requests of its server.
type Answers struct {
	// Elicit is refuse ("" too), defaults or forward; Elicitor, when set, wins.
	Elicit string
	// Sample is refuse ("" too), forward or agent:<id>; agent:<id> needs Sampler.
	Sample string
	// Elicitor and Sampler answer in the caller's own way (see the types).
	Elicitor Elicitor
	Sampler  Sampler
	// Who names the client in refusals; empty means "this Helix workflow".
	Who string
	// Hint ends the error a refused server gets and the errors of a forward that
	// has nobody to ask: what to set instead. Empty means the target's options.
	Hint string
}

func (a Answers) who() string {
	if a.Who != "" {
		return a.Who
	}
	return "this Helix workflow"
}

// ParseElicitPolicy checks an onElicit value; "" is refuse.
func ParseElicitPolicy(v string) (string, error) {
	switch v {
	case "", AnswerRefuse:
		return AnswerRefuse, nil
	case AnswerDefaults, AnswerForward:
		return v, nil
	}
	return "", fmt.Errorf("onElicit %q is not a policy: use %s", v, strings.Join(ElicitPolicies, ", "))
}

// ParseSamplePolicy checks an onSample value; "" is refuse. It returns the agent
// id of agent:<id>, else "".
func ParseSamplePolicy(v string) (policy, agent string, err error) {
	switch {
	case v == "" || v == AnswerRefuse:
		return AnswerRefuse, "", nil
	case v == AnswerForward:
		return v, "", nil
	case strings.HasPrefix(v, AnswerAgentPrefix):
		id := strings.TrimSpace(strings.TrimPrefix(v, AnswerAgentPrefix))
		if id == "" {
			return "", "", fmt.Errorf("onSample %q names no agent: write agent:<id> with the id of one of the agents", v)
		}
		return v, id, nil
	case v == AnswerDefaults:
		return "", "", fmt.Errorf("onSample %q: sampling has no defaults; use %s", v, strings.Join(SamplePolicies, ", "))
	}
	return "", "", fmt.Errorf("onSample %q is not a policy: use %s", v, strings.Join(SamplePolicies, ", "))
}

func (a Answers) elicitPolicy() string {
	if a.Elicitor != nil {
		return "custom"
	}
	if a.Elicit == "" {
		return AnswerRefuse
	}
	return a.Elicit
}

func (a Answers) samplePolicy() string {
	if a.Sample == "" {
		return AnswerRefuse
	}
	return a.Sample
}

func (a Answers) hint(option, values string) string {
	if a.Hint != "" {
		return a.Hint
	}
	return fmt.Sprintf("set %s: %s on the target (or on the agent's MCP tool)", option, values)
}

// applyAnswers puts the handlers of c's Answers into opts, and the middleware
// that refuses what is not answered.
func (c *Conn) applyAnswers(opts *sdk.ClientOptions) {
	a := c.cfg.Answers
	if a.elicitPolicy() != AnswerRefuse {
		opts.ElicitationHandler = c.answerElicitation
	}
	if a.samplePolicy() != AnswerRefuse {
		//lint:ignore SA1019 sampling: deprecated in MCP 2026-07-28, still offered to servers in the window
		opts.CreateMessageHandler = c.answerSampling
	}
}

// answersQuestions reports whether c answers any of the server's questions.
func (c *Conn) answersQuestions() bool {
	return c.cfg.Answers.elicitPolicy() != AnswerRefuse || c.cfg.Answers.samplePolicy() != AnswerRefuse
}

// refuseUnanswered is receiving middleware: a server that asks what the Conn does
// not answer (it declared no such capability) gets an error saying what to set,
// where the SDK would say only that the client does not support it.
func (c *Conn) refuseUnanswered(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		a := c.cfg.Answers
		switch {
		case method == "elicitation/create" && a.elicitPolicy() == AnswerRefuse:
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
				Message: a.who() + " does not answer elicitation; " + a.hint("onElicit", "defaults or forward")}
		case method == "sampling/createMessage" && a.samplePolicy() == AnswerRefuse:
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
				Message: a.who() + " does not answer sampling; " + a.hint("onSample", "forward or agent:<id>")}
		}
		return next(ctx, method, req)
	}
}

// explainRefusal adds what to set to the error of a call whose server asked what
// c does not answer. On 2026-07-28 the go-sdk client fails the call with "client
// does not support elicitation" (or CreateMessage); a server of 2025-11-25 that
// checks the capabilities the client declared does not send the request and fails
// the call with a similar error of its own. Neither says what to set.
func (c *Conn) explainRefusal(err error) error {
	a := c.cfg.Answers
	var te *ToolError
	if errors.As(err, &te) && te.Protocol {
		switch {
		case strings.Contains(te.Message, "does not support elicitation") && a.elicitPolicy() == AnswerRefuse:
			te.Message += "; " + a.who() + " does not answer elicitation: " + a.hint("onElicit", "defaults or forward")
		case strings.Contains(te.Message, "does not support CreateMessage") || strings.Contains(te.Message, "does not support sampling"):
			if a.samplePolicy() == AnswerRefuse {
				te.Message += "; " + a.who() + " does not answer sampling: " + a.hint("onSample", "forward or agent:<id>")
			}
		}
	}
	return err
}

// answerElicitation is the Conn's ElicitationHandler.
// answerError is a question the Conn could not answer (the person's value was
// invalid, the agent's model failed, the forward failed): on 2026-07-28 the go-sdk
// returns it from the call itself, which must then say so rather than take it for
// a connection that broke after the request was sent (sessionGone).
type answerError struct{ err error }

func (e *answerError) Error() string { return e.err.Error() }
func (e *answerError) Unwrap() error { return e.err }

// answerFailed marks err as an answer's failure; a JSON-RPC error (what the
// server is told) is left as it is, so that the go-sdk sends its code.
func answerFailed(err error) error {
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		return err
	}
	return &answerError{err: err}
}

func (c *Conn) answerElicitation(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	if req == nil || req.Params == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "elicitation/create without params"}
	}
	p := req.Params
	if p.Mode == "url" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Helix answers form elicitation only, not url mode"}
	}
	q, err := elicitationQuestion(p)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	a := c.cfg.Answers
	var ans *ask.ElicitAnswer
	switch {
	case a.Elicitor != nil:
		ans, err = a.Elicitor.Elicit(ctx, q)
	case a.Elicit == AnswerDefaults:
		var why string
		ans, why = DefaultsAnswer(q.Schema)
		if why != "" {
			c.log.Warn("mcp elicitation declined", "server", c.cfg.target(), "reason", why)
		}
	case a.Elicit == AnswerForward:
		err = c.forward(ctx, func(ctx context.Context, to ask.Client) error {
			var err error
			ans, err = to.Elicit(ctx, q)
			return err
		})
	default:
		return nil, fmt.Errorf("onElicit %q is not a policy", a.Elicit)
	}
	if err != nil {
		return nil, answerFailed(err)
	}
	res := &sdk.ElicitResult{Action: ans.Action}
	if ans.Action == ask.ActionAccept {
		res.Content = ans.Content
		if res.Content == nil {
			res.Content = map[string]any{}
		}
	}
	return res, nil
}

// elicitationQuestion is p as a question, after the bounds a hostile server
// could cross. Its id is derived from the question's content, so that the same
// question asked again (the call made again when Helix's caller answered) finds
// the same answer.
func elicitationQuestion(p *sdk.ElicitParams) (*ask.Elicitation, error) {
	if len(p.Message) > maxElicitMessageBytes {
		return nil, fmt.Errorf("elicitation refused: its message has %d bytes, more than the %d Helix accepts", len(p.Message), maxElicitMessageBytes)
	}
	q := &ask.Elicitation{Message: p.Message}
	var schemaJSON []byte
	if p.RequestedSchema != nil {
		b, err := json.Marshal(p.RequestedSchema)
		if err != nil {
			return nil, fmt.Errorf("elicitation refused: its requestedSchema is not JSON: %v", err)
		}
		if len(b) > maxElicitSchemaBytes {
			return nil, fmt.Errorf("elicitation refused: its requestedSchema has %d bytes, more than the %d Helix accepts", len(b), maxElicitSchemaBytes)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("elicitation refused: its requestedSchema is not a JSON object: %v", err)
		}
		if props, _ := m["properties"].(map[string]any); len(props) > maxElicitFields {
			return nil, fmt.Errorf("elicitation refused: its form has %d fields, more than the %d Helix accepts", len(props), maxElicitFields)
		}
		q.Schema, schemaJSON = m, b
	}
	q.ID = questionID("elicitation", []byte(p.Message), schemaJSON)
	return q, nil
}

// questionID names a question by what it asks: "upstream-" and a hash of its kind
// and content.
func questionID(kind string, parts ...[]byte) string {
	h := sha256.New()
	h.Write([]byte(kind))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write(p)
	}
	return "upstream-" + kind + "-" + hex.EncodeToString(h.Sum(nil)[:8])
}

// DefaultsAnswer answers a form with its schema's defaults (SEP-1034): accept with
// every field that has a default, or decline — with the reason — when a required
// field has none.
func DefaultsAnswer(schema map[string]any) (*ask.ElicitAnswer, string) {
	content := map[string]any{}
	props, _ := schema["properties"].(map[string]any)
	for name, p := range props {
		if pm, ok := p.(map[string]any); ok {
			if d, ok := pm["default"]; ok {
				content[name] = d
			}
		}
	}
	if missing := MissingRequired(schema, content); len(missing) > 0 {
		return &ask.ElicitAnswer{Action: ask.ActionDecline},
			fmt.Sprintf("required field %s has no default", strings.Join(missing, ", "))
	}
	return &ask.ElicitAnswer{Action: ask.ActionAccept, Content: content}, ""
}

// MissingRequired lists, sorted, the required fields of schema that content lacks.
func MissingRequired(schema, content map[string]any) []string {
	req, _ := schema["required"].([]any)
	var missing []string
	for _, r := range req {
		if name, ok := r.(string); ok {
			if _, ok := content[name]; !ok {
				missing = append(missing, name)
			}
		}
	}
	sort.Strings(missing)
	return missing
}

// answerSampling is the Conn's CreateMessageHandler.
//
//lint:ignore SA1019 sampling: deprecated in MCP 2026-07-28, still offered to servers in the window
func (c *Conn) answerSampling(ctx context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
	if req == nil || req.Params == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "sampling/createMessage without params"}
	}
	q, err := samplingQuestion(req.Params)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	a := c.cfg.Answers
	var ans *ask.SampleAnswer
	switch {
	case a.Sample == AnswerForward:
		err = c.forward(ctx, func(ctx context.Context, to ask.Client) error {
			var err error
			ans, err = to.Sample(ctx, q)
			return err
		})
	case strings.HasPrefix(a.Sample, AnswerAgentPrefix) && a.Sampler != nil:
		ans, err = a.Sampler.Sample(ctx, q)
	default:
		return nil, fmt.Errorf("onSample %q cannot answer: no agent's model is wired to this connection", a.Sample)
	}
	if err != nil {
		return nil, answerFailed(err)
	}
	return SamplingResult(ans), nil
}

// samplingQuestion is p as a question, after the bounds a hostile server could
// cross (see elicitationQuestion for its id).
//
//lint:ignore SA1019 sampling: deprecated in MCP 2026-07-28, still offered to servers in the window
func samplingQuestion(p *sdk.CreateMessageParams) (*ask.Sampling, error) {
	if len(p.Messages) > maxSamplingMessages {
		return nil, fmt.Errorf("sampling refused: %d messages, more than the %d Helix accepts", len(p.Messages), maxSamplingMessages)
	}
	q := &ask.Sampling{SystemPrompt: p.SystemPrompt, MaxTokens: p.MaxTokens, IncludeContext: p.IncludeContext,
		StopSequences: p.StopSequences}
	if p.Temperature != 0 {
		t := p.Temperature
		q.Temperature = &t
	}
	if mp := p.ModelPreferences; mp != nil {
		q.ModelPreferences = &ask.ModelPreferences{CostPriority: &mp.CostPriority, SpeedPriority: &mp.SpeedPriority,
			IntelligencePriority: &mp.IntelligencePriority}
		for _, h := range mp.Hints {
			if h != nil {
				q.ModelPreferences.Hints = append(q.ModelPreferences.Hints, h.Name)
			}
		}
	}
	size := len(p.SystemPrompt)
	for i, m := range p.Messages {
		if m == nil {
			return nil, fmt.Errorf("sampling refused: message %d is null", i)
		}
		msg := ask.Message{Role: string(m.Role)}
		switch ct := m.Content.(type) {
		case *sdk.TextContent:
			msg.Text = ct.Text
		case *sdk.ImageContent:
			msg.Data, msg.MIMEType = ct.Data, ct.MIMEType
		case *sdk.AudioContent:
			msg.Data, msg.MIMEType = ct.Data, ct.MIMEType
		default:
			return nil, fmt.Errorf("sampling refused: message %d has %T content; Helix passes on text, image and audio", i, ct)
		}
		size += len(msg.Text) + len(msg.Data)
		if size > maxSamplingBytes {
			return nil, fmt.Errorf("sampling refused: its messages have more than the %d bytes Helix accepts", maxSamplingBytes)
		}
		q.Messages = append(q.Messages, msg)
	}
	b, _ := json.Marshal(q)
	q.ID = questionID("sampling", b)
	return q, nil
}

// Forwarding. The question goes to the ask.Client of the exchange that made the
// call: over a session of 2025-11-25 or earlier Helix's server asks its own
// client and waits; on 2026-07-28 its client has no answer yet and returns an
// interrupt (ask.ErrInputRequired): Helix's caller gets the question as an input
// request and calls again with the answer, which runs the workflow again — and
// this call again, whose server asks the same question (same content, same id)
// and now finds the answer. The upstream server's own state of the first round
// is not kept: the upstream call is simply made again.

// inFlight is one call of a Conn that may forward questions. On 2026-07-28 the
// go-sdk calls the handlers with the call's context, which carries it; over older
// sessions a question arrives on the session, and is the only call's in flight.
type inFlight struct {
	ctx context.Context // the exchange's: its ask.Client

	mu      sync.Mutex
	stopped error // why a forwarded question ended the call (an interrupt, or nobody to ask)
}

type inFlightKey struct{}

// withoutCall hides the call ctx carries from a session opened with it: the
// go-sdk handles the server's requests with the context the session was opened
// with, and a question of a later call must not be taken for one of the call
// that happened to open the session.
func withoutCall(ctx context.Context) context.Context { return hiddenCall{ctx} }

type hiddenCall struct{ context.Context }

func (h hiddenCall) Value(key any) any {
	if _, ok := key.(inFlightKey); ok {
		return nil
	}
	return h.Context.Value(key)
}

// stop records err as the call's outcome. The upstream call itself ends as its
// server decides: on 2026-07-28 the go-sdk gives up the retry at once; an older
// server gets an error for its question, which ends a tool that waits for it.
func (f *inFlight) stop(err error) {
	f.mu.Lock()
	if f.stopped == nil {
		f.stopped = err
	}
	f.mu.Unlock()
}

func (f *inFlight) stopReason() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stopped
}

// forwards reports whether calls of c may forward questions.
func (c *Conn) forwards() bool {
	a := c.cfg.Answers
	return a.Elicitor == nil && a.Elicit == AnswerForward || a.Sample == AnswerForward
}

// beginCall registers a call that may forward and returns its context and the
// function that ends it.
func (c *Conn) beginCall(ctx context.Context) (context.Context, *inFlight, func()) {
	if !c.forwards() {
		return ctx, nil, func() {}
	}
	f := &inFlight{ctx: ctx}
	cctx := context.WithValue(ctx, inFlightKey{}, f)
	c.callsMu.Lock()
	if c.calls == nil {
		c.calls = map[*inFlight]struct{}{}
	}
	c.calls[f] = struct{}{}
	c.callsMu.Unlock()
	return cctx, f, func() {
		c.callsMu.Lock()
		delete(c.calls, f)
		c.callsMu.Unlock()
	}
}

// callOf finds the call a question belongs to (see inFlight).
func (c *Conn) callOf(ctx context.Context) (*inFlight, error) {
	if f, ok := ctx.Value(inFlightKey{}).(*inFlight); ok {
		return f, nil
	}
	c.callsMu.Lock()
	defer c.callsMu.Unlock()
	switch len(c.calls) {
	case 0:
		return nil, errors.New("the server asked while no call of this connection was running, so there is nobody to forward the question to")
	case 1:
		for f := range c.calls {
			return f, nil
		}
	}
	return nil, fmt.Errorf("the server asked while %d calls share its session, and a server of protocol 2025-11-25 or earlier does not say which call a question is for, so Helix cannot tell whose caller to forward it to", len(c.calls))
}

// ErrNobodyToForward is the error of a forward from an exchange that no MCP
// client called.
var ErrNobodyToForward = errors.New("the server asked a question to forward, but this exchange is not serving a tool call of Helix's MCP server, so there is nobody to forward it to")

// forward asks the exchange's caller through f. An interrupt (the caller must
// answer first) ends the upstream call and is what the call returns.
func (c *Conn) forward(ctx context.Context, f func(context.Context, ask.Client) error) error {
	call, err := c.callOf(ctx)
	if err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	to := ask.FromContext(call.ctx)
	if to == nil {
		call.stop(fmt.Errorf("%w; %s", ErrNobodyToForward, c.cfg.Answers.hint("onElicit/onSample", "defaults, refuse or agent:<id>")))
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: ErrNobodyToForward.Error()}
	}
	if err := f(call.ctx, to); err != nil {
		var in interface{ Interrupt() bool }
		if errors.As(err, &in) && in.Interrupt() {
			call.stop(err)
			return &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: "the question was passed on to Helix's own caller; the call will be made again with the answer"}
		}
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "forwarded question failed: " + err.Error()}
	}
	return nil
}

// forwardsQuestions reports whether a target URI forwards its server's questions
// (onElicit=forward or onSample=forward), so that a tool whose workflow sends
// there is served as one that may ask. A URI that does not parse asks nothing:
// building the workflow reports it.
func forwardsQuestions(raw string) bool {
	u, err := uri.Parse(raw)
	if err != nil {
		return false
	}
	for _, opt := range []string{"onElicit", "onSample"} {
		// A value chosen per exchange may be forward.
		if v := u.Params.Get(opt); v == AnswerForward || strings.Contains(v, "${") {
			return true
		}
	}
	return false
}
