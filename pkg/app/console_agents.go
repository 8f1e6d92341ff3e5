package app

import (
	"github.com/arvenza/helix/internal/console/agents"
)

// The console's Agents page (internal/console/agents): the agents with their
// /metrics counters, and the transcripts of recent runs, recorded by an
// agent.Observer that a console tracer puts in the context of every exchange
// of an application with agents (inline agent: steps run in any workflow).
func init() {
	registerConsolePart(consolePart{Name: "agents", Setup: func(a *App) (consoleSetup, error) {
		rec := agents.NewRecorder(agents.Limits{})
		page := agents.NewPage(consoleAgents{a}, rec)
		// Read when an exchange starts, once Build has made every runner: an
		// application without agents gets nothing added to its exchanges.
		has := func() bool { return len(a.runners) > 0 }
		return consoleSetup{Tracer: agents.Tracer(rec, has), Page: &page}, nil
	}})
}

// consoleAgents is the Agents page's view of the application.
type consoleAgents struct{ a *App }

// Agents lists the agents: entries with the counters /metrics shows, then
// the inline agent: steps (named "<workflow>/agent"), which have counters but
// no entry.
func (c consoleAgents) Agents() []agents.AgentInfo {
	metrics := map[string]agents.AgentInfo{}
	for _, m := range c.a.agentMetrics() {
		metrics[m.Agent] = agents.AgentInfo{ID: m.Agent, Runs: m.Runs, Errors: m.Errors, ToolCalls: m.ToolCalls,
			InputTokens: m.InputTokens, OutputTokens: m.OutputTokens}
	}
	described := map[string]bool{}
	out := make([]agents.AgentInfo, 0, len(metrics))
	for _, m := range c.a.manifestAgents() {
		info := metrics[m.ID]
		info.ID, info.Type, info.Provider, info.Model, info.Tools = m.ID, m.Type, m.Provider, m.Model, m.Tools
		out = append(out, info)
		described[m.ID] = true
	}
	for _, r := range c.a.runners {
		if id := r.ID(); !described[id] {
			d := r.Describe()
			info := metrics[id]
			info.ID, info.Type, info.Provider, info.Model, info.Tools = id, "inline agent: step", d.Provider, d.Model, d.Tools
			out = append(out, info)
			described[id] = true
		}
	}
	return out
}
