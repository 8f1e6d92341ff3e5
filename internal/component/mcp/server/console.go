package server

import (
	"sort"
	"time"

	"github.com/arvenza/helix/internal/component/mcp/transport"
)

// SessionInfo is one open session of a server, for the console's MCP page.
type SessionInfo struct {
	ID string
	// Transport is streamable (Helix's Streamable HTTP), streamable-sdk (the
	// go-sdk's) or sse.
	Transport string
	// Protocol is the version the session negotiated; "" until initialized.
	Protocol string
	// Client is the client's name and version from initialize.
	Client   string
	Opened   time.Time
	InFlight int
}

// Sessions returns up to max of the open sessions of the running server id,
// newest first, and how many are open; none for stdio, stateless or stopped
// servers. It copies rows under the session table's lock and never waits on a
// call in flight.
func (c *Component) Sessions(id string, max int) ([]SessionInfo, int) {
	c.mu.Lock()
	s := c.running[id]
	c.mu.Unlock()
	if s == nil {
		return nil, 0
	}
	s.mu.Lock()
	table, srv := s.table, s.sdk
	s.mu.Unlock()
	rows, total := table.Snapshot(max)
	if len(rows) == 0 {
		return nil, total
	}
	out := make([]SessionInfo, len(rows))
	byID := make(map[string]int, len(rows))
	for i, r := range rows {
		out[i] = SessionInfo{ID: r.ID, Transport: r.Kind, Opened: r.Opened, InFlight: r.InFlight, Protocol: r.Protocol, Client: r.Client}
		byID[r.ID] = i
	}
	if srv != nil {
		for ss := range srv.Sessions() {
			i, ok := byID[ss.ID()]
			if !ok {
				continue
			}
			if p := ss.InitializeParams(); p != nil {
				out[i].Protocol = p.ProtocolVersion
				if p.ClientInfo != nil {
					out[i].Client = p.ClientInfo.Name + " " + p.ClientInfo.Version
				}
			}
		}
	}
	return out, total
}

// AdmissionStats are the admission-control counters of one running server.
type AdmissionStats struct {
	Server string
	transport.AdmissionStats
}

// AdmissionStats returns the admission-control counters of the running servers
// that have admission control, sorted by server id. Safe for concurrent use.
func (c *Component) AdmissionStats() []AdmissionStats {
	c.mu.Lock()
	all := make([]*mcpServer, 0, len(c.running))
	for _, s := range c.running {
		all = append(all, s)
	}
	c.mu.Unlock()
	var out []AdmissionStats
	for _, s := range all {
		s.mu.Lock()
		a := s.admission
		s.mu.Unlock()
		if a != nil {
			out = append(out, AdmissionStats{Server: s.opts.ID, AdmissionStats: a.Stats()})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Server < out[j].Server })
	return out
}
