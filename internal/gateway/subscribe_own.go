package gateway

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// subscribeOwn subscribes (or, with on false, unsubscribes) uri on the
// client's own upstream session when the upstream keeps one per client: an
// upstream keeps subscriptions, and what it updates, per session, so the
// subscription belongs where the client's calls run. It reports false when
// the upstream's sessions are shared, which the caller subscribes once per
// URI.
func (g *Gateway) subscribeOwn(ctx context.Context, req sdk.Request, up *upstream, uri string, on bool) (bool, error) {
	p := g.principal(req)
	key := up.sessionKey(req, p)
	if key.Downstream == "" {
		return false, nil
	}
	h, err := up.creds.Header(ctx, p)
	if err != nil {
		return true, refusalError(&Refusal{Code: jsonrpc.CodeInvalidRequest, Message: "upstream " + up.cfg.ID + ": no credentials for this caller"})
	}
	cctx, cancel := context.WithTimeout(WithUpstreamHeader(WithPrincipal(ctx, p), h), up.timeout)
	defer cancel()
	cs, err := up.pool.Session(cctx, key, g.sessionOptions(up, key, req))
	if err == nil {
		if ss, _ := req.GetSession().(*sdk.ServerSession); ss != nil {
			g.relay.serves(cs, ss)
		}
		if on {
			err = cs.Subscribe(cctx, &sdk.SubscribeParams{URI: uri})
		} else {
			err = cs.Unsubscribe(cctx, &sdk.UnsubscribeParams{URI: uri})
		}
		if err == nil {
			g.relay.ownSubscription(key, uri, on)
		}
	}
	if err != nil {
		if werr, ok := upstreamAnswer(err); ok {
			return true, &jsonrpc.Error{Code: werr.Code, Message: werr.Message}
		}
		return true, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "upstream " + up.cfg.ID + " could not be reached"}
	}
	return true, nil
}

// serves records that upstream session cs serves downstream session ss.
func (r *relayState) serves(cs *sdk.ClientSession, ss *sdk.ServerSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	us := r.ups[cs]
	if us == nil {
		us = &upSession{downs: map[*sdk.ServerSession]bool{}}
		r.ups[cs] = us
	}
	us.downs[ss] = true
	if r.downUps[ss] == nil {
		r.downUps[ss] = map[*sdk.ClientSession]bool{}
	}
	r.downUps[ss][cs] = true
}

// ownSubscription records that the upstream session of key holds (on) or no
// longer holds a subscription to uri, for a session that replaces it.
func (r *relayState) ownSubscription(key SessionKey, uri string, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.own == nil {
		r.own = map[SessionKey]map[string]bool{}
	}
	if on {
		if r.own[key] == nil {
			r.own[key] = map[string]bool{}
		}
		r.own[key][uri] = true
		return
	}
	delete(r.own[key], uri)
	if len(r.own[key]) == 0 {
		delete(r.own, key)
	}
}

// ownURIs are the subscriptions the upstream session of key holds; the
// caller holds r.mu.
func (r *relayState) ownURIs(key SessionKey) []string {
	var out []string
	for uri := range r.own[key] {
		out = append(out, uri)
	}
	return out
}

// dropOwn forgets the subscriptions of the upstream sessions of downstream
// session id, which has gone; the caller holds r.mu.
func (r *relayState) dropOwn(id string) {
	for key := range r.own {
		if key.Downstream == id {
			delete(r.own, key)
		}
	}
}
