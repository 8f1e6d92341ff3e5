package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/transport"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway/fastrelay"
)

// The fast relay of plain tool calls (internal/gateway/fastrelay): a
// tools/call the server's transport answers itself (its fast path) of a tool
// of a Streamable HTTP upstream is forwarded as raw JSON-RPC on the upstream
// session the call would use anyway, and the upstream's result goes back to
// the client as the bytes it is, with the downstream's id. Policy,
// credentials, audit, timeouts and the choice of the upstream session are
// those of every relayed request (do): only the go-sdk client session's
// decoding of the result, and the server's encoding of it again, are left out.

// fastRouter is a Pool that can tell the fast relay how to reach a session:
// upstream.Pool and DirectPool.
type fastRouter interface {
	FastRoute(cs *sdk.ClientSession) (url string, hc *http.Client, ok bool)
}

// FastRoute is the fast relay's way to a session of the pool: its url and the
// pool's HTTP client (headers, the caller's credentials); none for stdio and
// SSE upstreams.
func (p *directPool) FastRoute(cs *sdk.ClientSession) (string, *http.Client, bool) {
	if cs == nil || p.cfg.Command != "" || (p.cfg.Transport != "" && p.cfg.Transport != config.UpstreamHTTP) {
		return "", nil, false
	}
	return p.cfg.URL, p.http, true
}

// CallToolRaw answers a fast-path tools/call of an upstream tool through the
// fast relay (a transport.RawCallTool; the server offers it to its transport).
// It declines (ok false, nothing run) names that are not upstream tools and
// upstreams the relay cannot reach: stdio and SSE. A session whose route turns
// out to be unusable once chosen (an OAuth endpoint, whose tokens only the
// go-sdk transport adds) is called through the go-sdk client session instead,
// and its result encoded here.
func (g *Gateway) CallToolRaw(ctx context.Context, r *http.Request, tc *transport.ToolCall) (json.RawMessage, bool, error) {
	up, upstreamName := g.upstreamTool(tc.Name)
	if up == nil {
		return nil, false, nil
	}
	router, ok := up.pool.(fastRouter)
	if !ok || up.cfg.Command != "" || (up.cfg.Transport != "" && up.cfg.Transport != config.UpstreamHTTP) {
		return nil, false, nil
	}
	// The request the go-sdk session would have handed the tool's handler, as
	// the server's fast path builds it for the handler (callFast): the
	// principal, the audience and the session key are read from it.
	req := &sdk.CallToolRequest{Session: tc.Session,
		Params: &sdk.CallToolParamsRaw{Name: tc.Name, Arguments: tc.Args},
		Extra:  &sdk.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context()), Header: r.Header}}
	c := g.newCall(req, up, MethodCallTool, KindTool, tc.Name, upstreamName, tc.Args)
	rq := &relayed{up: up, req: req, call: c}
	res, err := g.do(ctx, rq, func(ctx context.Context, cs *sdk.ClientSession, _ string) (any, error) {
		url, hc, ok := router.FastRoute(cs)
		if !ok || cs.InitializeResult() == nil || cs.InitializeResult().ProtocolVersion >= newEraVersion {
			// The call runs either way: through the session, answering the
			// upstream's input-required rounds as the decoding relay does (the
			// upstream sessions' own round trips are off: era2026.go).
			p := &sdk.CallToolParams{Name: upstreamName, Arguments: c.Arguments, Meta: g.withLogLevel(forwardMeta(tc.CallMeta(), ""), req, cs)}
			return callToolRounds(ctx, downstream(ctx, req), cs, p)
		}
		target := &fastrelay.Upstream{URL: url, Client: hc, SessionID: cs.ID(),
			ProtocolVersion: cs.InitializeResult().ProtocolVersion, Ask: askRaw(fastrelay.AskSession(tc.Session))}
		// The _meta the decoding relay sends: the caller's trace context.
		// (forwardMeta leaves out the protocol's keys and progress tokens.)
		if meta := forwardMeta(tc.CallMeta(), ""); meta != nil {
			var err error
			if target.Meta, err = json.Marshal(meta); err != nil {
				return nil, err
			}
		}
		reply, err := rawRelay.CallTool(context.WithValue(ctx, fastRelayKey{}, true), target, upstreamName, c.Arguments)
		if err != nil {
			return nil, err
		}
		if reply.Error != nil {
			return nil, reply.Error
		}
		return reply.Result, nil
	}, func(raw json.RawMessage) (any, error) {
		return json.RawMessage(fastrelay.Canonical(raw)), nil
	})
	if err != nil {
		var ref *Refusal
		if errors.As(err, &ref) {
			// A tool call's refusal is a tool error the model can read, as in toolHandler.
			return fastrelay.ErrorResult(ref.Message), true, nil
		}
		return nil, true, err
	}
	switch res := res.(type) {
	case json.RawMessage:
		return res, true, nil
	case *sdk.CallToolResult:
		out, err := res.MarshalJSON()
		return out, true, err
	}
	return nil, true, nil
}

// fastRelayKey marks the context of a fast-relayed call's requests. The
// progress watch of the pool's client (progress_order.go) passes their
// streams by: the call carries no progress token, and the fast relay reads
// the stream itself and relays none of its notifications, so the watch's
// count would wait for progress no client hears.
type fastRelayKey struct{}

func fastRelayed(ctx context.Context) bool { return ctx.Value(fastRelayKey{}) != nil }

// newEraVersion is the protocol from which an upstream's results carry the
// upstream's own identity in _meta: such results go through the go-sdk
// session, which drops it, so that the client sees the same answer either way.
const newEraVersion = "2026-07-28"

// upstreamTool returns the upstream serving a tool name and the upstream's own
// name of it; nil when no upstream serves it.
func (g *Gateway) upstreamTool(name string) (*upstream, string) {
	for _, up := range g.ups {
		up.mu.Lock()
		upstreamName, ok := up.tools[name]
		up.mu.Unlock()
		if ok {
			return up, upstreamName
		}
	}
	return nil, ""
}

// rawRelay relays the raw calls of every gateway of the process: each call
// brings its upstream's HTTP client, so the relay holds only its request ids
// and buffers.
var rawRelay = fastrelay.New(fastrelay.Options{})
