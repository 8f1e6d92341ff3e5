package app

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/arvenza/helix/internal/component/mcp/transport"
)

// applyReplayBudget sets the process-wide replay budget of the MCP servers'
// resumable streams (helix.mcp.replay_budget; unset: the default). It is the
// process's, not one App's: the last App started decides.
func (a *App) applyReplayBudget() {
	limit := a.cfg.Helix.MCP.ReplayBudget
	if limit <= 0 {
		limit = transport.DefaultReplayBudget
	}
	transport.ProcessReplayBudget().SetLimit(limit)
}

// replayBudgetCollectors expose the process's replay budget in /metrics.
func replayBudgetCollectors() []prometheus.Collector {
	b := transport.ProcessReplayBudget()
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "helix_mcp_replay_bytes",
			Help: "Bytes of events the resumable MCP streams of all sessions keep for replay now."},
			func() float64 { return float64(b.Used()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "helix_mcp_replay_budget_bytes",
			Help: "The replay budget of the resumable MCP streams (helix.mcp.replay_budget)."},
			func() float64 { return float64(b.Limit()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "helix_mcp_replay_dropped_events_total",
			Help: "Events of resumable MCP streams not kept for replay because they did not fit a session's share or the budget."},
			func() float64 { return float64(b.Dropped()) }),
	}
}
