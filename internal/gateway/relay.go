package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway/fastrelay"
	"github.com/arvenza/helix/internal/redact"
)

// relayState is what the relay knows about the sessions on both sides: the
// calls in flight on each upstream session (whose downstream session an
// upstream's request or notification goes to), the downstream sessions each
// upstream session serves, the progress tokens it handed out and the
// subscriptions it holds.
type relayState struct {
	mu  sync.Mutex
	ups map[*sdk.ClientSession]*upSession
	//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still relayed for clients that use it
	downLevel map[*sdk.ServerSession]sdk.LoggingLevel // levels set by downstream sessions
	downUps   map[*sdk.ServerSession]map[*sdk.ClientSession]bool
	progress  map[string]*inflight                    // the gateway's progress token → call
	subs      map[string]int                          // resource URI → downstream subscriptions
	levels    map[levelKey]bool                       // levels set on upstream sessions by applyLevel
	held      map[*sdk.ServerSession]map[heldKey]bool // per-client upstream sessions to release (apart.go)
	seq       atomic.Uint64
	prefix    string // of the gateway's progress tokens, random per process
	count     progressCount
	own       map[SessionKey]map[string]bool // subscriptions held on per-client upstream sessions
}

// upSession is one upstream session as the relay sees it.
type upSession struct {
	calls []*inflight                 // in flight, oldest first
	downs map[*sdk.ServerSession]bool // downstream sessions it served
	// perClient: opened for one downstream session alone (apart.go)
	perClient bool
}

// inflight is one call relayed to an upstream session.
type inflight struct {
	ctx   context.Context    // the downstream handler's
	ss    *sdk.ServerSession // nil on a stateless or fast-path call without session
	extra *sdk.RequestExtra
	token any // the downstream's progress token; nil: none
	ptok  string
	// perClient: the upstream session is this downstream session's alone
	perClient bool
	// stopped: a question of the upstream went to the 2026-07-28 client as an
	// input request it has yet to answer; the call ends there (asker).
	stopped atomic.Bool
}

func (r *relayState) init() {
	r.ups = map[*sdk.ClientSession]*upSession{}
	//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still relayed for clients that use it
	r.downLevel = map[*sdk.ServerSession]sdk.LoggingLevel{}
	r.downUps = map[*sdk.ServerSession]map[*sdk.ClientSession]bool{}
	r.progress = map[string]*inflight{}
	r.subs = map[string]int{}
	r.levels = map[levelKey]bool{}
	var b [6]byte
	_, _ = rand.Read(b[:])
	r.prefix = "gw-" + hex.EncodeToString(b[:]) + "-"
	r.count.init()
}

// begin records a call in flight on cs and returns the progress token to send
// upstream ("" when the downstream asked for no progress) and the function
// that ends it.
func (r *relayState) begin(cs *sdk.ClientSession, f *inflight) (string, func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	us := r.ups[cs]
	if us == nil {
		us = &upSession{downs: map[*sdk.ServerSession]bool{}, perClient: f.perClient}
		r.ups[cs] = us
	}
	us.calls = append(us.calls, f)
	if f.ss != nil {
		us.downs[f.ss] = true
		if r.downUps[f.ss] == nil {
			r.downUps[f.ss] = map[*sdk.ClientSession]bool{}
		}
		r.downUps[f.ss][cs] = true
	}
	if f.token != nil {
		f.ptok = r.prefix + strconv.FormatUint(r.seq.Add(1), 36)
		r.progress[f.ptok] = f
	}
	return f.ptok, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if us := r.ups[cs]; us != nil {
			for i, c := range us.calls {
				if c == f {
					us.calls = append(us.calls[:i:i], us.calls[i+1:]...)
					break
				}
			}
		}
		if f.ptok != "" {
			delete(r.progress, f.ptok)
		}
	}
}

// forget drops a downstream session that has gone.
func (r *relayState) forget(ss *sdk.ServerSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for cs := range r.downUps[ss] {
		if us := r.ups[cs]; us != nil {
			delete(us.downs, ss)
		}
	}
	delete(r.downUps, ss)
	delete(r.downLevel, ss)
	if ss.ID() != "" {
		r.dropOwn(ss.ID())
	}
}

// callID is a unique id of one call (audit records are keyed by it).
func callID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// sessionKey is the upstream session a call of p through req uses.
func (up *upstream) sessionKey(req sdk.Request, p *Principal) SessionKey {
	ck := up.creds.SessionKey(p)
	switch up.sessions {
	case config.SessionsShared:
		return SessionKey{Principal: ck}
	case config.SessionsPerPrincipal:
		if ck == "" {
			ck = p.ID
		}
		return SessionKey{Principal: ck}
	}
	// A 2026-07-28 request stands alone (its session, if any, lives for one
	// request): it shares the upstream's session.
	if ss, _ := req.GetSession().(*sdk.ServerSession); ss != nil && ss.ID() != "" && !newEraSession(ss) {
		return SessionKey{Downstream: ss.ID(), Principal: ck}
	}
	return SessionKey{Principal: ck}
}

// relayed is one request through the gateway.
type relayed struct {
	up    *upstream
	req   sdk.Request
	call  *Call
	token any // the downstream's progress token
	// followUp marks a request about a task a relayed call created
	// (tasks.go): the policy judged that call, and a client polling its task
	// must not spend the tool's rate limit.
	followUp bool
}

// do runs one relayed request: policy, credentials, the upstream session, the
// deadline, the result guard and the audit record. run makes the upstream
// request with the progress token to send ("" for none); it returns the
// result. A refusal comes back as a *Refusal, an upstream's JSON-RPC error as
// a *jsonrpc.Error with its code and message.
func (g *Gateway) do(ctx context.Context, rq *relayed, run func(ctx context.Context, cs *sdk.ClientSession, ptok string) (any, error), decode func(json.RawMessage) (any, error)) (any, error) {
	c := rq.call
	rec := &Record{ID: c.ID, Server: c.Server, Audience: c.Audience, Principal: principalName(c.Principal),
		Upstream: c.Upstream, Method: c.Method, Name: c.Name}
	// Without an audit sink the record is thrown away: no digest, no measure
	// of the result, which would cost every call a hash and an encoding.
	_, noAudit := g.audit.(NoAudit)
	if len(c.Arguments) > 0 && !noAudit {
		sum := sha256.Sum256(c.Arguments)
		rec.ArgumentsDigest = hex.EncodeToString(sum[:])
		rec.Arguments = c.Arguments
	}
	finish := func(outcome string, err error, res any) {
		rec.Time, rec.Outcome = c.Started.UTC(), outcome
		rec.LatencyMS = float64(time.Since(c.Started).Microseconds()) / 1000
		rec.Arguments = c.Arguments // as the argument guard left them
		if err != nil {
			rec.Error = redact.URLsIn(err.Error())
		}
		if raw, ok := res.(json.RawMessage); ok { // the fast relay's result (fast.go)
			rec.ResultBytes = len(raw)
		} else if res != nil && !noAudit {
			if b, mErr := json.Marshal(res); mErr == nil {
				rec.ResultBytes = len(b)
			}
		}
		g.audit.Record(context.WithoutCancel(ctx), rec)
	}
	if err := g.guardBefore(ctx, rq); err != nil {
		var ref *Refusal
		if errors.As(err, &ref) {
			finish(ref.Reason, err, nil)
			return nil, ref
		}
		finish(OutcomeDenied, err, nil)
		return nil, &Refusal{Code: jsonrpc.CodeInvalidRequest, Message: err.Error(), Reason: OutcomeDenied}
	}
	timeout := rq.up.timeout
	if t := g.guard.Timeout(c); t > 0 {
		timeout = t
	}
	// The upstream request's context ends with the downstream's but carries none
	// of its values: what the server's transport put there (the downstream's
	// protocol version, its request's ids) would steer the client's transport.
	cctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	cctx = WithPrincipal(cctx, c.Principal)
	h, err := rq.up.creds.Header(cctx, c.Principal)
	if err != nil {
		var ref *Refusal
		if errors.As(err, &ref) {
			finish(ref.Reason, err, nil)
			return nil, ref
		}
		finish(OutcomeError, err, nil)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("upstream %s: no credentials for this caller", rq.up.cfg.ID)}
	}
	cctx = WithUpstreamHeader(cctx, h)
	// Through the pool's Call (callOn): a request that failed before it could
	// reach the upstream goes again on a new session, one that may have run
	// does not.
	var res any
	var asked *inflight // the last attempt's
	key := rq.up.sessionKey(rq.req, c.Principal)
	err = callOn(cctx, rq.up.pool, key, g.sessionOptions(rq.up, key, rq.req), func(cctx context.Context, cs *sdk.ClientSession) error {
		c.UpstreamSession = cs.ID()
		rec.UpstreamSession = c.UpstreamSession
		f := &inflight{ctx: ctx, extra: rq.req.GetExtra(), token: rq.token, perClient: key.Downstream != ""}
		f.ss, _ = rq.req.GetSession().(*sdk.ServerSession)
		asked = f
		ptok, end := g.relay.begin(cs, f)
		defer end()
		if f.perClient && f.ss != nil {
			g.releaseWhenGone(rq.up, f.ss, key)
		}
		g.applyLevel(cctx, f.ss, cs)
		var err error
		res, err = run(cctx, cs, ptok)
		if ptok != "" {
			// The client hears every progress the upstream sent before its answer first.
			g.relay.count.drain(ctx, ptok)
		}
		return err
	})
	var upstreamErr *jsonrpc.Error
	if errors.As(err, &upstreamErr) && g.opts.Scrub != nil {
		// What the upstream said (the pool's own explanations carry no secrets).
		err = g.opts.Scrub(rq.up.cfg, h, upstreamErr)
	}
	if tr, ok := res.(*sdk.CallToolResult); ok && tr != nil && tr.IsError && g.opts.Scrub != nil {
		// An upstream may quote the credentials it refused in its error text.
		for _, c := range tr.Content {
			if tc, ok := c.(*sdk.TextContent); ok {
				tc.Text = g.opts.Scrub(rq.up.cfg, h, errors.New(tc.Text)).Error()
			}
		}
	}
	if asked != nil && asked.stopped.Load() {
		// Not a failure: the server answers the client with the questions,
		// whatever the upstream made of the refusal to answer them now.
		finish(OutcomeInputRequired, nil, nil)
		if err != nil {
			return nil, err
		}
		return res, nil
	}
	if err != nil {
		outcome, cerr := g.failure(ctx, cctx, rq, err)
		finish(outcome, err, nil)
		return nil, cerr
	}
	if g.guard.WantsResult(c) {
		raw, err := json.Marshal(res)
		if err == nil {
			raw, err = g.guard.After(ctx, c, raw)
		}
		if err == nil {
			res, err = decode(raw)
		}
		if err != nil {
			var ref *Refusal
			if errors.As(err, &ref) {
				finish(ref.Reason, err, nil)
				return nil, ref
			}
			finish(OutcomeGuard, err, nil)
			return nil, &Refusal{Code: jsonrpc.CodeInternalError, Message: "the result was refused by a policy", Reason: OutcomeGuard}
		}
	}
	outcome := OutcomeOK
	if tr, ok := res.(*sdk.CallToolResult); ok && tr != nil && tr.IsError {
		outcome = OutcomeToolError
	} else if raw, ok := res.(json.RawMessage); ok && fastrelay.IsToolError(raw) {
		outcome = OutcomeToolError
	}
	finish(outcome, nil, res)
	return res, nil
}

// failure classifies an upstream failure for the audit and the client: the
// client cancelled, the deadline passed, the upstream answered a JSON-RPC
// error (kept: code and message), or it could not be reached (said in words
// without the upstream's URL or headers).
func (g *Gateway) failure(ctx, cctx context.Context, rq *relayed, err error) (string, error) {
	switch {
	case ctx.Err() != nil:
		return OutcomeCancelled, ctx.Err()
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		return OutcomeTimeout, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("upstream %s did not answer in time", rq.up.cfg.ID)}
	}
	if msg, ok := explanation(err); ok {
		return OutcomeError, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}
	}
	if werr, ok := upstreamAnswer(err); ok {
		return OutcomeError, &jsonrpc.Error{Code: werr.Code, Message: werr.Message, Data: werr.Data}
	}
	g.logger.Warn("gateway: upstream request failed", "server", g.opts.ServerID, "upstream", rq.up.cfg.ID,
		"method", rq.call.Method, "error", redact.URLsIn(err.Error()))
	return OutcomeError, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
		Message: fmt.Sprintf("upstream %s could not be reached", rq.up.cfg.ID)}
}

// newCall describes a request for policies and audit.
func (g *Gateway) newCall(req sdk.Request, up *upstream, method string, kind Kind, name, upstreamName string, args json.RawMessage) *Call {
	return &Call{ID: callID(), Server: g.opts.ServerID, Audience: audienceOf(req), Principal: g.principal(req),
		Upstream: up.cfg.ID, Method: method, Kind: kind, Name: name, UpstreamName: upstreamName,
		Arguments: args, Started: time.Now()}
}

// toolHandler relays tools/call of one upstream tool.
func (g *Gateway) toolHandler(up *upstream, served, upstreamName string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		hctx := ctx // the downstream call's, where its questions go (roundTrips)
		args := req.Params.Arguments
		c := g.newCall(req, up, MethodCallTool, KindTool, served, upstreamName, args)
		rq := &relayed{up: up, req: req, call: c, token: req.Params.GetProgressToken()}
		res, err := g.do(ctx, rq, func(ctx context.Context, cs *sdk.ClientSession, ptok string) (any, error) {
			p := &sdk.CallToolParams{Name: upstreamName, Arguments: c.Arguments, Meta: g.withLogLevel(forwardMeta(req.Params.Meta, ptok), req, cs)}
			return callToolRounds(ctx, downstream(hctx, req), cs, p)
		}, func(raw json.RawMessage) (any, error) {
			var r sdk.CallToolResult
			return &r, json.Unmarshal(raw, &r)
		})
		if err != nil {
			var ref *Refusal
			if errors.As(err, &ref) {
				// A tool call's refusal is a tool error the model can read.
				return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: ref.Message}}}, nil
			}
			return nil, err
		}
		return res.(*sdk.CallToolResult), nil
	}
}

// callToolRounds calls an upstream tool on cs until its result asks nothing
// more, answering each round's input requests from f's client (era2026.go).
// Both relays of tools/call use it: the upstream sessions' own round trips are
// off, so a call made any other way would hand the client an upstream's
// input-required result it cannot use.
func callToolRounds(ctx context.Context, f *inflight, cs *sdk.ClientSession, p *sdk.CallToolParams) (*sdk.CallToolResult, error) {
	return roundTrips(f, func(answers sdk.InputResponseMap, state string) (*sdk.CallToolResult, sdk.InputRequestMap, string, error) {
		p.InputResponses, p.RequestState = answers, state
		r, err := cs.CallTool(ctx, p)
		if err != nil || r == nil {
			return r, nil, "", err
		}
		return r, r.InputRequests, r.RequestState, nil
	})
}

// promptHandler relays prompts/get of one upstream prompt.
func (g *Gateway) promptHandler(up *upstream, served, upstreamName string) sdk.PromptHandler {
	return func(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		hctx := ctx // the downstream call's, where its questions go (roundTrips)
		args, _ := json.Marshal(req.Params.Arguments)
		c := g.newCall(req, up, MethodGetPrompt, KindPrompt, served, upstreamName, args)
		res, err := g.do(ctx, &relayed{up: up, req: req, call: c}, func(ctx context.Context, cs *sdk.ClientSession, _ string) (any, error) {
			var a map[string]string
			if len(c.Arguments) > 0 {
				if err := json.Unmarshal(c.Arguments, &a); err != nil {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "prompt arguments must be strings"}
				}
			}
			p := &sdk.GetPromptParams{Name: upstreamName, Arguments: a, Meta: g.withLogLevel(forwardMeta(req.Params.Meta, ""), req, cs)}
			return roundTrips(downstream(hctx, req), func(answers sdk.InputResponseMap, state string) (*sdk.GetPromptResult, sdk.InputRequestMap, string, error) {
				p.InputResponses, p.RequestState = answers, state // era2026.go
				r, err := cs.GetPrompt(ctx, p)
				if err != nil || r == nil {
					return r, nil, "", err
				}
				return r, r.InputRequests, r.RequestState, nil
			})
		}, func(raw json.RawMessage) (any, error) {
			var r sdk.GetPromptResult
			return &r, json.Unmarshal(raw, &r)
		})
		if err != nil {
			return nil, refusalError(err)
		}
		return res.(*sdk.GetPromptResult), nil
	}
}

// resourceHandler relays resources/read of the upstream's resources and
// templates.
func (g *Gateway) resourceHandler(up *upstream) sdk.ResourceHandler {
	return func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		hctx := ctx // the downstream call's, where its questions go (roundTrips)
		uri := req.Params.URI
		c := g.newCall(req, up, MethodReadResource, KindResource, uri, uri, nil)
		res, err := g.do(ctx, &relayed{up: up, req: req, call: c}, func(ctx context.Context, cs *sdk.ClientSession, _ string) (any, error) {
			p := &sdk.ReadResourceParams{URI: uri, Meta: g.withLogLevel(forwardMeta(req.Params.Meta, ""), req, cs)}
			return roundTrips(downstream(hctx, req), func(answers sdk.InputResponseMap, state string) (*sdk.ReadResourceResult, sdk.InputRequestMap, string, error) {
				p.InputResponses, p.RequestState = answers, state // era2026.go
				r, err := cs.ReadResource(ctx, p)
				if err != nil || r == nil {
					return r, nil, "", err
				}
				return r, r.InputRequests, r.RequestState, nil
			})
		}, func(raw json.RawMessage) (any, error) {
			var r sdk.ReadResourceResult
			return &r, json.Unmarshal(raw, &r)
		})
		if err != nil {
			return nil, refusalError(err)
		}
		return res.(*sdk.ReadResourceResult), nil
	}
}

// refusalError turns a refusal into the JSON-RPC error a non-tool request gets.
func refusalError(err error) error {
	var ref *Refusal
	if errors.As(err, &ref) {
		code := ref.Code
		if code == 0 {
			code = jsonrpc.CodeInvalidRequest
		}
		return &jsonrpc.Error{Code: code, Message: ref.Message}
	}
	return err
}

// forwardMeta is the _meta sent upstream: the downstream's, with the
// gateway's own progress token in place of the client's and without the keys
// of the protocol itself (io.modelcontextprotocol/…: the downstream's protocol
// version, client info and capabilities describe the other hop).
func forwardMeta(m sdk.Meta, ptok string) sdk.Meta {
	if len(m) == 0 && ptok == "" {
		return nil
	}
	out := make(sdk.Meta, len(m)+1)
	for k, v := range m {
		if k != "progressToken" && !strings.HasPrefix(k, protocolMetaPrefix) {
			out[k] = v
		}
	}
	if len(out) == 0 && ptok == "" {
		return nil
	}
	if ptok != "" {
		out["progressToken"] = ptok
	}
	return out
}

// protocolMetaPrefix starts the _meta keys the protocol reserves for one hop.
const protocolMetaPrefix = "io.modelcontextprotocol/"

// Complete relays completion/complete for an upstream prompt or resource.
func (g *Gateway) Complete(ctx context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, bool, error) {
	if req.Params == nil || req.Params.Ref == nil {
		return nil, false, nil
	}
	ref := *req.Params.Ref
	var up *upstream
	name := ref.Name
	switch ref.Type {
	case "ref/prompt":
		if up = g.promptOwner(ref.Name); up != nil {
			up.mu.Lock()
			ref.Name = up.prompts[name]
			up.mu.Unlock()
		}
	case "ref/resource":
		name = ref.URI
		g.mu.Lock()
		up = g.templates[ref.URI]
		if up == nil {
			up = g.resources[ref.URI]
		}
		g.mu.Unlock()
	}
	if up == nil {
		return nil, false, nil
	}
	args, _ := json.Marshal(req.Params.Argument)
	c := g.newCall(req, up, MethodComplete, KindPrompt, name, ref.Name, args)
	if ref.Type == "ref/resource" {
		c.Kind = KindResource
	}
	res, err := g.do(ctx, &relayed{up: up, req: req, call: c}, func(ctx context.Context, cs *sdk.ClientSession, _ string) (any, error) {
		p := *req.Params
		p.Ref = &ref
		p.Meta = forwardMeta(req.Params.Meta, "") // the client's protocol version is not the upstream session's
		return cs.Complete(ctx, &p)
	}, func(raw json.RawMessage) (any, error) {
		var r sdk.CompleteResult
		return &r, json.Unmarshal(raw, &r)
	})
	if err != nil {
		return nil, true, refusalError(err)
	}
	return res.(*sdk.CompleteResult), true, nil
}
