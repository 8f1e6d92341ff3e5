package gateway

import (
	"context"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/transport"
)

// The pools create the go-sdk Client of each upstream session themselves and
// take from the gateway only its ClientOptions. Some of what the gateway
// relays is answered inside the go-sdk Client, out of the options' reach
// (roots/list from the Client's own, empty, list), so the gateway also hands
// the pools receiving middleware: registered against the options it returns,
// taken back by NewUpstreamClient when a pool creates the Client.

var clientMiddleware sync.Map // *sdk.ClientOptions -> []sdk.Middleware

// withClientMiddleware registers mw for the Client NewUpstreamClient creates
// with opts.
func withClientMiddleware(opts *sdk.ClientOptions, mw ...sdk.Middleware) *sdk.ClientOptions {
	clientMiddleware.Store(opts, mw)
	return opts
}

// NewUpstreamClient is how a Pool creates the go-sdk Client of an upstream
// session: with opts (from the gateway's options function, nil for none) and
// the receiving middleware the gateway registered for them.
func NewUpstreamClient(impl *sdk.Implementation, opts *sdk.ClientOptions) *sdk.Client {
	c := sdk.NewClient(impl, opts)
	if opts == nil {
		return c
	}
	if mw, ok := clientMiddleware.LoadAndDelete(opts); ok {
		c.AddReceivingMiddleware(mw.([]sdk.Middleware)...)
	}
	return c
}

// rootsMiddleware answers an upstream's roots/list with the roots of the
// downstream client it belongs to instead of the go-sdk Client's own list.
func (g *Gateway) rootsMiddleware(up *upstream) sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method != "roots/list" {
				return next(ctx, method, req)
			}
			cs, _ := req.GetSession().(*sdk.ClientSession)
			//lint:ignore SA1019 MCP roots: deprecated in protocol 2026-07-28, still relayed for clients that use it
			p, _ := req.GetParams().(*sdk.ListRootsParams)
			if p == nil {
				//lint:ignore SA1019 MCP roots: deprecated in protocol 2026-07-28, still relayed for clients that use it
				p = &sdk.ListRootsParams{}
			}
			return g.listRoots(ctx, up, cs, p)
		}
	}
}

// listRoots relays an upstream's roots/list like an elicitation: to the
// client whose call is in flight on cs, else to the client cs was opened for
// alone (sessions: per-client), which may be asked outside a call too.
//
//lint:ignore SA1019 MCP roots: deprecated in protocol 2026-07-28, still relayed for clients that use it
func (g *Gateway) listRoots(ctx context.Context, up *upstream, cs *sdk.ClientSession, p *sdk.ListRootsParams) (*sdk.ListRootsResult, error) {
	f, ambiguous := g.relay.owner(cs)
	if ambiguous {
		return nil, g.ambiguousRequest(up, "roots/list")
	}
	if f != nil {
		if f.ss != nil && !f.newEra() {
			//lint:ignore SA1019 MCP roots: deprecated in protocol 2026-07-28, still relayed for clients that use it
			return f.ss.ListRoots(transport.RelatedTo(f.ctx, f.extra), p)
		}
		res, err := f.answerInput("roots/list", p) // era2026.go
		if err != nil {
			return nil, err
		}
		//lint:ignore SA1019 MCP roots: deprecated in protocol 2026-07-28, still relayed for clients that use it
		r, _ := res.(*sdk.ListRootsResult)
		return r, nil
	}
	if ss := g.relay.soleDownstream(cs); ss != nil && !newEraSession(ss) {
		//lint:ignore SA1019 MCP roots: deprecated in protocol 2026-07-28, still relayed for clients that use it
		return ss.ListRoots(context.WithoutCancel(ctx), p)
	}
	return nil, errNoCaller
}

// rootsCapability is what an upstream session declares of roots: for a
// session of one client (ss), what that client declared; for a session
// several clients share, the go-sdk's default (roots, with list_changed),
// as any of them may have roots.
func rootsCapability(ss *sdk.ServerSession) *sdk.ClientCapabilities {
	if ss == nil {
		return nil
	}
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil {
		return &sdk.ClientCapabilities{}
	}
	// The go-sdk sets RootsV2 from a client's "roots" however it was spelled.
	if r := ip.Capabilities.RootsV2; r != nil {
		return &sdk.ClientCapabilities{RootsV2: &sdk.RootCapabilities{ListChanged: r.ListChanged}}
	}
	return &sdk.ClientCapabilities{}
}

// sessionOptions are the options of the upstream session key names for req:
// those of its client's own session when the key is per-client.
func (g *Gateway) sessionOptions(up *upstream, key SessionKey, req sdk.Request) func() *sdk.ClientOptions {
	ss, _ := req.GetSession().(*sdk.ServerSession)
	if key.Downstream == "" || ss == nil {
		return g.clientOptions(up)
	}
	return g.clientOptionsFor(up, ss)
}
