package app

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"sort"
	"strings"

	"github.com/arvenza/helix/internal/component/httpserver"
	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/management"
	"github.com/arvenza/helix/internal/netguard"
	"github.com/arvenza/helix/pkg/uri"
)

// Lifecycle states reported by /readyz.
const (
	stateBuilt int32 = iota
	stateStarting
	stateRunning
	stateStopping
	stateStopped
)

// buildManagement declares the management server (manifest, /healthz, /readyz, /metrics)
// unless helix.management.enabled is false, or the application serves MCP over stdio
// and nothing asks for management. Nothing listens until Start.
func (a *App) buildManagement() {
	m := a.cfg.Helix.Management
	if m.Enabled != nil && !*m.Enabled {
		return
	}
	// An AI client (Claude Desktop …) launches a stdio server as its subprocess,
	// often beside a running Helix: it takes no port of its own unless the file
	// (addr, enabled) or the embedding program asks for one.
	configured := m.Addr != "" || m.Enabled != nil || a.opts.ManagementAddr != ""
	if !configured && a.stdioServer() != "" {
		a.logger.Debug("management server off: a stdio MCP server binds no port unless helix.management asks for one",
			"stdio_server", a.stdioServer())
		return
	}
	addr := m.Addr
	if a.opts.ManagementAddr != "" {
		addr = a.opts.ManagementAddr
	}
	if addr == "" {
		addr = management.DefaultAddr
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		a.errs = append(a.errs, &config.Error{Pos: m.Pos, Path: "helix.management.addr",
			Msg:  fmt.Sprintf("addr %q: want host:port: %v", addr, err),
			Hint: "for example 127.0.0.1:9999 (the default); use enabled: false to switch the endpoints off"})
		return
	}
	a.mgmt = management.New(management.Options{
		Addr:     addr,
		Required: m.Required,
		Manifest: a.Manifest,
		Ready:    a.ready,
		Metrics:  a.metricsSnapshot,
		Logger:   a.logger,
		Limits:   listenerLimits(m.Listener),
		Runs:     a.durableRuns,        // durable_ops.go
		Routes:   a.waitRoutes(),       // waits.go
		Console:  a.buildConsole(addr), // console.go
	})
	for _, c := range append(append(replayBudgetCollectors(), a.durableCollectors()...), auditMetrics.Collectors()...) {
		if err := a.mgmt.Register(c); err != nil {
			a.errs = append(a.errs, &config.Error{Pos: m.Pos, Path: "helix.management", Msg: err.Error()})
		}
	}
}

// warnListenerOnStdio warns about listener keys on a stdio MCP server, which has
// no listener for them to act on.
func (a *App) warnListenerOnStdio(transport string, l config.ListenerLimits, pos config.Pos, path string) {
	if !strings.EqualFold(strings.TrimSpace(transport), mcpserver.TransportStdio) {
		return
	}
	var keys []string
	for _, k := range []struct {
		set  bool
		name string
	}{{l.ReadTimeout != 0, "read_timeout"}, {l.IdleTimeout != 0, "idle_timeout"}, {l.WriteTimeout != 0, "write_timeout"},
		{l.MaxConnections != 0, "max_connections"}, {l.MaxConnectionsPerIP != 0, "max_connections_per_ip"}} {
		if k.set {
			keys = append(keys, k.name)
		}
	}
	if len(keys) > 0 {
		a.cfg.Warnings = append(a.cfg.Warnings, &config.Error{Pos: pos, Path: path,
			Msg:  fmt.Sprintf("%s: not applied to a stdio server, which has no HTTP listener", strings.Join(keys, ", ")),
			Hint: "remove them, or serve the tools over transport: http"})
	}
}

// listenerLimits turns the YAML connection settings of a listener into
// netguard's (the same zero-means-default, negative-means-off convention).
func listenerLimits(l config.ListenerLimits) netguard.Limits {
	return netguard.Limits{ReadTimeout: l.ReadTimeout, IdleTimeout: l.IdleTimeout, WriteTimeout: l.WriteTimeout,
		MaxConnections: l.MaxConnections, MaxConnectionsPerIP: l.MaxConnectionsPerIP}
}

// ManagementAddr is the bound address of the management server while it runs, or ""
// (disabled, not started, stopped, or its address was taken).
func (a *App) ManagementAddr() string {
	if a.mgmt == nil {
		return ""
	}
	return a.mgmt.Addr()
}

// ready is /readyz: ready from the end of Start until Stop begins.
func (a *App) ready() error {
	switch a.state.Load() {
	case stateRunning:
		return nil
	case stateStopping:
		return errors.New("stopping")
	case stateStopped:
		return errors.New("stopped")
	default:
		return errors.New("starting")
	}
}

// Manifest describes what the application exposes (spec §16 auto-discovery): its
// MCP servers with their bound addresses, endpoints and listed tools, and the
// workflows triggered over HTTP, and the agents (agents.go: id, type, provider,
// model, tools, capabilities; never a key). It is safe for concurrent use.
func (a *App) Manifest() management.Manifest {
	version := a.opts.Version
	if version == "" {
		version = "dev"
	}
	m := management.Manifest{Name: a.hc.Name(), Version: version}
	if sc := a.mcpServers(); sc != nil {
		for _, si := range sc.Servers() {
			m.MCPServers = append(m.MCPServers, a.manifestServer(si))
		}
	}
	m.HTTPRoutes = a.httpRoutes()
	m.Agents = a.manifestAgents()
	m.Pipelines = a.manifestPipelines()
	m.Durable = a.manifestDurable() // durable_ops.go
	return m
}

// metricsSnapshot is the /metrics snapshot: the engine's workflow counters, the MCP servers'
// tool calls and their security rejections, and the agents' runs, iterations, tool
// calls and tokens. It is safe for concurrent use.
func (a *App) metricsSnapshot() management.Metrics {
	st := a.hc.Stats()
	m := management.Metrics{Version: a.opts.Version, GoVersion: runtime.Version(), InFlight: st.InFlight}
	for _, wf := range st.Workflows {
		m.Workflows = append(m.Workflows, management.WorkflowMetrics{Workflow: wf.ID, Exchanges: wf.Exchanges,
			Failed: wf.Failed, DurationSeconds: wf.Duration.Seconds()})
	}
	if sc := a.mcpServers(); sc != nil {
		for _, tc := range sc.ToolCallStats() {
			m.ToolCalls = append(m.ToolCalls, management.ToolCallMetrics{Server: tc.Server, Tool: tc.Tool,
				Calls: tc.Calls, Errors: tc.Errors})
		}
	}
	for _, sec := range a.security {
		for _, r := range sec.cfg.Rejections.Snapshot() {
			m.Rejected = append(m.Rejected, management.RejectedMetrics{Server: sec.id, Reason: r.Reason, Count: r.Count})
		}
		if sec.cfg.RateLimitStore != "" && sec.cfg.RateLimit > 0 {
			m.RateLimitStoreErrors = append(m.RateLimitStoreErrors, management.RateLimitStoreMetrics{Server: sec.id,
				Errors: sec.cfg.RateLimitStoreFailures.Load()})
		}
	}
	if sc := a.mcpServers(); sc != nil {
		for _, st := range sc.AdmissionStats() {
			m.Admission = append(m.Admission, management.AdmissionMetrics{Server: st.Server, Admitted: st.Admitted,
				Queued: st.Queued, Refused: st.Refused, QueueWaitSeconds: st.QueueWait.Seconds(),
				Running: st.Running, Waiting: st.Waiting, Limit: st.MaxRunning,
				RefusedAtDoor: st.RefusedAtDoor})
		}
	}
	m.Agents = a.agentMetrics()
	m.Pipelines = a.pipelineMetrics()
	m.Cluster = a.clusterMetrics() // cluster.go
	return m
}

func (a *App) manifestServer(si mcpserver.Info) management.MCPServer {
	ms := management.MCPServer{ID: si.ID, Name: si.Name, Transport: si.Transport}
	if si.Transport != mcpserver.TransportStdio && si.Addr != "" {
		ms.Addr = si.Addr
		base := "http://" + si.Addr
		if si.Transport == mcpserver.TransportHTTP {
			ms.Endpoints = append(ms.Endpoints, base+"/mcp")
		}
		ms.Endpoints = append(ms.Endpoints, base+"/sse")
	}
	for _, t := range a.ListedTools(si) {
		ms.Tools = append(ms.Tools, t.Name)
	}
	ms.Resources, ms.Prompts = a.manifestPrimitives(si)           // resources.go
	if ms.Gateway = a.manifestGateway(si.ID); ms.Gateway != nil { // gateway.go
		ms.Tools = append(ms.Tools, a.gateways[si.ID].Tools()...)
	}
	return ms
}

// ListedTools returns the tools of server si that its allowed_tools/blocked_tools
// let clients see; tools that need OAuth scopes stay listed (whether a caller sees
// them depends on its token). The manifest and `helix mcp list` both use it.
func (a *App) ListedTools(si mcpserver.Info) []mcpserver.ToolInfo {
	sec := a.securityByID[si.ID]
	if sec == nil {
		return si.Tools
	}
	var out []mcpserver.ToolInfo
	for _, t := range si.Tools {
		if sec.listed(t.Name) {
			out = append(out, t)
		}
	}
	return out
}

// httpRoutes lists the workflows with an http-server:// trigger, by workflow id.
func (a *App) httpRoutes() []management.HTTPRoute {
	var routes []management.HTTPRoute
	for _, wf := range a.hc.Workflows() {
		if wf.FromURI == "" {
			continue
		}
		u, err := uri.Parse(wf.FromURI)
		if err != nil || u.Scheme != "http-server" {
			continue
		}
		method := httpserver.RouteMethod(u)
		if method == "" {
			method = "*"
		}
		// The route as written: a secret the URI takes from ${env:…} is not published.
		shown := wf.ShownURI
		if shown == "" {
			shown = wf.FromURI
		}
		routes = append(routes, management.HTTPRoute{Workflow: wf.ID, Method: method, URI: shown})
	}
	sort.Slice(routes, func(i, j int) bool { return routes[i].Workflow < routes[j].Workflow })
	return routes
}
