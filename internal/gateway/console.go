package gateway

import (
	"sort"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// UpstreamView is what the console's MCP page shows of one upstream besides
// Status: its configuration, its pool (for health) and the tools it
// contributes now.
type UpstreamView struct {
	ID string
	// Prefix is put before the upstream's tool and prompt names.
	Prefix string
	// Sessions is the session sharing mode in effect.
	Sessions string
	// Pool is the upstream's pool; nil before the server starts. Its concrete
	// type (upstream.Pool) reports health.
	Pool Pool
	// Tools are the served names of its tools (prefixed), sorted, each with
	// the upstream's own name.
	Tools []ServedName
}

// ServedName pairs a served (prefixed) name with the upstream's own, and the
// tool as served (description, schemas, annotations; nil when unknown). The
// tool is shared: read it, never change it.
type ServedName struct {
	Served, Own string
	Tool        *sdk.Tool
}

// Upstreams returns a view of each upstream, in configuration order. It copies
// under each upstream's lock and calls nothing upstream.
func (g *Gateway) Upstreams() []UpstreamView {
	out := make([]UpstreamView, 0, len(g.ups))
	for _, up := range g.ups {
		up.mu.Lock()
		v := UpstreamView{ID: up.cfg.ID, Prefix: up.prefix, Sessions: up.sessions, Pool: up.pool}
		for served, own := range up.tools {
			v.Tools = append(v.Tools, ServedName{Served: served, Own: own, Tool: up.defs[served]})
		}
		up.mu.Unlock()
		sort.Slice(v.Tools, func(i, j int) bool { return v.Tools[i].Served < v.Tools[j].Served })
		out = append(out, v)
	}
	return out
}
