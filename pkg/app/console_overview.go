package app

import (
	"fmt"
	"net/url"
	"slices"
	"sort"

	"github.com/arvenza/helix/internal/console/overview"
	"github.com/arvenza/helix/pkg/engine"
)

// The overview page: the rows come from the counters /metrics reads
// (metricsSnapshot: engine Stats, MCP tool calls, agents, pipelines); the
// p50/p99 from the overview's own latency tracer.
func init() {
	registerConsolePart(consolePart{Name: "overview", Setup: func(a *App) (consoleSetup, error) {
		lat := overview.NewLatency()
		ov := overview.New(overview.SourceFunc(a.overviewRows), lat)
		stop := make(chan struct{})
		done := make(chan struct{})
		page := ov.Page()
		return consoleSetup{Tracer: lat, Page: &page, Start: func() {
			go func() { defer close(done); ov.Run(stop) }()
		}, Stop: func() {
			close(stop)
			<-done
		}}, nil
	}})
}

// overviewRows lists what the application runs, with its counters.
func (a *App) overviewRows() []overview.Row {
	m := a.metricsSnapshot()
	var rows []overview.Row
	kinds := map[string]engine.Kind{}
	schemes := map[string]int{}
	targets := targetSchemesOf(a.cfg)
	for _, wf := range a.hc.Workflows() {
		kinds[wf.ID] = wf.Kind
		seen := map[string]bool{}
		used := slices.Clone(targets[wf.ID])
		for _, u := range append([]string{wf.FromURI}, wf.ToURIs...) {
			if s, ok := uriScheme(u); ok {
				used = append(used, s)
			}
		}
		for _, s := range used {
			if !seen[s] {
				seen[s] = true
				schemes[s]++
			}
		}
	}
	for _, w := range m.Workflows {
		rows = append(rows, overview.Row{Kind: overview.KindWorkflow, ID: w.Workflow, State: a.hc.WorkflowState(w.Workflow),
			Count: w.Exchanges, Errors: w.Failed, HasCount: true, Detail: string(kinds[w.Workflow]),
			Link: "/workflows/" + url.PathEscape(w.Workflow)})
	}
	if sc := a.mcpServers(); sc != nil {
		calls := map[string][2]uint64{}
		for _, tc := range m.ToolCalls {
			c := calls[tc.Server]
			calls[tc.Server] = [2]uint64{c[0] + tc.Calls, c[1] + tc.Errors}
		}
		for _, si := range sc.Servers() {
			state := "stopped"
			if si.Running {
				state = "running"
			}
			c := calls[si.ID]
			rows = append(rows, overview.Row{Kind: overview.KindMCP, ID: si.ID, State: state, Count: c[0], Errors: c[1], HasCount: true,
				Detail: fmt.Sprintf("%s, %d tools", si.Transport, len(si.Tools)), Link: "/mcp"})
		}
	}
	for _, ag := range m.Agents {
		rows = append(rows, overview.Row{Kind: overview.KindAgent, ID: ag.Agent, State: "ready", Count: ag.Runs, Errors: ag.Errors,
			HasCount: true, Detail: fmt.Sprintf("%d tool calls, %d tokens", ag.ToolCalls, ag.InputTokens+ag.OutputTokens), Link: "/agents"})
	}
	for _, p := range m.Pipelines {
		rows = append(rows, overview.Row{Kind: overview.KindPipeline, ID: p.Pipeline, State: "ready",
			Count: p.Queries + p.DocumentsIngested, Errors: p.QueryErrors + p.IngestErrors, HasCount: true,
			Detail: fmt.Sprintf("%d chunks", p.Chunks), Link: "/rag"})
	}
	names := make([]string, 0, len(schemes))
	for s := range schemes {
		names = append(names, s)
	}
	sort.Strings(names)
	for _, s := range names {
		state := "in use"
		if _, ok := a.hc.Component(s); !ok {
			state = "not registered"
		}
		rows = append(rows, overview.Row{Kind: overview.KindConnector, ID: s, State: state,
			Detail: fmt.Sprintf("used by %d %s", schemes[s], plural(schemes[s], "workflow", "workflows"))})
	}
	return rows
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
