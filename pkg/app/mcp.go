package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"

	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/component/mcp/transport"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/tool"
)

// mcpServerScheme is the scheme of the MCP server component.
const mcpServerScheme = "mcp-server"

// buildMCP declares on the mcp-server component (registered with the others, so that
// mcp-server:// triggers validate) the servers of the configuration: the one list
// [config.Config.MCPServers] makes of helix.mcp.servers (enabled entries) and mcps:.
// It runs after the workflows and tools are added: declaring a server resolves its
// exposed ids, so unknown ids and clashing tool names are configuration errors with
// the position of the server entry (or of the clashing workflow).
//
// The security keys (api_keys, cors_origins, blocked_tools …) become a security
// stack per server (security.go), wired through Options.HTTPMiddleware and
// ToolAllowed.
func (a *App) buildMCP() {
	comp := a.mcpServers()
	comp.SetCatalogue(a.catalogue)
	prims := a.buildPrimitives() // resources: and prompts: (resources.go)
	for _, s := range a.cfg.MCPServers() {
		opts := a.mcpServerOptions(s)
		prims.selectPrimitives(&opts, func(id string) bool { _, ok := a.workflowPos(id); return ok })
		a.warnListenerOnStdio(opts.Transport, s.Listener, s.Pos, s.Path)
		a.applySecurity(&opts, s.Security, s.Pos, s.Path)
		a.buildGateway(&opts, s) // gateway.go
		a.addMCPServer(comp, opts, s.Pos, s.Path)
	}
}

// buildCatalogue registers the application's tools in one catalogue, which its MCP
// servers (declared and mcp-server:// triggers) serve from and its agents call
// through: every workflow with a trigger, every `tools:` entry and every agent, in
// declaration order (all are engine workflows by now, agents of Kind agent,
// pipelines of Kind pipeline; workflows without a trigger are recorded as not
// being tools).
func (a *App) buildCatalogue() *tool.Catalogue {
	cat := tool.NewCatalogue()
	cat.AddWorkflows(a.hc)
	return cat
}

// mcpServerOptions turns one configured server into the options of the server
// component; security is wired separately (applySecurity).
func (a *App) mcpServerOptions(s config.MCPServerConfig) mcpserver.Options {
	fastOn := s.FastToolCallsOn()
	opts := mcpserver.Options{
		ID: s.ID, Name: s.Name, Version: s.Version, Transport: s.Transport, Addr: s.Addr,
		Stateless: s.Stateless, SessionIdleTimeout: s.SessionIdleTimeout,
		HTTPTransport: s.HTTPTransport,
		FastToolCalls: &fastOn,
		MaxSessions:   s.MaxSessions, MaxSessionsPerPrincipal: s.MaxSessionsPerPrincipal,
		MaxConcurrentCalls: s.MaxConcurrentCalls,
		Limits:             listenerLimits(s.Listener),
		Stdin:              a.opts.Stdin, Stdout: a.opts.Stdout, Logger: a.logger,
	}
	if ad := s.Admission; ad != nil {
		// max_running: auto (0) is the adaptive limit.
		opts.Admission = transport.AdmissionOptions{MaxRunning: ad.MaxRunning, Queue: ad.Queue, QueueTimeout: ad.QueueTimeout,
			Adaptive: ad.MaxRunning == 0}
	}
	if rs := s.RequestState; rs != nil {
		opts.RequestState = mcpserver.RequestStateOptions{TTL: rs.TTL, Store: rs.Store}
		if rs.Key != "" {
			// Checked at load time (config.DecodeRequestStateKey); a key that
			// still fails here leaves the server with a random one, as unset.
			if key, err := config.DecodeRequestStateKey(rs.Key); err == nil {
				opts.RequestState.Key = key
			}
		}
	}
	if s.Expose != nil {
		// nil exposes everything, an empty list nothing (`expose: []`).
		opts.Expose = append([]string{}, s.Expose...)
	}
	if len(s.Tools) > 0 {
		opts.Tools = map[string]mcpserver.ToolOverride{}
		for wid, o := range s.Tools {
			opts.Tools[wid] = mcpserver.ToolOverride{Description: o.Description, InputSchema: json.RawMessage(o.InputSchema),
				Task: tool.TaskSupport(o.Task)}
		}
	}
	return opts
}

func (a *App) addMCPServer(comp *mcpserver.Component, opts mcpserver.Options, pos config.Pos, path string) {
	info, err := comp.Describe(opts)
	var unknown *mcpserver.UnknownExposeError
	unknownWarning := func(err error) {
		// A file may be validated on its own (the spec's snippets are), before the
		// file with the workflows joins it; the server itself refuses to start.
		a.cfg.Warnings = append(a.cfg.Warnings, &config.Error{Pos: pos, Path: path, Msg: err.Error(),
			Hint: "the server will not start until these ids exist"})
	}
	switch {
	case err == nil:
	case errors.As(err, &unknown):
		unknownWarning(err)
	default:
		// Describe stops at the first naming problem (clashing or invalid tool names,
		// ids that cannot be tools); report them all, each at its workflow
		// (validate.go) — unless the server's own settings are the problem.
		bare := opts
		bare.Expose, bare.Tools = []string{}, nil
		if _, berr := comp.Describe(bare); berr == nil {
			if problems, missing := a.mcpNamingProblems(comp, opts, pos); len(problems) > 0 {
				a.errs = append(a.errs, problems...)
				if missing != nil {
					unknownWarning(missing)
				}
				return
			}
		}
		a.errs = append(a.errs, &config.Error{Pos: pos, Path: path, Msg: err.Error()})
		return
	}
	exposed := map[string]bool{}
	for _, t := range info.Tools {
		exposed[t.WorkflowID] = true
	}
	for wid := range opts.Tools {
		if !exposed[wid] && !contains(opts.Expose, wid) {
			a.cfg.Warnings = append(a.cfg.Warnings, &config.Error{Pos: pos, Path: path + ".tools." + wid,
				Msg: fmt.Sprintf("tool override for %q, which this server does not expose; it is ignored", wid)})
		}
	}
	if err := comp.AddServer(opts); err != nil {
		a.errs = append(a.errs, &config.Error{Pos: pos, Path: path, Msg: err.Error()})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// workflowPos finds where a workflow, tool, agent or pipeline was declared.
func (a *App) workflowPos(id string) (config.Pos, bool) {
	for _, w := range a.cfg.Workflows {
		if w.ID == id {
			return w.Pos, true
		}
	}
	for _, t := range a.cfg.Tools {
		if t.ID == id {
			return t.Pos, true
		}
	}
	for _, ag := range a.cfg.Agents {
		if ag.ID == id {
			return ag.Pos, true
		}
	}
	for _, p := range a.cfg.Pipelines {
		if p.ID == id {
			return p.Pos, true
		}
	}
	return config.Pos{}, false
}

// mcpServers returns the app's mcp-server component: the servers it declares, their
// bound addresses once started, and Done for stdio servers. Helix's own code outside
// this package reaches it with mcpserver.Of(a.Context()).
func (a *App) mcpServers() *mcpserver.Component { return mcpserver.Of(a.hc) }

// MCPServerAddr is the address the MCP server id listens on while the app runs
// (the actual port when its addr asks for port 0), or nil. A server of
// helix.mcp.servers or mcps: is known by its id, which defaults to its name; a
// server of an mcp-server:// trigger by the trigger's URI without options.
func (a *App) MCPServerAddr(id string) net.Addr {
	if sc := a.mcpServers(); sc != nil {
		return sc.Addr(id)
	}
	return nil
}

// MCPDone is closed when a stdio MCP server's client has closed its input: an app
// launched as an MCP subprocess should then stop. It never closes for apps without
// stdio servers.
func (a *App) MCPDone() <-chan struct{} {
	if sc := a.mcpServers(); sc != nil {
		return sc.Done()
	}
	return nil
}
