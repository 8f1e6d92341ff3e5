package server

import "time"

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
		out[i] = SessionInfo{ID: r.ID, Transport: r.Kind, Opened: r.Opened, InFlight: r.InFlight}
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
