package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/ask"
	"github.com/arvenza/helix/internal/component/mcp/transport"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/uri"
)

// Server-to-client requests from workflows: the elicit and sample steps (package
// step) ask the client through the ask.Client this file puts into the context of
// every tools/call served through the go-sdk session. The fast path
// (transport/fastcall.go) answers with the result only and cannot carry a
// request to the client, so the tools whose workflows contain such steps are
// excluded from it (askingTools).

// errStatelessAsk is the error of a question asked during a call to a stateless
// server: the client's answer would arrive on a POST of its own, which a
// stateless server cannot relate to the waiting call.
var errStatelessAsk = errors.New("a stateless MCP server cannot send requests to the client (elicitation, sampling, roots) on protocol 2025-11-25 or earlier; connect with protocol 2026-07-28 (the server then asks with input requests) or serve this tool from a server with stateless: false")

// askClient is the receiving middleware that gives each tools/call a client to
// ask. A request on MCP 2026-07-28 or later gets an input-required client
// (inputrequired.go, inputs); an older session gets the calling session, with
// requests related to the call so that Helix's Streamable HTTP transport sends
// them on the call's POST stream.
//
// releasable: the server's transport resumes streams the call releases (Helix's
// Streamable HTTP); the go-sdk's handler also offers RequestExtra.CloseSSEStream,
// but without an event store the client cannot resume, and the call would be lost.
func askClient(stateless, releasable bool, inputs *inputRequests) sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if pr, ok := req.(*sdk.GetPromptRequest); ok && method == "prompts/get" && pr.Params != nil && inputs != nil && inputRequiredMode(pr) {
				var err error
				if ctx, err = inputs.beginPrompt(ctx, pr); err != nil {
					return nil, err
				}
				return next(ctx, method, req)
			}
			if rr, ok := req.(*sdk.ReadResourceRequest); ok && method == "resources/read" && rr.Params != nil && inputs != nil && inputRequiredMode(rr) {
				var err error
				if ctx, err = inputs.beginResource(ctx, rr); err != nil {
					return nil, err
				}
				return next(ctx, method, req)
			}
			if method == "tools/call" {
				if cr, ok := req.(*sdk.CallToolRequest); ok && cr.Params != nil {
					if inputs != nil && inputRequiredMode(cr) {
						var err error
						if ctx, err = inputs.beginTool(ctx, cr); err != nil {
							return nil, err
						}
						return next(ctx, method, req)
					}
					if cr.Session != nil {
						ctx = ask.WithClient(ctx, &sessionClient{ss: cr.Session, extra: cr.Extra, stateless: stateless, releasable: releasable})
					}
				}
			}
			return next(ctx, method, req)
		}
	}
}

// sessionClient is an ask.Client for one tool call of one session.
type sessionClient struct {
	ss        *sdk.ServerSession
	extra     *sdk.RequestExtra // the call's; nil outside HTTP
	stateless bool
	// releasable: ReleaseStream may end the call's stream (see askClient).
	releasable bool
}

var _ ask.Client = (*sessionClient)(nil)

// capabilities returns what the client declared at initialize, or nil.
func (c *sessionClient) capabilities() *sdk.ClientCapabilities {
	if ip := c.ss.InitializeParams(); ip != nil {
		return ip.Capabilities
	}
	return nil
}

func (c *sessionClient) Elicit(ctx context.Context, q *ask.Elicitation) (*ask.ElicitAnswer, error) {
	if c.stateless {
		return nil, errStatelessAsk
	}
	if caps := c.capabilities(); caps == nil || caps.Elicitation == nil {
		return nil, errors.New("the MCP client does not support elicitation (it declared no elicitation capability), so this tool cannot ask the user")
	}
	params := &sdk.ElicitParams{Mode: "form", Message: q.Message}
	if q.Schema != nil {
		params.RequestedSchema = q.Schema
	}
	res, err := c.ss.Elicit(transport.RelatedTo(ctx, c.extra), params)
	if err != nil {
		return nil, c.failed("elicitation", ctx, err)
	}
	switch res.Action {
	case ask.ActionAccept, ask.ActionDecline, ask.ActionCancel:
	default:
		return nil, fmt.Errorf("the MCP client answered the elicitation with the unknown action %q (want accept, decline or cancel)", res.Action)
	}
	return &ask.ElicitAnswer{Action: res.Action, Content: res.Content}, nil
}

// Sample sends sampling/createMessage. The go-sdk marks MCP sampling deprecated
// (protocol 2026-07-28, SEP-2577); it stays in the protocol through a deprecation
// window and is the only way a workflow's sample step reaches the model of the
// client that called it, hence the SA1019 lint:ignore directives below.
func (c *sessionClient) Sample(ctx context.Context, q *ask.Sampling) (*ask.SampleAnswer, error) {
	if c.stateless {
		return nil, errStatelessAsk
	}
	//lint:ignore SA1019 sampling: deprecated in MCP 2026-07-28, still the sample step's only way (see Sample)
	if caps := c.capabilities(); caps == nil || caps.Sampling == nil {
		return nil, errors.New("the MCP client does not support sampling (it declared no sampling capability), so this tool cannot ask its model")
	}
	params := samplingParams(q)
	//lint:ignore SA1019 sampling: deprecated in MCP 2026-07-28, still the sample step's only way (see Sample)
	res, err := c.ss.CreateMessage(transport.RelatedTo(ctx, c.extra), params)
	if err != nil {
		return nil, c.failed("sampling", ctx, err)
	}
	out := &ask.SampleAnswer{Model: res.Model, StopReason: res.StopReason, Message: ask.Message{Role: string(res.Role)}}
	switch ct := res.Content.(type) {
	case *sdk.TextContent:
		out.Message.Text = ct.Text
	case *sdk.ImageContent:
		out.Message.Data, out.Message.MIMEType = ct.Data, ct.MIMEType
	case *sdk.AudioContent:
		out.Message.Data, out.Message.MIMEType = ct.Data, ct.MIMEType
	case nil:
	default:
		return nil, fmt.Errorf("the MCP client's model answered with %T content; a sample step takes text, image or audio", ct)
	}
	return out, nil
}

// Roots sends roots/list.
func (c *sessionClient) Roots(ctx context.Context, _ *ask.RootsQuestion) ([]ask.Root, error) {
	if c.stateless {
		return nil, errStatelessAsk
	}
	//lint:ignore SA1019 roots: deprecated in MCP 2026-07-28, still the roots step's only way
	if caps := c.capabilities(); caps == nil || caps.RootsV2 == nil {
		return nil, errors.New("the MCP client does not support roots (it declared no roots capability), so this tool cannot ask for them")
	}
	//lint:ignore SA1019 roots: deprecated in MCP 2026-07-28, still the roots step's only way
	res, err := c.ss.ListRoots(transport.RelatedTo(ctx, c.extra), &sdk.ListRootsParams{})
	if err != nil {
		return nil, c.failed("roots", ctx, err)
	}
	out := make([]ask.Root, 0, len(res.Roots))
	for _, r := range res.Roots {
		if r != nil {
			out = append(out, ask.Root{URI: r.URI, Name: r.Name})
		}
	}
	return out, nil
}

// samplingParams is q as sampling/createMessage params.
//
//lint:ignore SA1019 sampling: deprecated in MCP 2026-07-28, still the sample step's only way (see Sample)
func samplingParams(q *ask.Sampling) *sdk.CreateMessageParams {
	//lint:ignore SA1019 sampling: deprecated in MCP 2026-07-28, still the sample step's only way (see Sample)
	params := &sdk.CreateMessageParams{SystemPrompt: q.SystemPrompt, MaxTokens: q.MaxTokens,
		//lint:ignore SA1019 sampling: deprecated in MCP 2026-07-28, still the sample step's only way (see Sample)
		IncludeContext: q.IncludeContext, StopSequences: q.StopSequences, Messages: make([]*sdk.SamplingMessage, len(q.Messages))}
	if q.Temperature != nil {
		params.Temperature = *q.Temperature
	}
	if p := q.ModelPreferences; p != nil {
		//lint:ignore SA1019 sampling: deprecated in MCP 2026-07-28, still the sample step's only way (see Sample)
		mp := &sdk.ModelPreferences{}
		for _, h := range p.Hints {
			//lint:ignore SA1019 sampling: deprecated in MCP 2026-07-28, still the sample step's only way (see Sample)
			mp.Hints = append(mp.Hints, &sdk.ModelHint{Name: h})
		}
		if p.CostPriority != nil {
			mp.CostPriority = *p.CostPriority
		}
		if p.SpeedPriority != nil {
			mp.SpeedPriority = *p.SpeedPriority
		}
		if p.IntelligencePriority != nil {
			mp.IntelligencePriority = *p.IntelligencePriority
		}
		params.ModelPreferences = mp
	}
	for i, m := range q.Messages {
		//lint:ignore SA1019 sampling: deprecated in MCP 2026-07-28, still the sample step's only way (see Sample)
		params.Messages[i] = &sdk.SamplingMessage{Role: sdk.Role(m.Role), Content: samplingContent(m)}
	}
	return params
}

var _ ask.StreamReleaser = (*sessionClient)(nil)

// ReleaseStream ends the call's SSE response stream through the transport's hook
// (RequestExtra.CloseSSEStream: Helix's Streamable HTTP transport sets it on every
// call and acts on it for sessions with resumable streams). Elsewhere nothing
// happens.
func (c *sessionClient) ReleaseStream(retry time.Duration) bool {
	if c.stateless || !c.releasable || c.extra == nil || c.extra.CloseSSEStream == nil {
		return false
	}
	c.extra.CloseSSEStream(sdk.CloseSSEStreamArgs{RetryAfter: retry})
	return true
}

// samplingContent is m as sampling content: text, or image/audio data.
func samplingContent(m ask.Message) sdk.Content {
	if m.Data == nil {
		return &sdk.TextContent{Text: m.Text}
	}
	if strings.HasPrefix(m.MIMEType, "audio/") {
		return &sdk.AudioContent{Data: m.Data, MIMEType: m.MIMEType}
	}
	return &sdk.ImageContent{Data: m.Data, MIMEType: m.MIMEType}
}

// failed words the error of a request to the client: the step's own deadline or
// cancellation is named as such rather than as a transport failure.
func (c *sessionClient) failed(what string, ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			return fmt.Errorf("the MCP client did not answer the %s request in time: %w", what, ctxErr)
		}
		return fmt.Errorf("the %s request was cancelled while waiting for the MCP client: %w", what, ctxErr)
	}
	return fmt.Errorf("%s request to the MCP client failed: %w", what, err)
}

// askingTools returns the names (and workflow-id aliases) of the tools whose
// workflows may ask the client (see asking), for the fast path to leave to the SDK.
func askingTools(hc *engine.Context, tools []*serverTool) []string {
	a := newAsking(hc)
	var names []string
	for _, t := range tools {
		wf, ok := hc.Workflow(t.t.ID)
		if !ok || !a.workflow(wf) {
			continue
		}
		names = append(names, t.info.Name)
		if t.t.ID != t.info.Name {
			names = append(names, t.t.ID)
		}
	}
	return names
}

// asking tells which workflows may ask the client: those with a step that asks
// (ask.Asker), inside composite steps too, and those that send to a workflow that
// asks through a trigger that carries the caller's exchange on (direct://, whose
// module does not start fresh exchanges: component.StartsFresh), since a question
// there reaches the caller of the tool like one in the tool's own steps. A target
// chosen per exchange (${…}) may reach any workflow of its scheme, so it asks when
// one of them does: taking such a tool off the fast path costs speed, leaving it
// on would cost the question.
type asking struct {
	byEndpoint map[string]*engine.Workflow   // workflows by trigger endpoint (scheme://name)
	byScheme   map[string][]*engine.Workflow // the same, by the trigger's scheme
	memo       map[*engine.Workflow]bool     // decided, or being decided (a cycle asks nothing more)
}

func newAsking(hc *engine.Context) *asking {
	a := &asking{byEndpoint: map[string]*engine.Workflow{}, byScheme: map[string][]*engine.Workflow{},
		memo: map[*engine.Workflow]bool{}}
	for _, wf := range hc.Workflows() {
		if wf.FromURI == "" || component.StartsFresh(wf.FromURI) {
			continue
		}
		if scheme, key, ok := endpointOf(wf.FromURI); ok {
			a.byEndpoint[key] = wf
			a.byScheme[scheme] = append(a.byScheme[scheme], wf)
		}
	}
	return a
}

// endpointOf is raw's scheme and endpoint (scheme://host/path, without options).
func endpointOf(raw string) (scheme, key string, ok bool) {
	u, err := uri.Parse(raw)
	if err != nil || u.Scheme == "" {
		return "", "", false
	}
	return u.Scheme, u.Scheme + "://" + u.Host + u.Path, true
}

func (a *asking) workflow(wf *engine.Workflow) bool {
	if asks, seen := a.memo[wf]; seen {
		return asks
	}
	a.memo[wf] = false
	asks := a.processors(wf.Processors, 0)
	a.memo[wf] = asks
	return asks
}

// processors reports whether any of ps, their children (composite steps) or the
// workflows they send to (see asking) asks the client. depth bounds the walk.
func (a *asking) processors(ps []engine.Processor, depth int) bool {
	if depth > 64 {
		return false
	}
	for _, p := range ps {
		if as, ok := p.(ask.Asker); ok && as.AsksClient() {
			return true
		}
		if t, ok := p.(interface{ URI() string }); ok && (a.target(t.URI()) || ask.TargetAsks(t.URI())) {
			return true
		}
		if s, ok := p.(engine.Services); ok && a.processors(s.Children(), depth+1) {
			return true
		}
	}
	return false
}

// target reports whether sending to raw may reach a workflow that asks.
func (a *asking) target(raw string) bool {
	if uri.HasPlaceholders(raw) {
		scheme, _, _ := strings.Cut(strings.TrimSpace(raw), "://")
		for _, wf := range a.byScheme[scheme] {
			if a.workflow(wf) {
				return true
			}
		}
		return false
	}
	_, key, ok := endpointOf(raw)
	if !ok {
		return false
	}
	wf := a.byEndpoint[key]
	return wf != nil && a.workflow(wf)
}
