package gateway

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/component/mcp/transport"
)

func audienceOf(req sdk.Request) string { return server.AudienceOf(req) }

// clientOptions are the handlers of an upstream's sessions: what the upstream
// sends is relayed to the downstream session it belongs to.
func (g *Gateway) clientOptions(up *upstream) func() *sdk.ClientOptions {
	return g.clientOptionsFor(up, nil)
}

// clientOptionsFor are clientOptions for a session opened for the downstream
// session ss alone (nil: a session clients share); it declares the roots
// capability as ss did (clienthook.go).
func (g *Gateway) clientOptionsFor(up *upstream, ss *sdk.ServerSession) func() *sdk.ClientOptions {
	return func() *sdk.ClientOptions {
		return withClientSetup(&sdk.ClientOptions{
			Capabilities: rootsCapability(ss),
			ElicitationHandler: func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				return g.elicit(ctx, up, req)
			},
			// An upstream's input-required results are answered by the relay
			// (roundTrips, era2026.go), under the upstream's own ids.
			MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
			//lint:ignore SA1019 MCP sampling: deprecated in protocol 2026-07-28, still relayed for clients that use it
			CreateMessageHandler: func(ctx context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
				return g.sample(ctx, up, req)
			},
			//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still relayed for clients that use it
			LoggingMessageHandler: func(ctx context.Context, req *sdk.LoggingMessageRequest) {
				g.logMessage(ctx, up, req)
			},
			ProgressNotificationHandler: g.progress,
			ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
				g.refresh(up, true, false, false)
			},
			PromptListChangedHandler: func(context.Context, *sdk.PromptListChangedRequest) {
				g.refresh(up, false, true, false)
			},
			ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) {
				g.refresh(up, false, false, true)
			},
			ResourceUpdatedHandler: func(ctx context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
				if g.host != nil && req.Params != nil {
					_ = g.host.ResourceUpdated(context.WithoutCancel(ctx), req.Params)
				}
			},
		}, g.upstreamClientSetup(up, ss))
	}
}

// progress relays an upstream's progress to the call it belongs to, under
// the downstream's own token.
func (g *Gateway) progress(ctx context.Context, req *sdk.ProgressNotificationClientRequest) {
	if req.Params == nil {
		return
	}
	tok, _ := req.Params.ProgressToken.(string)
	g.relay.mu.Lock()
	f := g.relay.progress[tok]
	g.relay.mu.Unlock()
	if f == nil {
		return
	}
	defer g.relay.count.done(tok)
	if f.ss == nil {
		return
	}
	p := *req.Params
	p.ProgressToken = f.token
	_ = f.ss.NotifyProgress(transport.RelatedTo(f.ctx, f.extra), &p)
}

// logMessage relays an upstream's log message to the one client its session
// has served (sessions: per-client, or a shared session no other client has
// used yet), related to that client's call in flight when there is one. A
// session that has served several clients sends its log messages to the
// gateway's log, never to a client (apart.go).
// Each downstream session's own level (logging/setLevel) applies.
func (g *Gateway) logMessage(ctx context.Context, up *upstream, req *sdk.LoggingMessageRequest) {
	cs, _ := req.GetSession().(*sdk.ClientSession)
	if cs == nil || req.Params == nil {
		return
	}
	// Only a session that has served one client relays its log messages: the
	// go-sdk hands notifications over apart from results, so a message may be
	// handled after its call ended, while another client's call is in flight.
	ss := g.relay.soleDownstream(cs)
	if ss == nil {
		g.logUnattributed(ctx, up, req.Params)
		return
	}
	if f, _ := g.relay.owner(cs); f != nil && f.ss == ss {
		//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still relayed for clients that use it
		_ = f.ss.Log(transport.RelatedTo(f.ctx, f.extra), req.Params)
		return
	}
	//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still relayed for clients that use it
	if err := ss.Log(context.WithoutCancel(ctx), req.Params); err != nil && errors.Is(err, sdk.ErrConnectionClosed) {
		g.relay.forget(ss)
	}
}

// errNoCaller answers an upstream's request that no call in flight can take.
var errNoCaller = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
	Message: "the gateway has no client call in flight on this session to ask"}

// elicit relays an upstream's elicitation to the client whose call is in
// flight: verbatim to a session that speaks it, through the server's ask
// mechanism otherwise (MCP 2026-07-28 clients answer input requests).
func (g *Gateway) elicit(ctx context.Context, up *upstream, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	cs, _ := req.GetSession().(*sdk.ClientSession)
	f, ambiguous := g.relay.owner(cs)
	if ambiguous {
		return nil, g.ambiguousRequest(up, "elicitation/create")
	}
	if f == nil {
		return nil, errNoCaller
	}
	// The answer as the client gave it goes upstream (rawanswer.go).
	raw := rawAnswerFrom(ctx)
	if f.ss != nil && !f.newEra() {
		return f.ss.Elicit(withRawAnswer(transport.RelatedTo(f.ctx, f.extra), raw), req.Params)
	}
	res, err := f.elicitNewEra(req.Params) // era2026.go
	if err == nil {
		raw.set(res, false)
	}
	return res, err
}

// sample relays an upstream's sampling request like elicit.
//
//lint:ignore SA1019 MCP sampling: deprecated in protocol 2026-07-28, still relayed for clients that use it
func (g *Gateway) sample(ctx context.Context, up *upstream, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
	cs, _ := req.GetSession().(*sdk.ClientSession)
	f, ambiguous := g.relay.owner(cs)
	if ambiguous {
		return nil, g.ambiguousRequest(up, "sampling/createMessage")
	}
	if f == nil {
		return nil, errNoCaller
	}
	if f.ss != nil && !f.newEra() {
		//lint:ignore SA1019 MCP sampling: deprecated in protocol 2026-07-28, still relayed for clients that use it
		return f.ss.CreateMessage(transport.RelatedTo(f.ctx, f.extra), req.Params)
	}
	return f.sampleNewEra(req.Params) // era2026.go
}

// newEra reports whether the call's client speaks MCP 2026-07-28 or later,
// where a server asks through input requests instead of requests of its own.
func (f *inflight) newEra() bool { return f.ss == nil || newEraSession(f.ss) }

// newEraSession reports whether ss speaks MCP 2026-07-28 or later (or was
// never initialized: a sessionless request's).
func newEraSession(ss *sdk.ServerSession) bool {
	ip := ss.InitializeParams()
	return ip == nil || ip.ProtocolVersion >= "2026-07-28"
}

// setLevel relays a downstream session's logging/setLevel to the upstream
// sessions that serve it alone, and remembers it for the ones it opens later.
//
//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still relayed for clients that use it
func (g *Gateway) setLevel(ctx context.Context, ss *sdk.ServerSession, level sdk.LoggingLevel) {
	if ss == nil {
		return
	}
	g.relay.mu.Lock()
	g.relay.downLevel[ss] = level
	var own []*sdk.ClientSession
	for cs := range g.relay.downUps[ss] {
		if us := g.relay.ups[cs]; us != nil && len(us.downs) == 1 {
			own = append(own, cs)
		}
	}
	g.relay.mu.Unlock()
	for _, cs := range own {
		//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still relayed for clients that use it
		_ = cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: level})
	}
}

// applyLevel sets, on an upstream session first used for ss alone, the level
// ss asked for before.
func (g *Gateway) applyLevel(ctx context.Context, ss *sdk.ServerSession, cs *sdk.ClientSession) {
	if ss == nil {
		return
	}
	g.relay.mu.Lock()
	level, set := g.relay.downLevel[ss]
	us := g.relay.ups[cs]
	alone := us != nil && len(us.downs) == 1
	key := levelKey{cs, level}
	done := g.relay.levels[key]
	if set && alone && !done {
		g.relay.levels[key] = true
	}
	g.relay.mu.Unlock()
	if set && alone && !done {
		//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still relayed for clients that use it
		_ = cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: level})
	}
}

type levelKey struct {
	cs *sdk.ClientSession
	//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still relayed for clients that use it
	level sdk.LoggingLevel
}

// Subscribe relays resources/subscribe of an upstream resource: the gateway
// subscribes once per URI on the upstream's shared session; the go-sdk
// server tracks which downstream sessions asked.
func (g *Gateway) Subscribe(ctx context.Context, req *sdk.SubscribeRequest) (bool, error) {
	if req.Params == nil {
		return false, nil
	}
	up := g.resourceOwner(req.Params.URI)
	if up == nil {
		return false, nil
	}
	if own, err := g.subscribeOwn(ctx, req, up, req.Params.URI, true); own {
		return true, err
	}
	g.relay.mu.Lock()
	g.relay.subs[req.Params.URI]++
	first := g.relay.subs[req.Params.URI] == 1
	g.relay.mu.Unlock()
	if !first {
		return true, nil
	}
	cs, err := g.discoverySession(ctx, up)
	if err == nil {
		err = cs.Subscribe(ctx, &sdk.SubscribeParams{URI: req.Params.URI})
	}
	if err != nil {
		g.relay.mu.Lock()
		g.relay.subs[req.Params.URI]--
		g.relay.mu.Unlock()
		if werr, ok := upstreamAnswer(err); ok {
			return true, &jsonrpc.Error{Code: werr.Code, Message: werr.Message}
		}
		return true, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "upstream " + up.cfg.ID + " could not be reached"}
	}
	return true, nil
}

// Unsubscribe relays resources/unsubscribe when the last subscriber leaves.
func (g *Gateway) Unsubscribe(ctx context.Context, req *sdk.UnsubscribeRequest) (bool, error) {
	if req.Params == nil {
		return false, nil
	}
	up := g.resourceOwner(req.Params.URI)
	if up == nil {
		return false, nil
	}
	if own, err := g.subscribeOwn(ctx, req, up, req.Params.URI, false); own {
		return true, err
	}
	g.relay.mu.Lock()
	n := g.relay.subs[req.Params.URI]
	if n > 0 {
		n--
		g.relay.subs[req.Params.URI] = n
	}
	if n == 0 {
		delete(g.relay.subs, req.Params.URI)
	}
	g.relay.mu.Unlock()
	if n == 0 {
		if cs, err := g.discoverySession(ctx, up); err == nil {
			_ = cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: req.Params.URI})
		}
	}
	return true, nil
}

// Reopened is what a Pool calls (upstream.WithOnReopen) when a session of
// upstream id replaces one that was lost: the new session gets what the lost
// one carried, the logging level of its downstream session and, for the
// shared session, the resource subscriptions.
func (g *Gateway) Reopened(id string) func(key SessionKey, cs *sdk.ClientSession) {
	return func(key SessionKey, cs *sdk.ClientSession) {
		var up *upstream
		for _, u := range g.ups {
			if u.cfg.ID == id {
				up = u
			}
		}
		if up == nil || cs == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), up.timeout)
		defer cancel()
		//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still relayed for clients that use it
		var level sdk.LoggingLevel
		var uris []string
		g.relay.mu.Lock()
		if key.Downstream != "" {
			for ss, l := range g.relay.downLevel {
				if ss.ID() == key.Downstream {
					level = l
				}
			}
		}
		if key == (SessionKey{}) {
			for uri, n := range g.relay.subs {
				if n > 0 {
					uris = append(uris, uri)
				}
			}
		}
		uris = append(uris, g.relay.ownURIs(key)...)
		g.relay.mu.Unlock()
		if level != "" {
			//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still relayed for clients that use it
			_ = cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: level})
		}
		for _, uri := range uris {
			if g.resourceOwner(uri) != up {
				continue
			}
			if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
				g.logger.Warn("gateway: resubscribing after a lost upstream session failed", "server", g.opts.ServerID,
					"upstream", id, "uri", uri, "error", err)
			}
		}
	}
}
