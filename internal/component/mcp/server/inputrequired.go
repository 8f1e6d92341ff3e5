package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/ask"
	"github.com/arvenza/helix/internal/component/mcp/server/requeststate"
	"github.com/arvenza/helix/internal/form"
	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/engine"
)

// Input-required results (MCP 2026-07-28, SEP-2322). A server on this protocol
// does not send requests to the client: it answers the call with the questions
// (inputRequests) and a sealed requestState, and the client calls again with the
// answers (inputResponses) and the state. Helix runs the workflow again with the
// answers known so far: a question already answered gets its answer, an unknown
// one is recorded as pending and stops the run (ask.ErrInputRequired, an
// engine.Interrupt nothing swallows); the call is then answered with every pending
// question. Sessions of 2025-11-25 and earlier keep the server-to-client requests
// of client_requests.go.

// Exchange headers a tool call's workflow starts with on MCP 2026-07-28.
const (
	// HeaderClientCapabilities lists the capabilities the client declared in
	// the request's _meta, sorted and comma-separated ("elicitation,roots,sampling"),
	// so that a workflow can ask only what the client can answer.
	HeaderClientCapabilities = "HelixMcpClientCapabilities"
	// HeaderRequestState is "verified" on a retry whose requestState the server
	// opened and checked (integrity, expiry, caller, tool and arguments, single use).
	HeaderRequestState = "HelixMcpRequestState"
)

// inputRequiredMode reports whether req is answered the SEP-2322 way: its protocol
// (the request's _meta, else the session's) is 2026-07-28 or later. The one place
// that decides.
func inputRequiredMode(req interface{ ProtocolVersion() string }) bool {
	return req.ProtocolVersion() >= "2026-07-28"
}

// The capabilities a question needs, as MCP names them.
const (
	capElicitation = "elicitation"
	capSampling    = "sampling"
	capRoots       = "roots"
)

// missingCapabilityError is the error of a question the client cannot answer:
// it declared no such capability. It interrupts the run (nothing may tolerate it),
// and the server answers the request with -32021.
type missingCapabilityError struct{ capability string }

func (e *missingCapabilityError) Error() string {
	return fmt.Sprintf("the MCP client did not declare the %s capability, so this workflow cannot ask it", e.capability)
}
func (e *missingCapabilityError) Interrupt() bool { return true }

// invalidAnswerError is an answer that is not what its question asks for: the
// request is refused with -32602 naming the id.
type invalidAnswerError struct {
	id, msg string
}

func (e *invalidAnswerError) Error() string {
	return fmt.Sprintf("inputResponses[%q]: %s", e.id, e.msg)
}
func (e *invalidAnswerError) Interrupt() bool { return true }

// inputClient is the ask.Client of one tool call in input-required mode.
type inputClient struct {
	caps *sdk.ClientCapabilities // nil: none declared

	mu      sync.Mutex
	answers map[string]json.RawMessage // known answers by id: the state's, then this request's
	used    map[string]json.RawMessage // the answers this run asked for: sealed into the next state
	asked   map[string]int             // times each base id was asked in this run
	pending sdk.InputRequestMap
	missing map[string]bool // capabilities questions needed and the client lacks
	invalid *invalidAnswerError
}

var _ ask.Client = (*inputClient)(nil)

func newInputClient(caps *sdk.ClientCapabilities, answers map[string]json.RawMessage) *inputClient {
	if answers == nil {
		answers = map[string]json.RawMessage{}
	}
	return &inputClient{caps: caps, answers: answers, used: map[string]json.RawMessage{}, asked: map[string]int{}}
}

// question resolves the id of a question in this run and returns its answer, if
// known. The same id asked again in one run (a step in a split, two steps with one
// id:) becomes id#2, id#3 … in the order of asking.
func (c *inputClient) question(base, capability string) (id string, answer json.RawMessage, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.declared(capability) {
		if c.missing == nil {
			c.missing = map[string]bool{}
		}
		c.missing[capability] = true
		return "", nil, &missingCapabilityError{capability: capability}
	}
	if base == "" {
		base = "question" // a question from Go code that named none
	}
	c.asked[base]++
	id = base
	if n := c.asked[base]; n > 1 {
		id = base + "#" + strconv.Itoa(n)
	}
	if a, ok := c.answers[id]; ok {
		c.used[id] = a
		return id, a, nil
	}
	return id, nil, nil
}

func (c *inputClient) declared(capability string) bool {
	if c.caps == nil {
		return false
	}
	switch capability {
	case capElicitation:
		return c.caps.Elicitation != nil
	case capSampling:
		//lint:ignore SA1019 sampling: deprecated in MCP 2026-07-28, still the sample step's only way (see Sample)
		return c.caps.Sampling != nil
	case capRoots:
		//lint:ignore SA1019 roots: deprecated in MCP 2026-07-28, still the roots step's only way
		return c.caps.RootsV2 != nil
	}
	return false
}

// ask records q as pending under id and returns the interrupt.
func (c *inputClient) ask(id string, q sdk.InputRequest) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending == nil {
		c.pending = sdk.InputRequestMap{}
	}
	c.pending[id] = q
	return ask.ErrInputRequired
}

// bad records an invalid answer (the first one wins) and returns it.
func (c *inputClient) bad(id, format string, args ...any) error {
	e := &invalidAnswerError{id: id, msg: fmt.Sprintf(format, args...)}
	c.mu.Lock()
	if c.invalid == nil {
		c.invalid = e
	}
	c.mu.Unlock()
	return e
}

func (c *inputClient) Elicit(_ context.Context, q *ask.Elicitation) (*ask.ElicitAnswer, error) {
	id, raw, err := c.question(q.ID, capElicitation)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		p := &sdk.ElicitParams{Mode: "form", Message: q.Message}
		if q.Schema != nil {
			p.RequestedSchema = q.Schema
		}
		return nil, c.ask(id, p)
	}
	var res sdk.ElicitResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, c.bad(id, "is not an elicitation result (ElicitResult with action and content): %v", err)
	}
	switch res.Action {
	case "":
		return nil, c.bad(id, "is not an elicitation result (ElicitResult): it has no action")
	case ask.ActionAccept:
	case ask.ActionDecline, ask.ActionCancel:
		return &ask.ElicitAnswer{Action: res.Action}, nil
	default:
		return nil, c.bad(id, "has the unknown action %q (want accept, decline or cancel)", res.Action)
	}
	content := res.Content
	if content == nil {
		content = map[string]any{}
	}
	if q.Schema != nil {
		if err := form.Check(q.Schema, &content); err != nil {
			return nil, c.bad(id, "the content does not match the form's schema: %v", err)
		}
	}
	return &ask.ElicitAnswer{Action: ask.ActionAccept, Content: content}, nil
}

func (c *inputClient) Sample(_ context.Context, q *ask.Sampling) (*ask.SampleAnswer, error) {
	id, raw, err := c.question(q.ID, capSampling)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, c.ask(id, samplingParams(q))
	}
	//lint:ignore SA1019 sampling: deprecated in MCP 2026-07-28, still the sample step's only way (see Sample)
	var res sdk.CreateMessageWithToolsResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, c.bad(id, "is not a sampling result (CreateMessageResult with role, content and model): %v", err)
	}
	if res.Role != "assistant" && res.Role != "user" {
		return nil, c.bad(id, "has the role %q (want assistant)", res.Role)
	}
	if len(res.Content) != 1 {
		return nil, c.bad(id, "has %d content blocks; a sample step takes one (text, image or audio)", len(res.Content))
	}
	out := &ask.SampleAnswer{Model: res.Model, StopReason: res.StopReason, Message: ask.Message{Role: string(res.Role)}}
	switch ct := res.Content[0].(type) {
	case *sdk.TextContent:
		out.Message.Text = ct.Text
	case *sdk.ImageContent:
		out.Message.Data, out.Message.MIMEType = ct.Data, ct.MIMEType
	case *sdk.AudioContent:
		out.Message.Data, out.Message.MIMEType = ct.Data, ct.MIMEType
	default:
		return nil, c.bad(id, "has %T content; a sample step takes text, image or audio", ct)
	}
	return out, nil
}

func (c *inputClient) Roots(_ context.Context, q *ask.RootsQuestion) ([]ask.Root, error) {
	id, raw, err := c.question(q.ID, capRoots)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		//lint:ignore SA1019 roots: deprecated in MCP 2026-07-28, still the roots step's only way
		return nil, c.ask(id, &sdk.ListRootsParams{})
	}
	var res struct {
		//lint:ignore SA1019 roots: deprecated in MCP 2026-07-28, still the roots step's only way
		Roots []*sdk.Root `json:"roots"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || res.Roots == nil {
		return nil, c.bad(id, "is not a roots result (ListRootsResult with a roots list)")
	}
	out := make([]ask.Root, 0, len(res.Roots))
	for i, r := range res.Roots {
		if r == nil || r.URI == "" {
			return nil, c.bad(id, "roots[%d] has no uri", i)
		}
		out = append(out, ask.Root{URI: r.URI, Name: r.Name})
	}
	return out, nil
}

// outcome is what the run left for the answer to the call.
type outcome struct {
	pending sdk.InputRequestMap
	used    map[string]json.RawMessage
	missing []string
	invalid *invalidAnswerError
}

func (c *inputClient) outcome() outcome {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := outcome{pending: c.pending, used: c.used, invalid: c.invalid}
	for k := range c.missing {
		o.missing = append(o.missing, k)
	}
	sort.Strings(o.missing)
	return o
}

// capabilityList is caps as HeaderClientCapabilities shows them.
func capabilityList(caps *sdk.ClientCapabilities) string {
	c := &inputClient{caps: caps}
	var names []string
	for _, n := range []string{capElicitation, capRoots, capSampling} {
		if c.declared(n) {
			names = append(names, n)
		}
	}
	return strings.Join(names, ",")
}

// inputRequests is the server's side of input-required calls: it opens the
// states retries bring and seals the next ones.
type inputRequests struct {
	server string // the server's id, bound into every state
	sealer *requeststate.Sealer
	// asking holds the names of the tools whose workflows ask (askingTools),
	// set at each build: calls of the others need no input-required client nor
	// checkpoints unless they bring answers or a state.
	asking atomic.Pointer[map[string]bool]
	// alsoAsks, when set, names more tools that may ask: an extension's, which
	// come and go while the server runs (gateway.go).
	alsoAsks atomic.Pointer[func(name string) bool]
	// postContext returns the context of the HTTP POST carrying a call (nil: none),
	// where the security stack put the principal.
	postContext func(http.Header) context.Context
	// randomKey is set when no request_state.key is configured; the first state
	// sealed under the process's random key says so once (noteRandomKey), on
	// servers that do ask, not on every server that starts.
	randomKey func()
}

// principal is the authenticated caller of req ("" when none).
func (ir *inputRequests) principal(ctx context.Context, extra *sdk.RequestExtra) string {
	return callPrincipal(ctx, extra, ir.postContext) // idempotency.go
}

// invalidParams is a JSON-RPC -32602 error.
func invalidParams(msg string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
}

// inputCall is one tools/call in input-required mode: begun by the askClient
// middleware (before the go-sdk looks the tool up), finished by the tool's handler
// (inside the go-sdk's callTool, which then marks the result input_required).
type inputCall struct {
	ir      *inputRequests
	binding requeststate.Binding
	client  *inputClient
	resume  *resumePoint // checkpoint.go
}

type inputCallKey struct{}

// inputRequest is what begin needs of a tools/call or prompts/get.
type inputRequest struct {
	method, target string
	arguments      []byte // JSON
	responses      sdk.InputResponseMap
	state          string
	caps           *sdk.ClientCapabilities
	extra          *sdk.RequestExtra
}

// setAsking records the tools whose workflows ask.
// extensionAsks reports whether name is a tool of the server's extension.
func (ir *inputRequests) extensionAsks(name string) bool {
	f := ir.alsoAsks.Load()
	return f != nil && (*f)(name)
}

func (ir *inputRequests) setAsking(names []string) {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	ir.asking.Store(&m)
}

// beginTool is begin for a tools/call.
func (ir *inputRequests) beginTool(ctx context.Context, cr *sdk.CallToolRequest) (context.Context, error) {
	if m := ir.asking.Load(); m != nil && !(*m)[cr.Params.Name] && !ir.extensionAsks(cr.Params.Name) && cr.Params.RequestState == "" && len(cr.Params.InputResponses) == 0 {
		return ctx, nil // a tool that never asks: nothing to set up
	}
	return ir.begin(ctx, inputRequest{method: "tools/call", target: cr.Params.Name, arguments: cr.Params.Arguments,
		responses: cr.Params.InputResponses, state: cr.Params.RequestState, caps: cr.ClientCapabilities(), extra: cr.Extra})
}

// beginPrompt is begin for a prompts/get.
func (ir *inputRequests) beginPrompt(ctx context.Context, pr *sdk.GetPromptRequest) (context.Context, error) {
	args, err := json.Marshal(pr.Params.Arguments)
	if err != nil {
		return ctx, invalidParams("arguments: " + err.Error())
	}
	return ir.begin(ctx, inputRequest{method: "prompts/get", target: pr.Params.Name, arguments: args,
		responses: pr.Params.InputResponses, state: pr.Params.RequestState, caps: pr.ClientCapabilities(), extra: pr.Extra})
}

// beginResource is begin for a resources/read: its target is the URI, and it
// has no arguments.
func (ir *inputRequests) beginResource(ctx context.Context, rr *sdk.ReadResourceRequest) (context.Context, error) {
	return ir.begin(ctx, inputRequest{method: "resources/read", target: rr.Params.URI,
		responses: rr.Params.InputResponses, state: rr.Params.RequestState, caps: rr.ClientCapabilities(), extra: rr.Extra})
}

// begin opens the request's requestState, if any, and returns ctx carrying the
// call's input-required client and the headers a tool's workflow starts with. A
// refused state is a -32602 error saying why and what to do.
func (ir *inputRequests) begin(ctx context.Context, r inputRequest) (context.Context, error) {
	b := requeststate.Binding{Server: ir.server, Method: r.method, Target: r.target,
		Arguments: r.arguments, Principal: ir.principal(ctx, r.extra)}
	answers := map[string]json.RawMessage{}
	verified := false
	var from *requeststate.Checkpoint
	if r.state != "" {
		st, err := ir.sealer.Open(ctx, r.state, b)
		if err != nil {
			var re *requeststate.Error
			if errors.As(err, &re) {
				return ctx, invalidParams(re.Msg)
			}
			return ctx, invalidParams("requestState: " + err.Error())
		}
		for k, v := range st.Answers {
			answers[k] = v
		}
		verified, from = true, st.Checkpoint
	}
	// This request's answers come after the state's: the client answers what it
	// was asked last. Ids the workflow never asks are ignored.
	for id, resp := range r.responses {
		if resp == nil {
			continue
		}
		raw, err := json.Marshal(resp)
		if err != nil {
			return ctx, invalidParams(fmt.Sprintf("inputResponses[%q]: %v", id, err))
		}
		answers[id] = raw
	}
	ic := newInputClient(r.caps, answers)
	ctx = ask.WithClient(ctx, ic)
	headers := map[string]any{HeaderClientCapabilities: capabilityList(r.caps)}
	if verified {
		headers[HeaderRequestState] = "verified"
	}
	ctx = tool.WithHeaders(ctx, headers)
	rp := &resumePoint{from: from, fresh: headers}
	ctx = engine.WithResume(ctx, rp)
	return context.WithValue(ctx, inputCallKey{}, &inputCall{ir: ir, binding: b, client: ic, resume: rp}), nil
}

// finishInputCall turns res, the result of the tool call ctx belongs to, into
// what the client gets: with questions pending, an input-required result with
// all of them and a new requestState; an invalid answer, -32602; a capability the
// client lacks, -32021. Calls not in input-required mode get res unchanged.
func finishInputCall(ctx context.Context, res *sdk.CallToolResult) (*sdk.CallToolResult, error) {
	call, ok := ctx.Value(inputCallKey{}).(*inputCall)
	if !ok {
		return res, nil
	}
	pending, state, err := call.finish()
	switch {
	case err != nil:
		return nil, err
	case pending == nil:
		return res, nil
	case state == "":
		return sdkResult(tool.ErrorResult("this call cannot go on: " + requeststate.ErrTooLarge.Error() + "; ask fewer or smaller questions in one call")), nil
	}
	return &sdk.CallToolResult{InputRequests: pending, RequestState: state}, nil
}

// finishInputPrompt is finishInputCall for a prompts/get; asked reports whether
// the prompt's run stopped on questions (its error is then no failure).
func finishInputPrompt(ctx context.Context) (res *sdk.GetPromptResult, asked bool, err error) {
	pending, state, asked, err := finishInputRequest(ctx)
	if !asked || err != nil {
		return nil, asked, err
	}
	return &sdk.GetPromptResult{InputRequests: pending, RequestState: state}, true, nil
}

// finishInputRequest is what a prompts/get or resources/read in input-required
// mode answers: asked reports a run that stopped on questions or on an invalid
// answer or missing capability (err); pending and state are the questions and
// the requestState to send.
func finishInputRequest(ctx context.Context) (pending sdk.InputRequestMap, state string, asked bool, err error) {
	call, ok := ctx.Value(inputCallKey{}).(*inputCall)
	if !ok {
		return nil, "", false, nil
	}
	pending, state, err = call.finish()
	switch {
	case err != nil:
		return nil, "", true, err
	case pending == nil:
		return nil, "", false, nil
	case state == "":
		return nil, "", true, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: requeststate.ErrTooLarge.Error()}
	}
	return pending, state, true, nil
}

// finish returns the pending questions (nil: none) and the state to send with
// them ("" when it would be too large), or the error the request fails with.
func (call *inputCall) finish() (sdk.InputRequestMap, string, error) {
	o := call.client.outcome()
	switch {
	case o.invalid != nil:
		return nil, "", invalidParams(o.invalid.Error() + "; send a valid result for it (without this call's requestState, which is good for one retry only), or call again without inputResponses and requestState to start over")
	case len(o.missing) > 0:
		return nil, "", missingCapabilities(o.missing)
	case len(o.pending) == 0:
		return nil, "", nil
	}
	if call.ir.randomKey != nil {
		call.ir.randomKey()
	}
	cp := call.resume.checkpoint()
	state, err := call.ir.sealer.Seal(call.binding, o.used, cp)
	if err != nil && cp != nil {
		// Too large with the checkpoint: the retry runs from the first step.
		state, err = call.ir.sealer.Seal(call.binding, o.used, nil)
	}
	if err != nil {
		return o.pending, "", nil
	}
	return o.pending, state, nil
}

// missingCapabilities is the -32021 error of a request that needs capabilities
// the client did not declare.
func missingCapabilities(names []string) *jsonrpc.Error {
	required := map[string]any{}
	for _, n := range names {
		required[n] = map[string]any{}
	}
	// "capability" is no field of the protocol: mcp-go (v1.2.1) reads the missing
	// capability's name from it and drops the message, so without it its users
	// read `missing required client capability: ""`.
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": required, "capability": strings.Join(names, ", ")})
	return &jsonrpc.Error{Code: sdk.CodeMissingRequiredClientCapabilities,
		Message: fmt.Sprintf("this request needs client capabilities the client did not declare in _meta[%q]: %s",
			"io.modelcontextprotocol/clientCapabilities", strings.Join(names, ", ")),
		Data: data}
}
