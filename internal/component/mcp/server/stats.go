package server

import (
	"sort"
	"sync"
	"sync/atomic"
)

// ToolCallStats are the totals of one tool of one server.
type ToolCallStats struct {
	Server string // server id
	Tool   string // MCP tool name
	Calls  uint64 // tools/call requests that reached the tool
	Errors uint64 // of those, the ones answered with an isError result
}

type toolKey struct{ server, tool string }

type toolCounters struct{ calls, errors atomic.Uint64 }

// toolCallStats counts tool calls per server and tool. It lives in the component,
// not in a server, so counts survive a server's restart (a counter must not go
// back). The map only grows by tools that were called, so it is bounded by the
// tools the servers expose.
type toolCallStats struct {
	mu sync.RWMutex
	m  map[toolKey]*toolCounters
}

func (s *toolCallStats) counters(server, tool string) *toolCounters {
	k := toolKey{server, tool}
	s.mu.RLock()
	c, ok := s.m[k]
	s.mu.RUnlock()
	if ok {
		return c
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok = s.m[k]; !ok {
		if s.m == nil {
			s.m = map[toolKey]*toolCounters{}
		}
		c = &toolCounters{}
		s.m[k] = c
	}
	return c
}

// countersOf is the counters of tool t of server, kept in t after the first call:
// no lock and no map lookup per call.
func (s *toolCallStats) countersOf(t *serverTool, server string) *toolCounters {
	if cc := t.counters.Load(); cc != nil && cc.stats == s && cc.server == server {
		return cc.c
	}
	c := s.counters(server, t.info.Name)
	t.counters.Store(&cachedCounters{stats: s, server: server, c: c})
	return c
}

// cachedCounters is what countersOf keeps in a serverTool.
type cachedCounters struct {
	stats  *toolCallStats
	server string
	c      *toolCounters
}

func (c *toolCounters) count(isError bool) {
	c.calls.Add(1)
	if isError {
		c.errors.Add(1)
	}
}

func (s *toolCallStats) snapshot() []ToolCallStats {
	s.mu.RLock()
	out := make([]ToolCallStats, 0, len(s.m))
	for k, c := range s.m {
		out = append(out, ToolCallStats{Server: k.server, Tool: k.tool, Calls: c.calls.Load(), Errors: c.errors.Load()})
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Server != out[j].Server {
			return out[i].Server < out[j].Server
		}
		return out[i].Tool < out[j].Tool
	})
	return out
}

// ToolCallStats returns the tool-call totals of every server of the component,
// sorted by server id and tool name; tools never called are absent. Both the go-sdk
// path and Helix's fast path are counted, once per call. Safe for concurrent use.
func (c *Component) ToolCallStats() []ToolCallStats { return c.calls.snapshot() }
