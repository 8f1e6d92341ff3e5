package gateway

import (
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// withLogLevel is m with the logging level of the call's client stated for
// an upstream session of MCP 2026-07-28 or later: such a server sends a
// call's log messages only at the level its request carries (a
// logging/setLevel of an earlier client has no session upstream to stay in).
// A 2026-07-28 client's own level is passed on; an earlier client's is the
// one it set with logging/setLevel. m is not changed.
func (g *Gateway) withLogLevel(m sdk.Meta, req sdk.Request, cs *sdk.ClientSession) sdk.Meta {
	if ir := cs.InitializeResult(); ir == nil || ir.ProtocolVersion < "2026-07-28" {
		return m
	}
	var level any
	if p := req.GetParams(); p != nil {
		//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still relayed for clients that use it
		level = p.GetMeta()[sdk.MetaKeyLogLevel]
	}
	if level == nil {
		if ss, _ := req.GetSession().(*sdk.ServerSession); ss != nil {
			g.relay.mu.Lock()
			if l, ok := g.relay.downLevel[ss]; ok {
				level = string(l)
			}
			g.relay.mu.Unlock()
		}
	}
	if level == nil {
		return m
	}
	out := make(sdk.Meta, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still relayed for clients that use it
	out[sdk.MetaKeyLogLevel] = level
	return out
}
