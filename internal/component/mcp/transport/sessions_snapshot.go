package transport

import (
	"sort"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// SessionSnapshot is one open session as the console's MCP page lists it.
type SessionSnapshot struct {
	ID string
	// Kind is the transport that opened it: streamable, streamable-sdk or sse.
	Kind   string
	Opened time.Time
	// InFlight counts its requests (or calls) running now.
	InFlight int
	// Protocol and Client are what its initialize said, when the transport
	// knows them without a go-sdk session (a parked session: park.go); the
	// console reads the others from the go-sdk's sessions.
	Protocol, Client string

	init func() *sdk.InitializeParams
}

// Snapshot returns up to max of the open sessions, newest first, and how many
// are open. Under the table's lock it only copies the rows (the table is
// bounded by max_sessions); sorting and trimming happen after, so a page never
// makes a session's request wait on more than a copy. Sessions still being set
// up (no id yet) are left out.
func (t *SessionTable) Snapshot(max int) ([]SessionSnapshot, int) {
	if t == nil {
		return nil, 0
	}
	t.mu.Lock()
	all := make([]SessionSnapshot, 0, len(t.slots))
	for s := range t.slots {
		if s.id != "" {
			all = append(all, SessionSnapshot{ID: s.id, Kind: s.kind, Opened: s.opened, InFlight: int(s.active.Load()), init: s.init})
		}
	}
	t.mu.Unlock()
	sort.Slice(all, func(i, j int) bool { return all[i].Opened.After(all[j].Opened) })
	if max < 0 {
		max = 0
	}
	page := all[:min(max, len(all))]
	for i := range page {
		// Outside the table's lock: a session takes its own lock, then the
		// table's (Close releasing its slot).
		if f := page[i].init; f != nil {
			if p := f(); p != nil {
				page[i].Protocol = p.ProtocolVersion
				if p.ClientInfo != nil {
					page[i].Client = p.ClientInfo.Name + " " + p.ClientInfo.Version
				}
			}
			page[i].init = nil
		}
	}
	return page, len(all)
}
