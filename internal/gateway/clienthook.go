package gateway

import (
	"context"
	"slices"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/transport"
)

// The pools create the go-sdk Client of each upstream session themselves and
// take from the gateway only its ClientOptions. Some of what the gateway
// relays is answered inside the go-sdk Client, out of the options' reach
// (roots/list from the Client's own, empty, list), so the gateway also hands
// the pools receiving middleware: registered against the options it returns,
// taken back by NewUpstreamClient when a pool creates the Client.

var clientSetups sync.Map // *sdk.ClientOptions -> clientSetup

// clientSetup is what NewUpstreamClient does to a Client besides its options.
type clientSetup struct {
	receiving []sdk.Middleware
	created   func(*sdk.Client) // nil: nothing to tell
}

// withClientSetup registers setup for the Client NewUpstreamClient creates
// with opts.
func withClientSetup(opts *sdk.ClientOptions, setup clientSetup) *sdk.ClientOptions {
	clientSetups.Store(opts, setup)
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
	if v, ok := clientSetups.LoadAndDelete(opts); ok {
		setup := v.(clientSetup)
		c.AddReceivingMiddleware(setup.receiving...)
		if setup.created != nil {
			setup.created(c)
		}
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
			if f, _ := g.relay.owner(cs); f != nil && f.newEra() {
				// Not relayed to a 2026-07-28 client yet: asking it ends the
				// call with an input request the client answers by calling again.
				return next(ctx, method, req)
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
		// Outside a call nothing else ends the question: a client that never
		// answers (one that went away, a CLI that exits) must not hold the
		// upstream session, nor the server's stop, for ever.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rootsOutsideCallTimeout)
		defer cancel()
		//lint:ignore SA1019 MCP roots: deprecated in protocol 2026-07-28, still relayed for clients that use it
		return ss.ListRoots(ctx, p)
	}
	return nil, errNoCaller
}

// rootsOutsideCallTimeout bounds an upstream's roots/list relayed to a client
// outside any call of it.
const rootsOutsideCallTimeout = 10 * time.Second

// rootsCapability is what an upstream session declares of roots: for a
// session of one client (ss), what that client declared; for a session
// several clients share, the go-sdk's default (roots, with list_changed),
// as any of them may have roots.
func rootsCapability(ss *sdk.ServerSession) *sdk.ClientCapabilities {
	if ss == nil {
		return nil
	}
	ip := ss.InitializeParams()
	if newEraSession(ss) {
		// A 2026-07-28 client declares no capabilities up front: it is asked
		// for roots through input requests, as for the go-sdk's default.
		return nil
	}
	if ip.Capabilities == nil {
		return &sdk.ClientCapabilities{}
	}
	// The go-sdk sets RootsV2 from a client's "roots" however it was spelled.
	//lint:ignore SA1019 MCP roots: deprecated in protocol 2026-07-28, still relayed for clients that use it
	if r := ip.Capabilities.RootsV2; r != nil {
		//lint:ignore SA1019 MCP roots: deprecated in protocol 2026-07-28, still relayed for clients that use it
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

// rootsState holds the go-sdk Clients of the upstream sessions opened for
// one downstream session alone, to tell them when that client's roots change.
type rootsState struct {
	mu      sync.Mutex
	clients map[*sdk.ServerSession][]*sdk.Client
}

func (r *rootsState) add(ss *sdk.ServerSession, c *sdk.Client) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.clients == nil {
		r.clients = map[*sdk.ServerSession][]*sdk.Client{}
	}
	r.clients[ss] = append(r.clients[ss], c)
}

func (r *rootsState) forget(ss *sdk.ServerSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.clients, ss)
}

// rootsChanged passes a client's notifications/roots/list_changed on to the
// upstream sessions opened for it alone. The go-sdk Client sends that
// notification when its own roots change; the gateway's Clients never serve
// their own list (rootsMiddleware answers roots/list), so adding a root to
// one is how the notification is sent, on that Client's one session.
func (g *Gateway) rootsChanged(ss *sdk.ServerSession) {
	g.roots.mu.Lock()
	clients := slices.Clone(g.roots.clients[ss])
	g.roots.mu.Unlock()
	for _, c := range clients {
		//lint:ignore SA1019 MCP roots: deprecated in protocol 2026-07-28, still relayed for clients that use it
		c.AddRoots(&sdk.Root{URI: "helix-gateway:roots-changed"})
	}
}

// upstreamClientSetup is the setup of an upstream session's Client: roots
// relayed, elicitation answered raw (rawanswer.go), and for a session of ss alone its roots changes passed on.
func (g *Gateway) upstreamClientSetup(up *upstream, ss *sdk.ServerSession) clientSetup {
	setup := clientSetup{receiving: []sdk.Middleware{g.rootsMiddleware(up), rawElicitMiddleware}}
	if ss != nil {
		setup.created = func(c *sdk.Client) { g.roots.add(ss, c) }
	}
	return setup
}
