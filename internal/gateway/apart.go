package gateway

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// An upstream session may serve several clients (sessions: shared or
// per-principal). What the upstream sends on it names no request (a stdio
// session cannot), so the relay attributes it to a call only when the calls
// in flight on that session all belong to one client; otherwise it reaches
// no client at all: a request is refused with a hint, a log message goes to
// the gateway's own log.

// owner is the call an upstream's request on cs belongs to: the newest in
// flight when every call in flight there is the same client's. ambiguous
// reports calls of several clients in flight.
func (r *relayState) owner(cs *sdk.ClientSession) (f *inflight, ambiguous bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	us := r.ups[cs]
	if us == nil || len(us.calls) == 0 {
		return nil, false
	}
	newest := us.calls[len(us.calls)-1]
	for _, c := range us.calls {
		// Sessionless calls (stateless, 2026-07-28) are each a client of their own.
		if c != newest && (c.ss == nil || c.ss != newest.ss) {
			return nil, true
		}
	}
	return newest, false
}

// soleDownstream is the one downstream session cs has served (opened for it
// alone, sessions: per-client, or no other client has used it yet: a call's
// log messages can come after its result), nil once it served several.
func (r *relayState) soleDownstream(cs *sdk.ClientSession) *sdk.ServerSession {
	r.mu.Lock()
	defer r.mu.Unlock()
	us := r.ups[cs]
	if us == nil || len(us.downs) != 1 {
		return nil
	}
	for ss := range us.downs {
		return ss
	}
	return nil
}

// ambiguousRequest refuses an upstream's request that calls of several
// clients could have caused, and says so in the gateway's log.
func (g *Gateway) ambiguousRequest(up *upstream, method string) error {
	g.logger.Warn("gateway: upstream request refused: calls of several clients are in flight on its shared session",
		"server", g.opts.ServerID, "upstream", up.cfg.ID, "method", method,
		"hint", "set sessions: per-client or per-principal on the upstream")
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf(
		"gateway: %s refused: calls of several clients are in flight on this shared session of upstream %s, "+
			"and the gateway cannot tell which client to ask; set sessions: per-client (or per-principal) on the upstream "+
			"so that each client has a session of its own", method, up.cfg.ID)}
}

// releaseWhenGone closes the per-client upstream session of key once the
// downstream session ss ends (closed, deleted or expired), instead of when the
// pool finds it idle, and forgets ss.
func (g *Gateway) releaseWhenGone(up *upstream, ss *sdk.ServerSession, key SessionKey) {
	g.relay.mu.Lock()
	if g.relay.held == nil {
		g.relay.held = map[*sdk.ServerSession]map[heldKey]bool{}
	}
	held := g.relay.held[ss]
	first := held == nil
	if first {
		held = map[heldKey]bool{}
		g.relay.held[ss] = held
	}
	held[heldKey{up, key}] = true
	g.relay.mu.Unlock()
	if !first {
		return
	}
	g.background(func() {
		done := make(chan struct{})
		go func() { _ = ss.Wait(); close(done) }()
		select {
		case <-done:
		case <-g.ctx.Done():
			return // Close closes every pool
		}
		g.relay.mu.Lock()
		keys := g.relay.held[ss]
		delete(g.relay.held, ss)
		g.relay.mu.Unlock()
		g.relay.forget(ss)
		g.roots.forget(ss)
		for k := range keys {
			k.up.pool.Release(k.key)
		}
	})
}

// heldKey is one per-client upstream session a downstream session holds.
type heldKey struct {
	up  *upstream
	key SessionKey
}

// logUnattributed puts an upstream's log message that belongs to no one
// client in the gateway's log, at debug.
//
//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still relayed for clients that use it
func (g *Gateway) logUnattributed(ctx context.Context, up *upstream, p *sdk.LoggingMessageParams) {
	g.logger.DebugContext(ctx, "gateway: upstream log message on a shared session, not sent to any client",
		"server", g.opts.ServerID, "upstream", up.cfg.ID, "level", p.Level, "logger", p.Logger)
}

// sessionCounter is a Pool that can say how many sessions it holds open
// (upstream.Pool).
type sessionCounter interface {
	OpenSessions() int
}
