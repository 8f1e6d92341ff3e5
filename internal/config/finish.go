package config

import "fmt"

// finish runs the checks that need the whole merged configuration: ids must be unique
// across workflows, tools, agents and pipelines (they share one namespace: each
// becomes a workflow of the engine and possibly an MCP tool), and MCP server ids
// across helix.mcp.servers and mcps:. Later duplicates are dropped from the model so that building does not
// report them a second time; dropped workflows and tools are kept aside
// (DuplicateWorkflows, DuplicateTools) so that their steps are still checked.
func (c *Config) finish() Errors {
	var errs Errors
	type owner struct {
		kind string
		pos  Pos
	}
	seen := map[string]owner{}
	// No Path here: indexes are per file and the merged lists mix files; the position
	// and the id say enough.
	check := func(kind, id string, pos Pos) bool {
		if first, dup := seen[id]; dup {
			errs = append(errs, &Error{Pos: pos,
				Msg:  fmt.Sprintf("duplicate id %q: already used by the %s at %s", id, first.kind, first.pos),
				Hint: "ids of workflows, tools, agents and pipelines must be unique"})
			return false
		}
		seen[id] = owner{kind, pos}
		return true
	}
	c.Workflows = keep(c.Workflows, func(_ int, w WorkflowConfig) bool {
		if !check("workflow", w.ID, w.Pos) {
			c.DuplicateWorkflows = append(c.DuplicateWorkflows, w)
			return false
		}
		return true
	})
	c.Tools = keep(c.Tools, func(_ int, t ToolConfig) bool {
		if !check("tool", t.ID, t.Pos) {
			c.DuplicateTools = append(c.DuplicateTools, t)
			return false
		}
		return true
	})
	c.Agents = keep(c.Agents, func(_ int, a AgentConfig) bool {
		return check("agent", a.ID, a.Pos)
	})
	c.Pipelines = keep(c.Pipelines, func(_ int, p PipelineConfig) bool {
		return check("pipeline", p.ID, p.Pos)
	})
	// MCP server ids are unique across helix.mcp.servers and mcps: (one list of servers).
	mcpSeen := map[string]Pos{}
	uniqueServer := func(_ int, s MCPServerConfig) bool {
		if s.ID == "" {
			return true
		}
		if first, dup := mcpSeen[s.ID]; dup {
			errs = append(errs, &Error{Pos: s.Pos,
				Msg:  fmt.Sprintf("duplicate MCP server id %q: already used at %s", s.ID, first),
				Hint: "ids of mcps: and helix.mcp.servers entries must be unique"})
			return false
		}
		mcpSeen[s.ID] = s.Pos
		return true
	}
	c.Helix.MCP.Servers = keep(c.Helix.MCP.Servers, uniqueServer)
	c.MCPs = keep(c.MCPs, uniqueServer)
	return errs
}

// keep filters s in place; the index passed to f is the element's original index.
func keep[T any](s []T, f func(int, T) bool) []T {
	out := s[:0]
	for i, v := range s {
		if f(i, v) {
			out = append(out, v)
		}
	}
	return out
}
